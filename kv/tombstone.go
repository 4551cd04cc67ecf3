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

// bucketTombstones: uid+externalId -> Tombstone (JSON, without the ids).
var bucketTombstones = []byte("tombstones")

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

// PutTombstone records (or replaces) the tombstone of the user's session
// t.ExternalID.
func (tx *Tx) PutTombstone(userID string, t Tombstone) error {
	if t.Reason != ReasonDeleted && t.Reason != ReasonExcluded {
		return fmt.Errorf("tombstone %s: unknown reason %q", t.ExternalID, t.Reason)
	}
	key, err := tombstoneKey(userID, t.ExternalID)
	if err != nil {
		return err
	}
	return put(tx.bucket(bucketTombstones), key, t)
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
	return true, b.Delete(key)
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
// reason, and no live session holds its external id (a tombstone is
// written in the transaction that deletes the session, and removed before
// the session can be written again).
func (tx *Tx) checkTombstones() error {
	b := tx.bucket(bucketTombstones)
	if b == nil {
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
		}
		return nil
	})
	return errors.Join(errs...)
}
