package ingest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
)

// bodyCounter is the index, recording the body bytes of each session
// PutSessions is given (the text the index analyses at most).
type bodyCounter struct {
	*index.Index
	last    int        // body bytes of the last call
	bodies  []int      // body bytes of each call
	batches [][]string // session ids of each call
	during  func()     // if set, called in each call (a write while a step runs)
}

func (b *bodyCounter) PutSessions(ctx2 context.Context, ss []index.Session) error {
	b.last = 0
	var ids []string
	for _, s := range ss {
		b.last += len(s.Body)
		ids = append(ids, s.SessionID)
	}
	b.bodies = append(b.bodies, b.last)
	b.batches = append(b.batches, ids)
	if b.during != nil {
		b.during()
	}
	return b.Index.PutSessions(ctx2, ss)
}

// openVolumeIndex opens an index of volumes of volume bytes, closed at
// cleanup.
func openVolumeIndex(t *testing.T, volume int) *index.Index {
	t.Helper()
	ix, err := index.Open(t.TempDir(), index.Options{VolumeBytes: volume})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// drainAll runs p's steps until both queues are empty.
func drainAll(t *testing.T, p *ingest.Pipeline) {
	t.Helper()
	for {
		n, err := p.DrainOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// sameAsRebuild checks that ix holds what a rebuild from f's records into
// a fresh index of volume bytes makes, compared on the results of queries
// over sessions and chunks (ids and scores) and on the counts.
func sameAsRebuild(t *testing.T, f *fixture, ix *index.Index, volume int, stage string, queries []string) {
	t.Helper()
	ref := openVolumeIndex(t, volume)
	if err := ingest.NewPipeline(f.st, ref, ingest.PipelineOptions{}).Rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		for _, kind := range []index.Kind{index.Sessions, index.Chunks} {
			get := func(x *index.Index) []string {
				hits, err := x.Search(ctx, index.Query{UserID: f.user, Text: q, Kind: kind, Limit: 50})
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, h := range hits {
					out = append(out, fmt.Sprintf("%s#%d %v", h.SessionID, h.Ordinal, h.Score))
				}
				return out
			}
			if got, want := get(ix), get(ref); !slices.Equal(got, want) {
				t.Fatalf("%s: %q (%v):\n got %v\nwant %v (rebuilt)", stage, q, kind, got, want)
			}
		}
	}
	gs, gc, _ := ix.Count(ctx)
	ws, wc, _ := ref.Count(ctx)
	if gs != ws || gc != wc {
		t.Fatalf("%s: %d documents, %d chunks; rebuilt %d, %d", stage, gs, gc, ws, wc)
	}
}

// TestLongSessionReadsItsTail is issue 29's cost on the indexer's side:
// once a long session is indexed, an append is read and indexed from the
// start of its last volume, not from the start of the session; and what
// the index holds is what a rebuild from the records makes, after appends,
// after an edit of an early message (which makes the next step read the
// whole session) and after a new title.
func TestLongSessionReadsItsTail(t *testing.T) {
	const volume = 4096
	f := newFixture(t)
	ix := &bodyCounter{Index: openVolumeIndex(t, volume)}
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{})
	drain := func() { t.Helper(); drainAll(t, p) }
	rng := rand.New(rand.NewPCG(5, 5))
	vocab := strings.Fields("alpha beta gamma delta handler retry parser config cache index volume session query kestrel osprey")
	text := func(i int) string {
		w := []string{fmt.Sprintf("word%sx", letters(i))}
		for range 40 + rng.IntN(40) {
			w = append(w, vocab[rng.IntN(len(vocab))])
		}
		return strings.Join(w, " ")
	}
	f.session(`{"externalId":"long","source":"claude-code","title":"a long session"}`)
	f.session(`{"externalId":"short","source":"claude-code","title":"a short one"}`)
	f.message(`{"sessionExternalId":"short","externalId":"s1","role":"user","textContent":"alpha kestrel handler"}`)
	total := 0
	n := 0
	for range 4 {
		var msgs []string
		for range 50 {
			b := text(n)
			total += len(b)
			msgs = append(msgs, longMessage(n, b))
			n++
		}
		f.batch(`{"messages":[` + strings.Join(msgs, ",") + `]}`)
		drain()
	}
	if total < 10*volume {
		t.Fatalf("the long session holds %d bytes, not many volumes", total)
	}

	// The index as a rebuild from the records makes it, compared on
	// sessions and chunks, ids and scores.
	same := func(stage string) {
		t.Helper()
		sameAsRebuild(t, f, ix.Index, volume, stage,
			[]string{"alpha", "kestrel handler", "worda" + "x", "wordbx retry", `"retry parser"`, "editedword", "osprey cache -gamma"})
	}
	same("grown")

	for range 12 {
		b := text(n) + " appendedword"
		f.message(longMessage(n, b))
		n++
		drain()
		if ix.last > 2*volume+len(b) {
			t.Fatalf("an append of %d bytes gave the index %d bytes of body", len(b), ix.last)
		}
	}
	same("appended")

	// An early message edited: the whole session is read again.
	f.message(longMessage(3, "editedword "+text(3)))
	drain()
	if ix.last < total {
		t.Fatalf("an edit of message 3 gave the index %d bytes of body, not the session (%d)", ix.last, total)
	}
	same("edited")
	f.message(longMessage(n, text(n)))
	n++
	drain()
	if ix.last > 2*volume+600 {
		t.Fatalf("after the edit, an append gave the index %d bytes of body", ix.last)
	}

	// A new title: every volume holds it, so the whole session is read.
	f.session(`{"externalId":"long","source":"claude-code","title":"a renamed osprey session"}`)
	drain()
	if ix.last < total {
		t.Fatalf("a new title gave the index %d bytes of body, not the session (%d)", ix.last, total)
	}
	same("renamed")
}

// letters writes i in letters (the analyzer splits digits off words).
func letters(i int) string {
	var b []byte
	for {
		b = append(b, byte('a'+i%26))
		i /= 26
		if i == 0 {
			return string(b)
		}
	}
}

// TestShortSessionsFirst: a step holding a long session's text and a short
// session writes the short one in a batch of its own first, so a live
// message waits for its own analysis, not another user's volumes.
func TestShortSessionsFirst(t *testing.T) {
	f := newFixture(t)
	ix := &bodyCounter{Index: openIndex(t)}
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{})
	long := strings.Repeat("a long answer about the retry handler. ", 10_000) // 400 KB
	f.message(fmt.Sprintf(`{"sessionExternalId":"long","externalId":"l1","role":"user","textContent":%q}`, long))
	f.message(`{"sessionExternalId":"short","externalId":"s1","role":"user","textContent":"kestrel"}`)
	longID, _ := f.stored("long")
	shortID, _ := f.stored("short")
	drainStep(t, p, 2)
	if want := [][]string{{shortID.ID}, {longID.ID}}; !slices.EqualFunc(ix.batches, want, slices.Equal) {
		t.Fatalf("batches %v, want the short session's first (%v)", ix.batches, want)
	}
	// Short sessions alone go in one batch.
	ix.batches = nil
	f.message(`{"sessionExternalId":"short","externalId":"s2","role":"user","textContent":"osprey"}`)
	f.message(`{"sessionExternalId":"other","externalId":"o1","role":"user","textContent":"osprey"}`)
	drainStep(t, p, 2)
	if len(ix.batches) != 1 || len(ix.batches[0]) != 2 {
		t.Fatalf("batches %v, want one of two sessions", ix.batches)
	}
}

// TestLongSessionReadInParts is issue 29's bound on one step: a long
// session written in one go, far past what a step reads, is read and
// indexed a part at a time (PipelineOptions.TailBytes): each step gives
// the index at most the bound and the exchange it ends in, the session
// stays queued until its last part, and the index ends as a rebuild from
// the records makes it, the session's last words found. Midway through
// the parts, an edit of an early message (the mark is dropped: the parts
// start again from the beginning), an edit of a message past the mark, a
// new title, more appended messages or a deletion change nothing in that.
func TestLongSessionReadInParts(t *testing.T) {
	const volume, tail = 2048, 8 << 10
	type change func(f *fixture, msg func(i int, body string) string, n int)
	cases := []struct {
		name   string
		midway change
		during change // in each of the first steps, while it runs
	}{
		{name: "appended"},
		// The mark moves on all the same: the edits are past it.
		{name: "late edits while the steps run", during: func(f *fixture, msg func(int, string) string, n int) {
			f.message(longMessage(n-1, fmt.Sprintf("editedword late %d finalwordx", rand.Int())))
		}},
		{name: "early edit", midway: func(f *fixture, msg func(int, string) string, n int) {
			f.message(longMessage(3, "editedword early"))
		}},
		{name: "late edit", midway: func(f *fixture, msg func(int, string) string, n int) {
			f.message(longMessage(n-6, "editedword late"))
		}},
		{name: "renamed", midway: func(f *fixture, msg func(int, string) string, n int) {
			f.session(`{"externalId":"long","source":"claude-code","title":"a renamed osprey session"}`)
		}},
		{name: "appended midway", midway: func(f *fixture, msg func(int, string) string, n int) {
			f.message(longMessage(n, "editedword appended"))
			f.message(longMessage(n+1, "kestrel answer"))
		}},
		{name: "deleted", midway: func(f *fixture, msg func(int, string) string, n int) {
			id, _ := f.stored("long")
			if err := f.svc.DeleteSession(ctx, f.user, id.ID); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ix := &bodyCounter{Index: openVolumeIndex(t, volume)}
			p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{TailBytes: tail})
			var n int // the messages written at first
			rng := rand.New(rand.NewPCG(uint64(ci), 9))
			vocab := strings.Fields("alpha beta gamma delta handler retry parser config cache index volume session query kestrel")
			f.session(`{"externalId":"long","source":"claude-code","title":"a long session"}`)
			// About 10 parts, written before any step: one outbox entry.
			var bodies []string
			total := 0
			for total < 10*tail {
				w := []string{fmt.Sprintf("word%sx", letters(len(bodies)))}
				for range 30 + rng.IntN(60) {
					w = append(w, vocab[rng.IntN(len(vocab))])
				}
				bodies = append(bodies, strings.Join(w, " "))
				total += len(bodies[len(bodies)-1])
			}
			bodies[len(bodies)-1] += " finalwordx"
			n = len(bodies)
			if tc.during != nil {
				ix.during = func() {
					if len(ix.bodies) < 8 {
						tc.during(f, longMessage, n)
					}
				}
			}
			for at := 0; at < len(bodies); at += 100 {
				var msgs []string
				for i := at; i < min(at+100, len(bodies)); i++ {
					msgs = append(msgs, longMessage(i, bodies[i]))
				}
				f.batch(`{"messages":[` + strings.Join(msgs, ",") + `]}`)
			}
			// An exchange is a user message and the answer after it.
			exchange := 0
			for i := 0; i+1 < len(bodies); i += 2 {
				exchange = max(exchange, len(bodies[i])+len(bodies[i+1])+2)
			}
			exchange = max(exchange, len("editedword appended kestrel answer")+2)
			bound := tail + exchange + (tail+exchange)/50 // and the separators between messages

			steps := 0
			for {
				n, err := p.DrainOnce(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if steps++; steps > 500 {
					t.Fatalf("%d steps and the outbox is not empty", steps)
				}
				if steps == 3 && tc.midway != nil {
					if _, queued := f.dirty()[func() string { s, _ := f.stored("long"); return s.ID }()]; !queued {
						t.Fatalf("after 3 steps the session is not queued: it was read whole")
					}
					tc.midway(f, longMessage, len(bodies))
				}
			}
			for i, b := range ix.bodies {
				if b > bound {
					t.Errorf("step %d gave the index %d bytes of body, more than the part's bound %d", i, b, bound)
				}
			}
			if len(ix.bodies) < total/bound && tc.name != "deleted" {
				t.Errorf("%d steps for %d bytes of text: not read in parts of at most %d", len(ix.bodies), total, bound)
			}
			// Every step moves on (with late edits too: the mark is before
			// them): about one step per part, and the last.
			if most := total/tail + 3; tc.midway == nil && len(ix.bodies) > most {
				t.Errorf("%d steps for %d bytes of text in parts of %d, more than %d", len(ix.bodies), total, tail, most)
			}
			found := foundIDs(t, ix.Index, f.user, index.Sessions, "finalwordx")
			if tc.name == "deleted" {
				if s, c, _ := ix.Count(ctx); s != 0 || c != 0 || len(found) != 0 {
					t.Fatalf("after the deletion the index holds %d documents, %d chunks; found %v", s, c, found)
				}
				return
			}
			if len(found) != 1 {
				t.Fatalf("the session's last words found in %v, want the session", found)
			}
			sameAsRebuild(t, f, ix.Index, volume, tc.name,
				[]string{"alpha", "kestrel handler", "wordax", "wordbx retry", `"retry parser"`, "editedword", "osprey cache -gamma", "finalwordx"})
		})
	}
}

// longMessage is message i of the session "long" (externalId m<i>), user
// and assistant turns alternating, as /sync/message takes it.
func longMessage(i int, body string) string {
	role := "user"
	if i%2 == 1 {
		role = "assistant"
	}
	return fmt.Sprintf(`{"sessionExternalId":"long","externalId":"m%d","role":%q,"textContent":%q}`, i, role, body)
}
