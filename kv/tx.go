package kv

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"
)

func get[T any](b interface{ Get([]byte) []byte }, key []byte) (T, error) {
	var v T
	raw := b.Get(key)
	if raw == nil {
		return v, ErrNotFound
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("decode %T: %w", v, err)
	}
	return v, nil
}

func put(b interface{ Put(k, v []byte) error }, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %T: %w", v, err)
	}
	return b.Put(key, raw)
}

func cat(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// --- users ---

// CreateUser adds a user with a unique name. ErrExists if the name is taken.
func (tx *Tx) CreateUser(name string, now int64) (User, error) {
	names := tx.bucket(bucketUserNames)
	if names.Get([]byte(name)) != nil {
		return User{}, fmt.Errorf("user %q: %w", name, ErrExists)
	}
	u := User{ID: NewID(), Name: name, CreatedAt: now}
	if err := put(tx.bucket(bucketUsers), []byte(u.ID), u); err != nil {
		return User{}, err
	}
	return u, names.Put([]byte(name), []byte(u.ID))
}

// PutUser overwrites an existing user record (for example to set a password).
func (tx *Tx) PutUser(u User) error {
	if tx.bucket(bucketUsers).Get([]byte(u.ID)) == nil {
		return fmt.Errorf("user %s: %w", u.ID, ErrNotFound)
	}
	return put(tx.bucket(bucketUsers), []byte(u.ID), u)
}

// User returns the user with the given id.
func (tx *Tx) User(id string) (User, error) {
	return get[User](tx.bucket(bucketUsers), []byte(id))
}

// UserByName returns the user with the given name.
func (tx *Tx) UserByName(name string) (User, error) {
	id := tx.bucket(bucketUserNames).Get([]byte(name))
	if id == nil {
		return User{}, fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	return tx.User(string(id))
}

// Users lists every user, ordered by name.
func (tx *Tx) Users() ([]User, error) {
	var out []User
	err := tx.bucket(bucketUserNames).ForEach(func(_, id []byte) error {
		u, err := tx.User(string(id))
		if err != nil {
			return err
		}
		out = append(out, u)
		return nil
	})
	return out, err
}

// --- API keys ---

// PutKey stores (or overwrites) a key record under its hash.
func (tx *Tx) PutKey(k APIKey) error {
	return put(tx.bucket(bucketKeys), []byte(k.Hash), k)
}

// Key returns the key record stored under hash (hex SHA-256).
func (tx *Tx) Key(hash string) (APIKey, error) {
	return get[APIKey](tx.bucket(bucketKeys), []byte(hash))
}

// Keys returns the keys of one user, oldest first; all keys when userID is "".
func (tx *Tx) Keys(userID string) ([]APIKey, error) {
	var out []APIKey
	err := tx.bucket(bucketKeys).ForEach(func(_, raw []byte) error {
		var k APIKey
		if err := json.Unmarshal(raw, &k); err != nil {
			return err
		}
		if userID == "" || k.UserID == userID {
			out = append(out, k)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return out, err
}

// --- sessions ---

// SessionIDByExternal maps a plugin's externalId to the service id.
func (tx *Tx) SessionIDByExternal(userID, externalID string) (string, bool) {
	v := tx.bucket(bucketExternal).Get(cat([]byte(userID), []byte(externalID)))
	if v == nil {
		return "", false
	}
	return string(v), true
}

// Session returns the session id of user userID. ErrNotFound when it does not
// exist or belongs to somebody else.
func (tx *Tx) Session(userID, id string) (Session, error) {
	if len(id) != IDLen {
		return Session{}, ErrNotFound
	}
	s, err := tx.getSession(cat([]byte(userID), []byte(id)))
	if err == nil && s.Deleted {
		return Session{}, ErrNotFound
	}
	return s, err
}

// getSession reads the session record stored under key (uid+sid).
func (tx *Tx) getSession(key []byte) (Session, error) {
	v := tx.bucket(bucketSessions).Get(key)
	if v == nil {
		return Session{}, ErrNotFound
	}
	return tx.decodeSession(key, v)
}

// decodeSession reads the session record v stored under key. Session
// records are stored like message records (compressed, see codec.go) and
// without the ids the key holds; those of older files are plain JSON with
// the ids inside.
func (tx *Tx) decodeSession(key, v []byte) (Session, error) {
	var s Session
	if err := tx.codec.decode(v, &s); err != nil {
		return s, fmt.Errorf("decode session %x: %w", key, err)
	}
	if s.ID == "" && s.UserID == "" && len(key) == 2*IDLen {
		s.UserID, s.ID = string(key[:IDLen]), string(key[IDLen:])
	}
	return s, nil
}

// putSessionRecord writes the session record alone (no index entries).
func (tx *Tx) putSessionRecord(s *Session) error {
	stored := *s
	stored.ID, stored.UserID = "", ""
	v, err := tx.codec.encode(&stored)
	if err != nil {
		return err
	}
	return tx.bucket(bucketSessions).Put(cat([]byte(s.UserID), []byte(s.ID)), v)
}

// PutSession inserts or replaces a session and maintains its external-id and
// ordering indexes. prevUpdatedAt is the UpdatedAt the stored copy had (0 for a
// new session), so the old ordering entry can be removed.
func (tx *Tx) PutSession(s *Session, prevUpdatedAt int64) error {
	uid, sid := []byte(s.UserID), []byte(s.ID)
	if len(uid) != IDLen || len(sid) != IDLen {
		return fmt.Errorf("put session: malformed ids %q/%q", s.UserID, s.ID)
	}
	// A new session is numbered before its record exists (ingest writes
	// its messages first, or none yet): a record without a number is one
	// of an older version.
	if _, err := tx.msgPrefix(s.UserID, s.ID, true); err != nil {
		return err
	}
	if err := tx.putSessionRecord(s); err != nil {
		return err
	}
	if err := tx.bucket(bucketExternal).Put(cat(uid, []byte(s.ExternalID)), sid); err != nil {
		return err
	}
	order := tx.bucket(bucketOrder)
	if prevUpdatedAt != 0 && prevUpdatedAt != s.UpdatedAt {
		if err := order.Delete(cat(uid, u64(uint64(prevUpdatedAt)), sid)); err != nil {
			return err
		}
	}
	return order.Put(cat(uid, u64(uint64(s.UpdatedAt)), sid), nil)
}

// Position is a place in a user's most-recently-updated order: sessions
// strictly older than it come next. The zero Position is the newest end.
type Position struct {
	UpdatedAt int64
	ID        string
}

// RecentSessions calls fn for the user's sessions, most recently updated first,
// starting after from, until fn returns false.
func (tx *Tx) RecentSessions(userID string, from Position, fn func(Session) bool) error {
	uid := []byte(userID)
	c := tx.bucket(bucketOrder).Cursor()
	// Seek lands on the first key >= target; the one before it is the first to
	// return. With no position, target is past every key of this user (ids
	// never hold 0xff).
	target := cat(uid, bytes.Repeat([]byte{0xff}, 8+IDLen))
	if from.ID != "" {
		target = cat(uid, u64(uint64(from.UpdatedAt)), []byte(from.ID))
	}
	k, _ := c.Seek(target)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, uid); k, _ = c.Prev() {
		sid := k[len(uid)+8:]
		s, err := tx.getSession(cat(uid, sid))
		if err != nil {
			return fmt.Errorf("session %s in order index: %w", sid, err)
		}
		if !fn(s) {
			return nil
		}
	}
	return nil
}

// Sessions calls fn for every session of the user in id order (cheaper than
// RecentSessions when order does not matter).
func (tx *Tx) Sessions(userID string, fn func(Session) error) error {
	return tx.SessionsAfter(userID, "", fn)
}

// SessionsAfter is Sessions from the first session whose id sorts after
// afterID ("" from the first), so work done in steps resumes where the
// last step ended without reading the sessions before it again.
func (tx *Tx) SessionsAfter(userID, afterID string, fn func(Session) error) error {
	uid := []byte(userID)
	c := tx.bucket(bucketSessions).Cursor()
	k, v := c.Seek(cat(uid, []byte(afterID)))
	if afterID != "" && k != nil && string(k[min(len(k), len(uid)):]) == afterID {
		k, v = c.Next()
	}
	for ; k != nil && bytes.HasPrefix(k, uid); k, v = c.Next() {
		s, err := tx.decodeSession(k, v)
		if err != nil {
			return err
		}
		if s.Deleted {
			continue
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// ExternalSessionIDs returns every externalId of the user's sessions.
func (tx *Tx) ExternalSessionIDs(userID string) []string {
	uid := []byte(userID)
	out := []string{}
	c := tx.bucket(bucketExternal).Cursor()
	for k, _ := c.Seek(uid); k != nil && bytes.HasPrefix(k, uid); k, _ = c.Next() {
		out = append(out, string(k[IDLen:]))
	}
	return out
}

// --- messages ---

// msgKey is the key of message seq of the session whose prefix is prefix.
func msgKey(prefix []byte, seq uint64) []byte {
	return cat(prefix, u64(seq))
}

// MessageSeq maps a message externalId within a session to its sequence number.
func (tx *Tx) MessageSeq(userID, sessionID, externalID string) (uint64, bool) {
	prefix, err := tx.msgPrefix(userID, sessionID, false)
	if err != nil {
		return 0, false
	}
	v := tx.bucket(bucketMsgExt).Get(cat(prefix, []byte(externalID)))
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

// Message returns one message by sequence number.
func (tx *Tx) Message(userID, sessionID string, seq uint64) (Message, error) {
	prefix, err := tx.msgPrefix(userID, sessionID, false)
	if err != nil {
		return Message{}, ErrNotFound
	}
	k := msgKey(prefix, seq)
	v := tx.bucket(bucketMessages).Get(k)
	if v == nil {
		return Message{}, ErrNotFound
	}
	return tx.decodeMessage(userID, sessionID, k, v)
}

// PutMessage inserts or replaces a message and its externalId index entry.
func (tx *Tx) PutMessage(m *Message) error {
	prefix, err := tx.msgPrefix(m.UserID, m.SessionID, true)
	if err != nil {
		return fmt.Errorf("put message: %w", err)
	}
	// The owner and the session are in the key: their ids, random and so
	// incompressible, are not repeated in every record.
	stored := *m
	stored.UserID, stored.SessionID = "", ""
	v, err := tx.codec.encode(&stored)
	if err != nil {
		return err
	}
	msgs := tx.bucket(bucketMessages)
	// An edit (the message exists) may change text the indexer no longer
	// reads (indextail.go).
	if msgs.Get(msgKey(prefix, m.Seq)) != nil {
		if err := tx.editedMessage(m.UserID, m.SessionID, m.Seq); err != nil {
			return err
		}
	}
	if err := msgs.Put(msgKey(prefix, m.Seq), v); err != nil {
		return err
	}
	return tx.bucket(bucketMsgExt).Put(cat(prefix, []byte(m.ExternalID)), u64(m.Seq))
}

// decodeMessage reads the message record v of the user's session stored
// under key k. Records written without their owner and session ids take
// them from the caller.
func (tx *Tx) decodeMessage(userID, sessionID string, k, v []byte) (Message, error) {
	var m Message
	if err := tx.codec.decode(v, &m); err != nil {
		return m, fmt.Errorf("decode message %x: %w", k, err)
	}
	if m.UserID == "" && m.SessionID == "" {
		m.UserID, m.SessionID = userID, sessionID
	}
	return m, nil
}

// Messages calls fn for each message of a session in creation order.
func (tx *Tx) Messages(userID, sessionID string, fn func(Message) error) error {
	return tx.MessagesFrom(userID, sessionID, 0, fn)
}

// --- outbox ---

// Queue names one of the two outboxes. Writes put a session on
// SearchQueue; the indexer, once the session's search document is written,
// passes it on to ChunkQueue for the slower derived data. So a backlog of
// chunk and vector work never delays search, and each queue's entry lives
// until its own stage is done.
//
// Each queue has a live lane: an entry a live write (a plugin syncing as
// the user works) put on the queue is also on the lane, and DirtySessions
// serves the lane before the rest, so a bulk import's backlog does not
// delay live writes. The lane is a bucket of its own beside the queue's,
// written in the transaction that writes the entry; older versions of
// Hindsight ignore it and see an ordinary queue.
type Queue uint8

const (
	// SearchQueue: the session document (what full-text search reads) is stale.
	SearchQueue Queue = iota
	// ChunkQueue: the chunk documents and vectors (what context retrieval
	// and semantic search read) are stale.
	ChunkQueue
)

func (q Queue) bucket() []byte {
	if q == ChunkQueue {
		return bucketOutboxChunks
	}
	return bucketOutbox
}

func (q Queue) liveBucket() []byte {
	if q == ChunkQueue {
		return bucketOutboxChunksLive
	}
	return bucketOutboxLive
}

func (q Queue) String() string {
	if q == ChunkQueue {
		return "chunks"
	}
	return "search"
}

// Dirty is an outbox entry: a session whose derived data (index, vectors) is stale.
type Dirty struct {
	UserID, SessionID string
	Queue             Queue
	Version           uint64
	// Since is when the oldest write not yet indexed was made (zero for
	// entries written before this was recorded): the indexer's lag for the
	// session is the time from Since until it is searchable.
	Since time.Time
	// Live: a live write is among those waiting (the entry is on its
	// queue's live lane).
	Live bool
	// read is when the transaction that read the entry began: every write
	// after it is missing from what the indexer loaded.
	read time.Time
}

// outbox values are version(8) | since(8, Unix nanoseconds). Values of
// 8 bytes (version only) come from older data files and are still valid.
func outboxValue(version uint64, since time.Time) []byte {
	return cat(u64(version), u64(uint64(since.UnixNano())))
}

func parseOutbox(v []byte) (version uint64, since time.Time, ok bool) {
	if len(v) != 8 && len(v) != 16 {
		return 0, time.Time{}, false
	}
	version = binary.BigEndian.Uint64(v)
	if len(v) == 16 {
		since = time.Unix(0, int64(binary.BigEndian.Uint64(v[8:])))
	}
	return version, since, version != 0
}

// MarkDirty puts the session on SearchQueue with a fresh version. An entry
// already there keeps its Since: the older write is still waiting. Bulk
// writes (imports, large batches) and deletions use it.
func (tx *Tx) MarkDirty(userID, sessionID string) error {
	return tx.mark(SearchQueue, userID, sessionID, time.Now(), false)
}

// MarkLive is MarkDirty for a live write: the entry is also put on the
// search queue's live lane, served before the rest of the queue, until
// the indexer has read this write.
func (tx *Tx) MarkLive(userID, sessionID string) error {
	return tx.mark(SearchQueue, userID, sessionID, time.Now(), true)
}

// PassOn puts d's session on ChunkQueue, waiting since d.Since (or since an
// older time already recorded there), on its live lane if d was on the
// search queue's. The indexer calls it in the transaction that clears d
// from SearchQueue, so a session is always on at least one queue until all
// its derived data is written.
func (tx *Tx) PassOn(d Dirty) error {
	since := d.Since
	if since.IsZero() {
		since = d.read
	}
	return tx.mark(ChunkQueue, d.UserID, d.SessionID, since, d.Live)
}

func (tx *Tx) mark(q Queue, userID, sessionID string, since time.Time, live bool) error {
	b := tx.bucket(q.bucket())
	v, err := b.NextSequence()
	if err != nil {
		return err
	}
	key := cat([]byte(userID), []byte(sessionID))
	if _, old, ok := parseOutbox(b.Get(key)); ok && !old.IsZero() && old.Before(since) {
		since = old
	}
	if err := b.Put(key, outboxValue(v, since)); err != nil {
		return err
	}
	if live {
		return tx.bucket(q.liveBucket()).Put(key, u64(v))
	}
	return nil
}

// DirtySessions returns up to limit entries of queue q (0 = all). When the
// queue's live lane has entries it returns only those, so a step of live
// work never waits for bulk work taken with it; otherwise the whole queue.
// Either way those waiting longest come first (entries without a time
// first of all, then by key), so an indexer that falls behind a bulk
// import serves writes in arrival order instead of starving sessions whose
// keys sort last. Without live entries it reads the whole queue: about
// 3 ms per 100,000 entries.
//
// In PostgreSQL it passes over entries another node has claimed (claims.go).
func (tx *Tx) DirtySessions(q Queue, limit int) []Dirty {
	entries := tx.bucket(q.bucket())
	held := tx.othersClaims(q)
	if lane := tx.bucket(q.liveBucket()); lane != nil { // nil in a read-only file of an older version
		if live := tx.dirty(q, rankWaiting(lane.Cursor(), entries, held, limit), true); len(live) > 0 {
			return live
		}
	}
	return tx.dirty(q, rankWaiting(entries.Cursor(), nil, held, limit), false)
}

// OldestDirty returns up to limit entries of queue q (0 = all), those
// waiting longest first, whether or not they are on the live lane (Live
// says which are): the indexer's turn for bulk work while live work keeps
// coming. It reads the whole queue, as DirtySessions does without live
// entries. Like DirtySessions it passes over other nodes' claims.
func (tx *Tx) OldestDirty(q Queue, limit int) []Dirty {
	out := tx.dirty(q, rankWaiting(tx.bucket(q.bucket()).Cursor(), nil, tx.othersClaims(q), limit), false)
	if lane := tx.bucket(q.liveBucket()); lane != nil {
		for i := range out {
			out[i].Live = lane.Get(cat([]byte(out[i].UserID), []byte(out[i].SessionID))) != nil
		}
	}
	return out
}

// QueueLen is the number of entries in queue q, live or not. It walks
// the queue's pages; Queued says whether there is one.
func (tx *Tx) QueueLen(q Queue) int {
	return tx.bucket(q.bucket()).KeyN()
}

// Queued reports whether queue q holds an entry, live or not.
func (tx *Tx) Queued(q Queue) bool {
	k, _ := tx.bucket(q.bucket()).Cursor().First()
	return k != nil
}

// rankWaiting returns, oldest first, up to limit (0 = all) of the entries
// whose keys c visits, but for those in skip (nil: none); their values are
// read from entries when it is not nil (c walks a live lane), else from c.
func rankWaiting(c cursor, entries bucket, skip map[string]struct{}, limit int) waitingHeap {
	// With a limit, a max-heap of the limit oldest entries seen so far:
	// a backlog of 100,000 entries is scanned, not copied and sorted.
	var h waitingHeap
	ord := 0
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if entries != nil {
			v = entries.Get(k)
		}
		version, since, ok := parseOutbox(v)
		if len(k) != 2*IDLen || !ok {
			continue
		}
		if skip != nil {
			if _, held := skip[string(k)]; held {
				continue
			}
		}
		e := waiting{key: k, version: version, ord: ord}
		ord++
		if !since.IsZero() {
			e.since = since.UnixNano()
		}
		switch {
		case limit <= 0 || len(h) < limit:
			heap.Push(&h, e)
		case h[0].after(e):
			h[0] = e
			heap.Fix(&h, 0)
		}
	}
	// Oldest first; equal times in key order.
	slices.SortFunc(h, func(a, b waiting) int {
		if a.after(b) {
			return 1
		}
		return -1
	})
	return h
}

func (tx *Tx) dirty(q Queue, h waitingHeap, live bool) []Dirty {
	out := make([]Dirty, len(h))
	for i, e := range h {
		out[i] = Dirty{UserID: string(e.key[:IDLen]), SessionID: string(e.key[IDLen:]), Queue: q, Version: e.version, Live: live, read: tx.begun}
		if e.since != 0 {
			out[i].Since = time.Unix(0, e.since)
		}
	}
	return out
}

// waiting is an outbox entry as DirtySessions ranks it: by since (Unix ns,
// 0 when unknown), then by key (ord: its place in the scan).
type waiting struct {
	since   int64
	ord     int
	key     []byte // valid during the transaction
	version uint64
}

func (a waiting) after(b waiting) bool {
	if a.since != b.since {
		return a.since > b.since
	}
	return a.ord > b.ord
}

// waitingHeap is a max-heap (container/heap): the entry waiting least on top.
type waitingHeap []waiting

func (h waitingHeap) Len() int           { return len(h) }
func (h waitingHeap) Less(i, j int) bool { return h[i].after(h[j]) }
func (h waitingHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waitingHeap) Push(x any)        { *h = append(*h, x.(waiting)) }
func (h *waitingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// HasDirty reports whether either queue has an entry.
func (tx *Tx) HasDirty() bool {
	return tx.Queued(SearchQueue) || tx.Queued(ChunkQueue)
}

// HasLive reports whether queue q's live lane has an entry.
func (tx *Tx) HasLive(q Queue) bool {
	lane := tx.bucket(q.liveBucket())
	if lane == nil {
		return false
	}
	entries := tx.bucket(q.bucket())
	c := lane.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if _, _, ok := parseOutbox(entries.Get(k)); ok {
			return true
		}
	}
	return false
}

// OutboxLen is the number of entries in both queues (a session waiting in
// both counts twice).
func (tx *Tx) OutboxLen() int {
	return tx.QueueLen(SearchQueue) + tx.QueueLen(ChunkQueue)
}

// ClearDirty removes the entry from its queue only if it still has version
// d.Version, so a write that arrived while the session was being indexed
// keeps it dirty. Such an entry's Since moves up to when d was read: writes
// before that are indexed now. The entry leaves the live lane once the
// lane's live write is among those d read (its version is at most
// d.Version): a later bulk write keeps it queued, but not ahead of others.
// In PostgreSQL it also drops this node's claim on the entry (claims.go),
// cleared or not: a newer write is claimed afresh by the next step.
func (tx *Tx) ClearDirty(d Dirty) error {
	if err := tx.releaseClaim(d); err != nil {
		return err
	}
	b := tx.bucket(d.Queue.bucket())
	key := cat([]byte(d.UserID), []byte(d.SessionID))
	if lane := tx.bucket(d.Queue.liveBucket()); lane != nil {
		if v := lane.Get(key); v != nil && (len(v) != 8 || binary.BigEndian.Uint64(v) <= d.Version) {
			if err := lane.Delete(key); err != nil {
				return err
			}
		}
	}
	version, since, ok := parseOutbox(b.Get(key))
	switch {
	case !ok:
		return nil
	case version == d.Version:
		return b.Delete(key)
	case !d.read.IsZero() && d.read.After(since):
		return b.Put(key, outboxValue(version, d.read))
	}
	return nil
}

// KeepDirty leaves d's entry on its queue as it is, for the next step, and
// drops this node's claim on it (in PostgreSQL; nothing in a bbolt file):
// the step indexed a part of the session's pending text (a long
// session's tail read a part at a time, ingest/tail.go) and the next step,
// of this node or another, goes on from there.
func (tx *Tx) KeepDirty(d Dirty) error {
	return tx.releaseClaim(d)
}

// --- metadata ---

// Meta reads a metadata value (nil if unset).
func (tx *Tx) Meta(key string) []byte {
	v := tx.bucket(bucketMeta).Get([]byte(key))
	return bytes.Clone(v)
}

// SetMeta writes a metadata value.
func (tx *Tx) SetMeta(key string, value []byte) error {
	return tx.bucket(bucketMeta).Put([]byte(key), value)
}
