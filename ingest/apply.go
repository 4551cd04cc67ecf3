package ingest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// Service applies validated sync writes to the store. It is safe for
// concurrent use; concurrent writes are group-committed by kv.
type Service struct {
	store   *kv.Store
	now     func() time.Time
	onWrite func()
}

// OnWrite registers f to be called after every committed write that put work
// on the outbox (the indexing pipeline's Notify). Call it before serving.
func (s *Service) OnWrite(f func()) { s.onWrite = f }

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

// BatchResult is the outcome of a /sync/batch.
type BatchResult struct {
	Sessions Counts
	Messages Counts
}

type outcome int

const (
	unchanged outcome = iota
	inserted
	updated
)

func (c *Counts) add(o outcome) {
	switch o {
	case inserted:
		c.Inserted++
	case updated:
		c.Updated++
	}
}

// Session upserts one session and returns its service id.
func (s *Service) Session(ctx context.Context, userID string, in SessionIn) (string, error) {
	var id string
	err := s.store.CommitFirst(ctx, func(tx *kv.Tx) error {
		a := s.applier(tx, userID, true)
		a.live = true
		st, _, err := a.session(in)
		if err != nil {
			return err
		}
		id = st.s.ID
		return a.flush()
	})
	if err != nil {
		return "", fmt.Errorf("sync session %s: %w", in.ExternalID, err)
	}
	s.notify()
	return id, nil
}

// Message upserts one message (creating its session if needed) and returns
// the message's service id.
func (s *Service) Message(ctx context.Context, userID string, in MessageIn) (string, error) {
	var id string
	err := s.store.CommitFirst(ctx, func(tx *kv.Tx) error {
		a := s.applier(tx, userID, true)
		a.live = true
		m, _, err := a.message(in)
		if err != nil {
			return err
		}
		id = m.ID
		return a.flush()
	})
	if err != nil {
		return "", fmt.Errorf("sync message %s: %w", in.ExternalID, err)
	}
	s.notify()
	return id, nil
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

// Batch applies sessions, then messages, in one transaction. createdAt is
// ignored on batch entries (server time is used), as the spec says, unless
// b.KeepDates: then it is honoured on first insert, as on the single
// endpoints (hindsight import keeps the dates of past sessions this way).
func (s *Service) Batch(ctx context.Context, userID string, b Batch) (BatchResult, error) {
	var res BatchResult
	commit := s.store.Commit
	if b.Live() {
		commit = s.store.CommitFirst // ahead of bulk writes, as in the indexer
	}
	err := commit(ctx, func(tx *kv.Tx) error {
		res = BatchResult{} // Commit may run this function more than once
		a := s.applier(tx, userID, b.KeepDates)
		a.live = b.Live()
		for _, in := range b.Sessions {
			_, o, err := a.session(in)
			if err != nil {
				return err
			}
			res.Sessions.add(o)
		}
		for _, in := range b.Messages {
			_, o, err := a.message(in)
			if err != nil {
				return err
			}
			res.Messages.add(o)
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
type applier struct {
	tx          *kv.Tx
	userID      string
	now         int64
	honourDates bool
	live        bool                     // a live sync: sessions go on the indexer's live lane
	sessions    map[string]*sessionState // by external id
	order       []*sessionState
}

type sessionState struct {
	s       kv.Session
	prev    int64 // UpdatedAt as stored; 0 = new
	changed bool
	reindex bool // searchable text may have changed: put on the outbox
}

func (s *Service) applier(tx *kv.Tx, userID string, honourDates bool) *applier {
	return &applier{tx: tx, userID: userID, now: s.now().UnixMilli(), honourDates: honourDates,
		sessions: map[string]*sessionState{}}
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
	st, err := a.load(in.SessionExternalID)
	if err != nil {
		return kv.Message{}, unchanged, err
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
		if !st.changed {
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
