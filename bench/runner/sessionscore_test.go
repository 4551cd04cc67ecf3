package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/index"
)

// chunkText answers Kind Sessions with whole and Kind Chunks with chunks;
// a chunk search honours its context (as reading records does), a session
// search does not need to.
type chunkText struct {
	whole, chunks []index.Hit
	chunkCalls    int
}

func (f *chunkText) Search(ctx context.Context, q index.Query) ([]index.Hit, error) {
	if q.Kind == index.Chunks {
		f.chunkCalls++
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return f.chunks, nil
	}
	return f.whole, nil
}

// TestSessionScore: each variant's order from the same whole-session and
// chunk scores, sessions without chunk hits after the others, the chunk
// search done once per query for all variants and under the run's
// context, not the query's.
func TestSessionScore(t *testing.T) {
	text := &chunkText{
		whole: []index.Hit{{SessionID: "s1", Score: 10}, {SessionID: "s2", Score: 8}, {SessionID: "s3", Score: 5}},
		// chunk hits come best first; s3 has none.
		chunks: []index.Hit{{SessionID: "s2", Score: 9}, {SessionID: "s1", Score: 8.5}, {SessionID: "s2", Score: 4}, {SessionID: "s2", Score: 2}},
	}
	docOf := map[string]string{"s1": "d1", "s2": "d2", "s3": "d3"}
	search := sessionScoreSearch(context.Background(), text, "u", docOf)
	// The query's own deadline has passed: only the run's context may
	// bound the chunk search.
	qctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tt := range []struct{ variant, want string }{
		{"whole", "d1 d2 d3"},            // 10, 8, 5
		{"best-chunk", "d2 d1 d3"},       // s2 9, s1 8.5; s3 last
		{"whole+best-chunk", "d1 d2 d3"}, // s1 18.5, s2 17
		{"best-chunk+top3", "d2 d1 d3"},  // s2 9 + 4/2 + 2/2 = 12, s1 8.5
	} {
		got, err := search(qctx, sessionScorePrefix+tt.variant, "q", 10)
		if err != nil {
			t.Fatalf("%s: %v", tt.variant, err)
		}
		if w := strings.Fields(tt.want); !slices.Equal(got, w) {
			t.Errorf("%s: %v, want %v", tt.variant, got, w)
		}
	}
	if text.chunkCalls != 1 {
		t.Errorf("chunk searches = %d, want 1 for the three variants that use them", text.chunkCalls)
	}
	if _, err := search(qctx, sessionScorePrefix+"sum", "q", 10); err == nil {
		t.Error("an unknown variant answered")
	}

	// A cancelled run stops the chunk search.
	runCtx, stop := context.WithCancel(context.Background())
	stop()
	search = sessionScoreSearch(runCtx, text, "u", docOf)
	if _, err := search(context.Background(), sessionScorePrefix+"best-chunk", "q2", 10); err == nil {
		t.Error("the chunk search ran after the run was cancelled")
	}
}
