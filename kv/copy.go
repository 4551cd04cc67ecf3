package kv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"
)

// Copy moves every record of one store into another: a bbolt file into
// PostgreSQL, or back (hindsight migrate). It copies bucket by bucket, in
// key order, in bounded batches; each batch is one transaction of the
// destination that also records how far the copy got, so a copy that was
// interrupted (cancelled, killed, the database gone) continues from its last
// batch when run again, and a batch written twice is written the same way
// (every write is a Put of the same key and value): nothing is duplicated.
//
// Records are copied as their logical values, not as stored bytes: session
// and message records are expanded with the source's codec and compressed
// again with the destination's (codec.go), since a bbolt file's records may
// name a compression dictionary that a PostgreSQL store does not hold. The
// dictionary itself and the copy's own progress record are not copied.
// Bucket sequences are raised in the destination to at least the source's,
// so the numbers a store hands out after the copy (session numbers, outbox
// versions) are new.
//
// At the end both stores are read again and compared bucket by bucket: the
// number of keys and a SHA-256 of the keys and logical values in key order.
// Copy returns ErrCopyMismatch when they differ.

// Errors of Copy. Callers branch on them with errors.Is.
var (
	// ErrDestinationNotEmpty: the destination holds records that are not
	// the source's, and CopyOptions.Force was not set.
	ErrDestinationNotEmpty = errors.New("the destination already holds other records")
	// ErrCopyMismatch: after the copy the destination's checksums differ
	// from the source's (the source changed meanwhile, or the destination
	// held other records in the buckets copied before a resume).
	ErrCopyMismatch = errors.New("the copy differs from the source")
)

// metaCopyProgress is the meta key of an unfinished copy's progress, in
// its destination (copyMark as JSON). It is removed once the copy is
// verified.
const metaCopyProgress = "migrate.progress"

// encodedBuckets hold records in codec.go's stored form; every other
// bucket's values are copied as they are.
var encodedBuckets = [][]byte{bucketSessions, bucketMessages}

// Copy batches: a batch ends at copyBatchKeys keys or once its values pass
// copyBatchBytes, whichever comes first.
const (
	copyBatchKeys  = 1000
	copyBatchBytes = 4 << 20
)

// CopyOptions configures Copy.
type CopyOptions struct {
	// From names the source. It is recorded in the destination while the
	// copy is unfinished, so a copy is resumed only from the same source;
	// give it no secrets (a PostgreSQL address with its password redacted).
	From string
	// Force empties a destination that holds other records (or an
	// unfinished copy, even from this source) before copying, instead of
	// refusing (or resuming) it.
	Force bool
	// Progress, when set, is called after each batch with the bucket being
	// copied, the keys of it copied so far and its number of keys.
	Progress func(bucket string, done, total int)
	// BatchKeys caps the keys of one batch; 0 means 1000.
	BatchKeys int
}

// BucketSum is a bucket's number of keys and a SHA-256 of its keys and
// logical values in key order.
type BucketSum struct {
	Bucket string
	Keys   int
	Sum    [sha256.Size]byte
}

// String is the sum as Copy's report prints it: the bucket, its keys and
// the first 16 hex digits of its checksum.
func (b BucketSum) String() string {
	return fmt.Sprintf("%-20s %10d keys  sha256 %s", b.Bucket, b.Keys, hex.EncodeToString(b.Sum[:8]))
}

// CopyReport is what Copy did.
type CopyReport struct {
	// Resumed: an unfinished copy from the same source was continued.
	Resumed bool
	// AlreadyCopied: the destination held exactly the source's records,
	// so nothing was written.
	AlreadyCopied bool
	// Emptied: Force removed the destination's records first.
	Emptied bool
	// Source and Destination are the checksums read at the end, one per
	// bucket in the same order.
	Source, Destination []BucketSum
}

// Mismatched returns the buckets whose sums differ.
func (r CopyReport) Mismatched() []string {
	var out []string
	for i, s := range r.Source {
		if i >= len(r.Destination) || r.Destination[i] != s {
			out = append(out, s.Bucket)
		}
	}
	return out
}

// copyMark is an unfinished copy's progress: every bucket before Bucket
// (in allBuckets' order) is copied, and Bucket's keys up to After.
type copyMark struct {
	From   string `json:"from"`
	Bucket string `json:"bucket"`
	After  []byte `json:"after,omitempty"`
}

// Copy copies every record of from into to; see the comment at the top of
// this file. Neither store may be written by anyone else meanwhile (stop
// the servers; a bbolt file's lock keeps a server off it).
func Copy(ctx context.Context, from, to *Store, opts CopyOptions) (CopyReport, error) {
	var rep CopyReport
	if opts.BatchKeys <= 0 {
		opts.BatchKeys = copyBatchKeys
	}
	if err := from.knownBuckets(ctx); err != nil {
		return rep, fmt.Errorf("copy: the source: %w", err)
	}
	if m, err := from.copyMark(ctx); err != nil {
		return rep, fmt.Errorf("copy: read the source: %w", err)
	} else if m != nil {
		return rep, fmt.Errorf("copy: the source is the destination of an unfinished copy from %s: finish that copy first", m.From)
	}
	mark, err := to.copyMark(ctx)
	if err != nil {
		return rep, fmt.Errorf("copy: read the destination: %w", err)
	}
	mustClear := false
	switch {
	case mark != nil && mark.From == opts.From && !opts.Force:
		rep.Resumed = true
	case mark != nil && !opts.Force:
		return rep, fmt.Errorf("copy: the destination holds an unfinished copy from %s: %w (run it again with that source, or empty the destination with --force)", mark.From, ErrDestinationNotEmpty)
	case mark != nil:
		mustClear = true
	case mark == nil:
		empty, err := to.empty(ctx)
		if err != nil {
			return rep, fmt.Errorf("copy: read the destination: %w", err)
		}
		if empty {
			break
		}
		// Perhaps the copy ran to the end before: then there is nothing
		// to do but say so.
		rep.Source, rep.Destination, err = sums(ctx, from, to)
		if err != nil {
			return rep, err
		}
		if len(rep.Mismatched()) == 0 {
			rep.AlreadyCopied = true
			return rep, nil
		}
		if !opts.Force {
			return rep, fmt.Errorf("copy: %w (buckets that differ: %s); choose an empty destination, or empty this one with --force", ErrDestinationNotEmpty, strings.Join(rep.Mismatched(), ", "))
		}
		rep.Source, rep.Destination = nil, nil
		mustClear = true
	}
	if mustClear {
		if err := to.clear(ctx, opts.BatchKeys); err != nil {
			return rep, fmt.Errorf("copy: empty the destination: %w", err)
		}
		rep.Emptied, mark = true, nil
	}
	if mark == nil {
		mark = &copyMark{From: opts.From, Bucket: string(allBuckets[0])}
	}
	start := slices.IndexFunc(allBuckets, func(b []byte) bool { return string(b) == mark.Bucket })
	if start < 0 {
		return rep, fmt.Errorf("copy: the destination's progress names bucket %q, which this version does not know: run it again with --force", mark.Bucket)
	}
	for i := start; i < len(allBuckets); i++ {
		after := mark.After
		if i > start {
			after = nil
		}
		if err := copyBucket(ctx, from, to, allBuckets[i], after, opts); err != nil {
			return rep, fmt.Errorf("copy %s: %w", allBuckets[i], err)
		}
	}
	if err := raiseSequences(ctx, from, to); err != nil {
		return rep, fmt.Errorf("copy: sequences: %w", err)
	}
	rep.Source, rep.Destination, err = sums(ctx, from, to)
	if err != nil {
		return rep, err
	}
	if bad := rep.Mismatched(); len(bad) > 0 {
		return rep, fmt.Errorf("copy: %w in %s", ErrCopyMismatch, strings.Join(bad, ", "))
	}
	// Verified: the copy is finished.
	err = to.be.update(ctx, func(t txn) error { return t.bucket(bucketMeta).Delete([]byte(metaCopyProgress)) })
	if err != nil {
		return rep, fmt.Errorf("copy: finish: %w", err)
	}
	return rep, nil
}

// copyBucket copies the keys of bucket name after after (all of them when
// nil) in batches, each written with the progress it makes.
func copyBucket(ctx context.Context, from, to *Store, name, after []byte, opts CopyOptions) error {
	encoded := slices.ContainsFunc(encodedBuckets, func(b []byte) bool { return bytes.Equal(b, name) })
	total, done := 0, 0
	err := from.be.view(ctx, func(t txn) error {
		if b := t.bucket(name); b != nil {
			total = b.KeyN()
			if after != nil {
				done = countThrough(t, b, name, after)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var keys, values [][]byte
		last := false
		err := from.be.view(ctx, func(t txn) error {
			keys, values = keys[:0], values[:0]
			b := t.bucket(name)
			if b == nil {
				last = true
				return nil
			}
			cd := from.codec.Load()
			c := b.Cursor()
			k, v := c.First()
			if after != nil {
				k, v = c.Seek(after)
				if bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			size := 0
			for ; k != nil; k, v = c.Next() {
				if skipped(name, k) {
					continue
				}
				if len(keys) == opts.BatchKeys || size >= copyBatchBytes {
					return nil
				}
				lv, err := logical(cd, encoded, v)
				if err != nil {
					return fmt.Errorf("key %x: %w", k, err)
				}
				keys, values = append(keys, bytes.Clone(k)), append(values, lv)
				size += len(k) + len(lv)
			}
			last = true
			return nil
		})
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		next := copyMark{From: opts.From, Bucket: string(name)}
		if len(keys) > 0 {
			next.After = keys[len(keys)-1]
		} else {
			next.After = after
		}
		if last {
			// The bucket is done: the next run starts at the next one.
			if i := slices.IndexFunc(allBuckets, func(b []byte) bool { return bytes.Equal(b, name) }); i+1 < len(allBuckets) {
				next = copyMark{From: opts.From, Bucket: string(allBuckets[i+1])}
			}
		}
		mark, err := json.Marshal(next)
		if err != nil {
			return err
		}
		cd := to.codec.Load()
		stored := values
		if encoded {
			stored = make([][]byte, len(values))
			for i, v := range values {
				stored[i] = cd.compress(bytes.Clone(v))
			}
		}
		err = to.be.update(ctx, func(t txn) error {
			if err := putAll(t, name, keys, stored); err != nil {
				return err
			}
			return t.bucket(bucketMeta).Put([]byte(metaCopyProgress), mark)
		})
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		done += len(keys)
		if opts.Progress != nil {
			opts.Progress(string(name), done, total)
		}
		if last {
			return nil
		}
		after = next.After
	}
}

// putAll puts the keys with their values into bucket name: in
// PostgreSQL in one statement (a round trip per row would bound the copy
// by the network's latency), elsewhere one Put at a time.
func putAll(t txn, name []byte, keys, values [][]byte) error {
	pt, ok := t.(*pgTxn)
	if !ok {
		b := t.bucket(name)
		for i, k := range keys {
			if err := b.Put(k, values[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if pt.err != nil {
		return pt.err
	}
	if len(keys) == 0 {
		return nil
	}
	pt.gen++
	_, err := pt.tx.Exec(pt.ctx, `INSERT INTO kv_entries (bucket, key, value)
		SELECT $1, k, coalesce(v, '') FROM unnest($2::bytea[], $3::bytea[]) AS r(k, v)
		ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value`, string(name), keys, values)
	if err != nil {
		return pt.fail("write "+string(name), err)
	}
	return nil
}

// countThrough counts the keys of bucket b (named name) up to and
// including after: in PostgreSQL with one query rather than reading every
// record before a resumed copy's place.
func countThrough(t txn, b bucket, name, after []byte) int {
	if pt, ok := t.(*pgTxn); ok {
		if pt.err != nil {
			return 0
		}
		var n int64
		err := pt.tx.QueryRow(pt.ctx, `SELECT count(*) FROM kv_entries WHERE bucket = $1 AND key <= $2`, string(name), after).Scan(&n)
		if err != nil {
			pt.fail("count "+string(name), err)
			return 0
		}
		return int(n)
	}
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, after) <= 0; k, _ = c.Next() {
		n++
	}
	return n
}

// logical returns a copy of the value v as the records mean it: the JSON
// of an encoded record, the bytes of any other.
func logical(cd *codec, encoded bool, v []byte) ([]byte, error) {
	if !encoded || len(v) == 0 || v[0] != formatZstd {
		// Not compressed (plain JSON records of older files, too): expand
		// would return v itself, which is the transaction's memory.
		return bytes.Clone(v), nil
	}
	return cd.expand(v)
}

// skipped reports whether the key is a store's own rather than a record:
// the compression dictionary (each store has its own, or none) and an
// unfinished copy's progress.
func skipped(bucket, key []byte) bool {
	return bytes.Equal(bucket, bucketMeta) && (string(key) == metaDict || string(key) == metaCopyProgress)
}

// copyMark reads the progress of an unfinished copy into s, nil if none.
func (s *Store) copyMark(ctx context.Context) (*copyMark, error) {
	var m *copyMark
	err := s.be.view(ctx, func(t txn) error {
		b := t.bucket(bucketMeta)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(metaCopyProgress))
		if v == nil {
			return nil
		}
		m = new(copyMark)
		if err := json.Unmarshal(v, m); err != nil {
			return fmt.Errorf("the progress of an unfinished copy is unreadable: %w", err)
		}
		return nil
	})
	return m, err
}

// empty reports whether s holds no records (a store's own keys aside).
func (s *Store) empty(ctx context.Context) (bool, error) {
	empty := true
	err := s.be.view(ctx, func(t txn) error {
		for _, name := range allBuckets {
			b := t.bucket(name)
			if b == nil {
				continue
			}
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if !skipped(name, k) {
					empty = false
					return nil
				}
			}
		}
		return nil
	})
	return empty, err
}

// clear deletes every record of s (its compression dictionary stays: the
// store's codec uses it), a batch of keys per transaction.
func (s *Store) clear(ctx context.Context, batch int) error {
	for _, name := range allBuckets {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := 0
			err := s.be.update(ctx, func(t txn) error {
				n = 0
				b := t.bucket(name)
				if b == nil {
					return nil
				}
				var keys [][]byte
				c := b.Cursor()
				for k, _ := c.First(); k != nil && len(keys) < batch; k, _ = c.Next() {
					if !bytes.Equal(name, bucketMeta) || string(k) != metaDict {
						keys = append(keys, bytes.Clone(k))
					}
				}
				for _, k := range keys {
					if err := b.Delete(k); err != nil {
						return err
					}
				}
				n = len(keys)
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if n == 0 {
				break
			}
		}
	}
	return nil
}

// Checksums returns the number of keys and the SHA-256 of each bucket's
// keys and logical values in key order (the compression dictionary and an
// unfinished copy's progress left out), read in one transaction. Two
// stores holding the same records have the same checksums, whatever they
// keep them in.
func (s *Store) Checksums(ctx context.Context) ([]BucketSum, error) {
	out := make([]BucketSum, 0, len(allBuckets))
	err := s.be.view(ctx, func(t txn) error {
		out = out[:0]
		cd := s.codec.Load()
		for _, name := range allBuckets {
			sum := BucketSum{Bucket: string(name)}
			h := sha256.New()
			encoded := slices.ContainsFunc(encodedBuckets, func(b []byte) bool { return bytes.Equal(b, name) })
			if b := t.bucket(name); b != nil {
				c := b.Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					if skipped(name, k) {
						continue
					}
					lv := v
					if encoded {
						var err error
						if lv, err = cd.expand(v); err != nil {
							return fmt.Errorf("%s key %x: %w", name, k, err)
						}
					}
					h.Write(binary.AppendUvarint(nil, uint64(len(k))))
					h.Write(k)
					h.Write(binary.AppendUvarint(nil, uint64(len(lv))))
					h.Write(lv)
					sum.Keys++
				}
			}
			h.Sum(sum.Sum[:0])
			out = append(out, sum)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checksums: %w", err)
	}
	return out, nil
}

// sums reads the checksums of both stores.
func sums(ctx context.Context, from, to *Store) (src, dst []BucketSum, err error) {
	if src, err = from.Checksums(ctx); err != nil {
		return nil, nil, fmt.Errorf("copy: the source's %w", err)
	}
	if dst, err = to.Checksums(ctx); err != nil {
		return nil, nil, fmt.Errorf("copy: the destination's %w", err)
	}
	return src, dst, nil
}

// knownBuckets fails when s holds a bucket this version does not know
// (written by a newer Hindsight): Copy would leave its records behind.
func (s *Store) knownBuckets(ctx context.Context) error {
	var names []string
	switch be := s.be.(type) {
	case boltBackend:
		err := be.db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				names = append(names, string(name))
				return nil
			})
		})
		if err != nil {
			return err
		}
	case *pgBackend:
		// The distinct buckets by skipping through the primary key.
		rows, err := be.pool.Query(ctx, `WITH RECURSIVE b(name) AS (
				SELECT min(bucket) FROM kv_entries
				UNION ALL
				SELECT (SELECT min(bucket) FROM kv_entries WHERE bucket > b.name) FROM b WHERE b.name IS NOT NULL
			) SELECT name FROM b WHERE name IS NOT NULL`)
		if err != nil {
			return err
		}
		if names, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
	}
	for _, n := range names {
		if n == string(bucketClaims) {
			continue // nodes' leases on outbox entries: not records, not copied
		}
		if !slices.ContainsFunc(allBuckets, func(b []byte) bool { return string(b) == n }) {
			return fmt.Errorf("it holds records in %q, which this version of Hindsight does not know: copy with the version that wrote them", n)
		}
	}
	return nil
}

// raiseSequences raises to's bucket sequences to at least from's, so what
// NextSequence hands out after the copy is larger than any number the
// copied records hold. bbolt keeps a sequence per bucket; PostgreSQL one
// for all (postgres.go), raised to the largest of the source's.
func raiseSequences(ctx context.Context, from, to *Store) error {
	seqs := map[string]uint64{}
	switch be := from.be.(type) {
	case boltBackend:
		err := be.db.View(func(tx *bolt.Tx) error {
			for _, name := range allBuckets {
				if b := tx.Bucket(name); b != nil {
					seqs[string(name)] = b.Sequence()
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	case *pgBackend:
		n, err := be.sequence(ctx)
		if err != nil {
			return err
		}
		for _, name := range allBuckets {
			seqs[string(name)] = n
		}
	}
	switch be := to.be.(type) {
	case boltBackend:
		return be.db.Update(func(tx *bolt.Tx) error {
			for name, n := range seqs {
				if b := tx.Bucket([]byte(name)); b != nil && b.Sequence() < n {
					if err := b.SetSequence(n); err != nil {
						return err
					}
				}
			}
			return nil
		})
	case *pgBackend:
		var top uint64
		for _, n := range seqs {
			top = max(top, n)
		}
		cur, err := be.sequence(ctx)
		if err != nil || cur >= top {
			return err
		}
		_, err = be.pool.Exec(ctx, `SELECT setval('kv_sequence', $1, true)`, int64(top))
		return err
	}
	return nil
}

// sequence is the largest number kv_sequence has handed out (0 if none).
func (b *pgBackend) sequence(ctx context.Context) (uint64, error) {
	var last int64
	var called bool
	if err := b.pool.QueryRow(ctx, `SELECT last_value, is_called FROM kv_sequence`).Scan(&last, &called); err != nil {
		return 0, err
	}
	if !called {
		last--
	}
	return uint64(max(last, 0)), nil
}
