package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"
)

// --- claims ---
//
// When several nodes share the records in PostgreSQL, each runs an indexer
// over the same outbox. A node claims the entries of a step before it
// indexes them, so no two nodes index one entry at once:
//
//	outbox.claims: queue(1)+uid+sid -> expiry(8, Unix ns) | node id
//
// Claim reads each entry's claim and its outbox entry and writes its own
// claim in one write transaction. Writers take turns on the write lock
// (postgres.go), so of two nodes claiming the same entry the second sees
// the first's claim and skips the entry; where the lock is missing
// (engines other than PostgreSQL), SERIALIZABLE makes them conflict and the
// retry of one skips it. That is FOR UPDATE SKIP LOCKED
// built from the buckets, without a lock held across the indexing (which
// takes seconds and talks to other services). A claim holds for a lease
// (30 s by default) that the node renews while the work runs
// ([Store.RenewClaims]); a node that dies stops renewing, its lease
// expires, and another node claims the entries. [Tx.DirtySessions] and
// [Tx.OldestDirty] pass over entries claimed by another node whose lease
// has not expired; [Tx.ClearDirty] drops the node's own claim in the
// transaction that clears the entry, so clearing stays version-checked as
// it always was.
//
// Leases compare the nodes' clocks: a node whose clock runs ahead by more
// than a lease takes over claims early (the entry is indexed twice, which
// is safe: the index and the stages are idempotent, only wasteful).
//
// A bbolt file has one process: there is nothing to claim against, so
// Claim returns the entries it is given and writes nothing, and the other
// calls do nothing. The claims bucket does not exist in a bbolt file.

var bucketClaims = []byte("outbox.claims")

// DefaultLease is how long a claim holds unless renewed.
const DefaultLease = 30 * time.Second

// claimer is a store's side of the claims: present only in PostgreSQL.
type claimer struct {
	node  string
	lease time.Duration
	now   func() time.Time
}

func claimKey(q Queue, userID, sessionID string) []byte {
	return cat([]byte{byte(q)}, []byte(userID), []byte(sessionID))
}

func claimValue(expiry time.Time, node string) []byte {
	return cat(u64(uint64(expiry.UnixNano())), []byte(node))
}

func parseClaim(v []byte) (expiry time.Time, node []byte, ok bool) {
	if len(v) < 8 {
		return time.Time{}, nil, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), v[8:], true
}

// heldByOther reports whether claim value v is another node's and its
// lease runs past now.
func (c *claimer) heldByOther(v []byte, now time.Time) bool {
	expiry, node, ok := parseClaim(v)
	return ok && !bytes.Equal(node, []byte(c.node)) && expiry.After(now)
}

// othersClaims returns the outbox keys (uid+sid) of queue q that other
// nodes hold claims on, nil when none (always in a bbolt file).
func (tx *Tx) othersClaims(q Queue) map[string]struct{} {
	c := tx.claims
	if c == nil {
		return nil
	}
	now := c.now()
	var held map[string]struct{}
	cur := tx.bucket(bucketClaims).Cursor()
	prefix := []byte{byte(q)}
	for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
		if c.heldByOther(v, now) {
			if held == nil {
				held = make(map[string]struct{})
			}
			held[string(k[1:])] = struct{}{}
		}
	}
	return held
}

// releaseClaim deletes this node's claim on d's entry, if it holds one.
func (tx *Tx) releaseClaim(d Dirty) error {
	c := tx.claims
	if c == nil {
		return nil
	}
	b := tx.bucket(bucketClaims)
	key := claimKey(d.Queue, d.UserID, d.SessionID)
	if _, node, ok := parseClaim(b.Get(key)); ok && string(node) == c.node {
		return b.Delete(key)
	}
	return nil
}

// Node is this store's node id among those sharing the records: random per
// process unless PostgresOptions.Node names it; "" for a bbolt file.
func (s *Store) Node() string {
	if s.claims == nil {
		return ""
	}
	return s.claims.node
}

// ClaimLease is how long a claim holds unless renewed; 0 for a bbolt
// file, where nothing is claimed. An indexer renews its claims well within
// it (a third of it) while its work runs.
func (s *Store) ClaimLease() time.Duration {
	if s.claims == nil {
		return 0
	}
	return s.claims.lease
}

// Claim claims dirty's entries (read by DirtySessions or OldestDirty) for
// this node and returns those it now holds, in their order: those another
// node holds a live claim on are left out, and so are those whose entry
// is gone or was marked again since it was read (the next step reads the
// newer write). In a bbolt file it returns dirty itself and writes nothing.
func (s *Store) Claim(ctx context.Context, dirty []Dirty) ([]Dirty, error) {
	c := s.claims
	if c == nil || len(dirty) == 0 {
		return dirty, nil
	}
	var kept []Dirty
	err := s.CommitFirst(ctx, func(tx *Tx) error {
		kept = kept[:0] // fn runs again after a conflict
		now := c.now()
		claims := tx.bucket(bucketClaims)
		for _, d := range dirty {
			version, _, ok := parseOutbox(tx.bucket(d.Queue.bucket()).Get(cat([]byte(d.UserID), []byte(d.SessionID))))
			if !ok || version != d.Version {
				continue
			}
			key := claimKey(d.Queue, d.UserID, d.SessionID)
			if c.heldByOther(claims.Get(key), now) {
				continue
			}
			if err := claims.Put(key, claimValue(now.Add(c.lease), c.node)); err != nil {
				return err
			}
			kept = append(kept, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return kept, nil
}

// RenewClaims extends this node's claims on dirty's entries by a lease
// from now and returns how many it no longer held (their lease expired
// and another node claimed them, or they were released). A no-op in a
// bbolt file.
func (s *Store) RenewClaims(ctx context.Context, dirty []Dirty) (lost int, err error) {
	c := s.claims
	if c == nil || len(dirty) == 0 {
		return 0, nil
	}
	err = s.CommitFirst(ctx, func(tx *Tx) error {
		lost = 0
		expiry := c.now().Add(c.lease)
		claims := tx.bucket(bucketClaims)
		for _, d := range dirty {
			key := claimKey(d.Queue, d.UserID, d.SessionID)
			if _, node, ok := parseClaim(claims.Get(key)); !ok || string(node) != c.node {
				lost++
				continue
			}
			if err := claims.Put(key, claimValue(expiry, c.node)); err != nil {
				return err
			}
		}
		return nil
	})
	return lost, err
}

// ReleaseClaims drops this node's claims on dirty's entries without
// clearing them (a step that failed), so another node may take them at
// once instead of after the lease. A no-op in a bbolt file.
func (s *Store) ReleaseClaims(ctx context.Context, dirty []Dirty) error {
	if s.claims == nil || len(dirty) == 0 {
		return nil
	}
	return s.CommitFirst(ctx, func(tx *Tx) error {
		for _, d := range dirty {
			if err := tx.releaseClaim(d); err != nil {
				return err
			}
		}
		return nil
	})
}

// Claimed is a claim standing on an outbox entry: which node holds it and
// until when, unless renewed.
type Claimed struct {
	Queue             Queue
	UserID, SessionID string
	Node              string
	Expiry            time.Time
}

// Claims returns every claim standing on the outbox, expired ones too (a
// dead node's stay until another node takes the entry); none in a bbolt
// file. It is for operators and benchmarks that watch the nodes share the
// work (bench nodes: how long a killed node's entries take to be picked up).
func (tx *Tx) Claims() []Claimed {
	if tx.claims == nil {
		return nil
	}
	var out []Claimed
	cur := tx.bucket(bucketClaims).Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		expiry, node, ok := parseClaim(v)
		if !ok || len(k) != 1+2*IDLen {
			continue
		}
		out = append(out, Claimed{Queue: Queue(k[0]), UserID: string(k[1 : 1+IDLen]), SessionID: string(k[1+IDLen:]),
			Node: string(node), Expiry: expiry})
	}
	return out
}

// Waiting reports whether session sessionID of user userID has an entry
// in queue q: a write to it not yet indexed by that queue's stage.
func (tx *Tx) Waiting(q Queue, userID, sessionID string) bool {
	return tx.bucket(q.bucket()).Get(cat([]byte(userID), []byte(sessionID))) != nil
}
