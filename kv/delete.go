package kv

import (
	"bytes"
	"context"
	"fmt"
)

// DeleteSession makes a session disappear for every reader at once: the
// record is marked deleted (keeping only what purging needs), its
// external-id and ordering entries go, and it is put on the outbox (so the
// index and vector store drop it) and on the purge list (so PurgeStep
// removes its messages, then the record, in bounded transactions).
// ErrNotFound when the user has no such session. What keeps the session
// deleted afterwards is its Tombstone (tombstone.go), which the caller
// writes in the same transaction.
func (tx *Tx) DeleteSession(userID, sessionID string) error {
	s, err := tx.Session(userID, sessionID)
	if err != nil {
		return err
	}
	uid, sid := []byte(userID), []byte(sessionID)
	if err := tx.bucket(bucketExternal).Delete(cat(uid, []byte(s.ExternalID))); err != nil {
		return err
	}
	if err := tx.bucket(bucketOrder).Delete(cat(uid, u64(uint64(s.UpdatedAt)), sid)); err != nil {
		return err
	}
	s.Deleted = true
	// Keep nothing readable on the tombstone but what purging needs.
	s = Session{ID: s.ID, UserID: s.UserID, ExternalID: s.ExternalID, Deleted: true, UpdatedAt: s.UpdatedAt, MessageCount: s.MessageCount}
	if err := tx.putSessionRecord(&s); err != nil {
		return err
	}
	if err := tx.bucket(bucketPurge).Put(cat(uid, sid), nil); err != nil {
		return err
	}
	if err := tx.dropIndexTail(userID, sessionID); err != nil {
		return err
	}
	return tx.MarkDirty(userID, sessionID)
}

// PendingPurges reports how many deleted sessions still have records.
func (tx *Tx) PendingPurges() int { return tx.bucket(bucketPurge).KeyN() }

// PurgeStep removes up to limit records of deleted sessions (messages first,
// the tombstone last) in one transaction and returns how many it removed; 0
// means nothing is left to purge. Callers loop, so a deletion of any size runs
// in bounded transactions and resumes after a restart.
func (s *Store) PurgeStep(ctx context.Context, limit int) (int, error) {
	removed := 0
	err := s.Commit(ctx, func(tx *Tx) error {
		removed = 0
		purge := tx.bucket(bucketPurge)
		c := purge.Cursor()
		for k, _ := c.First(); k != nil && removed < limit; k, _ = c.First() {
			if len(k) != 2*IDLen {
				if err := purge.Delete(k); err != nil {
					return err
				}
				continue
			}
			key := bytes.Clone(k)
			prefix, err := tx.msgPrefix(string(key[:IDLen]), string(key[IDLen:]), false)
			if err != nil {
				return err
			}
			n, done, err := tx.purgeMessages(prefix, limit-removed)
			if err != nil {
				return err
			}
			removed += n
			if !done {
				break
			}
			if err := tx.forgetNum(key); err != nil {
				return err
			}
			if err := tx.bucket(bucketSessions).Delete(key); err != nil {
				return err
			}
			if err := tx.dropIndexTail(string(key[:IDLen]), string(key[IDLen:])); err != nil {
				return err
			}
			if err := purge.Delete(key); err != nil {
				return err
			}
			removed++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("purge deleted sessions: %w", err)
	}
	return removed, nil
}

// purgeMessages deletes up to limit messages and msgext entries of the
// session whose keys start with prefix and reports whether none are left.
func (tx *Tx) purgeMessages(prefix []byte, limit int) (int, bool, error) {
	msgs, ext := tx.bucket(bucketMessages), tx.bucket(bucketMsgExt)
	n := 0
	for _, b := range []bucket{msgs, ext} {
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
			if n == limit {
				return n, false, nil
			}
			if err := b.Delete(k); err != nil {
				return n, false, err
			}
			n++
		}
	}
	return n, true, nil
}
