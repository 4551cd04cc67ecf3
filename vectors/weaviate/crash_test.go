package weaviate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/vectors"
	"github.com/hindsight-dev/hindsight/vectors/weaviate"
)

// TestCrashFindable kills the server (SIGKILL) while sessions are written,
// restarts it, and checks that every vector the store holds afterwards is
// found by a search for itself: an object stored without its place in the
// vector index would be listed by Hashes (so never rewritten) yet never
// found.
func TestCrashFindable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a weaviate-server: not in -short")
	}
	srv := weaviatetest.Start(t)
	ctx := context.Background()
	cfg := weaviate.Config{URL: srv.URL, Collection: "Crash"}
	st := openStore(t, cfg)
	defer st.Close()
	const dim = 64
	if err := st.SetMeta(ctx, "m", dim); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	written := map[string][]float32{} // "session/ordinal" -> vector, every one sent
	acked := map[string]bool{}        // sessions whose Upsert succeeded
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(3, 3))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sid := fmt.Sprintf("s%d", i)
			var vs []vectors.Vector
			mu.Lock()
			for o := range 3 {
				v := randomUnit(r, dim)
				written[fmt.Sprintf("%s/%d", sid, o)] = v
				vs = append(vs, vectors.Vector{Ordinal: o, TextHash: fmt.Sprint(sid, o), Values: v})
			}
			mu.Unlock()
			if err := st.Upsert(ctx, "u1", map[string][]vectors.Vector{sid: vs}); err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			mu.Lock()
			acked[sid] = true
			mu.Unlock()
		}
	}()
	for { // killed while writing, after some writes (not after some time)
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if _, err := st.Hashes(ctx, "u1", "s0"); err == nil {
		t.Fatal("Hashes with the server killed: no error")
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	// A handle opened after the restart has no record of the writes: what
	// it finds is what Weaviate kept (logged, to show the crash hit).
	fresh := openStore(t, cfg)
	defer fresh.Close()
	_, _, unfound := findable(t, fresh, written, acked)
	t.Logf("%d vectors sent; after the crash %d stored vectors are not found by Weaviate's search for them", len(written), unfound)

	// The handle that saw the outage checks its recent writes first.
	stored, missing, lost := findable(t, st, written, acked)
	t.Logf("through the store that saw the outage: %d stored, %d not found", stored, lost)
	if lost > 0 {
		t.Errorf("%d stored vectors not findable after the store's check", lost)
	}
	if missing > 0 {
		t.Errorf("%d vectors of acknowledged writes not stored", missing)
	}
}

// findable counts the vectors of written that st holds, those of acked
// sessions it does not hold, and how many of those it holds a search for
// their own vector does not return.
func findable(t *testing.T, st *weaviate.Store, written map[string][]float32, acked map[string]bool) (stored, missing, lost int) {
	t.Helper()
	ctx := context.Background()
	for key, v := range written {
		sid, o, _ := strings.Cut(key, "/")
		ord, _ := strconv.Atoi(o)
		hs, err := st.Hashes(ctx, "u1", sid)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := hs[ord]; !ok {
			if acked[sid] {
				missing++
			}
			continue
		}
		stored++
		hits, err := st.Nearest(ctx, "u1", v, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].SessionID != sid || hits[0].Ordinal != ord || hits[0].Score < 0.999 {
			lost++
		}
	}
	return stored, missing, lost
}
