package index

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRelevance measures ranking quality on BEIR-layout datasets. It is a
// measurement tool, not a unit test: it is skipped unless HINDSIGHT_RELEVANCE=1
// and asserts nothing but that the data loads. Environment:
//
//	HINDSIGHT_RELEVANCE=1                 run it
//	HINDSIGHT_DATASETS=dir                datasets root (default ../../shared/datasets)
//	HINDSIGHT_RELEVANCE_SETS=a,b          dataset directories under the root
//	                                      (default scifact-train,cosqa-dev)
//	HINDSIGHT_RELEVANCE_TITLE_BOOSTS=0,2  Options.TitleBoost values to compare (default 0)
//
// Each corpus document becomes one Session (Title = title, Body = text, one
// chunk = text) of a single user, written with Put in batches of 500; each
// query with judgements is searched with Kind Sessions and Limit 100.
// Reported: nDCG@10 (gain = graded relevance, discount log2(rank+1), ideal
// DCG from the judgements), Recall@100, MRR@10, Put throughput, index size
// and query latency.
//
//	HINDSIGHT_RELEVANCE=1 go test ./index/ -run TestRelevance -v -timeout 30m
func TestRelevance(t *testing.T) {
	if os.Getenv("HINDSIGHT_RELEVANCE") != "1" {
		t.Skip("relevance measurement: set HINDSIGHT_RELEVANCE=1 to run")
	}
	root := envOr("HINDSIGHT_DATASETS", filepath.Join("..", "..", "shared", "datasets"))
	sets := strings.Split(envOr("HINDSIGHT_RELEVANCE_SETS", "scifact-train,cosqa-dev"), ",")
	var boosts []float64
	for _, s := range strings.Split(envOr("HINDSIGHT_RELEVANCE_TITLE_BOOSTS", "0"), ",") {
		b, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			t.Fatalf("HINDSIGHT_RELEVANCE_TITLE_BOOSTS: %v", err)
		}
		boosts = append(boosts, b)
	}
	for _, set := range sets {
		ds, err := loadBEIR(filepath.Join(root, strings.TrimSpace(set)))
		if err != nil {
			t.Fatalf("load %s: %v", set, err)
		}
		for _, boost := range boosts {
			t.Run(set+"/titleboost="+strconv.FormatFloat(boost, 'g', -1, 64), func(t *testing.T) {
				r := evaluate(t, ds, Options{TitleBoost: boost})
				t.Logf("%s titleBoost=%g docs=%d queries=%d: nDCG@10=%.4f Recall@100=%.4f MRR@10=%.4f",
					set, boost, len(ds.docs), r.queries, r.ndcg10, r.recall100, r.mrr10)
				t.Logf("  put %.0f sessions/s (%v), index %.1f MiB, query p50 %v p99 %v, explain p50 %v",
					float64(len(ds.docs))/r.put.Seconds(), r.put.Round(time.Millisecond), float64(r.bytes)/(1<<20),
					r.p50, r.p99, r.explainP50)
			})
		}
	}
}

type beirDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

type beir struct {
	docs    []beirDoc
	queries map[string]string         // id -> text
	qrels   map[string]map[string]int // query id -> doc id -> grade
}

type relevanceResult struct {
	queries                  int
	ndcg10, recall100, mrr10 float64
	put                      time.Duration
	bytes                    int64
	p50, p99, explainP50     time.Duration
}

func evaluate(t *testing.T, ds *beir, opts Options) relevanceResult {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()

	var r relevanceResult
	start := time.Now()
	const batch = 500
	for i := 0; i < len(ds.docs); i += batch {
		var ss []Session
		for _, d := range ds.docs[i:min(i+batch, len(ds.docs))] {
			ss = append(ss, Session{UserID: "bench", SessionID: d.ID, Title: d.Title, Body: d.Text,
				Chunks: []Chunk{{Ordinal: 0, Text: d.Text}}})
		}
		if err := ix.Put(ctx, ss); err != nil {
			t.Fatal(err)
		}
	}
	r.put = time.Since(start)
	r.bytes = dirSize(dir)

	ids := make([]string, 0, len(ds.qrels))
	for id := range ds.qrels {
		if _, ok := ds.queries[id]; ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var lat, explainLat []time.Duration
	for n, id := range ids {
		q := Query{UserID: "bench", Text: ds.queries[id], Kind: Sessions, Limit: 100}
		t0 := time.Now()
		hits, err := ix.Search(ctx, q)
		lat = append(lat, time.Since(t0))
		if err != nil && !errors.Is(err, ErrBadQuery) {
			t.Fatalf("query %s: %v", id, err)
		}
		if n%8 == 0 { // sample the cost of Explain at the HTTP default limit
			q.Explain, q.Limit = true, 20
			t0 = time.Now()
			if _, err := ix.Search(ctx, q); err != nil && !errors.Is(err, ErrBadQuery) {
				t.Fatal(err)
			}
			explainLat = append(explainLat, time.Since(t0))
		}
		ranked := make([]string, len(hits))
		for i, h := range hits {
			ranked[i] = h.SessionID
		}
		rel := ds.qrels[id]
		r.ndcg10 += ndcgAt(ranked, rel, 10)
		r.recall100 += recallAt(ranked, rel, 100)
		r.mrr10 += mrrAt(ranked, rel, 10)
	}
	if len(ids) == 0 {
		t.Fatal("no judged queries")
	}
	r.queries = len(ids)
	n := float64(len(ids))
	r.ndcg10, r.recall100, r.mrr10 = r.ndcg10/n, r.recall100/n, r.mrr10/n
	r.p50, r.p99 = percentile(lat, 0.50), percentile(lat, 0.99)
	r.explainP50 = percentile(explainLat, 0.50)
	return r
}

func ndcgAt(ranked []string, rel map[string]int, k int) float64 {
	var dcg float64
	for i, id := range ranked[:min(k, len(ranked))] {
		if g := rel[id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	var grades []int
	for _, g := range rel {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	slices.Sort(grades)
	slices.Reverse(grades)
	var idcg float64
	for i, g := range grades[:min(k, len(grades))] {
		idcg += float64(g) / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func recallAt(ranked []string, rel map[string]int, k int) float64 {
	var found, total int
	for _, g := range rel {
		if g > 0 {
			total++
		}
	}
	for _, id := range ranked[:min(k, len(ranked))] {
		if rel[id] > 0 {
			found++
		}
	}
	if total == 0 {
		return 0
	}
	return float64(found) / float64(total)
}

func mrrAt(ranked []string, rel map[string]int, k int) float64 {
	for i, id := range ranked[:min(k, len(ranked))] {
		if rel[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(int(math.Ceil(p*float64(len(s))))-1, len(s)-1)]
}

// loadBEIR reads corpus.jsonl(.gz), queries.jsonl(.gz) and the first .tsv
// under qrels/ (header line "query-id corpus-id score").
func loadBEIR(dir string) (*beir, error) {
	ds := &beir{queries: map[string]string{}, qrels: map[string]map[string]int{}}
	err := readJSONL(dir, "corpus.jsonl", func(line []byte) error {
		var d beirDoc
		if err := json.Unmarshal(line, &d); err != nil {
			return err
		}
		ds.docs = append(ds.docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = readJSONL(dir, "queries.jsonl", func(line []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		ds.queries[q.ID] = q.Text
		return nil
	})
	if err != nil {
		return nil, err
	}
	tsvs, _ := filepath.Glob(filepath.Join(dir, "qrels", "*.tsv"))
	if len(tsvs) == 0 {
		return nil, errors.New("no qrels/*.tsv")
	}
	b, err := os.ReadFile(tsvs[0])
	if err != nil {
		return nil, err
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) < 3 {
			continue
		}
		g, err := strconv.Atoi(f[2])
		if err != nil {
			if i == 0 {
				continue // header
			}
			return nil, err
		}
		if ds.qrels[f[0]] == nil {
			ds.qrels[f[0]] = map[string]int{}
		}
		ds.qrels[f[0]][f[1]] = g
	}
	if len(ds.docs) == 0 || len(ds.queries) == 0 || len(ds.qrels) == 0 {
		return nil, errors.New("empty dataset")
	}
	return ds, nil
}

func readJSONL(dir, name string, fn func([]byte) error) error {
	f, err := os.Open(filepath.Join(dir, name+".gz"))
	var r io.Reader = f
	if err == nil {
		defer f.Close()
		if r, err = gzip.NewReader(f); err != nil {
			return err
		}
	} else if errors.Is(err, fs.ErrNotExist) {
		if f, err = os.Open(filepath.Join(dir, name)); err != nil {
			return err
		}
		defer f.Close()
		r = f
	} else {
		return err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
