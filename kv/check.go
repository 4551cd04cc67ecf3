package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// Check verifies the store's invariants: every user-data key starts with an
// existing user's id, the external-id and ordering indexes match the sessions,
// message indexes match messages, every outbox entry names a live session,
// each session's MessageCount equals its stored messages, and no tombstone
// names a live session. Tests run it at
// cleanup; operators can run it after a restore.
func (s *Store) Check() error {
	return s.be.view(context.Background(), func(t txn) error {
		tx := &Tx{t: t, codec: s.codec.Load()}
		var errs []error
		fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
		users := tx.bucket(bucketUsers)
		owned := func(bucket []byte, minLen int) {
			b := tx.bucket(bucket)
			if b == nil { // a bucket of a newer version, in a read-only file of an older one
				return
			}
			_ = b.ForEach(func(k, _ []byte) error {
				if len(k) < minLen || users.Get(k[:IDLen]) == nil {
					fail("%s: key %q has no owning user", bucket, k)
				}
				return nil
			})
		}
		for _, b := range [][]byte{bucketSessions, bucketExternal, bucketOrder, bucketSessionNum, bucketMessages, bucketMsgExt, bucketOutbox, bucketOutboxChunks, bucketTombstones, bucketTombstoneOrder, bucketRedactions, bucketIndexTail} {
			owned(b, IDLen)
		}
		counts := map[string]int64{}
		byNum := tx.sessionsByNum()
		_ = tx.bucket(bucketMessages).ForEach(func(k, v []byte) error {
			var owner string // uid + sid
			switch len(k) {
			case 2*IDLen + 8: // a key of an older version
				owner = string(k[:2*IDLen])
			case IDLen + 16:
				owner = byNum[binary.BigEndian.Uint64(k[IDLen:])]
				if len(owner) != 2*IDLen || owner[:IDLen] != string(k[:IDLen]) {
					fail("message %x: its session number names no session of its user", k)
					return nil
				}
			default:
				fail("message key %x malformed", k)
				return nil
			}
			uid, sid := owner[:IDLen], owner[IDLen:]
			m, err := tx.decodeMessage(uid, sid, k, v)
			if err != nil {
				fail("%v", err)
				return nil
			}
			if prefix, err := tx.msgPrefix(uid, sid, false); err != nil || !bytes.Equal(k, msgKey(prefix, m.Seq)) {
				fail("message %x stored under the wrong key", k)
			}
			if seq, ok := tx.MessageSeq(m.UserID, m.SessionID, m.ExternalID); !ok || seq != m.Seq {
				fail("message %s: externalId index missing or stale", m.ID)
			}
			if tx.bucket(bucketSessions).Get([]byte(owner)) == nil {
				fail("message %s belongs to no session", m.ID)
			}
			counts[owner]++
			return nil
		})
		if nums := tx.bucket(bucketSessionNum); nums != nil {
			_ = nums.ForEach(func(k, v []byte) error {
				if len(v) != 8 || tx.bucket(bucketSessions).Get(k) == nil {
					fail("session number %x of %q names no session", v, k)
				}
				return nil
			})
		}
		_ = tx.bucket(bucketSessions).ForEach(func(k, v []byte) error {
			s, err := tx.decodeSession(k, v)
			if err != nil {
				fail("%v", err)
				return nil
			}
			if s.Deleted {
				if tx.bucket(bucketPurge).Get(k) == nil {
					fail("session %s: tombstone not on the purge list", s.ID)
				}
				return nil
			}
			if id, ok := tx.SessionIDByExternal(s.UserID, s.ExternalID); !ok || id != s.ID {
				fail("session %s: externalId index missing or stale", s.ID)
			}
			if tx.bucket(bucketOrder).Get(cat([]byte(s.UserID), u64(uint64(s.UpdatedAt)), []byte(s.ID))) == nil {
				fail("session %s: order index missing", s.ID)
			}
			if counts[s.UserID+s.ID] != s.MessageCount {
				fail("session %s: messageCount %d, stored %d", s.ID, s.MessageCount, counts[s.UserID+s.ID])
			}
			return nil
		})
		if n, m, d := tx.bucket(bucketOrder).KeyN(), tx.bucket(bucketSessions).KeyN(), tx.PendingPurges(); n != m-d {
			fail("order index has %d entries for %d live sessions", n, m-d)
		}
		for _, q := range []Queue{SearchQueue, ChunkQueue} {
			_ = tx.bucket(q.bucket()).ForEach(func(k, v []byte) error {
				// An entry may name a session that is gone: that is how a deletion
				// reaches the index and the vector store.
				if _, _, ok := parseOutbox(v); len(k) != 2*IDLen || !ok {
					fail("%s outbox entry %q malformed", q, k)
				}
				return nil
			})
			if lane := tx.bucket(q.liveBucket()); lane != nil {
				entries := tx.bucket(q.bucket())
				_ = lane.ForEach(func(k, v []byte) error {
					if len(v) != 8 || entries.Get(k) == nil {
						fail("%s live lane entry %q has no outbox entry", q, k)
					}
					return nil
				})
			}
		}
		if err := tx.checkTombstones(); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}
