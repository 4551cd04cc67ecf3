package vectors

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/hindsight-dev/hindsight/topk"
)

// EmbeddedFileName is the conventional name of the embedded store's file in
// a data directory, next to (never inside) the records file.
const EmbeddedFileName = "vectors.db"

var (
	bucketVectors = []byte("vectors") // key(user, session, ordinal) -> value(hash, floats)
	bucketVMeta   = []byte("meta")    // "model" -> name, "dim" -> uint32 big endian
	keyModel      = []byte("model")
	keyDim        = []byte("dim")
)

const (
	valueVersion = 1 // first byte of every stored value

	// scanBlock is how many rows one Gemv call scores; ctx is checked
	// between blocks (about 0.2 ms of work at 512 dimensions).
	scanBlock = 4096
	// parallelMinRows is the slab size from which one query is split
	// across workers; below it the goroutine hand-off costs more than it
	// saves.
	parallelMinRows = 16384
)

// EmbeddedOptions configures OpenEmbedded. Zero values take defaults.
type EmbeddedOptions struct {
	// LockTimeout bounds the wait for the file lock (another process holds
	// it); 0 means 1 second.
	LockTimeout time.Duration
	// Workers is how many goroutines scan one large slab in one query; 0
	// means GOMAXPROCS. Slabs under 16,384 rows are scanned by one.
	Workers int
	// CodesFrom is the number of vectors from which a user is searched
	// through sign codes and exact re-scoring instead of an exact scan; 0
	// means DefaultCodesFrom, a negative value never (every query an exact
	// scan of full-precision vectors in memory: the reference).
	CodesFrom int
}

// Embedded is the default vector store: cosine search over each user's
// vectors, persisted in its own bbolt file.
//
// # Layout
//
// On disk one bucket maps user, session and ordinal (each length-prefixed,
// so no id is a prefix of another) to the text hash and the unit vector as
// little-endian float32s. The store lives in a file of its own, not in the
// records file: bbolt has one writer per file, and vector batches are large
// (6 KB per 1,536-d chunk) and frequent while a backlog is embedded, so
// sharing the file would queue plugin sync writes behind them and inflate
// their fsyncs. Vectors are derived data (`hindsight reembed` rebuilds
// them), so a backup of the records file need not copy them.
//
// In memory each user that has been queried has one of two indexes,
// loaded lazily on the user's first query (from the file, which is the
// only thing persisted: nothing in memory needs a format of its own) and
// kept in step by Upsert and Delete (removed rows are swap-removed):
//
//   - Under CodesFrom vectors (2,048 by default), a contiguous slab of the
//     normalised float32 rows (4×dim bytes per vector), scanned exactly: a
//     query scores the slab with gonum's assembly Sgemv in blocks of 4,096
//     rows, checking ctx between blocks, and keeps the top k in a small heap.
//   - From CodesFrom vectors on, sign codes (signCodes): one bit per
//     dimension of the row minus the user's mean, plus two float32s, so
//     dim/8 + 8 bytes per vector (1/31 of the slab at 1,536 dimensions). A
//     query estimates every row's cosine from the Hamming distance of the
//     codes (XOR and POPCNT) and re-scores the best max(256, 16k) exactly
//     with the stored vectors, read from the file in one read transaction
//     (bbolt's memory map: the kernel's page cache, not the heap). Scores
//     are therefore exact; the short list can miss a true neighbour
//     (recall@10 is measured in bench/results/vectors-1m). A slab that
//     grows past CodesFrom is turned into codes in place.
//
// Both are split across Workers goroutines from 16,384 rows on. Each
// user's index is built from her vectors alone (the codes' centre is her
// own mean), so one user's data never changes another's hits or scores.
// An index stays in memory until Close, or until a Delete (or an Upsert of
// empty sessions) leaves its user without vectors: the user's entry is
// then dropped, so deleting a user's data (DELETE /api/account/data, whose
// vectors the indexing pipeline deletes) frees its memory. Either index
// also keeps a row and session index of about 25 bytes a vector at 20
// chunks a session.
//
// # Concurrency
//
// Queries of one user share a read lock on its slab; a write to that user
// holds the slab's write lock only while it patches memory, after its bbolt
// commit, so queries do not wait for the fsync. Writes of one user are
// serialised so memory follows the commit order; writes of different users
// run in parallel up to bbolt's single writer.
type Embedded struct {
	db        *bolt.DB
	path      string
	workers   int
	codesFrom int // math.MaxInt: never

	// gate: Upsert and Delete hold it shared; SetMeta, Reset and Close hold
	// it exclusively, so the dimension and the emptiness they check cannot
	// change under them.
	gate   sync.RWMutex
	closed bool // under gate
	model  string
	dim    int

	mu    sync.Mutex
	users map[string]*userVectors
}

var _ Store = (*Embedded)(nil)

// OpenEmbedded opens (creating if needed) the store file at path. The file is
// locked while open; another process opening it waits LockTimeout and then
// fails.
func OpenEmbedded(path string, opts EmbeddedOptions) (*Embedded, error) {
	opts.LockTimeout = cmp.Or(opts.LockTimeout, time.Second)
	opts.Workers = cmp.Or(opts.Workers, runtime.GOMAXPROCS(0))
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        opts.LockTimeout,
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true, // rebuilt on open; saves a page write per commit
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open vector store %s: locked by another process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open vector store %s: %w", path, err)
	}
	s := &Embedded{db: db, path: path, workers: max(1, opts.Workers), codesFrom: cmp.Or(opts.CodesFrom, DefaultCodesFrom), users: map[string]*userVectors{}}
	if s.codesFrom < 0 {
		s.codesFrom = math.MaxInt
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketVectors); err != nil {
			return err
		}
		m, err := tx.CreateBucketIfNotExists(bucketVMeta)
		if err != nil {
			return err
		}
		s.model = string(m.Get(keyModel))
		if d := m.Get(keyDim); len(d) == 4 {
			s.dim = int(binary.BigEndian.Uint32(d))
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open vector store %s: %w", path, err)
	}
	return s, nil
}

// Path is the store file's path.
func (s *Embedded) Path() string { return s.path }

// Close closes the file and drops the slabs. Safe to call twice.
func (s *Embedded) Close() error {
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.mu.Lock()
	s.users = nil
	s.mu.Unlock()
	return s.db.Close()
}

// Meta returns the recorded model and dimension.
func (s *Embedded) Meta(ctx context.Context) (string, int, error) {
	if err := ctx.Err(); err != nil {
		return "", 0, err
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed {
		return "", 0, ErrClosed
	}
	return s.model, s.dim, nil
}

// SetMeta records model and dim; see Store.
func (s *Embedded) SetMeta(ctx context.Context, model string, dim int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if model == "" || dim <= 0 || dim > math.MaxUint32 {
		return fmt.Errorf("set vector store model: need a model name and a positive dimension, got %q, %d", model, dim)
	}
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return ErrClosed
	}
	if model == s.model && dim == s.dim {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketVectors).Cursor().First(); k != nil {
			return fmt.Errorf("store holds %s (%d dimensions), asked for %s (%d dimensions): %w", s.model, s.dim, model, dim, ErrModelMismatch)
		}
		m := tx.Bucket(bucketVMeta)
		if err := m.Put(keyModel, []byte(model)); err != nil {
			return err
		}
		return m.Put(keyDim, binary.BigEndian.AppendUint32(nil, uint32(dim)))
	})
	if err != nil {
		return fmt.Errorf("set vector store model: %w", err)
	}
	s.model, s.dim = model, dim
	s.mu.Lock()
	s.users = map[string]*userVectors{} // empty slabs of the old dimension
	s.mu.Unlock()
	return nil
}

// Reset removes every vector and the recorded model.
func (s *Embedded) Reset(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return ErrClosed
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketVectors, bucketVMeta} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reset vector store: %w", err)
	}
	s.model, s.dim = "", 0
	s.mu.Lock()
	s.users = map[string]*userVectors{} // queries still scanning an old slab finish on it
	s.mu.Unlock()
	return nil
}

// Upsert replaces the vectors of the listed sessions; see Store.
func (s *Embedded) Upsert(ctx context.Context, userID string, sessions map[string][]Vector) error {
	if err := s.write(ctx, userID, sessions); err != nil {
		return fmt.Errorf("upsert vectors: %w", err)
	}
	return nil
}

// Delete removes the listed sessions' vectors; see Store.
func (s *Embedded) Delete(ctx context.Context, userID string, sessionIDs []string) error {
	sessions := make(map[string][]Vector, len(sessionIDs))
	for _, id := range sessionIDs {
		sessions[id] = nil
	}
	if err := s.write(ctx, userID, sessions); err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	return nil
}

func (s *Embedded) write(ctx context.Context, userID string, sessions map[string][]Vector) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(sessions) == 0 {
		return nil
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed {
		return ErrClosed
	}
	rows := make(map[string][]Vector, len(sessions))
	for sid, vs := range sessions {
		if len(vs) > 0 && s.dim == 0 {
			return ErrNoMeta
		}
		rs, err := PrepareRows(sid, vs, s.dim)
		if err != nil {
			return err
		}
		rows[sid] = rs
	}
	u := s.lockUser(userID)
	defer u.writeMu.Unlock()
	// Write in key order: bbolt splits nodes only at commit, so a large
	// transaction inserting in random order memmoves quadratically.
	order := slices.SortedFunc(maps.Keys(rows), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) // the order of sessionPrefix
	})
	emptied := false // the write leaves the user without vectors
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketVectors)
		removes := false
		for _, sid := range order {
			if err := fillKept(b, userID, sid, rows[sid], s.dim); err != nil {
				return err
			}
			if err := putSession(b, userID, sid, rows[sid]); err != nil {
				return err
			}
			removes = removes || len(rows[sid]) == 0
		}
		if removes {
			prefix := userPrefix(userID)
			k, _ := b.Cursor().Seek(prefix)
			emptied = k == nil || !bytes.HasPrefix(k, prefix)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if emptied {
		s.drop(userID, u)
		return nil
	}
	if u.loaded { // loaded changes only under writeMu, which we hold
		u.mu.Lock()
		for sid, rs := range rows {
			u.replace(sid, rs, s.dim)
		}
		if u.codes == nil && len(u.rows) >= s.codesFrom {
			u.encodeSlab()
		}
		u.mu.Unlock()
	}
	return nil
}

// lockUser returns userID's entry with its writeMu held. An entry dropped
// meanwhile (drop) is not used: its user's next write or load takes a new
// one, so memory follows the commits.
func (s *Embedded) lockUser(userID string) *userVectors {
	for {
		u := s.user(userID)
		u.writeMu.Lock()
		if !u.gone {
			return u
		}
		u.writeMu.Unlock()
	}
}

// drop forgets the entry u of userID, whose user has no vectors left; the
// caller holds u.writeMu. Queries still scanning its slab finish on it (the
// user had no vectors anyway); the memory is freed after them.
func (s *Embedded) drop(userID string, u *userVectors) {
	u.gone = true
	s.mu.Lock()
	if s.users[userID] == u {
		delete(s.users, userID)
	}
	s.mu.Unlock()
}

// fillKept loads the stored values of rows given without values, checking
// that each is stored with the same text hash.
func fillKept(b *bolt.Bucket, userID, sid string, rs []Vector, dim int) error {
	prefix := sessionPrefix(userID, sid)
	for i := range rs {
		if rs[i].Values != nil {
			continue
		}
		raw := b.Get(binary.BigEndian.AppendUint32(bytes.Clone(prefix), uint32(rs[i].Ordinal)))
		if raw == nil {
			return fmt.Errorf("%w: session %q ordinal %d: no stored vector to keep", ErrInvalidVector, sid, rs[i].Ordinal)
		}
		hash, floats, err := decodeValue(raw)
		if err != nil {
			return fmt.Errorf("session %q ordinal %d: %w", sid, rs[i].Ordinal, err)
		}
		if hash != rs[i].TextHash || len(floats) != 4*dim {
			return fmt.Errorf("%w: session %q ordinal %d: stored vector has another text hash", ErrInvalidVector, sid, rs[i].Ordinal)
		}
		rs[i].Values = make([]float32, dim)
		decodeFloats(rs[i].Values, floats)
	}
	return nil
}

// putSession makes the stored vectors of (userID, sid) exactly rs.
func putSession(b *bolt.Bucket, userID, sid string, rs []Vector) error {
	prefix := sessionPrefix(userID, sid)
	keep := make(map[uint32]bool, len(rs))
	for _, r := range rs {
		keep[uint32(r.Ordinal)] = true
	}
	var stale [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) == len(prefix)+4 && keep[binary.BigEndian.Uint32(k[len(prefix):])] {
			continue
		}
		stale = append(stale, bytes.Clone(k))
	}
	for _, k := range stale { // not during the cursor walk: Delete moves the cursor
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	for _, r := range rs {
		if err := b.Put(binary.BigEndian.AppendUint32(bytes.Clone(prefix), uint32(r.Ordinal)), encodeValue(r.TextHash, r.Values)); err != nil {
			return err
		}
	}
	return nil
}

// Keys: uvarint(len(user)) user uvarint(len(session)) session ordinal(4, big endian).
func userPrefix(userID string) []byte {
	k := binary.AppendUvarint(make([]byte, 0, len(userID)+40), uint64(len(userID)))
	return append(k, userID...)
}

func sessionPrefix(userID, sid string) []byte {
	k := binary.AppendUvarint(userPrefix(userID), uint64(len(sid)))
	return append(k, sid...)
}

// splitKey returns the session id and ordinal of a key under a user prefix.
func splitKey(k []byte, userPrefixLen int) (sid string, ord int, ok bool) {
	rest := k[userPrefixLen:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) != n+4 {
		return "", 0, false
	}
	return string(rest[w : w+int(n)]), int(binary.BigEndian.Uint32(rest[w+int(n):])), true
}

// Values: version(1) uvarint(len(hash)) hash float32s (little endian).
func encodeValue(hash string, values []float32) []byte {
	v := make([]byte, 0, 1+binary.MaxVarintLen64+len(hash)+4*len(values))
	v = append(v, valueVersion)
	v = binary.AppendUvarint(v, uint64(len(hash)))
	v = append(v, hash...)
	for _, x := range values {
		v = binary.LittleEndian.AppendUint32(v, math.Float32bits(x))
	}
	return v
}

// decodeValue returns the hash and the raw float bytes of a value.
func decodeValue(v []byte) (hash string, floats []byte, err error) {
	if len(v) < 2 || v[0] != valueVersion {
		return "", nil, errors.New("unknown value format")
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || uint64(len(v)-1-w) < n {
		return "", nil, errors.New("truncated value")
	}
	floats = v[1+w+int(n):]
	if len(floats)%4 != 0 {
		return "", nil, errors.New("truncated vector")
	}
	return string(v[1+w : 1+w+int(n)]), floats, nil
}

// decodeFloats fills dst from the first 4×len(dst) bytes of src. On a
// little-endian machine the bytes are the floats: one copy (into dst, which
// is aligned, so no unaligned float is ever read).
func decodeFloats(dst []float32, src []byte) {
	if len(dst) > 0 && binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)), src[:4*len(dst)])
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// Hashes returns the stored text hash per ordinal; see Store.
func (s *Embedded) Hashes(ctx context.Context, userID, sessionID string) (map[int]string, error) {
	out := map[int]string{}
	err := s.session(ctx, userID, sessionID, func(ord int, hash string, _ []byte) {
		out[ord] = hash
	})
	if err != nil {
		return nil, fmt.Errorf("read vector hashes: %w", err)
	}
	return out, nil
}

// Stored returns the vectors of a session as stored, in ordinal order, with
// their text hashes: a caller holding the same texts (the bench's Weaviate
// peers) can reuse them instead of embedding again.
func (s *Embedded) Stored(ctx context.Context, userID, sessionID string) ([]Vector, error) {
	var out []Vector
	err := s.session(ctx, userID, sessionID, func(ord int, hash string, floats []byte) {
		vals := make([]float32, len(floats)/4)
		decodeFloats(vals, floats)
		out = append(out, Vector{SessionID: sessionID, Ordinal: ord, TextHash: hash, Values: vals})
	})
	if err != nil {
		return nil, fmt.Errorf("read vectors: %w", err)
	}
	slices.SortFunc(out, func(a, b Vector) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	return out, nil
}

// session calls fn with each stored row of one session, read from the file
// in one transaction; floats is only valid during the call.
func (s *Embedded) session(ctx context.Context, userID, sessionID string, fn func(ord int, hash string, floats []byte)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed {
		return ErrClosed
	}
	up := userPrefix(userID)
	prefix := sessionPrefix(userID, sessionID)
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketVectors).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			sid, ord, ok := splitKey(k, len(up))
			if !ok || sid != sessionID {
				continue // a longer session id sharing the prefix cannot happen (length-prefixed), but be exact
			}
			hash, floats, err := decodeValue(v)
			if err != nil {
				return fmt.Errorf("session %q ordinal %d: %w", sid, ord, err)
			}
			fn(ord, hash, floats)
		}
		return nil
	})
}

// Nearest returns the k chunks of userID most similar to q; see Searcher.
func (s *Embedded) Nearest(ctx context.Context, userID string, q []float32, k int) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.gate.RLock()
	closed, dim := s.closed, s.dim
	s.gate.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if k <= 0 || dim == 0 {
		return []Hit{}, nil
	}
	if len(q) != dim {
		return nil, fmt.Errorf("nearest: query has %d dimensions, the store holds %d: %w", len(q), dim, ErrDimensionMismatch)
	}
	qn, err := Normalised(q)
	if err != nil {
		return nil, fmt.Errorf("nearest: query: %w", err)
	}
	u, err := s.loaded(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("nearest: %w", err)
	}
	u.mu.RLock()
	defer u.mu.RUnlock()
	if u.dim != dim { // a Reset and SetMeta raced this query; its slab is gone
		return []Hit{}, nil
	}
	if u.codes != nil {
		hits, err := u.nearestCoded(ctx, s.db, userID, qn, k, s.workers)
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
			return nil, ErrClosed
		}
		return hits, err
	}
	return u.nearest(ctx, qn, k, s.workers)
}

// user returns the (possibly unloaded) entry of userID.
func (s *Embedded) user(userID string) *userVectors {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		u = &userVectors{sessions: map[string]*sessionRows{}}
		if s.users != nil { // nil after Close: hand out a throwaway entry
			s.users[userID] = u
		}
	}
	return u
}

// loaded returns userID's entry with its slab in memory, reading it from the
// file on first use.
func (s *Embedded) loaded(ctx context.Context, userID string) (*userVectors, error) {
	u := s.user(userID)
	u.mu.RLock()
	ok := u.loaded
	u.mu.RUnlock()
	if ok {
		return u, nil
	}
	// Lock order, as in write: gate, then the user's writeMu.
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	u = s.lockUser(userID) // no write of this user between our read and install
	defer u.writeMu.Unlock()
	if u.loaded {
		return u, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fresh := &userVectors{sessions: map[string]*sessionRows{}, dim: s.dim}
	up := userPrefix(userID)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketVectors).Cursor()
		n := 0
		for k, _ := c.Seek(up); k != nil && bytes.HasPrefix(k, up); k, _ = c.Next() {
			n++
		}
		fresh.rows = make([]rowRef, 0, n)
		// each calls fn with every stored row of the user, decoded into
		// one reused buffer.
		each := func(fn func(sid string, ord int, x []float32)) error {
			x := make([]float32, s.dim)
			for k, v := c.Seek(up); k != nil && bytes.HasPrefix(k, up); k, v = c.Next() {
				sid, ord, ok := splitKey(k, len(up))
				if !ok {
					return fmt.Errorf("malformed key %x", k)
				}
				_, raw, err := decodeValue(v)
				if err != nil {
					return fmt.Errorf("session %q ordinal %d: %w", sid, ord, err)
				}
				if len(raw) != 4*s.dim {
					return fmt.Errorf("session %q ordinal %d has %d dimensions, the store holds %d: %w", sid, ord, len(raw)/4, s.dim, ErrDimensionMismatch)
				}
				decodeFloats(x, raw)
				fn(sid, ord, x)
			}
			return nil
		}
		if n < s.codesFrom {
			fresh.data = make([]float32, 0, n*s.dim)
			return each(func(sid string, ord int, x []float32) {
				fresh.data = append(fresh.data, x...)
				fresh.addRow(sid, ord)
			})
		}
		// Two passes over the file, so that the full-precision rows are
		// never all in memory: the centre, then the codes.
		sum := make([]float64, s.dim)
		if err := each(func(_ string, _ int, x []float32) {
			for i, v := range x {
				sum[i] += float64(v)
			}
		}); err != nil {
			return err
		}
		fresh.codes = newSignCodes(s.dim, centreOf(sum, n))
		fresh.codes.grow(n)
		return each(func(sid string, ord int, x []float32) {
			fresh.codes.appendRow(x)
			fresh.addRow(sid, ord)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load vectors of user: %w", err)
	}
	u.mu.Lock()
	u.data, u.codes, u.rows, u.sessions, u.dim = fresh.data, fresh.codes, fresh.rows, fresh.sessions, fresh.dim
	u.loaded = true
	u.mu.Unlock()
	if len(fresh.rows) == 0 {
		// Nothing to keep: a user without vectors (all deleted, or never
		// embedded) costs no memory however often she searches.
		s.drop(userID, u)
	}
	return u, nil
}

// userVectors is one user's slab. writeMu serialises the user's writers and
// its loading; mu guards the slab (queries share it). loaded is written
// under both and may be read under either.
type userVectors struct {
	writeMu sync.Mutex
	mu      sync.RWMutex
	loaded  bool
	gone    bool // under writeMu: dropped from the store's users (drop)

	dim      int
	data     []float32  // len(rows) × dim, row-major, unit rows; nil when codes are kept
	codes    *signCodes // the rows' codes instead of data, from codesFrom rows on
	rows     []rowRef   // row -> (session, ordinal)
	sessions map[string]*sessionRows
}

type rowRef struct {
	sess *sessionRows
	ord  int32 // ordinals are stored as uint32; int32 covers any real session
}

type sessionRows struct {
	id   string
	rows []int32 // rows of this session in the slab, any order
}

func (u *userVectors) addRow(sid string, ord int) {
	sr := u.sessions[sid]
	if sr == nil {
		sr = &sessionRows{id: sid}
		u.sessions[sid] = sr
	}
	sr.rows = append(sr.rows, int32(len(u.rows)))
	u.rows = append(u.rows, rowRef{sess: sr, ord: int32(ord)})
}

// replace makes the slab hold exactly rs for session sid.
func (u *userVectors) replace(sid string, rs []Vector, dim int) {
	if sr := u.sessions[sid]; sr != nil {
		for len(sr.rows) > 0 {
			r := sr.rows[len(sr.rows)-1]
			sr.rows = sr.rows[:len(sr.rows)-1]
			u.swapRemove(int(r), dim)
		}
		delete(u.sessions, sid)
	}
	for _, r := range rs {
		if u.codes != nil {
			u.codes.appendRow(r.Values)
		} else {
			u.data = append(u.data, r.Values...)
		}
		u.addRow(sid, r.Ordinal)
	}
}

// swapRemove removes row r by moving the last row into its place. r must
// already be gone from its session's row list.
func (u *userVectors) swapRemove(r, dim int) {
	last := len(u.rows) - 1
	if r != last {
		if u.codes != nil {
			u.codes.moveRow(r, last)
		} else {
			copy(u.data[r*dim:(r+1)*dim], u.data[last*dim:])
		}
		moved := u.rows[last]
		u.rows[r] = moved
		i := slices.Index(moved.sess.rows, int32(last))
		moved.sess.rows[i] = int32(r)
	}
	u.rows = u.rows[:last]
	if u.codes != nil {
		u.codes.truncate(last)
	} else {
		u.data = u.data[:last*dim]
	}
}

// candidate is a row and its score during a scan.
type candidate struct {
	score float32
	row   int32
}

// nearest scans the slab (caller holds u.mu for reading).
func (u *userVectors) nearest(ctx context.Context, q []float32, k, workers int) ([]Hit, error) {
	n := len(u.rows)
	if n == 0 {
		return []Hit{}, nil
	}
	k = min(k, n)
	cands, err := splitScan(n, workers, func(lo, hi int) ([]candidate, error) { return u.scan(ctx, q, lo, hi, k) })
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, len(cands))
	for i, c := range cands {
		ref := u.rows[c.row]
		hits[i] = Hit{SessionID: ref.sess.id, Ordinal: int(ref.ord), Score: float64(c.score)}
	}
	return bestHits(hits, k), nil
}

// bestHits sorts hits best first and keeps k.
func bestHits(hits []Hit, k int) []Hit {
	slices.SortFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.Ordinal, b.Ordinal))
	})
	return hits[:min(k, len(hits))]
}

// splitScan runs scan over rows [0, n), split across up to workers
// goroutines when n reaches parallelMinRows, and returns what the parts
// found together.
func splitScan(n, workers int, scan func(lo, hi int) ([]candidate, error)) ([]candidate, error) {
	parts := 1
	if n >= parallelMinRows {
		parts = min(workers, n/scanBlock)
	}
	if parts <= 1 {
		return scan(0, n)
	}
	per := (n + parts - 1) / parts
	results := make([][]candidate, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*per, min((p+1)*per, n)
		wg.Go(func() { results[p], errs[p] = scan(lo, hi) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // ctx.Err(): scans fail only on cancellation
		}
	}
	return slices.Concat(results...), nil
}

// scan returns the top k candidates among rows [lo, hi).
func (u *userVectors) scan(ctx context.Context, q []float32, lo, hi, k int) ([]candidate, error) {
	dim := u.dim
	scores := make([]float32, min(scanBlock, hi-lo))
	// A row scoring the same as the worst kept one does not displace it;
	// Nearest sorts what the scans return.
	top := topk.New(k, func(a, b candidate) bool { return a.score < b.score })
	x := blas32.Vector{N: dim, Inc: 1, Data: q}
	for start := lo; start < hi; start += scanBlock {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m := min(scanBlock, hi-start)
		a := blas32.General{Rows: m, Cols: dim, Stride: dim, Data: u.data[start*dim : (start+m)*dim]}
		blas32.Gemv(blas.NoTrans, 1, a, x, 0, blas32.Vector{N: m, Inc: 1, Data: scores[:m]})
		for i, sc := range scores[:m] {
			top.Push(candidate{score: sc, row: int32(start + i)})
		}
	}
	return top.Items(), nil
}

// EmbeddedStats describes the store's memory.
type EmbeddedStats struct {
	Users      int   // users whose slab or codes are in memory
	Vectors    int   // vectors in memory
	CodedUsers int   // users kept as sign codes (from CodesFrom vectors)
	SlabBytes  int64 // capacity of the slabs (4 bytes per float32)
	CodeBytes  int64 // capacity of the sign codes (dim/8 + 8 bytes per vector)
	IndexBytes int64 // estimate of the row and session index
}

// Stats reports what the store keeps in memory.
func (s *Embedded) Stats() EmbeddedStats {
	s.mu.Lock()
	users := make([]*userVectors, 0, len(s.users))
	for _, u := range s.users {
		users = append(users, u)
	}
	s.mu.Unlock()
	var st EmbeddedStats
	for _, u := range users {
		u.mu.RLock()
		if u.loaded {
			st.Users++
			st.Vectors += len(u.rows)
			st.SlabBytes += int64(cap(u.data)) * 4
			if u.codes != nil {
				st.CodedUsers++
				st.CodeBytes += u.codes.bytes()
			}
			// rowRef (16) + the row's entry in its session list (4), plus
			// per session the struct, its map entry and id.
			st.IndexBytes += int64(cap(u.rows))*16 + int64(len(u.rows))*4
			for id := range u.sessions {
				st.IndexBytes += 48 + 48 + int64(len(id))
			}
		}
		u.mu.RUnlock()
	}
	return st
}

// Check verifies the store's invariants: every key and value decodes, every
// vector has the recorded dimension and unit length, a model is recorded
// when vectors exist, and every slab in memory holds exactly the user's
// stored vectors. Tests run it at cleanup; it reads the whole file.
func (s *Embedded) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.gate.Lock() // no writes while we compare memory with the file
	defer s.gate.Unlock()
	if s.closed {
		return ErrClosed
	}
	var problems []error
	type key struct {
		sid string
		ord int
	}
	stored := map[string]map[key][]float32{} // user -> vectors
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketVectors).ForEach(func(k, v []byte) error {
			n, w := binary.Uvarint(k)
			if w <= 0 || uint64(len(k)-w) < n {
				problems = append(problems, fmt.Errorf("malformed key %x", k))
				return nil
			}
			user := string(k[w : w+int(n)])
			sid, ord, ok := splitKey(k, w+int(n))
			if !ok {
				problems = append(problems, fmt.Errorf("malformed key %x", k))
				return nil
			}
			_, raw, err := decodeValue(v)
			if err != nil {
				problems = append(problems, fmt.Errorf("user %q session %q ordinal %d: %v", user, sid, ord, err))
				return nil
			}
			if s.dim == 0 {
				problems = append(problems, fmt.Errorf("user %q session %q ordinal %d stored without a recorded model", user, sid, ord))
				return nil
			}
			if len(raw) != 4*s.dim {
				problems = append(problems, fmt.Errorf("user %q session %q ordinal %d has %d dimensions, want %d", user, sid, ord, len(raw)/4, s.dim))
				return nil
			}
			vals := make([]float32, s.dim)
			decodeFloats(vals, raw)
			var sum float64
			for _, x := range vals {
				sum += float64(x) * float64(x)
			}
			if math.Abs(sum-1) > 1e-4 {
				problems = append(problems, fmt.Errorf("user %q session %q ordinal %d has norm² %g, want 1", user, sid, ord, sum))
			}
			if stored[user] == nil {
				stored[user] = map[key][]float32{}
			}
			stored[user][key{sid, ord}] = vals
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("check vector store: %w", err)
	}
	s.mu.Lock()
	users := maps.Clone(s.users)
	s.mu.Unlock()
	for user, u := range users {
		u.mu.RLock()
		if u.loaded {
			mine := stored[user]
			problems = append(problems, u.check(user, s.dim, len(mine), func(sid string, ord int) ([]float32, bool) {
				v, ok := mine[key{sid, ord}]
				return v, ok
			})...)
		}
		u.mu.RUnlock()
	}
	return errors.Join(problems...)
}

// check compares a loaded slab with the stored vectors of its user.
func (u *userVectors) check(user string, dim, storedCount int, stored func(sid string, ord int) ([]float32, bool)) []error {
	var problems []error
	if len(u.rows) != storedCount {
		problems = append(problems, fmt.Errorf("user %q: slab has %d rows, file has %d vectors", user, len(u.rows), storedCount))
	}
	if u.codes != nil {
		c := u.codes
		if len(u.data) != 0 || len(c.head)+len(c.tail) != len(u.rows)*c.words || len(c.head) != len(u.rows)*c.headWords ||
			len(c.norm) != len(u.rows) || len(c.dotCentre) != len(u.rows) {
			problems = append(problems, fmt.Errorf("user %q: %d floats, %d+%d code words, %d norms for %d coded rows", user, len(u.data), len(c.head), len(c.tail), len(c.norm), len(u.rows)))
			return problems
		}
	} else if len(u.data) != len(u.rows)*dim {
		problems = append(problems, fmt.Errorf("user %q: slab has %d floats for %d rows of %d", user, len(u.data), len(u.rows), dim))
		return problems
	}
	seen := map[*sessionRows]map[int32]bool{}
	for r, ref := range u.rows {
		if u.sessions[ref.sess.id] != ref.sess {
			problems = append(problems, fmt.Errorf("user %q row %d: session %q not indexed", user, r, ref.sess.id))
		}
		if !slices.Contains(ref.sess.rows, int32(r)) {
			problems = append(problems, fmt.Errorf("user %q row %d: missing from session %q's rows", user, r, ref.sess.id))
		}
		if seen[ref.sess] == nil {
			seen[ref.sess] = map[int32]bool{}
		}
		if seen[ref.sess][ref.ord] {
			problems = append(problems, fmt.Errorf("user %q session %q ordinal %d: two rows", user, ref.sess.id, ref.ord))
		}
		seen[ref.sess][ref.ord] = true
		want, ok := stored(ref.sess.id, int(ref.ord))
		if !ok {
			problems = append(problems, fmt.Errorf("user %q session %q ordinal %d: in memory, not in the file", user, ref.sess.id, ref.ord))
			continue
		}
		if u.codes != nil {
			if !u.codes.holds(r, want) {
				problems = append(problems, fmt.Errorf("user %q session %q ordinal %d: code and file differ", user, ref.sess.id, ref.ord))
			}
		} else if !slices.Equal(want, u.data[r*dim:(r+1)*dim]) {
			problems = append(problems, fmt.Errorf("user %q session %q ordinal %d: memory and file differ", user, ref.sess.id, ref.ord))
		}
	}
	for id, sr := range u.sessions {
		if len(sr.rows) == 0 {
			problems = append(problems, fmt.Errorf("user %q session %q: empty entry left behind", user, id))
		}
		if len(sr.rows) != len(seen[sr]) {
			problems = append(problems, fmt.Errorf("user %q session %q: lists %d rows, %d point at it", user, id, len(sr.rows), len(seen[sr])))
		}
	}
	return problems
}
