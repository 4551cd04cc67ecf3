package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/redact"
)

// Service applies validated sync writes to the store. It is safe for
// concurrent use; concurrent writes are group-committed by kv.
type Service struct {
	store    *kv.Store
	now      func() time.Time
	onWrite  func()
	throttle func(ctx context.Context, sessions int) (done func(), err error)
	exclude  ProjectGlobs
	redactor *redact.Redactor // redact.go
}

// ExcludeProjects sets the projects whose sessions are dropped (see
// ProjectGlobs). Call it before serving.
func (s *Service) ExcludeProjects(g ProjectGlobs) { s.exclude = g }

// OnWrite registers f to be called after every committed write that put work
// on the outbox (the indexing pipeline's Notify). Call it before serving.
func (s *Service) OnWrite(f func()) { s.onWrite = f }

// Throttle registers f to be called before a bulk batch (one that is not
// a live sync, see LiveBatch) is committed, with the number of sessions
// it writes: the indexing pipeline's Admit, which holds bulk writes while
// the indexer is behind. done is called once the batch is committed or
// failed. An error from f fails the batch, nothing written. Call it
// before serving.
func (s *Service) Throttle(f func(ctx context.Context, sessions int) (done func(), err error)) {
	s.throttle = f
}

func (s *Service) notify() {
	if s.onWrite != nil {
		s.onWrite()
	}
}

// NewService returns a Service writing to store. now may be nil (time.Now).
func NewService(store *kv.Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// Counts says how many entries a write inserted and updated; an entry re-sent
// with identical content counts as neither.
type Counts struct {
	Inserted int `json:"inserted"`
	Updated  int `json:"updated"`
}

// Result is the outcome of a single-entry sync: the stored session's or
// message's id or, when the entry was dropped, why (Ignored).
type Result struct {
	ID string
	// Ignored is why the entry was acknowledged and dropped:
	// kv.ReasonDeleted (its session was deleted) or kv.ReasonExcluded (its
	// session's project is excluded). "" when it was stored.
	Ignored string
}

// BatchResult is the outcome of a /sync/batch. Ignored entries count as
// neither inserted nor updated.
type BatchResult struct {
	Sessions Counts
	Messages Counts
	Ignored  []api.SyncIgnored
}

type outcome int

const (
	unchanged outcome = iota
	inserted
	updated
	ignored // dropped: the session has a tombstone (see applier.gone)
)

func (c *Counts) add(o outcome) {
	switch o {
	case inserted:
		c.Inserted++
	case updated:
		c.Updated++
	}
}

// Session upserts one session and returns its service id, or why it was
// dropped (Result.Ignored).
func (s *Service) Session(ctx context.Context, userID string, in SessionIn) (Result, error) {
	var res Result
	found := s.redactSession(&in)
	err := s.store.CommitFirst(ctx, func(tx *kv.Tx) error {
		a := s.applier(tx, userID, true)
		a.live = true
		st, o, err := a.session(in)
		if err != nil {
			return err
		}
		if o == ignored {
			res = Result{Ignored: a.gone[in.ExternalID]}
		} else {
			res = Result{ID: st.s.ID}
		}
		var tally redactions
		tally.stored(o, found)
		if err := tally.save(tx, userID); err != nil {
			return err
		}
		return a.flush()
	})
	if err != nil {
		return Result{}, fmt.Errorf("sync session %s: %w", in.ExternalID, err)
	}
	s.notify()
	return res, nil
}

// Message upserts one message (creating its session if needed) and returns
// the message's service id, or why it was dropped (Result.Ignored).
func (s *Service) Message(ctx context.Context, userID string, in MessageIn) (Result, error) {
	var res Result
	found := s.redactMessage(&in)
	err := s.store.CommitFirst(ctx, func(tx *kv.Tx) error {
		a := s.applier(tx, userID, true)
		a.live = true
		m, o, err := a.message(in)
		if err != nil {
			return err
		}
		if o == ignored {
			res = Result{Ignored: a.gone[in.SessionExternalID]}
		} else {
			res = Result{ID: m.ID}
		}
		var tally redactions
		tally.stored(o, found)
		if err := tally.save(tx, userID); err != nil {
			return err
		}
		return a.flush()
	})
	if err != nil {
		return Result{}, fmt.Errorf("sync message %s: %w", in.ExternalID, err)
	}
	s.notify()
	return res, nil
}

// LiveBatch is the most entries (sessions plus messages) a batch without
// keepDates may hold to count as a live sync, like the single-entry
// endpoints: it commits ahead of bulk writes (kv's CommitFirst) and its
// sessions go on the indexer's live lane, ahead of bulk work. The plugins that batch (droid, pi) send one session's new messages
// of one turn, tens of entries; uploads of history send hundreds (the
// bench and hindsight import, 500) and keepDates batches are imports.
const LiveBatch = 100

// Live reports whether b is a live sync (see LiveBatch).
func (b Batch) Live() bool {
	return !b.KeepDates && len(b.Sessions)+len(b.Messages) <= LiveBatch
}

// sessions is how many sessions b writes to (at most).
func (b Batch) sessions() int {
	ids := make(map[string]struct{}, len(b.Sessions))
	for _, in := range b.Sessions {
		ids[in.ExternalID] = struct{}{}
	}
	for _, in := range b.Messages {
		ids[in.SessionExternalID] = struct{}{}
	}
	return len(ids)
}

// Batch applies sessions, then messages, in one transaction. createdAt is
// ignored on batch entries (server time is used), as the spec says, unless
// b.KeepDates: then it is honoured on first insert, as on the single
// endpoints (hindsight import keeps the dates of past sessions this way).
func (s *Service) Batch(ctx context.Context, userID string, b Batch) (BatchResult, error) {
	var res BatchResult
	commit := s.store.Commit
	if b.Live() {
		commit = s.store.CommitFirst // ahead of bulk writes, as in the indexer
	} else if s.throttle != nil {
		done, err := s.throttle(ctx, b.sessions())
		if err != nil {
			return BatchResult{}, fmt.Errorf("sync batch: %w", err)
		}
		defer done()
	}
	foundS, foundM := s.redactBatch(&b)
	err := commit(ctx, func(tx *kv.Tx) error {
		res = BatchResult{Ignored: []api.SyncIgnored{}} // Commit may run this function more than once
		var found redactions
		a := s.applier(tx, userID, b.KeepDates)
		a.live = b.Live()
		for i, in := range b.Sessions {
			_, o, err := a.session(in)
			if err != nil {
				return err
			}
			if o == ignored {
				res.Ignored = append(res.Ignored, api.SyncIgnored{Entry: b.entry("sessions", i), ExternalID: in.ExternalID, Reason: a.gone[in.ExternalID]})
			}
			res.Sessions.add(o)
			found.stored(o, at(foundS, i))
		}
		for i, in := range b.Messages {
			_, o, err := a.message(in)
			if err != nil {
				return err
			}
			if o == ignored {
				res.Ignored = append(res.Ignored, api.SyncIgnored{Entry: b.entry("messages", i), ExternalID: in.ExternalID, Reason: a.gone[in.SessionExternalID]})
			}
			res.Messages.add(o)
			found.stored(o, at(foundM, i))
		}
		if err := found.save(tx, userID); err != nil {
			return err
		}
		return a.flush()
	})
	if err != nil {
		return BatchResult{}, fmt.Errorf("sync batch: %w", err)
	}
	s.notify()
	return res, nil
}

// applier carries one transaction's work. Sessions touched by several entries
// are loaded and written once (a batch of 500 messages of one session costs one
// session write, not 500).
//
// A session with a tombstone (kv/tombstone.go: deleted by its owner, or of
// an excluded project) is gone for good: its entries are dropped, nothing
// is stored and nothing goes on the outbox, until its owner allows it to
// sync again.
type applier struct {
	tx          *kv.Tx
	userID      string
	now         int64
	honourDates bool
	live        bool                     // a live sync: sessions go on the indexer's live lane
	exclude     ProjectGlobs             // projects whose sessions are dropped
	sessions    map[string]*sessionState // by external id
	order       []*sessionState
	// gone caches, by session external id, the reason of its tombstone
	// ("" when it has none).
	gone map[string]string
}

type sessionState struct {
	s        kv.Session
	prev     int64 // UpdatedAt as stored; 0 = new
	changed  bool
	reindex  bool // searchable text may have changed: put on the outbox
	screened bool // its project was checked against the exclusions
	dropped  bool // excluded in this transaction: never written
}

func (s *Service) applier(tx *kv.Tx, userID string, honourDates bool) *applier {
	return &applier{tx: tx, userID: userID, now: s.now().UnixMilli(), honourDates: honourDates,
		exclude: s.exclude, sessions: map[string]*sessionState{}, gone: map[string]string{}}
}

// tombstoned returns the reason of the tombstone of the user's session
// externalID, "" when it has none.
func (a *applier) tombstoned(externalID string) (string, error) {
	if why, ok := a.gone[externalID]; ok {
		return why, nil
	}
	t, err := a.tx.Tombstone(a.userID, externalID)
	switch {
	case errors.Is(err, kv.ErrNotFound):
	case err != nil:
		return "", fmt.Errorf("read tombstone of %s: %w", externalID, err)
	}
	a.gone[externalID] = t.Reason
	return t.Reason, nil
}

// screen drops st when its project is excluded, and reports whether it did.
func (a *applier) screen(st *sessionState) (bool, error) {
	if st.screened {
		return false, nil
	}
	st.screened = true
	pattern, ok := a.exclude.Match(st.s.ProjectPath, st.s.ProjectName)
	if !ok {
		return false, nil
	}
	return true, a.drop(st, kv.Tombstone{Reason: kv.ReasonExcluded, Pattern: pattern})
}

// drop deletes st's session (when anything of it is stored) and leaves
// its tombstone, so the rest of this transaction's entries and every
// later write of the session are dropped.
func (a *applier) drop(st *sessionState, t kv.Tombstone) error {
	if st.prev == 0 && st.s.NextSeq > 0 {
		// Created in this transaction and given messages already: write
		// the record, so it is deleted like any stored session.
		if err := a.tx.PutSession(&st.s, 0); err != nil {
			return fmt.Errorf("write session %s: %w", st.s.ID, err)
		}
		st.prev = st.s.UpdatedAt
	}
	t.ExternalID, t.Source, t.DeletedAt = st.s.ExternalID, st.s.Source, a.now
	if st.prev != 0 {
		if err := forget(a.tx, a.userID, st.s.ID, t); err != nil {
			return err
		}
	} else if err := a.tx.PutTombstone(a.userID, t); err != nil {
		return err
	}
	st.dropped = true
	a.gone[st.s.ExternalID] = t.Reason
	return nil
}

// NormaliseSource applies the defaults decisions.md names: no source means
// opencode (its plugin sends none), and cursor is stored as cursor-sync.
func NormaliseSource(src string) string {
	switch src {
	case "":
		return "opencode"
	case "cursor":
		return "cursor-sync"
	}
	return src
}

// load returns the state of the session with this external id, creating a new
// session (not yet written) when create is true and none exists.
func (a *applier) load(externalID string) (*sessionState, error) {
	if st, ok := a.sessions[externalID]; ok {
		return st, nil
	}
	id, ok := a.tx.SessionIDByExternal(a.userID, externalID)
	if !ok {
		return nil, nil
	}
	s, err := a.tx.Session(a.userID, id)
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", id, err)
	}
	st := &sessionState{s: s, prev: s.UpdatedAt}
	a.sessions[externalID] = st
	a.order = append(a.order, st)
	return st, nil
}

func (a *applier) create(externalID, source string, createdAt *int64) *sessionState {
	ts := a.now
	if a.honourDates && createdAt != nil && *createdAt > 0 {
		ts = *createdAt
	}
	st := &sessionState{s: kv.Session{
		ID: kv.NewID(), UserID: a.userID, ExternalID: externalID,
		Source: NormaliseSource(source), CreatedAt: ts, UpdatedAt: ts,
	}, changed: true, reindex: true}
	a.sessions[externalID] = st
	a.order = append(a.order, st)
	return st
}

// touch records a change at time ts (a historical time for imports, else now).
func (st *sessionState) touch(ts int64) {
	st.changed = true
	st.s.UpdatedAt = max(st.s.UpdatedAt, ts)
}

func (a *applier) session(in SessionIn) (*sessionState, outcome, error) {
	if why, err := a.tombstoned(in.ExternalID); err != nil || why != "" {
		return nil, ignored, err
	}
	st, err := a.load(in.ExternalID)
	if err != nil {
		return nil, unchanged, err
	}
	o := updated
	if st == nil {
		st, o = a.create(in.ExternalID, in.Source, in.CreatedAt), inserted
	}
	before := st.s
	s := &st.s
	if in.Source != "" {
		s.Source = NormaliseSource(in.Source)
	}
	setStr := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	setStr(&s.Title, in.Title)
	setStr(&s.Model, in.Model)
	setStr(&s.Provider, in.Provider)
	setStr(&s.ProjectPath, in.ProjectPath)
	setStr(&s.ProjectName, in.ProjectName)
	setStr(&s.GitBranch, in.GitBranch)
	setNum := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	setNum(&s.PromptTokens, in.PromptTokens)
	setNum(&s.CompletionTokens, in.CompletionTokens)
	setNum(&s.DurationMs, in.DurationMs)
	if in.Cost != nil {
		s.Cost = *in.Cost
	}
	if in.TotalTokens != nil {
		s.TotalTokens = *in.TotalTokens
	} else if in.PromptTokens != nil || in.CompletionTokens != nil || o == inserted {
		s.TotalTokens = s.PromptTokens + s.CompletionTokens
	}
	if before.ProjectPath != s.ProjectPath || before.ProjectName != s.ProjectName {
		st.screened = false
	}
	if dropped, err := a.screen(st); dropped || err != nil {
		return nil, ignored, err
	}
	if o == inserted {
		return st, o, nil
	}
	if sameSession(before, *s) {
		return st, unchanged, nil
	}
	if before.Title != s.Title {
		st.reindex = true
	}
	st.touch(a.now)
	return st, updated, nil
}

func sameSession(a, b kv.Session) bool {
	return a.Source == b.Source && a.Title == b.Title && a.Model == b.Model && a.Provider == b.Provider &&
		a.ProjectPath == b.ProjectPath && a.ProjectName == b.ProjectName && a.GitBranch == b.GitBranch &&
		a.PromptTokens == b.PromptTokens && a.CompletionTokens == b.CompletionTokens &&
		a.TotalTokens == b.TotalTokens && a.Cost == b.Cost && a.DurationMs == b.DurationMs
}

func (a *applier) message(in MessageIn) (kv.Message, outcome, error) {
	if why, err := a.tombstoned(in.SessionExternalID); err != nil || why != "" {
		return kv.Message{}, ignored, err
	}
	st, err := a.load(in.SessionExternalID)
	if err != nil {
		return kv.Message{}, unchanged, err
	}
	if st != nil {
		// A stored session of a project excluded since it was written.
		if dropped, err := a.screen(st); dropped || err != nil {
			return kv.Message{}, ignored, err
		}
	}
	if st == nil {
		st = a.create(in.SessionExternalID, in.Source, nil)
		if in.Model != nil {
			st.s.Model = *in.Model
		}
	}
	ts := a.now
	if a.honourDates && in.CreatedAt != nil && *in.CreatedAt > 0 {
		ts = *in.CreatedAt
	}
	seq, exists := a.tx.MessageSeq(a.userID, st.s.ID, in.ExternalID)
	if !exists {
		m := kv.Message{
			ID: kv.NewID(), UserID: a.userID, SessionID: st.s.ID, Seq: st.s.NextSeq,
			ExternalID: in.ExternalID, CreatedAt: ts, UpdatedAt: ts,
		}
		applyMessage(&m, in)
		st.s.NextSeq++
		st.s.MessageCount++
		st.reindex = true
		st.touch(ts)
		if err := a.tx.PutMessage(&m); err != nil {
			return m, unchanged, err
		}
		return m, inserted, nil
	}
	old, err := a.tx.Message(a.userID, st.s.ID, seq)
	if err != nil {
		return old, unchanged, fmt.Errorf("load message %s: %w", in.ExternalID, err)
	}
	m := old
	m.Parts = slices.Clone(old.Parts)
	applyMessage(&m, in)
	if sameMessage(old, m) {
		return old, unchanged, nil
	}
	m.UpdatedAt = a.now
	st.reindex = true
	st.touch(a.now)
	if err := a.tx.PutMessage(&m); err != nil {
		return m, unchanged, err
	}
	return m, updated, nil
}

// applyMessage copies the fields present in in onto m; a re-sent message
// replaces its parts.
func applyMessage(m *kv.Message, in MessageIn) {
	m.Role = in.Role
	if in.PartsSet {
		m.Parts = in.Parts
	}
	if in.TextContent != nil {
		t := *in.TextContent
		m.TextContent = &t
	}
	if in.Model != nil {
		m.Model = *in.Model
	}
	if in.Source != "" {
		m.Source = NormaliseSource(in.Source)
	}
	if in.PromptTokens != nil {
		m.PromptTokens = in.PromptTokens
	}
	if in.CompletionTokens != nil {
		m.CompletionTokens = in.CompletionTokens
	}
	if in.DurationMs != nil {
		m.DurationMs = in.DurationMs
	}
}

func eqPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func sameMessage(a, b kv.Message) bool {
	if a.Role != b.Role || a.Model != b.Model || a.Source != b.Source || len(a.Parts) != len(b.Parts) ||
		!eqPtr(a.TextContent, b.TextContent) || !eqPtr(a.PromptTokens, b.PromptTokens) ||
		!eqPtr(a.CompletionTokens, b.CompletionTokens) || !eqPtr(a.DurationMs, b.DurationMs) {
		return false
	}
	for i := range a.Parts {
		p, q := a.Parts[i], b.Parts[i]
		if p.Type != q.Type || p.Content != q.Content || p.ToolName != q.ToolName || p.Args != q.Args || string(p.Raw) != string(q.Raw) {
			return false
		}
	}
	return true
}

// flush writes every changed session once and puts those whose searchable
// text may have changed on the outbox.
func (a *applier) flush() error {
	for _, st := range a.order {
		if !st.changed || st.dropped {
			continue
		}
		if err := a.tx.PutSession(&st.s, st.prev); err != nil {
			return fmt.Errorf("write session %s: %w", st.s.ID, err)
		}
		mark := a.tx.MarkDirty
		if a.live {
			mark = a.tx.MarkLive
		}
		if st.reindex {
			if err := mark(a.userID, st.s.ID); err != nil {
				return fmt.Errorf("outbox session %s: %w", st.s.ID, err)
			}
		}
	}
	return nil
}
