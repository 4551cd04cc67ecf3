package kv

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// bucketRedactions counts the secrets redaction removed from each user's
// writes, by rule: uid + rule id -> count (8 bytes, big endian). A write adds
// its counts in its own transaction, so the counts agree with the records.
var bucketRedactions = []byte("redactions")

// AddRedactions adds counts (by rule id) to the user's totals.
func (tx *Tx) AddRedactions(userID string, counts map[string]int) error {
	b := tx.bucket(bucketRedactions)
	for _, rule := range slices.Sorted(maps.Keys(counts)) {
		n := counts[rule]
		if n <= 0 {
			continue
		}
		key := cat([]byte(userID), []byte(rule))
		var total uint64
		if v := b.Get(key); len(v) == 8 {
			total = binary.BigEndian.Uint64(v)
		}
		if err := b.Put(key, u64(total+uint64(n))); err != nil {
			return fmt.Errorf("count redactions: %w", err)
		}
	}
	return nil
}

// Redactions returns the user's totals by rule id (empty when none).
func (tx *Tx) Redactions(userID string) map[string]int64 {
	out := map[string]int64{}
	b := tx.bucket(bucketRedactions)
	if b == nil { // a read-only file of a version without the bucket
		return out
	}
	prefix := []byte(userID)
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && len(k) > len(prefix) && string(k[:len(prefix)]) == userID; k, v = c.Next() {
		if len(v) == 8 {
			out[string(k[len(prefix):])] = int64(binary.BigEndian.Uint64(v))
		}
	}
	return out
}
