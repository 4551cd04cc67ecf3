package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
)

// overlapIndex records the sessions written, and holds its first Put until
// a second one has started (or a liveness bound passes).
type overlapIndex struct {
	ingest.TextIndex
	mu       sync.Mutex
	written  map[string]bool // SessionRef
	puts     int
	second   chan struct{}
	overlaps bool
}

func (o *overlapIndex) Put(ctx context.Context, sessions []index.Session) error {
	o.mu.Lock()
	o.puts++
	n := o.puts
	o.mu.Unlock()
	switch n {
	case 1:
		select {
		case <-o.second:
			o.overlaps = true // read after Rebuild returns
		case <-time.After(2 * time.Minute): // a bound on liveness: a serial rebuild fails the test
		}
	case 2:
		close(o.second)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range sessions {
		o.written[ingest.SessionRef(s.UserID, s.SessionID)] = true
	}
	return nil
}

// TestRebuildFromOverlapsInOrder: a rebuild writes two batches at once, yet
// its stages and Written see the batches in order, and a mark is only
// given once every session up to it is written, so a reindex resumed
// after it loses nothing.
func TestRebuildFromOverlapsInOrder(t *testing.T) {
	f := newFixture(t)
	const n = 2*ingest.RebuildBatch + 30 // three batches
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sessionExternalId":"s%d","externalId":"m","role":"user","textContent":"word%d"}`, i, i)
	}
	b.WriteString(`]}`)
	f.batch(b.String())

	ix := &overlapIndex{written: map[string]bool{}, second: make(chan struct{})}
	stage := &recordingStage{}
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{}, stage)
	var marks []string
	var progress [][2]int
	err := p.RebuildFrom(ctx, ingest.RebuildOptions{
		Progress: func(done, total int) { progress = append(progress, [2]int{done, total}) },
		Written: func(_ context.Context, last string) error {
			ix.mu.Lock()
			defer ix.mu.Unlock()
			if len(marks) > 0 && last <= marks[len(marks)-1] {
				t.Errorf("mark %q after %q: not in order", last, marks[len(marks)-1])
			}
			marks = append(marks, last)
			// Every session up to the mark is written: the batches so far.
			upTo := 0
			for ref := range ix.written {
				if ref <= last {
					upTo++
				}
			}
			if want := min(len(marks)*ingest.RebuildBatch, n); upTo != want {
				t.Errorf("mark %d given with %d sessions up to it written, want %d", len(marks), upTo, want)
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !ix.overlaps {
		t.Error("the second batch's Put did not start while the first was being written")
	}
	if len(ix.written) != n || len(marks) != 3 {
		t.Fatalf("%d sessions written, %d marks; want %d and 3", len(ix.written), len(marks), n)
	}
	want := [][2]int{{0, n}, {ingest.RebuildBatch, n}, {2 * ingest.RebuildBatch, n}, {n, n}}
	if fmt.Sprint(progress) != fmt.Sprint(want) {
		t.Errorf("progress %v, want %v", progress, want)
	}
	if len(stage.calls) != 3 || len(stage.calls[0]) != ingest.RebuildBatch || len(stage.calls[2]) != 30 {
		t.Errorf("stage calls of %d batches, want 3 in order", len(stage.calls))
	}

	// Resuming after the second mark writes only the last batch.
	ix2 := &overlapIndex{written: map[string]bool{}, puts: 2} // past the first two: no waiting
	if err := ingest.NewPipeline(f.st, ix2, ingest.PipelineOptions{}).RebuildFrom(ctx, ingest.RebuildOptions{After: marks[1]}); err != nil {
		t.Fatal(err)
	}
	if len(ix2.written) != 30 {
		t.Errorf("resumed after the second mark: %d sessions written, want 30", len(ix2.written))
	}
	for ref := range ix2.written {
		if ref <= marks[1] || !ix.written[ref] {
			t.Errorf("resumed rebuild wrote %q, at or before the mark %q", ref, marks[1])
		}
	}
}
