package weaviate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/vectors"
	"github.com/hindsight-dev/hindsight/vectors/weaviate"
	"github.com/hindsight-dev/hindsight/vectors/weaviate/weaviatetest"
)

// TestRestart restarts the shared server once (about 10 seconds) and checks
// two things across it: the store's vectors and recorded model survive, and
// the peer's BM25 after Settle already answers as the restarted server does.
func TestRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the server: not in -short")
	}
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(8, 8))

	// The store.
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

	// The peer: a corpus large enough that the import leaves postings in
	// memtables.
	p := openPeer(t, srv.URL)
	docs, queries := zipfCorpus(r, 3000, 200)
	for i := 0; i < len(docs); i += 500 {
		if err := p.Index(ctx, docs[i:min(i+500, len(docs))]); err != nil {
			t.Fatal(err)
		}
	}
	unsettled := make([][]string, len(queries))
	for i, q := range queries {
		unsettled[i] = rawBM25(t, srv.URL, p.Collection(), q, 10)
	}
	settled := make([][]string, len(queries))
	for i, q := range queries {
		settled[i] = search(t, p, weaviate.PeerBM25, q, nil, 10)
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

	// The peer after the restart.
	var sameSettled, sameUnsettled float64
	for i, q := range queries {
		after := search(t, p, weaviate.PeerBM25, q, nil, 10)
		sameSettled += overlap(after, settled[i])
		sameUnsettled += overlap(after, unsettled[i])
	}
	n := float64(len(queries))
	t.Logf("BM25 top-10 overlap with the results after a restart: %.3f settled, %.3f right after the import", sameSettled/n, sameUnsettled/n)
	if sameSettled/n < 0.99 {
		t.Errorf("after Settle BM25 answers differently from after a restart: top-10 overlap %.3f, want >= 0.99", sameSettled/n)
	}
}

// rawBM25 asks the peer's document tenant directly, without Settle.
func rawBM25(t *testing.T, url, class, q string, k int) []string {
	t.Helper()
	query := fmt.Sprintf(`{Get{%s(tenant:"docs", bm25:{query:%q, properties:["text"]}, limit:%d){docId}}}`, class, q, k)
	body, _ := json.Marshal(map[string]string{"query": query})
	resp, err := http.Post(url+"/v1/graphql", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Get map[string][]struct {
				DocID string `json:"docId"`
			}
		}
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Errors) > 0 {
		t.Fatalf("raw bm25: %v %v", err, out.Errors)
	}
	var ids []string
	for _, h := range out.Data.Get[class] {
		ids = append(ids, h.DocID)
	}
	return ids
}

// overlap is |a ∩ b| / max(|a|, |b|) (1 for two empty lists).
func overlap(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	in := map[string]bool{}
	for _, x := range a {
		in[x] = true
	}
	same := 0
	for _, x := range b {
		if in[x] {
			same++
		}
	}
	return float64(same) / float64(max(len(a), len(b)))
}
