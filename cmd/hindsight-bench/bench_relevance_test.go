package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"github.com/hindsight-dev/hindsight/internal/datasetstest"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/vectors"
)

// relevanceJSON is the part of result.json the tests look at.
type relevanceJSON struct {
	Dataset  string            `json:"dataset"`
	Docs     int               `json:"docs"`
	Queries  int               `json:"queries"`
	Settings map[string]string `json:"settings"`
	Peers    []string          `json:"peers"`
	Results  []struct {
		Mode      string  `json:"mode"`
		NDCG10    float64 `json:"ndcg@10"`
		Recall100 float64 `json:"recall@100"`
		MRR10     float64 `json:"mrr@10"`
		P50ms     float64 `json:"p50_ms"`
		P99ms     float64 `json:"p99_ms"`
	} `json:"results"`
	PerQuery struct {
		QueryIDs []string             `json:"query_ids"`
		NDCG10   map[string][]float64 `json:"ndcg@10"`
	} `json:"per_query"`
	Sweep *struct {
		Mode string `json:"mode"`
		Rows []struct {
			Label   string  `json:"label"`
			Default bool    `json:"default"`
			NDCG10  float64 `json:"ndcg@10"`
		} `json:"rows"`
	} `json:"sweep"`
	Baseline *struct {
		Modes []struct {
			Mode   string  `json:"mode"`
			NDCG10 float64 `json:"ndcg@10"`
		} `json:"modes"`
	} `json:"baseline"`
}

// The slice: 200 documents of scifact-train holding every judged document of
// its first 40 usable queries, so every query can be answered perfectly.
const (
	sliceDocs    = "200"
	sliceQueries = "40"
	// peerFloor is a sanity floor for Weaviate's BM25, not a quality
	// target: BM25 on the slice scores about 0.8, a broken mapping of
	// sessions to documents scores near 0. Hindsight's own full-text mode
	// is held to more: the index's ranking exactly (sameAsIndex), whose
	// quality the goldens in index/testdata pin.
	peerFloor = 0.5
)

// checkRelevance asserts the shape and bounds every relevance result must
// have.
func checkRelevance(t *testing.T, r relevanceJSON, docs, queries string, systems []string) {
	t.Helper()
	if r.Dataset != "scifact-train" || strconv.Itoa(r.Docs) != docs || strconv.Itoa(r.Queries) != queries {
		t.Errorf("dataset %s, %d docs, %d queries; want scifact-train, %s, %s", r.Dataset, r.Docs, r.Queries, docs, queries)
	}
	var got []string
	for _, s := range r.Results {
		got = append(got, s.Mode)
		for name, v := range map[string]float64{"nDCG@10": s.NDCG10, "Recall@100": s.Recall100, "MRR@10": s.MRR10} {
			if v < 0 || v > 1 {
				t.Errorf("%s %s = %v, outside [0, 1]", s.Mode, name, v)
			}
		}
		if s.P50ms <= 0 || s.P99ms < s.P50ms {
			t.Errorf("%s latency p50 %v ms, p99 %v ms", s.Mode, s.P50ms, s.P99ms)
		}
		col := r.PerQuery.NDCG10[s.Mode]
		if len(col) != r.Queries {
			t.Errorf("%s: %d per-query scores, want %d", s.Mode, len(col), r.Queries)
		}
		var mean float64
		for _, v := range col {
			mean += v
		}
		if n := float64(len(col)); n > 0 && abs(mean/n-s.NDCG10) > 1e-4 {
			t.Errorf("%s: per-query mean %v, headline %v", s.Mode, mean/n, s.NDCG10)
		}
	}
	if !slices.Equal(got, systems) {
		t.Errorf("systems %v, want %v", got, systems)
	}
	if len(r.PerQuery.QueryIDs) != r.Queries {
		t.Errorf("%d per-query ids, want %d", len(r.PerQuery.QueryIDs), r.Queries)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// checkFiles asserts that a run wrote its report, charts and data files.
func checkFiles(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s not written: %v", f, err)
			continue
		}
		if fi.Size() == 0 {
			t.Errorf("%s is empty", f)
		}
		if strings.HasSuffix(f, ".svg") {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if !bytes.Contains(b, []byte("<svg")) {
				t.Errorf("%s is not an SVG", f)
			}
		}
	}
}

// TestBenchRelevanceSlice runs the relevance bench end to end on a
// 200-document slice of scifact-train: a real Hindsight fed through the
// sync API, full-text search, the SQLite FTS5 peer, a title-boost sweep
// (which re-indexes once per boost), the report with its charts, and a second run compared
// with the first as a baseline.
func TestBenchRelevanceSlice(t *testing.T) {
	t.Parallel()
	ds := filepath.Dir(datasetstest.Path(t, "scifact-train", "queries.jsonl"))
	ctx, cancel := untilDeadline(t)
	defer cancel()
	out := t.TempDir()

	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"relevance", "--dataset", ds, "--max-docs", sliceDocs, "--max-queries", sliceQueries,
		"--embedder", "none", "--peers", "sqlite-fts5", "--sweep", "title.boost=1,3", "--out", out, "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench relevance: %v\n%s", err, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("--json should be quiet, stderr has:\n%s", stderr.String())
	}
	var r relevanceJSON
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not one JSON result: %v\n%s", err, stdout.String())
	}
	checkRelevance(t, r, sliceDocs, sliceQueries, []string{"fulltext", "sqlite-fts5"})
	if !slices.Equal(r.Peers, []string{"sqlite-fts5"}) {
		t.Errorf("peers = %v", r.Peers)
	}
	defBoost := strconv.Itoa(index.DefaultTitleBoost)
	if r.Settings["embedder"] != "none" || r.Settings["title.boost"] != defBoost || r.Settings["rrf.k"] == "" {
		t.Errorf("settings = %v", r.Settings)
	}
	// The grid 1, 3 lacks the default boost: it is measured as a third point.
	if sw := r.Sweep; sw == nil || sw.Mode != "fulltext" || len(sw.Rows) != 3 {
		t.Errorf("sweep = %+v, want 3 fulltext rows", sw)
	} else {
		defaults := 0
		for _, row := range sw.Rows {
			if row.Default {
				defaults++
				if row.Label != "title.boost="+defBoost {
					t.Errorf("default row is %s, want title.boost=%s", row.Label, defBoost)
				}
			}
		}
		if defaults != 1 || sw.Rows[0].NDCG10 < sw.Rows[1].NDCG10 || sw.Rows[1].NDCG10 < sw.Rows[2].NDCG10 {
			t.Errorf("sweep rows %+v: want one default, best first", sw.Rows)
		}
	}
	checkFiles(t, out, "report.md", "result.json", "perquery.jsonl", "ndcg.svg", "latency_cdf.svg", "sweep.svg")
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	for _, want := range []string{"| fulltext |", "| sqlite-fts5 (peer) |", "## Sweep of fulltext", "(default)**"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// perquery.jsonl: one line per query with relevant and returned ids
	// for every system.
	pq, _ := os.ReadFile(filepath.Join(out, "perquery.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(pq)), "\n")
	if len(lines) != 40 {
		t.Errorf("perquery.jsonl has %d lines, want 40", len(lines))
	}
	var first struct {
		Query    string              `json:"query"`
		Relevant []string            `json:"relevant"`
		Returned map[string][]string `json:"returned"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.Query == "" || len(first.Relevant) == 0 || len(first.Returned["fulltext"]) == 0 || len(first.Returned["sqlite-fts5"]) == 0 {
		t.Errorf("first per-query line lacks data: %s", lines[0])
	}
	sameAsIndex(t, ds, lines)

	// Compare a second run with the first: the table, then the deltas.
	out2 := t.TempDir()
	stdout.Reset()
	stderr.Reset()
	err = run(ctx, []string{"relevance", "--dataset", ds, "--max-docs", sliceDocs, "--max-queries", sliceQueries,
		"--embedder", "none", "--peers", "none", "--baseline", filepath.Join(out, "result.json"), "--out", out2}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench relevance --baseline: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"nDCG@10", "fulltext", "compared with baseline", "report: "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, want := range []string{"ingest", "indexing", "queries fulltext"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no %q progress on stderr:\n%s", want, stderr.String())
		}
	}
	b, _ := os.ReadFile(filepath.Join(out2, "result.json"))
	var r2 relevanceJSON
	if err := json.Unmarshal(b, &r2); err != nil {
		t.Fatal(err)
	}
	if r2.Baseline == nil || len(r2.Baseline.Modes) != 1 || r2.Baseline.Modes[0].Mode != "fulltext" {
		t.Errorf("baseline section = %+v, want fulltext", r2.Baseline)
	}
}

// TestBenchRelevanceSemantic adds the semantic and hybrid modes with the
// offline model, when it is installed (make model), and a hybrid sweep. The
// model embeds a few dozen 64-word windows a second on 2 cores (a third of
// that under -race), so this runs on a smaller slice than the full-text
// test: 20 documents, 5 queries.
func TestBenchRelevanceSemantic(t *testing.T) {
	t.Parallel()
	ds := filepath.Dir(datasetstest.Path(t, "scifact-train", "queries.jsonl"))
	modelDir := os.Getenv("HINDSIGHT_MODEL_DIR")
	if _, err := os.Stat(filepath.Join(modelDir, "model.json")); modelDir == "" || err != nil {
		msg := "SKIPPING semantic and hybrid bench modes: no offline model in HINDSIGHT_MODEL_DIR=" + modelDir + " (make model, or make test)"
		if os.Getenv("HINDSIGHT_REQUIRE_MODEL") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := untilDeadline(t)
	defer cancel()
	out := t.TempDir()
	cacheDir := t.TempDir()
	cache := filepath.Join(cacheDir, "scifact-train.db") // one file per dataset
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"relevance", "--dataset", ds, "--max-docs", "20", "--max-queries", "5",
		"--embedder", "local", "--modes", "fulltext,semantic,hybrid", "--peers", "sqlite-fts5",
		"--sweep", "rrf.k=5,60", "--embed-cache", cacheDir, "--out", out, "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench relevance --embedder local: %v\n%s", err, stderr.String())
	}
	var r relevanceJSON
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	checkRelevance(t, r, "20", "5", []string{"fulltext", "semantic", "hybrid", "sqlite-fts5"})
	if !strings.HasPrefix(r.Settings["embedder"], "use-lite") || r.Settings["rrf.k"] != "5" || r.Settings["rrf.w"] != "0.2" {
		t.Errorf("settings = %v, want the local model with its fusion defaults k=5, w=0.2", r.Settings)
	}
	if sw := r.Sweep; sw == nil || sw.Mode != "hybrid" || len(sw.Rows) != 2 {
		t.Errorf("sweep = %+v, want 2 hybrid rows", sw)
	}
	checkFiles(t, out, "report.md", "ndcg.svg", "latency_cdf.svg", "sweep.svg")

	// A second run over the same slice embeds nothing: every window comes
	// from the cache, and the vectors are the same (so are the results).
	if !strings.HasPrefix(r.Settings["embedding cache"], cache+": 0 windows reused, ") {
		t.Errorf("first run: embedding cache = %q, want nothing reused", r.Settings["embedding cache"])
	}
	stdout.Reset()
	err = run(ctx, []string{"relevance", "--dataset", ds, "--max-docs", "20", "--max-queries", "5",
		"--embedder", "local", "--modes", "semantic", "--peers", "none", "--embed-cache", cacheDir, "--out", t.TempDir(), "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr.String())
	}
	var r2 relevanceJSON
	if err := json.Unmarshal(stdout.Bytes(), &r2); err != nil {
		t.Fatal(err)
	}
	if c := r2.Settings["embedding cache"]; !strings.HasSuffix(c, ", 0 embedded") || strings.Contains(c, ": 0 windows reused") {
		t.Errorf("second run: embedding cache = %q, want every window reused and none embedded", c)
	}
	if a, b := r.PerQuery.NDCG10["semantic"], r2.PerQuery.NDCG10["semantic"]; !slices.Equal(a, b) {
		t.Errorf("semantic nDCG@10 per query: %v with fresh vectors, %v with cached ones", a, b)
	}

	// A run on a dataset whose cache another process holds stops at once,
	// saying what holds it and what to do, rather than waiting for it.
	held, err := vectors.OpenCache(cache)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	stderr.Reset()
	err = run(ctx, []string{"relevance", "--dataset", ds, "--max-docs", "20", "--max-queries", "5",
		"--embedder", "local", "--modes", "semantic", "--peers", "none", "--embed-cache", cacheDir, "--out", t.TempDir(), "--json"}, &stdout, &stderr)
	if !errors.Is(err, vectors.ErrCacheInUse) || !strings.Contains(err.Error(), cache) || !strings.Contains(err.Error(), "--embed-cache") {
		t.Errorf("run on a held cache: err = %v, want ErrCacheInUse naming %s and --embed-cache", err, cache)
	}
}

// TestBenchRelevanceWeaviate runs the Weaviate peers on a weaviate-server
// the bench starts itself (the pinned binary, make weaviate): BM25 on the
// 200-document slice, and with the offline model the two hybrid fusions on
// the same vectors, on a 20-document slice.
func TestBenchRelevanceWeaviate(t *testing.T) {
	t.Parallel()
	ds := filepath.Dir(datasetstest.Path(t, "scifact-train", "queries.jsonl"))
	if _, err := weaviatetest.Binary(); err != nil && os.Getenv("WEAVIATE_URL") == "" {
		msg := "SKIPPING the Weaviate peers: " + err.Error()
		if os.Getenv(weaviatetest.EnvRequire) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	args := []string{"--max-docs", sliceDocs, "--max-queries", sliceQueries, "--embedder", "none", "--peers", "weaviate-bm25"}
	docs, queries, systems := sliceDocs, sliceQueries, []string{"fulltext", "weaviate-bm25"}
	if dir := os.Getenv("HINDSIGHT_MODEL_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "model.json")); err == nil {
			args = []string{"--max-docs", "20", "--max-queries", "5", "--embedder", "local", "--modes", "fulltext",
				"--peers", "weaviate-bm25,weaviate-hybrid", "--embed-cache", "none"}
			docs, queries = "20", "5"
			systems = []string{"fulltext", "weaviate-bm25", "weaviate-hybrid", "weaviate-hybrid-relative"}
		}
	} else {
		t.Log("no offline model (HINDSIGHT_MODEL_DIR): Weaviate BM25 only, no hybrid peers")
	}
	ctx, cancel := untilDeadline(t)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, append([]string{"relevance", "--dataset", ds, "--out", t.TempDir(), "--json"}, args...), &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench relevance with Weaviate peers: %v\n%s", err, stderr.String())
	}
	var r relevanceJSON
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	checkRelevance(t, r, docs, queries, systems)
	for _, s := range r.Results {
		if s.Mode == "weaviate-bm25" && s.NDCG10 < peerFloor {
			t.Errorf("weaviate-bm25 nDCG@10 = %.4f, below the floor %.2f", s.NDCG10, peerFloor)
		}
	}
}

func TestBenchRelevanceFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{}, "--dataset is required"},
		{[]string{"--dataset", "x", "--sweep", "bm25.k1=1"}, `cannot sweep "bm25.k1"`},
		{[]string{"--dataset", "x", "--sweep", "depth=2.5"}, "integer"},
		{[]string{"--dataset", "x", "--sweep", "title.boost=0"}, "1..100"},
		{[]string{"--dataset", "x", "--sweep", "rrf.k=1", "--sweep", "rrf.k=2"}, "swept twice"},
		{[]string{"--dataset", "x", "--peers", "elastic"}, `unknown peer "elastic"`},
		{[]string{"--dataset", "x", "--modes", "fulltext,vector"}, `unknown mode "vector"`},
		{[]string{"--dataset", "x", "--via", "grpc"}, "--via"},
		{[]string{"--dataset", "x", "--embedder", "bert"}, "--embedder"},
		{[]string{"--dataset", "x", "--store", "qdrant"}, "--store"},
		{[]string{"--dataset", "x", "--sweep-limit", "5"}, "--sweep-limit"},
		{[]string{"--dataset", "x", "extra"}, "takes no arguments"},
		{[]string{"--dataset", "x", "--query-timeout", "0s"}, "--query-timeout"},
		{[]string{"--dataset", "x", "--sweep", "fusion=borda"}, "fusion"},
	}
	for _, tt := range tests {
		_, err := parseBenchRelevance(tt.args, &config.Config{}, &bytes.Buffer{})
		if !cli.IsUsage(err) || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%v: err = %v, want a usage error containing %q", tt.args, err, tt.wantErr)
		}
	}

	c, err := parseBenchRelevance([]string{"--dataset", "d", "--peers", "sqlite-fts5,weaviate-hybrid", "--sweep", "title.boost=1,2",
		"--sweep", "rrf.k=10,60", "--modes", "fulltext,hybrid,fulltext"}, &config.Config{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Peers, []string{"sqlite-fts5", "weaviate-hybrid", "weaviate-hybrid-relative"}) {
		t.Errorf("peers = %v", c.Peers)
	}
	if !slices.Equal(c.Modes, []string{"fulltext", "hybrid"}) {
		t.Errorf("modes = %v", c.Modes)
	}
	if len(c.Sweeps) != 2 || !c.Sweeps[0].IndexTime || c.Sweeps[1].IndexTime {
		t.Errorf("sweeps = %+v: title.boost is index-time, rrf.k query-time", c.Sweeps)
	}
	if c.Command != "hindsight bench relevance --dataset d --peers sqlite-fts5,weaviate-hybrid --sweep title.boost=1,2 --sweep rrf.k=10,60 --modes fulltext,hybrid,fulltext" {
		t.Errorf("command = %q", c.Command)
	}
	if c.QueryTimeout != bench.DefaultQueryTimeout {
		t.Errorf("query timeout = %v, want the default %v", c.QueryTimeout, bench.DefaultQueryTimeout)
	}
	c, err = parseBenchRelevance([]string{"--dataset", "d", "--query-timeout", "2m", "--sweep", "fusion=rrf,zscore"}, &config.Config{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.QueryTimeout != 2*time.Minute || len(c.Sweeps) != 1 || !slices.Equal(c.Sweeps[0].Values, []float64{0, 2}) {
		t.Errorf("query timeout %v, sweeps %+v; want 2m and fusion 0, 2", c.QueryTimeout, c.Sweeps)
	}
}

// TestBenchRelevanceRefusals: a sweep that cannot change the measured
// mode, and peers that need a server, are refused before any work.
func TestBenchRelevanceRefusals(t *testing.T) {
	dir := filepath.Join("..", "..", "bench", "testdata", "tiny")
	ctx := context.Background()
	var stderr bytes.Buffer
	err := run(ctx, []string{"relevance", "--dataset", dir, "--embedder", "none", "--sweep", "rrf.k=10,60", "--json"}, &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "only changes hybrid ranking") {
		t.Errorf("rrf.k sweep on fulltext: err = %v", err)
	}
	err = run(ctx, []string{"relevance", "--dataset", dir, "--embedder", "none", "--peers", "weaviate-hybrid", "--json"}, &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "need an embedder") {
		t.Errorf("weaviate hybrid peer without an embedder: err = %v", err)
	}
	err = run(ctx, []string{"relevance", "--dataset", dir, "--embedder", "none", "--modes", "semantic", "--json"}, &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "needs an embedder") {
		t.Errorf("semantic without an embedder: err = %v", err)
	}
}

// sameAsIndex asserts that the bench's full-text mode returned, for every
// query of the slice (perquery.jsonl's lines), the ids an index built
// directly from the same documents returns: the bench measures the index
// through the API without changing its ranking (no document lost or
// altered on the way, no reordering), so the index's goldens
// (index/testdata) stand for what the bench reports.
func sameAsIndex(t *testing.T, dir string, perQuery []string) {
	t.Helper()
	ctx := t.Context()
	maxDocs, _ := strconv.Atoi(sliceDocs)
	maxQueries, _ := strconv.Atoi(sliceQueries)
	ds, err := bench.LoadBEIR(ctx, dir, bench.LoadOptions{MaxDocs: maxDocs, MaxQueries: maxQueries})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var docs []index.Session
	for _, d := range ds.Corpus { // as the bench syncs it: one user message
		text := d.Text
		ex := ingest.Exchanges([]kv.Message{{Role: "user", Seq: 1, TextContent: &text}})
		docs = append(docs, ingest.IndexSession(ingest.Doc{UserID: "u", SessionID: d.ID,
			Session: kv.Session{Title: d.Title}, Exchanges: ex, Chunks: ingest.Chunks(ex)}))
	}
	if err := ix.Put(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if len(perQuery) != len(ds.Queries) {
		t.Fatalf("%d per-query lines for %d queries", len(perQuery), len(ds.Queries))
	}
	for i, q := range ds.Queries {
		var line struct {
			QueryID  string              `json:"query_id"`
			Returned map[string][]string `json:"returned"`
		}
		if err := json.Unmarshal([]byte(perQuery[i]), &line); err != nil {
			t.Fatal(err)
		}
		// Limit 200: a tie at rank 100 is whole among the first 200.
		hits, err := ix.Search(ctx, index.Query{UserID: "u", Text: q.Text, Kind: index.Sessions, Limit: 200})
		if err != nil && !errors.Is(err, index.ErrBadQuery) {
			t.Fatal(err)
		}
		if line.QueryID != q.ID {
			t.Fatalf("per-query line %d is query %s, want %s", i+1, line.QueryID, q.ID)
		}
		if d := tieDiff(line.Returned["fulltext"], hits, min(100, len(hits))); d != "" {
			t.Errorf("query %s: the bench's fulltext and the index differ: %s", q.ID, d)
		}
	}
}

// tieDiff compares got, a ranked list of ids, with the first n of hits, the
// index's ranking: "" when they hold the same ids at the same ranks, but
// for the order among hits of equal score. The index breaks ties by its
// session ids, which the server's are not (it keeps its own ids, not the
// documents'), so tied hits may come in any order; a tie at rank n may be
// cut at any of its members.
func tieDiff(got []string, hits []index.Hit, n int) string {
	if len(got) != n {
		return fmt.Sprintf("%d ids, want %d", len(got), n)
	}
	for a := 0; a < n; {
		b := a + 1
		for b < len(hits) && hits[b].Score == hits[a].Score {
			b++
		}
		tie := map[string]bool{}
		for _, h := range hits[a:b] {
			tie[h.SessionID] = true
		}
		for r := a; r < min(b, n); r++ {
			if !tie[got[r]] {
				return fmt.Sprintf("rank %d is %s, want one of the hits scored %v at ranks %d-%d", r+1, got[r], hits[a].Score, a+1, b)
			}
			delete(tie, got[r]) // each once
		}
		a = b
	}
	return ""
}
