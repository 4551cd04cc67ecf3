package ingest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

var ctx = context.Background()

// start is the fake clock's first reading (2026-03-01 UTC).
var start = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// tickingClock advances one millisecond per reading, so every write has its
// own timestamp and ordering is deterministic.
type tickingClock struct{ ms atomic.Int64 }

func (c *tickingClock) Now() time.Time {
	return time.UnixMilli(start.UnixMilli() + c.ms.Add(1))
}

type fixture struct {
	t     *testing.T
	st    *kv.Store
	svc   *ingest.Service
	user  string
	clock *tickingClock
}

func newFixture(t *testing.T) *fixture { return newFixtureOn(t, kvtest.Open(t)) }

// newFixtureOn is newFixture over a store the test opened.
func newFixtureOn(t *testing.T, st *kv.Store) *fixture {
	f := &fixture{t: t, st: st, clock: &tickingClock{}}
	f.svc = ingest.NewService(st, f.clock.Now)
	f.user = f.newUser("ann")
	return f
}

func (f *fixture) newUser(name string) string {
	var id string
	if err := f.st.Commit(ctx, func(tx *kv.Tx) error {
		u, err := tx.CreateUser(name, 1)
		id = u.ID
		return err
	}); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func (f *fixture) session(body string) string {
	f.t.Helper()
	in, err := ingest.DecodeSession([]byte(body), ingest.Limits{})
	if err != nil {
		f.t.Fatalf("DecodeSession(%s): %v", body, err)
	}
	res, err := f.svc.Session(ctx, f.user, in)
	if err != nil {
		f.t.Fatalf("Session: %v", err)
	}
	if len(res.ID) != kv.IDLen || res.Ignored != "" {
		f.t.Fatalf("Session returned %+v", res)
	}
	return res.ID
}

func (f *fixture) message(body string) string {
	f.t.Helper()
	in, err := ingest.DecodeMessage([]byte(body), ingest.Limits{})
	if err != nil {
		f.t.Fatalf("DecodeMessage(%s): %v", body, err)
	}
	res, err := f.svc.Message(ctx, f.user, in)
	if err != nil {
		f.t.Fatalf("Message: %v", err)
	}
	if len(res.ID) != kv.IDLen || res.Ignored != "" {
		f.t.Fatalf("Message returned %+v", res)
	}
	return res.ID
}

func (f *fixture) batch(body string) ingest.BatchResult {
	f.t.Helper()
	b, err := ingest.DecodeBatch([]byte(body), ingest.Limits{})
	if err != nil {
		f.t.Fatalf("DecodeBatch: %v", err)
	}
	if len(b.Errors) > 0 {
		f.t.Fatalf("batch entry errors: %v", b.Errors)
	}
	res, err := f.svc.Batch(ctx, f.user, b)
	if err != nil {
		f.t.Fatalf("Batch: %v", err)
	}
	return res
}

func (f *fixture) stored(externalID string) (kv.Session, []kv.Message) {
	f.t.Helper()
	var s kv.Session
	var ms []kv.Message
	err := f.st.View(ctx, func(tx *kv.Tx) error {
		id, ok := tx.SessionIDByExternal(f.user, externalID)
		if !ok {
			return fmt.Errorf("no session %q", externalID)
		}
		var err error
		if s, err = tx.Session(f.user, id); err != nil {
			return err
		}
		return tx.Messages(f.user, id, func(m kv.Message) error { ms = append(ms, m); return nil })
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return s, ms
}

func (f *fixture) dirty() map[string]uint64 {
	out := map[string]uint64{}
	_ = f.st.View(ctx, func(tx *kv.Tx) error {
		for _, d := range tx.DirtySessions(kv.SearchQueue, 0) {
			out[d.SessionID] = d.Version
		}
		return nil
	})
	return out
}

func (f *fixture) clearOutbox() {
	f.t.Helper()
	if err := f.st.Commit(ctx, func(tx *kv.Tx) error {
		for _, d := range tx.DirtySessions(kv.SearchQueue, 0) {
			if err := tx.ClearDirty(d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		f.t.Fatal(err)
	}
}

func TestBatchCounts(t *testing.T) {
	f := newFixture(t)
	steps := []struct {
		name     string
		body     string
		sessions ingest.Counts
		messages ingest.Counts
	}{
		{"first", `{"sessions":[{"externalId":"s1","source":"pi","title":"One"},{"externalId":"s2","source":"pi"}],
		  "messages":[{"sessionExternalId":"s1","externalId":"m1","role":"user","parts":[{"type":"text","content":"hi"}]},
		              {"sessionExternalId":"s1","externalId":"m2","role":"assistant","parts":[{"type":"thinking","content":"..."}]}]}`,
			ingest.Counts{Inserted: 2}, ingest.Counts{Inserted: 2}},
		{"identical again", `{"sessions":[{"externalId":"s1","source":"pi","title":"One"},{"externalId":"s2","source":"pi"}],
		  "messages":[{"sessionExternalId":"s1","externalId":"m1","role":"user","parts":[{"type":"text","content":"hi"}]},
		              {"sessionExternalId":"s1","externalId":"m2","role":"assistant","parts":[{"type":"thinking","content":"..."}]}]}`,
			ingest.Counts{}, ingest.Counts{}},
		{"one changed each", `{"sessions":[{"externalId":"s1","source":"pi","title":"One"},{"externalId":"s2","source":"pi","title":"Two"}],
		  "messages":[{"sessionExternalId":"s1","externalId":"m1","role":"user","parts":[{"type":"text","content":"hi"}]},
		              {"sessionExternalId":"s1","externalId":"m2","role":"assistant","parts":[{"type":"text","content":"answer"}]}]}`,
			ingest.Counts{Updated: 1}, ingest.Counts{Updated: 1}},
		{"new message auto-creates a session", `{"messages":[{"sessionExternalId":"s3","externalId":"m1","role":"user","textContent":"x"}]}`,
			ingest.Counts{}, ingest.Counts{Inserted: 1}},
		{"same entry twice in one batch", `{"sessions":[{"externalId":"s4"},{"externalId":"s4","title":"later"}]}`,
			ingest.Counts{Inserted: 1, Updated: 1}, ingest.Counts{}},
	}
	for _, st := range steps {
		res := f.batch(st.body)
		if res.Sessions != st.sessions || res.Messages != st.messages {
			t.Errorf("%s: sessions %+v messages %+v; want %+v %+v", st.name, res.Sessions, res.Messages, st.sessions, st.messages)
		}
	}
	s1, msgs := f.stored("s1")
	if s1.MessageCount != 2 || len(msgs) != 2 || msgs[1].Parts[0].Content != "answer" {
		t.Errorf("s1: messageCount %d, messages %+v; want 2 with m2 parts replaced", s1.MessageCount, msgs)
	}
	if s4, _ := f.stored("s4"); s4.Title != "later" {
		t.Errorf("s4 title %q, want later", s4.Title)
	}
}

func TestSessionUpdateChangesOnlyPresentFields(t *testing.T) {
	f := newFixture(t)
	id := f.session(`{"externalId":"cc","source":"claude-code","title":"Fix the bug","projectPath":"/p","projectName":"p","gitBranch":"fix/bug","model":"m1","provider":"anthropic"}`)
	again := f.session(`{"externalId":"cc","source":"claude-code","promptTokens":315,"completionTokens":50,"cost":0.00123,"messageCount":99}`)
	if again != id {
		t.Fatalf("upsert returned a new id %s, first was %s", again, id)
	}
	s, _ := f.stored("cc")
	if s.Title != "Fix the bug" || s.ProjectPath != "/p" || s.ProjectName != "p" || s.GitBranch != "fix/bug" || s.Model != "m1" || s.Provider != "anthropic" {
		t.Errorf("fields not sent were changed: %+v", s)
	}
	if s.PromptTokens != 315 || s.CompletionTokens != 50 || s.TotalTokens != 365 || s.Cost != 0.00123 {
		t.Errorf("totals = %d/%d/%d cost %v; want 315/50/365 0.00123", s.PromptTokens, s.CompletionTokens, s.TotalTokens, s.Cost)
	}
	if s.MessageCount != 0 {
		t.Errorf("messageCount = %d; a supplied messageCount must not be stored", s.MessageCount)
	}
	// A new branch alone is a change.
	f.session(`{"externalId":"cc","gitBranch":"main"}`)
	if s, _ := f.stored("cc"); s.GitBranch != "main" || s.Title != "Fix the bug" {
		t.Errorf("after a branch update: %+v", s)
	}
}

func TestTotalTokens(t *testing.T) {
	tests := []struct {
		name   string
		bodies []string
		want   int64
	}{
		{"derived on insert", []string{`{"externalId":"s","promptTokens":3,"completionTokens":4}`}, 7},
		{"zero when nothing given", []string{`{"externalId":"s"}`}, 0},
		{"given wins", []string{`{"externalId":"s","promptTokens":3,"completionTokens":4,"totalTokens":100}`}, 100},
		{"re-derived when one side changes", []string{`{"externalId":"s","promptTokens":3,"completionTokens":4}`, `{"externalId":"s","completionTokens":10}`}, 13},
		{"kept when no token field is sent", []string{`{"externalId":"s","promptTokens":3,"completionTokens":4,"totalTokens":100}`, `{"externalId":"s","title":"t"}`}, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for _, b := range tc.bodies {
				f.session(b)
			}
			if s, _ := f.stored("s"); s.TotalTokens != tc.want {
				t.Errorf("totalTokens = %d, want %d", s.TotalTokens, tc.want)
			}
		})
	}
}

func TestMessageAutoCreatesSession(t *testing.T) {
	tests := []struct {
		name, body, source, model string
	}{
		{"source and model from the message",
			`{"sessionExternalId":"x","externalId":"m","role":"assistant","source":"claude-code","model":"claude-sonnet-4-20250514","textContent":"hi"}`,
			"claude-code", "claude-sonnet-4-20250514"},
		{"no source means opencode", `{"sessionExternalId":"x","externalId":"m","role":"user","textContent":"hi"}`, "opencode", ""},
		{"cursor stored as cursor-sync", `{"sessionExternalId":"x","externalId":"m","role":"user","source":"cursor"}`, "cursor-sync", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.message(tc.body)
			s, msgs := f.stored("x")
			if s.Source != tc.source || s.Model != tc.model || s.MessageCount != 1 || len(msgs) != 1 {
				t.Errorf("session source %q model %q count %d (%d stored); want %q %q 1", s.Source, s.Model, s.MessageCount, len(msgs), tc.source, tc.model)
			}
			if msgs[0].Source != tc.source && tc.source != "opencode" {
				t.Errorf("message source %q, want %q", msgs[0].Source, tc.source)
			}
		})
	}
}

func TestMessageTokensNeverAddToSession(t *testing.T) {
	f := newFixture(t)
	f.session(`{"externalId":"s","promptTokens":100,"completionTokens":20,"cost":1.5}`)
	for i := range 3 {
		f.message(fmt.Sprintf(`{"sessionExternalId":"s","externalId":"m%d","role":"assistant","promptTokens":1000,"completionTokens":500,"textContent":"x"}`, i))
	}
	s, msgs := f.stored("s")
	if s.PromptTokens != 100 || s.CompletionTokens != 20 || s.TotalTokens != 120 || s.Cost != 1.5 {
		t.Errorf("session totals changed by message tokens: %+v", s)
	}
	if s.MessageCount != 3 || len(msgs) != 3 || *msgs[0].PromptTokens != 1000 {
		t.Errorf("messageCount %d, %d stored", s.MessageCount, len(msgs))
	}
}

func TestCreatedAt(t *testing.T) {
	const old = int64(1_700_000_000_000) // 2023-11-14
	f := newFixture(t)
	f.session(fmt.Sprintf(`{"externalId":"imported","createdAt":%d}`, old))
	f.session(fmt.Sprintf(`{"externalId":"imported","title":"t","createdAt":%d}`, old+5))
	s, _ := f.stored("imported")
	if s.CreatedAt != old {
		t.Errorf("/sync/session createdAt = %d, want %d (first insert honoured, later ignored)", s.CreatedAt, old)
	}
	f.message(fmt.Sprintf(`{"sessionExternalId":"imported","externalId":"m","role":"user","textContent":"x","createdAt":%d}`, old+1))
	f.message(fmt.Sprintf(`{"sessionExternalId":"imported","externalId":"m","role":"user","textContent":"y","createdAt":%d}`, old+9))
	_, msgs := f.stored("imported")
	if msgs[0].CreatedAt != old+1 {
		t.Errorf("/sync/message createdAt = %d, want %d", msgs[0].CreatedAt, old+1)
	}

	before := f.clock.Now().UnixMilli()
	res := f.batch(fmt.Sprintf(`{"sessions":[{"externalId":"b","createdAt":%d}],
	  "messages":[{"sessionExternalId":"b","externalId":"m","role":"user","createdAt":%d}]}`, old, old))
	if res.Sessions.Inserted != 1 || res.Messages.Inserted != 1 {
		t.Fatalf("batch with createdAt: %+v; entries must not fail", res)
	}
	s, msgs = f.stored("b")
	if s.CreatedAt < before || msgs[0].CreatedAt < before {
		t.Errorf("batch createdAt honoured: session %d, message %d; want server time >= %d", s.CreatedAt, msgs[0].CreatedAt, before)
	}
}

func TestOutboxMarking(t *testing.T) {
	f := newFixture(t)
	id := f.session(`{"externalId":"s","title":"A"}`)
	if _, ok := f.dirty()[id]; !ok {
		t.Fatalf("a new session is not on the outbox")
	}
	steps := []struct {
		name  string
		apply func()
		dirty bool
	}{
		{"identical session re-sent", func() { f.session(`{"externalId":"s","title":"A"}`) }, false},
		{"title changed", func() { f.session(`{"externalId":"s","title":"B"}`) }, true},
		{"new message", func() {
			f.message(`{"sessionExternalId":"s","externalId":"m","role":"user","parts":[{"type":"text","content":"q"}]}`)
		}, true},
		{"identical message re-sent", func() {
			f.message(`{"sessionExternalId":"s","externalId":"m","role":"user","parts":[{"type":"text","content":"q"}]}`)
		}, false},
		{"message parts replaced", func() {
			f.message(`{"sessionExternalId":"s","externalId":"m","role":"user","parts":[{"type":"text","content":"q2"}]}`)
		}, true},
		{"identical batch", func() {
			f.batch(`{"sessions":[{"externalId":"s","title":"B"}],"messages":[{"sessionExternalId":"s","externalId":"m","role":"user","parts":[{"type":"text","content":"q2"}]}]}`)
		}, false},
	}
	for _, st := range steps {
		f.clearOutbox()
		st.apply()
		if _, got := f.dirty()[id]; got != st.dirty {
			t.Errorf("%s: on outbox = %v, want %v", st.name, got, st.dirty)
		}
	}
}

func TestBatchAppliesSessionsBeforeMessages(t *testing.T) {
	f := newFixture(t)
	// Messages come first in the JSON, but the session entry must create the
	// session (inserted), not update one the message auto-created.
	res := f.batch(`{"messages":[{"sessionExternalId":"x","externalId":"m","role":"user","source":"other"}],
	  "sessions":[{"externalId":"x","source":"pi","title":"T"}]}`)
	if res.Sessions != (ingest.Counts{Inserted: 1}) || res.Messages != (ingest.Counts{Inserted: 1}) {
		t.Fatalf("counts %+v", res)
	}
	if s, _ := f.stored("x"); s.Source != "pi" || s.Title != "T" || s.MessageCount != 1 {
		t.Errorf("session %+v", s)
	}
}

func TestUpsertKeyIsPerUser(t *testing.T) {
	f := newFixture(t)
	other := f.newUser("bob")
	body := `{"sessionExternalId":"shared","externalId":"m","role":"user","textContent":"%s"}`
	in, _ := ingest.DecodeMessage([]byte(fmt.Sprintf(body, "ann's")), ingest.Limits{})
	annMsg, err := f.svc.Message(ctx, f.user, in)
	if err != nil {
		t.Fatal(err)
	}
	in, _ = ingest.DecodeMessage([]byte(fmt.Sprintf(body, "bob's")), ingest.Limits{})
	bobMsg, err := f.svc.Message(ctx, other, in)
	if err != nil {
		t.Fatal(err)
	}
	if annMsg == bobMsg {
		t.Fatalf("both users got message id %s", annMsg)
	}
	_, msgs := f.stored("shared")
	if len(msgs) != 1 || *msgs[0].TextContent != "ann's" {
		t.Errorf("ann's message was overwritten by bob's: %+v", msgs)
	}
}
