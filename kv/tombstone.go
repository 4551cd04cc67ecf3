package kv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Tombstones make deletions stick. Deleting a session removes its records
// (DeleteSession, then PurgeStep), and with them the external-id entry
// that told the next sync which session a write belongs to: without more,
// the plugin's next message recreates the session and an import uploads it
// again. So a deletion also leaves a tombstone under the user id and the
// session's external id, kept until the owner allows the session to sync
// again. Ingest drops the writes of a tombstoned session and imports skip
// it.
//
// A tombstone says when and why, never what: no title, no project, no
// text. Deletion means the content is gone.

var (
	// bucketTombstones: uid+externalId -> Tombstone (JSON, without the ids).
	bucketTombstones = []byte("tombstones")
	// bucketTombstoneOrder: uid+deletedAt(8, big endian)+externalId -> nil,
	// so a user's tombstones list newest first without reading them all.
	bucketTombstoneOrder = []byte("tombstones.order")
)

// Why a session was tombstoned.
const (
	// ReasonDeleted: its owner deleted it (one session, a project, or all).
	ReasonDeleted = "deleted"
	// ReasonExcluded: the server excludes its project (HINDSIGHT_EXCLUDE_PROJECTS).
	ReasonExcluded = "excluded"
)

// Tombstone is what stays of a deleted session.
type Tombstone struct {
	ExternalID string `json:"-"`         // the session's external id (in the key)
	DeletedAt  int64  `json:"deletedAt"` // Unix ms
	Reason     string `json:"reason"`    // ReasonDeleted or ReasonExcluded
	Source     string `json:"source,omitempty"`
	// Pattern is the exclusion pattern that matched the session's project,
	// for ReasonExcluded: a setting of the server, not content of the session.
	Pattern string `json:"pattern,omitempty"`
}

func tombstoneKey(userID, externalID string) ([]byte, error) {
	if len(userID) != IDLen || externalID == "" {
		return nil, fmt.Errorf("tombstone: malformed user id %q or empty external id", userID)
	}
	return cat([]byte(userID), []byte(externalID)), nil
}

func tombstoneOrderKey(userID string, deletedAt int64, externalID string) []byte {
	return cat([]byte(userID), u64(uint64(deletedAt)), []byte(externalID))
}

// PutTombstone records (or replaces) the tombstone of the user's session
// t.ExternalID.
func (tx *Tx) PutTombstone(userID string, t Tombstone) error {
	if t.Reason != ReasonDeleted && t.Reason != ReasonExcluded {
		return fmt.Errorf("tombstone %s: unknown reason %q", t.ExternalID, t.Reason)
	}
	if t.DeletedAt < 0 {
		return fmt.Errorf("tombstone %s: negative deletedAt %d", t.ExternalID, t.DeletedAt)
	}
	key, err := tombstoneKey(userID, t.ExternalID)
	if err != nil {
		return err
	}
	if err := tx.unorder(userID, t.ExternalID, key); err != nil {
		return err
	}
	if err := put(tx.bucket(bucketTombstones), key, t); err != nil {
		return err
	}
	return tx.bucket(bucketTombstoneOrder).Put(tombstoneOrderKey(userID, t.DeletedAt, t.ExternalID), nil)
}

// unorder removes the order entry of the tombstone stored under key, if
// there is one.
func (tx *Tx) unorder(userID, externalID string, key []byte) error {
	old, err := get[Tombstone](tx.bucket(bucketTombstones), key)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return tx.bucket(bucketTombstoneOrder).Delete(tombstoneOrderKey(userID, old.DeletedAt, externalID))
}

// Tombstone returns the tombstone of the user's session externalID;
// ErrNotFound when the session was never deleted, or was allowed to sync
// again.
func (tx *Tx) Tombstone(userID, externalID string) (Tombstone, error) {
	b := tx.bucket(bucketTombstones)
	if b == nil || len(userID) != IDLen { // b is nil in a read-only file of an older version
		return Tombstone{}, ErrNotFound
	}
	t, err := get[Tombstone](b, cat([]byte(userID), []byte(externalID)))
	t.ExternalID = externalID
	return t, err
}

// RemoveTombstone lets the user's session externalID sync again. It
// reports whether there was a tombstone.
func (tx *Tx) RemoveTombstone(userID, externalID string) (bool, error) {
	if len(userID) != IDLen {
		return false, nil
	}
	key := cat([]byte(userID), []byte(externalID))
	b := tx.bucket(bucketTombstones)
	if b.Get(key) == nil {
		return false, nil
	}
	if err := tx.unorder(userID, externalID, key); err != nil {
		return false, err
	}
	return true, b.Delete(key)
}

// TombstonePosition is a place in a user's tombstones, newest first:
// those after it come next. The zero value is the newest end.
type TombstonePosition struct {
	DeletedAt  int64
	ExternalID string
}

// RecentTombstones calls fn for the user's tombstones after from, newest
// first (equal times in descending external-id order), until fn returns
// false. It reads only the tombstones it passes to fn.
func (tx *Tx) RecentTombstones(userID string, from TombstonePosition, fn func(Tombstone) bool) error {
	order, b := tx.bucket(bucketTombstoneOrder), tx.bucket(bucketTombstones)
	if order == nil || b == nil || len(userID) != IDLen {
		return nil
	}
	uid := []byte(userID)
	c := order.Cursor()
	// As in RecentSessions: Seek lands on the first key >= target, and the
	// one before it is the first to return.
	target := cat(uid, []byte{0xff})
	if from != (TombstonePosition{}) {
		target = tombstoneOrderKey(userID, from.DeletedAt, from.ExternalID)
	}
	k, _ := c.Seek(target)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, uid); k, _ = c.Prev() {
		if len(k) <= IDLen+8 {
			return fmt.Errorf("tombstone order key %q malformed", k)
		}
		ext := string(k[IDLen+8:])
		t, err := get[Tombstone](b, cat(uid, []byte(ext)))
		if err != nil {
			return fmt.Errorf("tombstone %q in the order index: %w", ext, err)
		}
		t.ExternalID = ext
		if !fn(t) {
			return nil
		}
	}
	return nil
}

// Tombstones calls fn for each of the user's tombstones in external-id
// order, until fn returns an error (returned as is).
func (tx *Tx) Tombstones(userID string, fn func(Tombstone) error) error {
	b := tx.bucket(bucketTombstones)
	if b == nil || len(userID) != IDLen {
		return nil
	}
	uid := []byte(userID)
	c := b.Cursor()
	for k, v := c.Seek(uid); k != nil && bytes.HasPrefix(k, uid); k, v = c.Next() {
		var t Tombstone
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decode tombstone %q: %w", k, err)
		}
		t.ExternalID = string(k[IDLen:])
		if err := fn(t); err != nil {
			return err
		}
	}
	return nil
}

// TombstoneIDs returns the external ids of the user's tombstones (reads
// keys only).
func (tx *Tx) TombstoneIDs(userID string) []string {
	out := []string{}
	b := tx.bucket(bucketTombstones)
	if b == nil || len(userID) != IDLen {
		return out
	}
	uid := []byte(userID)
	c := b.Cursor()
	for k, _ := c.Seek(uid); k != nil && bytes.HasPrefix(k, uid); k, _ = c.Next() {
		out = append(out, string(k[IDLen:]))
	}
	return out
}

// checkTombstones verifies the tombstones: each decodes with a known
// reason and has its one order entry, and no live session holds its
// external id (a tombstone is written in the transaction that deletes the
// session, and removed before the session can be written again).
func (tx *Tx) checkTombstones() error {
	b, order := tx.bucket(bucketTombstones), tx.bucket(bucketTombstoneOrder)
	if b == nil || order == nil {
		return nil
	}
	var errs []error
	ext := tx.bucket(bucketExternal)
	_ = b.ForEach(func(k, v []byte) error {
		var t Tombstone
		switch {
		case len(k) <= IDLen:
			errs = append(errs, fmt.Errorf("tombstone key %q malformed", k))
		case json.Unmarshal(v, &t) != nil || t.Reason != ReasonDeleted && t.Reason != ReasonExcluded:
			errs = append(errs, fmt.Errorf("tombstone %q: malformed value %q", k, v))
		case ext.Get(k) != nil:
			errs = append(errs, fmt.Errorf("tombstone %q: a live session has its external id", k))
		case order.Get(tombstoneOrderKey(string(k[:IDLen]), t.DeletedAt, string(k[IDLen:]))) == nil:
			errs = append(errs, fmt.Errorf("tombstone %q: order entry missing", k))
		}
		return nil
	})
	if n, m := order.KeyN(), b.KeyN(); n != m {
		errs = append(errs, fmt.Errorf("tombstone order index has %d entries for %d tombstones", n, m))
	}
	return errors.Join(errs...)
}
