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
	batches [][]string // session ids of each call
}

func (b *bodyCounter) PutSessions(ctx2 context.Context, ss []index.Session) error {
	b.last = 0
	var ids []string
	for _, s := range ss {
		b.last += len(s.Body)
		ids = append(ids, s.SessionID)
	}
	b.batches = append(b.batches, ids)
	return b.Index.PutSessions(ctx2, ss)
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
	open := func() *index.Index {
		ix, err := index.Open(t.TempDir(), index.Options{VolumeBytes: volume})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		return ix
	}
	ix := &bodyCounter{Index: open()}
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{})
	drain := func() {
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
	rng := rand.New(rand.NewPCG(5, 5))
	vocab := strings.Fields("alpha beta gamma delta handler retry parser config cache index volume session query kestrel osprey")
	text := func(i int) string {
		w := []string{fmt.Sprintf("word%sx", letters(i))}
		for range 40 + rng.IntN(40) {
			w = append(w, vocab[rng.IntN(len(vocab))])
		}
		return strings.Join(w, " ")
	}
	msg := func(i int, body string) string {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		return fmt.Sprintf(`{"sessionExternalId":"long","externalId":"m%d","role":%q,"textContent":%q}`, i, role, body)
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
			msgs = append(msgs, msg(n, b))
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
		ref := open()
		if err := ingest.NewPipeline(f.st, ref, ingest.PipelineOptions{}).Rebuild(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"alpha", "kestrel handler", "worda" + "x", "wordbx retry", `"retry parser"`, "editedword", "osprey cache -gamma"} {
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
				if got, want := get(ix.Index), get(ref); !slices.Equal(got, want) {
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
	same("grown")

	for range 12 {
		b := text(n) + " appendedword"
		f.message(msg(n, b))
		n++
		drain()
		if ix.last > 2*volume+len(b) {
			t.Fatalf("an append of %d bytes gave the index %d bytes of body", len(b), ix.last)
		}
	}
	same("appended")

	// An early message edited: the whole session is read again.
	f.message(msg(3, "editedword "+text(3)))
	drain()
	if ix.last < total {
		t.Fatalf("an edit of message 3 gave the index %d bytes of body, not the session (%d)", ix.last, total)
	}
	same("edited")
	f.message(msg(n, text(n)))
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
