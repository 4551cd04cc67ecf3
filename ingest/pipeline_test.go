package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// recordingStage remembers which sessions each call of Process received.
type recordingStage struct {
	mu    sync.Mutex
	calls [][]string // session ids, "-" prefixed when deleted
}

func (r *recordingStage) Process(_ context.Context, docs []ingest.Doc) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, d := range docs {
		if d.Deleted {
			ids = append(ids, "-"+d.SessionID)
		} else {
			ids = append(ids, d.SessionID)
		}
	}
	slices.Sort(ids)
	r.calls = append(r.calls, ids)
	return nil
}

// TestPipelineQueues: a step of the search queue makes sessions (and,
// read from the records, their chunks) searchable and passes them on; the
// chunk queue (stages) runs only when the search queue is empty; deletions
// go through both.
func TestPipelineQueues(t *testing.T) {
	f := newFixture(t)
	ix := openIndex(t)
	stage := &recordingStage{}
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{}, stage)

	write := func(session, msg, text string) {
		f.batch(fmt.Sprintf(`{"messages":[{"sessionExternalId":%q,"externalId":%q,"role":"user","textContent":%q}]}`, session, msg, text))
	}
	step := func(want int) { t.Helper(); drainStep(t, p, want) }
	found := func(kind index.Kind, text string) []string { t.Helper(); return foundIDs(t, ix, f.user, kind, text) }
	queued := func(q kv.Queue) int {
		var n int
		_ = f.st.View(ctx, func(tx *kv.Tx) error { n = len(tx.DirtySessions(q, 0)); return nil })
		return n
	}

	write("a", "a1", "alpha kestrel")
	write("b", "b1", "bravo kestrel")
	a, _ := f.stored("a")
	b, _ := f.stored("b")
	step(2)
	if got := found(index.Sessions, "kestrel"); len(got) != 2 {
		t.Errorf("after the search step: sessions search = %v, want both", got)
	}
	// The Bleve index scores chunks from the records: context needs no
	// chunk step. The stages (embeddings) wait for it.
	if got := found(index.Chunks, "kestrel"); len(got) != 2 || len(stage.calls) != 0 {
		t.Errorf("after the search step: chunks %v (want both sessions'), stage calls %v (want none yet)", got, stage.calls)
	}
	if n := queued(kv.ChunkQueue); n != 2 {
		t.Errorf("chunk queue has %d sessions, want 2", n)
	}

	// New search work goes first.
	write("a", "a2", "alpha osprey")
	step(1)
	if got := found(index.Sessions, "osprey"); !slices.Equal(got, []string{a.ID}) || len(stage.calls) != 0 {
		t.Errorf("search step with chunk work queued: osprey = %v (want [a]), stage calls %v (want none)", got, stage.calls)
	}
	step(2) // now the chunk queue
	if got := slices.Compact(found(index.Chunks, "kestrel osprey")); !slices.Equal(got, sortedIDs(a.ID, b.ID)) {
		t.Errorf("after the chunk step: chunk hits of sessions %v, want both", got)
	}
	if want := [][]string{sortedIDs(a.ID, b.ID)}; !slices.EqualFunc(stage.calls, want, slices.Equal) {
		t.Errorf("stage calls = %v, want %v", stage.calls, want)
	}
	step(0)
	if lags := p.Lags(); len(lags) != 3 {
		t.Errorf("Lags = %v, want one per session per search step (3)", lags)
	}

	if err := f.svc.DeleteSession(ctx, f.user, b.ID); err != nil {
		t.Fatal(err)
	}
	step(1)
	if got := found(index.Sessions, "bravo"); len(got) != 0 {
		t.Errorf("deleted session still in sessions search: %v", got)
	}
	if got := found(index.Chunks, "bravo"); len(got) != 0 {
		t.Errorf("deleted session still in chunks search: %v", got)
	}
	step(1)
	if last := stage.calls[len(stage.calls)-1]; !slices.Equal(last, []string{"-" + b.ID}) {
		t.Errorf("stage got %v for the deletion, want [-%s]", last, b.ID)
	}
	step(0)
}

// openIndex opens a full-text index in a temporary directory for the test.
func openIndex(t *testing.T) *index.Index {
	t.Helper()
	ix, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// drainStep runs one pipeline step and checks it took want sessions.
func drainStep(t *testing.T, p *ingest.Pipeline, want int) {
	t.Helper()
	if n, err := p.DrainOnce(ctx); err != nil || n != want {
		t.Fatalf("DrainOnce = %d, %v; want %d sessions", n, err, want)
	}
}

// foundIDs returns, sorted, the sessions of user that a search of kind for
// text finds in ix.
func foundIDs(t *testing.T, ix *index.Index, user string, kind index.Kind, text string) []string {
	t.Helper()
	hits, err := ix.Search(ctx, index.Query{UserID: user, Text: text, Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.SessionID)
	}
	return sortedIDs(ids...)
}

func sortedIDs(ids ...string) []string {
	slices.Sort(ids)
	return ids
}

// TestPipelineStepBytes: a step stops taking sessions once their text
// reaches StepBytes (always taking at least one), and the rest waits.
func TestPipelineStepBytes(t *testing.T) {
	f := newFixture(t)
	ix := openIndex(t)
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{StepBytes: 20})
	for _, s := range []string{"a", "b", "c"} {
		// 24 bytes of text each: over the budget alone.
		f.batch(fmt.Sprintf(`{"messages":[{"sessionExternalId":%q,"externalId":"m","role":"user","textContent":"a fairly long message %s"}]}`, s, s))
	}
	var steps []int
	for {
		n, err := p.DrainOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		steps = append(steps, n)
	}
	// Three search steps, then three chunk steps, of one session each.
	if want := []int{1, 1, 1, 1, 1, 1}; !slices.Equal(steps, want) {
		t.Errorf("steps took %v sessions, want %v", steps, want)
	}
}

// TestPipelineLiveFirst: a live write is indexed before a backlog of bulk
// writes queued earlier, in a step of its own, on both queues; the step
// after a live step is bulk work's turn (the oldest entries, live ones
// among them); then the backlog is indexed and nothing is lost.
func TestPipelineLiveFirst(t *testing.T) {
	f := newFixture(t)
	ix := openIndex(t)
	stage := &recordingStage{}
	// StepTime an hour: bulk steps are never cut by the measured speed.
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{BatchSize: 8, StepTime: time.Hour}, stage)
	step := func(want int) { t.Helper(); drainStep(t, p, want) }
	found := func(kind index.Kind, text string) []string { t.Helper(); return foundIDs(t, ix, f.user, kind, text) }
	id := func(ext string) string { s, _ := f.stored(ext); return s.ID }

	// With no live traffic a bulk step is full size.
	f.imports(5, "m1", "imported heron")
	step(5)
	step(5)
	stage.calls = nil

	// A second import, then a plugin syncs one message.
	f.imports(5, "m2", "imported egret")
	f.message(`{"sessionExternalId":"live","externalId":"l1","role":"user","textContent":"live falcon"}`)
	step(1)
	if got := found(index.Sessions, "falcon"); !slices.Equal(got, []string{id("live")}) {
		t.Errorf("after one step: falcon = %v, want the live session", got)
	}
	if got := found(index.Sessions, "egret"); len(got) != 0 {
		t.Errorf("after one step: egret = %v, want no bulk session yet (the live step takes live work only)", got)
	}
	// A live write to a session of the backlog: the next step is bulk
	// work's turn all the same, and takes it with the others.
	f.message(`{"sessionExternalId":"b3","externalId":"l2","role":"user","textContent":"live osprey"}`)
	step(5)
	if got := found(index.Sessions, "egret"); len(got) != 5 {
		t.Errorf("after the bulk step: egret = %v, want the five imported sessions", got)
	}
	// The chunk queue serves its live entries first, alone, then its
	// oldest entries.
	step(2)
	if want := sortedIDs(id("live"), id("b3")); len(stage.calls) != 1 || !slices.Equal(stage.calls[0], want) {
		t.Errorf("first chunk step: stage calls %v, want [%v]", stage.calls, want)
	}
	step(4)
	step(0)
	all := sortedIDs(id("live"), id("b0"), id("b1"), id("b2"), id("b3"), id("b4"))
	for _, kind := range []index.Kind{index.Sessions, index.Chunks} {
		if got := slices.Compact(found(kind, "egret falcon")); !slices.Equal(got, all) {
			t.Errorf("kind %v: egret falcon = %v, want every session %v", kind, got, all)
		}
	}
	var n int
	_ = f.st.View(ctx, func(tx *kv.Tx) error { n = tx.OutboxLen(); return nil })
	if n != 0 {
		t.Errorf("outbox holds %d entries after draining, want 0", n)
	}
}

// imports syncs one message to each of n sessions b0..b(n-1) in one bulk
// batch (keepDates, as an import sends).
func (f *fixture) imports(n int, msg, text string) {
	f.t.Helper()
	var bulk []string
	for i := range n {
		bulk = append(bulk, fmt.Sprintf(`{"sessionExternalId":"b%d","externalId":%q,"role":"user","textContent":%q}`, i, msg, text))
	}
	b, err := ingest.DecodeBatchKeepingDates([]byte(`{"messages":[`+strings.Join(bulk, ",")+`]}`), ingest.Limits{})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.svc.Batch(ctx, f.user, b); err != nil {
		f.t.Fatal(err)
	}
}

// TestPipelineBulkShare: while a live write arrives before every step,
// steps alternate between the live lane and the oldest bulk work, so a
// bulk backlog is indexed at BatchSize every other step, not starved.
func TestPipelineBulkShare(t *testing.T) {
	f := newFixture(t)
	ix := openIndex(t)
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{BatchSize: 2, StepTime: time.Hour})
	f.imports(6, "m", "imported heron")
	var steps []int
	for i := 0; len(foundIDs(t, ix, f.user, index.Sessions, "heron")) < 6; i++ {
		if i == 20 {
			t.Fatalf("the backlog is not indexed after %d steps with live writes (%v)", i, steps)
		}
		f.message(fmt.Sprintf(`{"sessionExternalId":"live","externalId":"l%d","role":"user","textContent":"live falcon"}`, i))
		n, err := p.DrainOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, n)
	}
	// live, bulk (two oldest), live, bulk, live, bulk.
	if want := []int{1, 2, 1, 2, 1, 2}; !slices.Equal(steps, want) {
		t.Errorf("steps took %v sessions, want %v", steps, want)
	}
}

// gatedIndex is a TextIndex whose PutSessions waits for a token on gate
// (or fails with fail, when set).
type gatedIndex struct {
	ingest.TextIndex
	gate chan struct{}
	fail error
}

func (g *gatedIndex) PutSessions(ctx context.Context, s []index.Session) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	if g.fail != nil {
		return g.fail
	}
	return g.TextIndex.PutSessions(ctx, s)
}

// TestAdmit: while Run drains the outbox, a bulk write waits in Admit as
// long as the search queue holds more than two full steps (MaxBacklog is
// tiny, so that floor binds), and goes ahead once the indexer caught up;
// it never waits while the index fails, nor longer than MaxAdmitWait, nor
// when Run is not draining.
func TestAdmit(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ingest.PipelineOptions
		fail bool // the index fails after the first step
	}{
		{"caught up", ingest.PipelineOptions{MaxAdmitWait: time.Hour}, false},
		{"index fails", ingest.PipelineOptions{MaxAdmitWait: time.Hour}, true},
		{"waited long enough", ingest.PipelineOptions{MaxAdmitWait: time.Millisecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			g := &gatedIndex{TextIndex: openIndex(t), gate: make(chan struct{})}
			opts := tc.opts
			opts.BatchSize, opts.StepTime, opts.MaxBacklog, opts.Debounce = 2, time.Hour, time.Nanosecond, time.Millisecond
			p := ingest.NewPipeline(f.st, g, opts)
			admit := func() error { // a write of one session, committed at once
				done, err := p.Admit(ctx, 1)
				done()
				return err
			}
			f.imports(10, "m", "imported heron")
			if err := admit(); err != nil { // not running: never held
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); p.Run(runCtx) }()
			defer func() { stop(); close(g.gate); <-done }()
			g.gate <- struct{}{} // the first step: 8 sessions left
			// Wait for the first step to be recorded: the speed is known.
			for p.Status().Indexed < 2 {
				time.Sleep(time.Millisecond)
			}
			if tc.opts.MaxAdmitWait < time.Second {
				// Held at most MaxAdmitWait: it returns with the index stuck.
				if err := admit(); err != nil {
					t.Fatal(err)
				}
				return
			}
			admitted := make(chan error, 1)
			waitFor := func(what string) {
				t.Helper()
				select {
				case err := <-admitted:
					t.Fatalf("%s: Admit returned %v while the backlog is over the bound", what, err)
				case <-time.After(50 * time.Millisecond):
				}
			}
			go func() { admitted <- admit() }()
			waitFor("after one step")
			if tc.fail {
				g.fail = errors.New("disk full")
				g.gate <- struct{}{}
				if err := <-admitted; err != nil {
					t.Fatalf("Admit = %v with the index failing, want nil", err)
				}
				return
			}
			g.gate <- struct{}{} // 6 left
			g.gate <- struct{}{} // 4 left
			waitFor("at two full steps")
			g.gate <- struct{}{} // 2 left: under the bound
			if err := <-admitted; err != nil {
				t.Fatalf("Admit = %v after the indexer caught up", err)
			}
		})
	}
}

// TestLiveWrites: the single-entry endpoints and small batches without
// keepDates are live syncs; keepDates batches and larger ones are bulk.
func TestLiveWrites(t *testing.T) {
	msgs := func(n int) string {
		var m []string
		for i := range n {
			m = append(m, fmt.Sprintf(`{"sessionExternalId":"s","externalId":"m%d","role":"user","textContent":"hello"}`, i))
		}
		return `{"messages":[` + strings.Join(m, ",") + `]}`
	}
	tests := []struct {
		name  string
		write func(f *fixture)
		live  bool
	}{
		{"session", func(f *fixture) { f.session(`{"externalId":"s","title":"a title"}`) }, true},
		{"message", func(f *fixture) {
			f.message(`{"sessionExternalId":"s","externalId":"m","role":"user","textContent":"hi"}`)
		}, true},
		{"batch of one", func(f *fixture) { f.batch(msgs(1)) }, true},
		{"batch at the threshold", func(f *fixture) { f.batch(msgs(ingest.LiveBatch)) }, true},
		{"batch over the threshold", func(f *fixture) { f.batch(msgs(ingest.LiveBatch + 1)) }, false},
		{"batch with keepDates", func(f *fixture) {
			b, err := ingest.DecodeBatchKeepingDates([]byte(msgs(1)), ingest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.svc.Batch(ctx, f.user, b); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.write(f)
			var live, queued bool
			_ = f.st.View(ctx, func(tx *kv.Tx) error {
				live, queued = tx.HasLive(kv.SearchQueue), tx.HasDirty()
				return nil
			})
			if !queued || live != tc.live {
				t.Errorf("queued %v, live %v; want queued, live %v", queued, live, tc.live)
			}
		})
	}
}

// TestBulkBatchThrottled: a bulk batch asks the throttle (the pipeline's
// Admit) first, with the number of sessions it writes, and is not written
// when it refuses; a live sync never asks.
func TestBulkBatchThrottled(t *testing.T) {
	f := newFixture(t)
	var asked []int
	refuse := errors.New("shutting down")
	var answer error
	var done int
	f.svc.Throttle(func(_ context.Context, n int) (func(), error) {
		asked = append(asked, n)
		return func() { done++ }, answer
	})

	f.imports(3, "m1", "imported heron") // three sessions, one message each
	f.message(`{"sessionExternalId":"live","externalId":"l1","role":"user","textContent":"live falcon"}`)
	f.batch(`{"messages":[{"sessionExternalId":"live","externalId":"l2","role":"user","textContent":"small batch"}]}`)
	if !slices.Equal(asked, []int{3}) || done != 1 {
		t.Errorf("throttle asked %v and told done %d times, want [3] and once (the bulk batch only)", asked, done)
	}

	answer = refuse
	b, err := ingest.DecodeBatchKeepingDates([]byte(`{"messages":[{"sessionExternalId":"refused","externalId":"m","role":"user","textContent":"x"}]}`), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Batch(ctx, f.user, b); !errors.Is(err, refuse) {
		t.Errorf("Batch = %v, want the throttle's error", err)
	}
	_ = f.st.View(ctx, func(tx *kv.Tx) error {
		if _, ok := tx.SessionIDByExternal(f.user, "refused"); ok {
			t.Errorf("a batch the throttle refused was written")
		}
		return nil
	})
}
