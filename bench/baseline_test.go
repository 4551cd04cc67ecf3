package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runOf builds a result with per-query nDCG@10 for one mode.
func runOf(dataset string, mode string, scores map[string]float64, order []string) *RelevanceResult {
	r := &RelevanceResult{Dataset: dataset, Docs: 10, Queries: len(order)}
	var sum float64
	for _, id := range order {
		r.PerQuery = append(r.PerQuery, QueryResult{QueryID: id, NDCG10: map[string]float64{mode: scores[id]}})
		sum += scores[id]
	}
	r.Summaries = []Summary{{Mode: mode, Metrics: Metrics{NDCG10: sum / float64(len(order)), Recall100: 0.5, MRR10: 0.25}, P50: time.Millisecond, P99: 3 * time.Millisecond, Queries: len(order)}}
	return r
}

func TestCompareRuns(t *testing.T) {
	base := runOf("scifact", "fulltext", map[string]float64{"q1": 0.5, "q2": 0.25, "q3": 1, "gone": 0}, []string{"q1", "q2", "q3", "gone"})
	cur := runOf("scifact", "fulltext", map[string]float64{"q1": 1, "q2": 0.5, "q3": 1, "new": 1}, []string{"new", "q3", "q2", "q1"})
	cur.Summaries = append(cur.Summaries, Summary{Mode: "hybrid"})
	c, err := CompareRuns(cur, base, "old/result.json", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Modes) != 1 || c.Modes[0].Mode != "fulltext" {
		t.Fatalf("modes = %+v, want fulltext only", c.Modes)
	}
	// Paired by id over q1, q2, q3: differences 0.5, 0.25, 0.
	// Mean 0.25. Exact randomisation over 8 assignments: |sum| >= 0.75
	// for (+,+,±) and (-,-,±): p = 4/8.
	d := c.Modes[0]
	if d.Test == nil || d.Test.N != 3 || math.Abs(d.Test.MeanDiff-0.25) > 1e-12 || math.Abs(d.Test.P-0.5) > 1e-12 {
		t.Errorf("test = %+v, want 3 pairs, mean 0.25, p 0.5", d.Test)
	}
	// t-test: d = (0.5, 0.25, 0): mean 0.25, sd 0.25, t = 0.25/(0.25/sqrt(3)) = sqrt(3).
	if math.Abs(d.Test.T-math.Sqrt(3)) > 1e-9 {
		t.Errorf("t = %v, want sqrt(3)", d.Test.T)
	}
	var warns = strings.Join(c.Warnings, "\n")
	if !strings.Contains(warns, "mode hybrid is not in the baseline") {
		t.Errorf("warnings %q lack the missing mode", warns)
	}
	var out bytes.Buffer
	PrintComparison(&out, c)
	for _, want := range []string{"old/result.json", "fulltext", "0.5000", "no significant change"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("PrintComparison output lacks %q:\n%s", want, out.String())
		}
	}

	other := runOf("cosqa", "fulltext", map[string]float64{"x": 1}, []string{"x"})
	c, err = CompareRuns(cur, other, "b", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(c.Warnings, "\n"), "different datasets") {
		t.Errorf("warnings %q lack the dataset mismatch", c.Warnings)
	}
	if c.Modes[0].Test != nil || !strings.Contains(strings.Join(c.Warnings, "\n"), "no query in common") {
		t.Errorf("no common query: test = %+v, warnings %q; want no test and a warning", c.Modes[0].Test, c.Warnings)
	}

	// A single common query: randomisation only, no t-test.
	one := runOf("scifact", "fulltext", map[string]float64{"q1": 0}, []string{"q1"})
	c, err = CompareRuns(cur, one, "b", 1)
	if err != nil {
		t.Fatal(err)
	}
	if tt := c.Modes[0].Test; tt == nil || tt.N != 1 || !math.IsNaN(tt.PT) || tt.P != 1 {
		t.Errorf("one common query: test = %+v, want 1 pair, p 1, no t-test", tt)
	}
}

func TestResultJSONRoundTrip(t *testing.T) {
	r := runOf("scifact", "fulltext", map[string]float64{"q1": 1.0 / 3, "q2": 0.123456789012345}, []string{"q1", "q2"})
	r.Settings = map[string]string{"embedder": "none"}
	r.Peers = []string{"sqlite-fts5"}
	r.Latencies = map[string][]time.Duration{"fulltext": {1500 * time.Microsecond, 2 * time.Millisecond}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Dataset != "scifact" || back.Queries != 2 || back.Docs != 10 || back.Settings["embedder"] != "none" || back.Peers[0] != "sqlite-fts5" {
		t.Errorf("read back %+v", back)
	}
	// Per-query nDCG survives exactly (the baseline test depends on it).
	got := back.PerQueryNDCG("fulltext")
	if got["q1"] != 1.0/3 || got["q2"] != 0.123456789012345 {
		t.Errorf("per-query nDCG read back as %v", got)
	}
	if lat := back.Latencies["fulltext"]; len(lat) != 2 || lat[0] != 1500*time.Microsecond {
		t.Errorf("latencies read back as %v", lat)
	}
	s, _ := back.Summary("fulltext")
	if s.P99 != 3*time.Millisecond || s.Recall100 != 0.5 {
		t.Errorf("summary read back as %+v", s)
	}
	// Same result, same bytes.
	b2, _ := json.Marshal(r)
	if !bytes.Equal(b, b2) {
		t.Error("marshalling twice gave different bytes")
	}

	if err := os.WriteFile(path, []byte(`{"dataset":"x","results":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(path); err == nil {
		t.Error("ReadResult of a result without results succeeded")
	}
	if err := os.WriteFile(path, []byte(`{"dataset":"x","results":[{"mode":"m"}],"per_query":{"query_ids":["a"],"ndcg@10":{"m":[]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(path); err == nil {
		t.Error("ReadResult with misaligned per-query columns succeeded")
	}
}
