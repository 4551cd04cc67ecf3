package kv

import (
	"bytes"
	"encoding/binary"
)

// bucketIndexTail holds, per session, where the indexer may start reading
// it: uid+sid -> IndexTail. The full-text index cuts a long session into
// volumes (index/volumes.go); an append changes only the last, so the
// indexer reads the session's messages from the first message of its last
// volume, not from the start. The mark is derived data: a missing one
// means "read the whole session", which is always right.
//
// Value: seq(8) | chunk(8) | volume(8) | edits(8) | title hash. A value
// with seq 0 holds no mark, only the count of edits.
var bucketIndexTail = []byte("indextail")

// IndexTail is where the last volume of a session's full-text documents
// begins: at the message Seq (the first of an exchange), whose first chunk
// has ordinal Chunk, as volume number Volume. Title is the hash of the
// title the volumes were written with (every volume holds the title).
//
// Edits counts the writes that changed a message the session already had
// (PutMessage; a new message is not an edit): the indexer reads it with
// the mark and records its next mark only if no edit came in between
// (SetIndexTail), and an edit of a message before the mark also drops the
// mark, so every message before a mark is as it was when the volumes
// before it were written.
type IndexTail struct {
	Seq    uint64 // 0: no mark
	Chunk  uint64
	Volume uint64
	Edits  uint64
	Title  []byte
}

func indexTailKey(userID, sessionID string) []byte {
	return cat([]byte(userID), []byte(sessionID))
}

func parseIndexTail(v []byte) IndexTail {
	if len(v) < 32 {
		return IndexTail{}
	}
	return IndexTail{Seq: binary.BigEndian.Uint64(v), Chunk: binary.BigEndian.Uint64(v[8:]),
		Volume: binary.BigEndian.Uint64(v[16:]), Edits: binary.BigEndian.Uint64(v[24:]), Title: bytes.Clone(v[32:])}
}

func (t IndexTail) value() []byte {
	v := make([]byte, 32, 32+len(t.Title))
	binary.BigEndian.PutUint64(v, t.Seq)
	binary.BigEndian.PutUint64(v[8:], t.Chunk)
	binary.BigEndian.PutUint64(v[16:], t.Volume)
	binary.BigEndian.PutUint64(v[24:], t.Edits)
	return append(v, t.Title...)
}

// IndexTail returns the session's mark (Seq 0: none) and its count of
// edits.
func (tx *Tx) IndexTail(userID, sessionID string) IndexTail {
	b := tx.bucket(bucketIndexTail)
	if b == nil {
		return IndexTail{}
	}
	return parseIndexTail(b.Get(indexTailKey(userID, sessionID)))
}

// SetIndexTail records the session's mark t, computed from what the
// indexer read with t.Edits edits counted: only if no message was edited
// since (see IndexTail). It reports whether it wrote.
func (tx *Tx) SetIndexTail(userID, sessionID string, t IndexTail) (bool, error) {
	b := tx.bucket(bucketIndexTail)
	key := indexTailKey(userID, sessionID)
	if parseIndexTail(b.Get(key)).Edits != t.Edits {
		return false, nil
	}
	if tx.bucket(bucketSessions).Get(key) == nil {
		return false, nil // deleted meanwhile
	}
	return true, b.Put(key, t.value())
}

// editedMessage counts an edit of message seq of the session, and drops
// the session's mark when the message is before it.
func (tx *Tx) editedMessage(userID, sessionID string, seq uint64) error {
	b := tx.bucket(bucketIndexTail)
	if b == nil {
		return nil
	}
	key := indexTailKey(userID, sessionID)
	t := parseIndexTail(b.Get(key))
	t.Edits++
	if seq < t.Seq {
		t = IndexTail{Edits: t.Edits}
	}
	return b.Put(key, t.value())
}

// dropIndexTail removes the session's entry (a deleted session).
func (tx *Tx) dropIndexTail(userID, sessionID string) error {
	b := tx.bucket(bucketIndexTail)
	if b == nil {
		return nil
	}
	return b.Delete(indexTailKey(userID, sessionID))
}
