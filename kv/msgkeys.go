package kv

import (
	"encoding/binary"
	"fmt"
)

// Where a session's messages sit in the key order.
//
// bbolt packs a page full only when keys arrive in order: a key that lands
// in the middle of a page splits it and leaves two part-filled pages
// behind, and nothing merges them while nothing is deleted. Session ids are
// random, so when message keys began with them (uid + sid + seq) every new
// session landed at a random place and the message buckets stayed about
// 0.70 full (measured on 10,000 generated sessions: messages 62 MB of
// pages for 45 MB of data, msgext 24 MB for 15 MB).
//
// So each session gets a number when it is created, from a counter that
// only grows, and its messages and message-id entries are keyed by
// uid + number(8) + seq(8) and uid + number(8) + externalId: a new session
// sorts after every older session of its user, a bulk import appends at
// the end of each user's range, and pages fill to the end (0.97 on the same
// sessions, and the keys are 8 bytes shorter). The number lives in
// bucketSessionNum, beside the session record, so the record and the
// Session type stay as they were.
//
// Sessions written by older versions have no number; their messages keep
// the old keys (uid + sid + ...), and so do the ones added to them later, so
// one session never mixes the two. A number starts with a zero byte (it is
// below 2^56) and an id never does, so the two kinds of keys never share a
// prefix, and old files read without a migration.

// msgPrefix returns the key prefix of the session's messages and msgext
// entries: uid + number, or uid + sid for a session of an older version.
// With create, a session that has neither a number nor a record yet (a new
// one) is given a number. Without create, a session that does not exist
// gets the uid + sid prefix, under which nothing is stored.
func (tx *Tx) msgPrefix(userID, sessionID string, create bool) ([]byte, error) {
	if len(userID) != IDLen || len(sessionID) != IDLen {
		return nil, fmt.Errorf("message key: malformed ids %q/%q", userID, sessionID)
	}
	key := cat([]byte(userID), []byte(sessionID))
	if p, ok := tx.prefixes[string(key)]; ok {
		return p, nil
	}
	nums := tx.bucket(bucketSessionNum)
	var p []byte
	switch v := getNum(nums, key); {
	case v != nil:
		p = cat([]byte(userID), v)
	case tx.bucket(bucketSessions).Get(key) != nil:
		p = key
	case !create:
		// No such session yet: nothing is stored under this prefix, and
		// the session may be created later in this transaction, so the
		// answer is not cached.
		return key, nil
	default:
		n, err := nums.NextSequence()
		if err != nil {
			return nil, fmt.Errorf("number session %s: %w", sessionID, err)
		}
		num := u64(n)
		if err := nums.Put(key, num); err != nil {
			return nil, fmt.Errorf("number session %s: %w", sessionID, err)
		}
		p = cat([]byte(userID), num)
	}
	if tx.t.writable() {
		// The committer is the one goroutine of a write transaction; read
		// transactions may be shared, so they look the number up each time.
		if tx.prefixes == nil {
			tx.prefixes = map[string][]byte{}
		}
		tx.prefixes[string(key)] = p
	}
	return p, nil
}

// getNum returns the session number stored under key (nil if none, or in a
// file of an older version, which has no such bucket).
func getNum(nums bucket, key []byte) []byte {
	if nums == nil {
		return nil
	}
	if v := nums.Get(key); len(v) == 8 {
		return v
	}
	return nil
}

// forgetNum removes the session's number once its messages are gone.
func (tx *Tx) forgetNum(key []byte) error {
	delete(tx.prefixes, string(key))
	return tx.bucket(bucketSessionNum).Delete(key)
}

// sessionsByNum maps each session number to its uid + sid (for Check,
// which reads the messages bucket without knowing whose records it holds).
func (tx *Tx) sessionsByNum() map[uint64]string {
	out := map[uint64]string{}
	nums := tx.bucket(bucketSessionNum)
	if nums == nil {
		return out
	}
	_ = nums.ForEach(func(k, v []byte) error {
		if len(v) == 8 {
			out[binary.BigEndian.Uint64(v)] = string(k)
		}
		return nil
	})
	return out
}
