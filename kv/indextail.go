package kv

import (
	"bytes"
	"encoding/binary"
	"math"
)

// bucketIndexTail holds, per session, where the indexer may start reading
// it: uid+sid -> IndexTail. The full-text index cuts a long session into
// volumes (index/volumes.go); an append changes only the last, so the
// indexer reads the session's messages from the first message of its last
// volume, not from the start. The mark is derived data: a missing one
// means "read the whole session", which is always right.
//
// Value: seq(8) | chunk(8) | volume(8) | edits(8) | editsFrom(8) |
// editedFrom(8) | title hash, the top bit of edits set; a value without
// it (written before editsFrom) is seq | chunk | volume | edits | title
// hash, read with editsFrom its edits and editedFrom none. A value with
// seq 0 holds no mark, only the edits.
var bucketIndexTail = []byte("indextail")

// IndexTail is where the last volume of a session's full-text documents
// begins: at the message Seq (the first of an exchange), whose first chunk
// has ordinal Chunk, as volume number Volume. Title is the hash of the
// title the volumes were written with (every volume holds the title).
//
// Edits counts the writes that changed a message the session already had
// (PutMessage; a new message is not an edit): the indexer reads it with
// the mark and records its next mark only if no edit came in between of
// a message before the next mark (SetIndexTail), and an edit of a message
// before the mark also drops the mark, so every message before a mark is
// as it was when the volumes before it were written. EditsFrom and
// EditedFrom say where the edits since a mark was last recorded went:
// every edit counted after the first EditsFrom was of a message at
// EditedFrom or later (none: the largest uint64), so that a session whose
// later messages are edited while the indexer reads it a part at a time
// still gets its marks.
type IndexTail struct {
	Seq        uint64 // 0: no mark
	Chunk      uint64
	Volume     uint64
	Edits      uint64
	EditsFrom  uint64
	EditedFrom uint64
	Title      []byte
}

// floorFlag, in a value's edits, says the value holds editsFrom and
// editedFrom.
const floorFlag = 1 << 63

func indexTailKey(userID, sessionID string) []byte {
	return cat([]byte(userID), []byte(sessionID))
}

func parseIndexTail(v []byte) IndexTail {
	if len(v) < 32 {
		return IndexTail{EditedFrom: math.MaxUint64} // no edits
	}
	t := IndexTail{Seq: binary.BigEndian.Uint64(v), Chunk: binary.BigEndian.Uint64(v[8:]),
		Volume: binary.BigEndian.Uint64(v[16:]), Edits: binary.BigEndian.Uint64(v[24:])}
	// A value without the floor: no edit is known after the current count.
	t.EditsFrom, t.EditedFrom = t.Edits, math.MaxUint64
	v = v[32:]
	if t.Edits&floorFlag != 0 && len(v) >= 16 {
		t.Edits &^= floorFlag
		t.EditsFrom, t.EditedFrom = binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
		v = v[16:]
	}
	t.Title = bytes.Clone(v)
	return t
}

func (t IndexTail) value() []byte {
	v := make([]byte, 48, 48+len(t.Title))
	binary.BigEndian.PutUint64(v, t.Seq)
	binary.BigEndian.PutUint64(v[8:], t.Chunk)
	binary.BigEndian.PutUint64(v[16:], t.Volume)
	binary.BigEndian.PutUint64(v[24:], t.Edits|floorFlag)
	binary.BigEndian.PutUint64(v[32:], t.EditsFrom)
	binary.BigEndian.PutUint64(v[40:], t.EditedFrom)
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
// indexer read with t.Edits edits counted: only if no message before t.Seq
// was edited since (see IndexTail): if no edit came since, or if every
// edit since was of a message at t.Seq or later (which the volumes before
// the mark do not hold). It reports whether it wrote. The mark recorded
// keeps the current count of edits.
func (tx *Tx) SetIndexTail(userID, sessionID string, t IndexTail) (bool, error) {
	b := tx.bucket(bucketIndexTail)
	key := indexTailKey(userID, sessionID)
	cur := parseIndexTail(b.Get(key))
	laterOnly := t.Edits >= cur.EditsFrom && t.Edits <= cur.Edits && t.Seq <= cur.EditedFrom
	if cur.Edits != t.Edits && !laterOnly {
		return false, nil
	}
	if tx.bucket(bucketSessions).Get(key) == nil {
		return false, nil // deleted meanwhile
	}
	t.Edits, t.EditsFrom, t.EditedFrom = cur.Edits, cur.Edits, math.MaxUint64
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
	t.EditedFrom = min(t.EditedFrom, seq)
	if seq < t.Seq {
		t = IndexTail{Edits: t.Edits, EditsFrom: t.EditsFrom, EditedFrom: t.EditedFrom}
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
