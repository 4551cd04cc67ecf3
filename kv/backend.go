package kv

import (
	"context"

	bolt "go.etcd.io/bbolt"
)

// The records are kept in named buckets of ordered keys, which is what
// bbolt offers. Tx and everything above it read and write through the three
// small interfaces below, so the same domain code runs on a bbolt file
// (boltBackend, a thin pass-through: the methods are bbolt's own) and on
// PostgreSQL (pgBackend, postgres.go). Keys compare as bytes
// (bytes.Compare) in both.

// backend is where a Store keeps its buckets.
type backend interface {
	// view runs fn in a read-only transaction that sees one snapshot.
	view(ctx context.Context, fn func(txn) error) error
	// update runs fn in a read-write transaction and commits it when fn
	// returns nil; fn's writes are rolled back when it returns an error.
	update(ctx context.Context, fn func(txn) error) error
	close() error
}

// txn is one transaction of a backend.
type txn interface {
	// bucket returns the named bucket, nil when it does not exist (in a
	// read-only bbolt file of an older version).
	bucket(name []byte) bucket
	writable() bool
}

// bucket is an ordered map of byte keys to byte values. Keys and values it
// returns are valid until the transaction ends (bbolt hands out slices of
// its memory map); callers copy what they keep. A missing key reads as nil,
// a key stored with an empty value as an empty, non-nil slice.
type bucket interface {
	Get(key []byte) []byte
	Put(key, value []byte) error
	Delete(key []byte) error
	// NextSequence returns a number greater than any it returned before
	// for this bucket (committed or not: a rolled-back write may leave gaps).
	NextSequence() (uint64, error)
	ForEach(fn func(k, v []byte) error) error
	Cursor() cursor
	// KeyN is the number of keys.
	KeyN() int
}

// cursor walks a bucket in key order. Each move returns the key and value
// it lands on, nil when it falls off either end.
type cursor interface {
	First() (key, value []byte)
	Last() (key, value []byte)
	Next() (key, value []byte)
	Prev() (key, value []byte)
	// Seek moves to the first key >= seek.
	Seek(seek []byte) (key, value []byte)
}

// boltBackend keeps the buckets in a bbolt file.
type boltBackend struct{ db *bolt.DB }

func (b boltBackend) view(_ context.Context, fn func(txn) error) error {
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltTxn{tx}) })
}

func (b boltBackend) update(_ context.Context, fn func(txn) error) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		tune(tx)
		return fn(boltTxn{tx})
	})
}

func (b boltBackend) close() error { return b.db.Close() }

type boltTxn struct{ tx *bolt.Tx }

func (t boltTxn) bucket(name []byte) bucket {
	b := t.tx.Bucket(name)
	if b == nil {
		return nil // a nil interface, not a boltBucket holding nil
	}
	return boltBucket{b}
}

func (t boltTxn) writable() bool { return t.tx.Writable() }

// boltBucket is bbolt's bucket; only Cursor and KeyN differ in signature.
type boltBucket struct{ *bolt.Bucket }

func (b boltBucket) Cursor() cursor { return b.Bucket.Cursor() }
func (b boltBucket) KeyN() int      { return b.Bucket.Stats().KeyN }

// How full bbolt packs a bucket's pages when it splits them. bbolt's
// default, half full, leaves room for keys that land in the middle of a
// page; a fuller split suits keys that arrive in order, and leaves pages
// that are split again and again when they do not. Message keys arrive in
// order (msgkeys.go: a session's number, then seq, both only grow), so
// messages are packed full. msgext keys are in order per session but a
// session's external ids are not, and a live sync adds them one at a time,
// so its pages keep a little room. The ordering index grows at the end
// when sessions are written live (updatedAt is now); an import with
// historical dates writes into the middle, so it too keeps some. Measured
// on 10,000 generated sessions (bytes of pages allocated, keys by session
// number): messages 49.8 MB at 0.9, 44.7 MB at 1.0; msgext 16.9 MB at 0.8,
// 15.1 MB at 0.9, 13.7 MB at 1.0.
const (
	messageFill = 1.0
	msgExtFill  = 0.9
	orderFill   = 0.9
)

// tune sets the fill of the buckets above for this write transaction
// (bbolt keeps the setting on the transaction's bucket handle).
func tune(tx *bolt.Tx) {
	for _, b := range []struct {
		name []byte
		fill float64
	}{{bucketMessages, messageFill}, {bucketMsgExt, msgExtFill}, {bucketOrder, orderFill}} {
		if bk := tx.Bucket(b.name); bk != nil {
			bk.FillPercent = b.fill
		}
	}
}
