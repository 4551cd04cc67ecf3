package weaviate_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/vectors"
	"github.com/hindsight-dev/hindsight/vectors/weaviate"
)

// TestRestart restarts the shared server once (about 10 seconds) and checks
// that the store's vectors and recorded model survive it. (The relevance
// bench's peer checks its own answers across a restart: package
// bench/weaviatepeer.)
func TestRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the server: not in -short")
	}
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(8, 8))

	cfg := weaviate.Config{URL: srv.URL, Collection: newCollection(t, srv.URL)}
	st := openStore(t, cfg)
	if err := st.SetMeta(ctx, "m", 8); err != nil {
		t.Fatal(err)
	}
	sessions := map[string][]vectors.Vector{}
	for s := range 20 {
		sid := fmt.Sprintf("s%d", s)
		for o := range 3 {
			sessions[sid] = append(sessions[sid], vectors.Vector{Ordinal: o, TextHash: fmt.Sprint(sid, o), Values: randomUnit(r, 8)})
		}
	}
	if err := st.Upsert(ctx, "u1", sessions); err != nil {
		t.Fatal(err)
	}
	q := randomUnit(r, 8)
	before, err := st.Nearest(ctx, "u1", q, 10)
	if err != nil {
		t.Fatal(err)
	}

	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}

	// The store after the restart, through the handle opened before it and
	// through a new one.
	st2 := openStore(t, cfg)
	defer st2.Close()
	for _, h := range []vectors.Store{st, st2} {
		if model, dim, err := h.Meta(ctx); err != nil || model != "m" || dim != 8 {
			t.Errorf("Meta after restart = %q, %d, %v", model, dim, err)
		}
		got, err := h.Nearest(ctx, "u1", q, 10)
		if err != nil {
			t.Fatalf("Nearest after restart: %v", err)
		}
		if !slices.EqualFunc(got, before, func(a, b vectors.Hit) bool {
			return a.SessionID == b.SessionID && a.Ordinal == b.Ordinal && math.Abs(a.Score-b.Score) < 1e-5
		}) {
			t.Errorf("Nearest after restart = %v, before %v", got, before)
		}
		if hs, err := h.Hashes(ctx, "u1", "s7"); err != nil || !maps.Equal(hs, map[int]string{0: "s70", 1: "s71", 2: "s72"}) {
			t.Errorf("Hashes after restart = %v, %v", hs, err)
		}
	}
	st.Close()
}
