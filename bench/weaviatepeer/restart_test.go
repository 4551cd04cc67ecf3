package weaviatepeer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/bench/weaviatepeer"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
)

// TestRestart restarts the shared server once (about 10 seconds) and checks
// that the peer's BM25 after Settle already answers as the restarted server
// does.
func TestRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the server: not in -short")
	}
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(8, 8))

	// A corpus large enough that the import leaves postings in memtables.
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
		settled[i] = search(t, p, weaviatepeer.BM25, q, nil, 10)
	}

	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}

	var sameSettled, sameUnsettled float64
	for i, q := range queries {
		after := search(t, p, weaviatepeer.BM25, q, nil, 10)
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
