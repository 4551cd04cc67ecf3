package weaviatepeer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/bench/weaviatepeer"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/internal/weaviatex"
)

func openPeer(t *testing.T, url string) *weaviatepeer.Peer {
	t.Helper()
	p, err := weaviatepeer.Open(context.Background(), weaviatex.Config{URL: url}, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func search(t *testing.T, p *weaviatepeer.Peer, mode, q string, qv []float32, k int) []string {
	t.Helper()
	ids, err := p.Search(context.Background(), mode, q, qv, k)
	if err != nil {
		t.Fatalf("Search(%s, %q): %v", mode, q, err)
	}
	return ids
}

func TestChunks(t *testing.T) {
	for _, c := range []struct {
		text  string
		words int
		want  []string
	}{
		{"a b c d e", 2, []string{"a b", "c d", "e"}},
		{"  a\tb\n", 64, []string{"a b"}},
		{"", 3, []string{""}},
		{"a b", 0, []string{"a b"}},
	} {
		if got := weaviatepeer.Chunks(c.text, c.words); !slices.Equal(got, c.want) {
			t.Errorf("Chunks(%q, %d) = %q, want %q", c.text, c.words, got, c.want)
		}
	}
}

func TestModes(t *testing.T) {
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	p := openPeer(t, srv.URL)
	// Four directions: each document's chunks point along one axis, so the
	// vector leg is unambiguous; the words make the BM25 leg unambiguous.
	axis := func(i int) []float32 { v := make([]float32, 4); v[i] = 1; return v }
	docs := []weaviatepeer.Doc{
		{ID: "d1", Title: "Flaky auth test", Text: "the login token expires during the integration test run",
			Chunks: []string{"the login token expires", "during the integration test run"}, Vectors: [][]float32{axis(0), axis(0)}},
		{ID: "d2", Title: "Parser crash", Text: "parseConfigFile panics on an empty yaml document",
			Vectors: [][]float32{axis(1), axis(1), axis(1)}}, // Chunks from the text, cut evenly
		{ID: "d3", Title: "Slow build", Text: "the docker build cache is invalidated by the timestamp file",
			Chunks: []string{"the docker build cache is invalidated by the timestamp file"}, Vectors: [][]float32{axis(2)}},
	}
	if err := p.Index(ctx, docs[:2]); err != nil {
		t.Fatal(err)
	}
	if got := search(t, p, weaviatepeer.BM25, "login token", nil, 10); !slices.Equal(got, []string{"d1"}) {
		t.Errorf("bm25 login token = %v, want [d1]", got)
	}
	// A later Index is searchable at once (Search settles again).
	if err := p.Index(ctx, docs[2:]); err != nil {
		t.Fatal(err)
	}
	if got := search(t, p, weaviatepeer.BM25, "docker cache", nil, 10); !slices.Equal(got, []string{"d3"}) {
		t.Errorf("bm25 after a second Index = %v, want [d3]", got)
	}
	if got := search(t, p, weaviatepeer.BM25, "crash", nil, 10); !slices.Equal(got, []string{"d2"}) {
		t.Errorf("bm25 on the title = %v, want [d2]", got)
	}
	for _, mode := range []string{weaviatepeer.HybridRanked, weaviatepeer.HybridRelative} {
		// Text and vector agree: d2 first, and once although it has three chunks.
		got := search(t, p, mode, "yaml document", axis(1), 10)
		if len(got) != 3 || got[0] != "d2" {
			t.Errorf("%s: %v, want d2 first and each document once", mode, got)
		}
		// The vector alone still ranks when no word matches.
		if got := search(t, p, mode, "zzz", axis(2), 1); !slices.Equal(got, []string{"d3"}) {
			t.Errorf("%s with a matching vector only: %v, want [d3]", mode, got)
		}
	}
	if got := search(t, p, weaviatepeer.BM25, "the", nil, 10); len(got) != 0 {
		t.Errorf("bm25 of a stop word = %v, want nothing", got)
	}
	for _, bad := range []struct {
		mode string
		qv   []float32
	}{
		{"semantic", nil},
		{weaviatepeer.HybridRanked, nil},
		{weaviatepeer.HybridRelative, make([]float32, 3)},
	} {
		if _, err := p.Search(ctx, bad.mode, "x", bad.qv, 5); err == nil {
			t.Errorf("Search(%s, %d-d vector) succeeded", bad.mode, len(bad.qv))
		}
	}
	if err := p.Index(ctx, []weaviatepeer.Doc{{ID: "d9", Text: "a b", Chunks: []string{"a"}, Vectors: [][]float32{axis(0), axis(1)}}}); err == nil {
		t.Error("Index with 1 chunk for 2 vectors succeeded")
	}
	// Close drops the collection.
	name := p.Collection()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/v1/schema/" + name)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("collection %s after Close: status %d, want 404", name, resp.StatusCode)
	}
	if _, err := p.Search(ctx, weaviatepeer.BM25, "x", nil, 1); err == nil {
		t.Error("Search after Close succeeded")
	}
}

func TestBM25OnlyCorpus(t *testing.T) {
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	p := openPeer(t, srv.URL)
	if err := p.Index(ctx, []weaviatepeer.Doc{{ID: "a", Title: "Alpha", Text: "first document"}, {ID: "b", Text: "second document"}}); err != nil {
		t.Fatal(err)
	}
	if got := search(t, p, weaviatepeer.BM25, "second", nil, 5); !slices.Equal(got, []string{"b"}) {
		t.Errorf("bm25 = %v, want [b]", got)
	}
	if _, err := p.Search(ctx, weaviatepeer.HybridRanked, "second", []float32{1, 0}, 5); err == nil || !strings.Contains(err.Error(), "vectors") {
		t.Errorf("hybrid over a corpus without vectors: err = %v, want one naming the missing vectors", err)
	}
}

// zipfCorpus makes n documents of words drawn from a Zipf-distributed
// vocabulary, and queries of a few such words: enough postings that an
// import leaves many of them in memtables.
func zipfCorpus(r *rand.Rand, n, queries int) ([]weaviatepeer.Doc, []string) {
	z := rand.NewZipf(r, 1.1, 2, 5000)
	word := func() string { return fmt.Sprintf("w%d", z.Uint64()) }
	docs := make([]weaviatepeer.Doc, n)
	for i := range docs {
		words := make([]string, 20+r.IntN(200))
		for j := range words {
			words[j] = word()
		}
		docs[i] = weaviatepeer.Doc{ID: fmt.Sprintf("doc%d", i), Title: word() + " " + word(), Text: strings.Join(words, " ")}
	}
	qs := make([]string, queries)
	for i := range qs {
		qs[i] = word() + " " + word() + " " + word()
	}
	return docs, qs
}

func TestMain(m *testing.M) { weaviatetest.Main(m) }
