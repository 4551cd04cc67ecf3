package vectors

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Cache keeps the vectors of embedded texts in a bbolt file, so that work
// which embeds the same texts again (a benchmark run over the same corpus)
// reuses them instead of paying the model again: embedding the
// coding-session set with the offline model takes most of an hour on one
// core. A vector is keyed by the embedder's model and dimension and the
// SHA-256 of the exact text embedded; a vector is only ever a function of
// those, so a hit is the vector the model would compute. It is safe for
// concurrent use; one process at a time may hold the file.
type Cache struct {
	db           *bolt.DB
	hits, misses atomic.Int64
}

// ErrCacheInUse: the cache file is held by another process (OpenCache
// waits a second for it).
var ErrCacheInUse = errors.New("in use by another process")

// OpenCache opens (creating it and its directory) the cache file at path.
// A file another process holds is ErrCacheInUse after a second's wait.
func OpenCache(path string) (*Cache, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("embedding cache: %w", err)
	}
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("embedding cache %s: %w", path, ErrCacheInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("embedding cache %s: %w", path, err)
	}
	return &Cache{db: db}, nil
}

// Close closes the file.
func (c *Cache) Close() error { return c.db.Close() }

// Counts returns how many texts were found in the cache and how many were
// embedded since it was opened.
func (c *Cache) Counts() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// Wrap returns e with the cache in front: Embed returns the cached vectors
// and sends e only the texts the cache lacks, then keeps their vectors.
func (c *Cache) Wrap(e Embedder) Embedder { return &cached{Embedder: e, c: c} }

type cached struct {
	Embedder
	c *Cache
}

// bucket names the model's vectors (cacheBucket).
func (e *cached) bucket() []byte { return cacheBucket(e.Model(), e.Dim()) }

// cacheBucket names a model's vectors in the file: a bucket per model and
// dimension; cacheBucketDim reads the dimension back.
func cacheBucket(model string, dim int) []byte { return []byte(model + "\x00" + strconv.Itoa(dim)) }

func cacheBucketDim(name []byte) (int, bool) {
	_, dimText, ok := bytes.Cut(name, []byte{0})
	dim, err := strconv.Atoi(string(dimText))
	return dim, ok && err == nil && dim > 0
}

// ReadCached returns every vector the cache file at path holds, of every
// model, reading it read-only (a file another process holds is
// ErrCacheInUse after a second's wait). The bench compares generated
// vectors with these.
func ReadCached(path string) ([][]float32, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("embedding cache %s: %w", path, ErrCacheInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("embedding cache %s: %w", path, err)
	}
	defer db.Close()
	var out [][]float32
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			dim, ok := cacheBucketDim(name)
			if !ok {
				return nil // not a model's bucket
			}
			return b.ForEach(func(_, v []byte) error {
				if len(v) == 4*dim {
					x := make([]float32, dim)
					decodeFloats(x, v)
					out = append(out, x)
				}
				return nil
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("embedding cache %s: %w", path, err)
	}
	return out, nil
}

func (e *cached) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	keys := make([][32]byte, len(texts))
	for i, t := range texts {
		keys[i] = sha256.Sum256([]byte(t))
	}
	dim := e.Dim()
	err := e.c.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(e.bucket())
		if b == nil {
			return nil
		}
		for i := range texts {
			if v := b.Get(keys[i][:]); len(v) == 4*dim {
				out[i] = make([]float32, dim)
				decodeFloats(out[i], v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedding cache: %w", err)
	}
	var miss []int
	var missTexts []string
	for i, v := range out {
		if v == nil {
			miss = append(miss, i)
			missTexts = append(missTexts, texts[i])
		}
	}
	e.c.hits.Add(int64(len(texts) - len(miss)))
	if len(miss) == 0 {
		return out, nil
	}
	vs, err := e.Embedder.Embed(ctx, missTexts)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(miss) {
		return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vs), len(miss))
	}
	e.c.misses.Add(int64(len(miss)))
	err = e.c.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(e.bucket())
		if err != nil {
			return err
		}
		for j, i := range miss {
			out[i] = vs[j]
			if len(vs[j]) != dim {
				continue // not this model's: returned, never kept
			}
			if err := b.Put(keys[i][:], encodeVector(vs[j])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedding cache: %w", err)
	}
	return out, nil
}

// encodeVector is v as little-endian float32s (decodeFloats reads them).
func encodeVector(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}
