package bench

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkSVG fails unless path holds a well-formed SVG document of a
// reasonable size that mentions every string of want (labels, legends).
func checkSVG(t *testing.T, path string, want ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 200_000 {
		t.Errorf("%s is %d bytes; charts should stay small", path, len(b))
	}
	dec := xml.NewDecoder(strings.NewReader(string(b)))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", path, root)
	}
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			t.Errorf("%s lacks %q", path, w)
		}
	}
}

func sampleResult() *RelevanceResult {
	r := runOf("scifact-train", "fulltext", map[string]float64{"q1": 1, "q2": 0.5, "q3": 0}, []string{"q1", "q2", "q3"})
	r.PerQuery[0].NDCG10["sqlite-fts5"] = 0.5
	r.PerQuery[1].NDCG10["sqlite-fts5"] = 0.5
	r.PerQuery[2].NDCG10["sqlite-fts5"] = 0.5
	r.Summaries = append(r.Summaries, Summary{Mode: "sqlite-fts5", Metrics: Metrics{NDCG10: 0.5, Recall100: 0.9, MRR10: 0.4}, P50: 2 * time.Millisecond, P99: 9 * time.Millisecond})
	r.Peers = []string{"sqlite-fts5"}
	r.Latencies = map[string][]time.Duration{
		"fulltext":    {time.Millisecond, 2 * time.Millisecond, 0},
		"sqlite-fts5": {3 * time.Millisecond, time.Millisecond, 9 * time.Millisecond},
	}
	r.Settings = map[string]string{"command": "hindsight bench relevance --dataset x", "embedder": "none", "qrels": "train.tsv"}
	r.Sweep = &SweepResult{Mode: "fulltext", Limit: 20, Best: 0, Default: 1,
		Rows: []SweepRow{
			{Point: Point{{"title.boost", 2}}, NDCG10: 0.6, PerQuery: []float64{1, 0.8, 0}},
			{Point: Point{{"title.boost", 1}}, Default: true, NDCG10: 0.5, PerQuery: []float64{1, 0.5, 0}},
		},
		Test: &PairedTest{N: 3, MeanDiff: 0.1, P: 0.5, Rounds: 10000, T: 1, PT: 0.42},
	}
	return r
}

func TestWriteRelevanceFiles(t *testing.T) {
	r := sampleResult()
	base := runOf("scifact-train", "fulltext", map[string]float64{"q1": 1, "q2": 0, "q3": 0}, []string{"q1", "q2", "q3"})
	cmp, err := CompareRuns(r, base, "base.json", 1)
	if err != nil {
		t.Fatal(err)
	}
	r.Baseline = cmp
	dir := filepath.Join(t.TempDir(), "out")
	if err := WriteRelevanceFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, filepath.Join(dir, NDCGChart), "nDCG@10", "fulltext", "sqlite-fts5")
	checkSVG(t, filepath.Join(dir, LatencyChart), "fraction of queries", "fulltext", "sqlite-fts5")
	checkSVG(t, filepath.Join(dir, SweepChart), "title.boost=1 (default)", "title.boost=2")
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Relevance on scifact-train",
		"hindsight bench relevance --dataset x",
		"| fulltext | 0.5000 ± ",
		"| sqlite-fts5 (peer) | 0.5000 ± 0.000 | +0.0000 (p = 1.0000) | 0.9000 | 0.4000 | 0.0000 | 0.0000 | 2.00 | 9.00 |",
		"](ndcg.svg)", "](latency_cdf.svg)", "](sweep.svg)",
		"| **title.boost=1 (default)** | 0.5000 |",
		"mean nDCG@10 difference +0.1000 over 3 queries, randomisation p = 0.5000, paired t-test p = 0.4200 (not significant)",
		"## Compared with base.json",
		"| fulltext | 0.3333 → 0.5000 | +0.1667 | 1.0000 | 0.4226 |",
		"| embedder | none |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	back, err := ReadResult(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Summaries) != 2 || len(back.PerQuery) != 3 {
		t.Errorf("result.json read back with %d summaries and %d queries", len(back.Summaries), len(back.PerQuery))
	}
	b, _ := os.ReadFile(filepath.Join(dir, ResultFile))
	for _, want := range []string{`"sweep"`, `"best_vs_default"`, `"baseline"`, `"ndcg@10_paired"`, `"label": "title.boost=1"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result.json lacks %s", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, PerQueryFile)); err != nil {
		t.Error(err)
	}
}

func TestMeanCI95(t *testing.T) {
	// xs = 0, 1, 2, 3: mean 1.5, sample sd sqrt(5/3), se sqrt(5/3)/2.
	m, h := meanCI95([]float64{0, 1, 2, 3})
	if m != 1.5 || math.Abs(h-1.96*math.Sqrt(5.0/3)/2) > 1e-12 {
		t.Errorf("meanCI95 = %v ± %v", m, h)
	}
	if m, h := meanCI95(nil); m != 0 || h != 0 {
		t.Errorf("meanCI95(nil) = %v ± %v", m, h)
	}
	if m, h := meanCI95([]float64{0.7}); m != 0.7 || h != 0 {
		t.Errorf("meanCI95 of one = %v ± %v", m, h)
	}
}

func TestGrowthExponent(t *testing.T) {
	xs := []float64{1e4, 3e4, 1e5, 3e5}
	pow := func(b float64) []float64 {
		ys := make([]float64, len(xs))
		for i, x := range xs {
			ys[i] = 3 * math.Pow(x, b)
		}
		return ys
	}
	for _, b := range []float64{0, 0.5, 1, 1.3} {
		got, ok := GrowthExponent(xs, pow(b))
		if !ok || math.Abs(got-b) > 1e-9 {
			t.Errorf("GrowthExponent of 3x^%v = %v, %v", b, got, ok)
		}
	}
	// Least squares over noise: y = x^0.5 * (1.1, 0.9, 1.1, 0.9).
	noisy := pow(0.5)
	for i := range noisy {
		noisy[i] *= []float64{1.1, 0.9, 1.1, 0.9}[i]
	}
	if got, ok := GrowthExponent(xs, noisy); !ok || math.Abs(got-0.5) > 0.05 {
		t.Errorf("GrowthExponent of noisy sqrt = %v, %v", got, ok)
	}
	for name, c := range map[string][2][]float64{
		"one point":  {{1}, {1}},
		"same x":     {{5, 5}, {1, 2}},
		"zero cost":  {{1, 2}, {0, 1}},
		"length":     {{1, 2}, {1}},
		"negative x": {{-1, 2}, {1, 1}},
	} {
		if _, ok := GrowthExponent(c[0], c[1]); ok {
			t.Errorf("%s: ok, want not ok", name)
		}
	}
}

func TestWriteLoadFiles(t *testing.T) {
	step := func(n int, p50 float64) LoadStep {
		return LoadStep{Sessions: n, Messages: 20 * n, IngestMsgsPS: 20000, SearchableMsgsPS: 15000, LagP50ms: 300, LagP99ms: 900,
			Live: &LiveProbe{N: 30, P50ms: 800, P99ms: 1500, Maxms: 1900},
			Query: map[string]Latency{"fulltext/first": {P50ms: 2 * p50, P99ms: 8 * p50},
				"fulltext/inprocess": {P50ms: p50, P99ms: 4 * p50, CPUms: p50 / 2},
				"fulltext/http":      {P50ms: p50 + 1, P99ms: 4*p50 + 1}},
			RebuildPS: 2000, HeapBytes: uint64(n) * 3000, RecordsBytes: int64(n) * 8000, IndexBytes: int64(n) * 4000,
			BytesPerSession: 12000, HeapPerSession: 3000, RawBytes: int64(n) * 10240, TextBytes: int64(n) * 5120,
			PerSession: sessionBytes(n, int64(n)*10240, int64(n)*5120, DiskUse{Records: int64(n) * 8192, Index: int64(n) * 4096})}
	}
	r := &LoadResult{Modes: []string{"fulltext"}, Settings: map[string]string{"command": "hindsight bench load --grow 10000,100000"},
		Steps: []LoadStep{step(10000, 1), step(100000, math.Sqrt(10))}}
	r.Finish()
	if b := r.Growth["fulltext query p50"]; math.Abs(b-0.5) > 1e-9 {
		t.Errorf("growth of fulltext p50 = %v, want 0.5", b)
	}
	if b := r.Growth["heap bytes"]; math.Abs(b-1) > 1e-9 {
		t.Errorf("growth of heap = %v, want 1", b)
	}
	dir := t.TempDir()
	if err := WriteLoadFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, filepath.Join(dir, GrowthLatencyChart), "fulltext query p50", "index lag p99", "live message p99", "sessions")
	checkSVG(t, filepath.Join(dir, GrowthMemoryChart), "heap", "disk")
	checkSVG(t, filepath.Join(dir, GrowthIngestChart), "ingest messages/s")
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hindsight bench load --grow 10000,100000", "| 100000 | 2000000 | 20000 | 15000 | 300 / 900 | 800 / 1500 / 1900 | 6.32 / 25.30 | 3.16 / 12.65 (CPU 1.58) |",
		"| fulltext first-pass p99 | 0.50 | 8.00 → 25.30 |",
		"| fulltext query p50 | 0.50 | 1.00 → 3.16 |", "](growth_latency.svg)",
		// records 8 KiB of 10 KiB raw, index 4 KiB of 5 KiB text
		"| 100000 | 10.0 | 5.0 | 8.0 (0.80×) | 4.0 (0.80×) | 0.0 | 12.0 |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("load report lacks %q:\n%s", want, md)
		}
	}
}

// TestWriteSettings checks both forms of a run's settings: sorted by key,
// and in the table a value's pipes escaped and the command left out.
func TestWriteSettings(t *testing.T) {
	settings := map[string]string{"go": "go1.24", "command": "hindsight bench x", "cpus": "2", "alpha": "a | b"}
	for _, c := range []struct {
		name  string
		write func(*strings.Builder, map[string]string)
		want  string
	}{
		{"list", WriteSettings, "- alpha: a | b\n- command: hindsight bench x\n- cpus: 2\n- go: go1.24\n"},
		{"table", WriteSettingsTable, "| setting | value |\n|---|---|\n| alpha | a \\| b |\n| cpus | 2 |\n| go | go1.24 |\n"},
		{"empty list", func(b *strings.Builder, _ map[string]string) { WriteSettings(b, nil) }, ""},
	} {
		var b strings.Builder
		c.write(&b, settings)
		if b.String() != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, b.String(), c.want)
		}
	}
}

func TestSessionBytes(t *testing.T) {
	b := sessionBytes(4, 4000, 2000, DiskUse{Records: 3000, Index: 1000, Vectors: 400})
	want := SessionBytes{Raw: 1000, Text: 500, Records: 750, Index: 250, Vectors: 100, Total: 1100, RecordsToRaw: 0.75, IndexToText: 0.5}
	if *b != want {
		t.Errorf("sessionBytes = %+v, want %+v", *b, want)
	}
	// Without a payload or text measured, no ratio (not a division by zero).
	if b := sessionBytes(4, 0, 0, DiskUse{Records: 3000}); b.RecordsToRaw != 0 || b.IndexToText != 0 {
		t.Errorf("ratios without raw or text = %v, %v; want 0", b.RecordsToRaw, b.IndexToText)
	}
	var out strings.Builder
	PrintLoadBytes(&out, []LoadStep{{Sessions: 4, PerSession: b}})
	if !strings.Contains(out.String(), "records (x raw)") || !strings.Contains(out.String(), "        4 ") {
		t.Errorf("PrintLoadBytes:\n%s", out.String())
	}
}

func TestRunRelevanceWarmupAndPeers(t *testing.T) {
	ds := sweepDataset()
	calls := map[string]int{}
	search := func(_ context.Context, mode, q string, k int) ([]string, error) {
		calls[mode]++
		if q == "qa" {
			return nil, ErrNoTerms
		}
		return []string{"r" + string(q[1])}, nil
	}
	peer := &listPeer{name: "peer"}
	if err := IndexPeer(context.Background(), peer, &Dataset{Corpus: make([]Doc, 1234)}, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(peer.batches, []int{500, 500, 234}) {
		t.Errorf("IndexPeer batches = %v", peer.batches)
	}
	res, err := RunRelevance(context.Background(), ds, WithPeers(search, peer), RelevanceOptions{Modes: []string{"fulltext", "peer"}, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	if calls["fulltext"] != 4+2 || peer.searches != 4+2 {
		t.Errorf("searches: fulltext %d, peer %d; want 6 each (2 warm-up + 4)", calls["fulltext"], peer.searches)
	}
	s, _ := res.Summary("fulltext")
	if s.NDCG10 != 0.75 || s.Missing != 0 {
		t.Errorf("fulltext nDCG@10 = %v (missing %d), want 0.75: the no-terms query scores 0", s.NDCG10, s.Missing)
	}
	if got := res.PerQuery[0].Returned["fulltext"]; got == nil || len(got) != 0 {
		t.Errorf("no-terms query returned %v, want an empty list", got)
	}
	if len(res.Latencies["peer"]) != 4 || res.Docs != 0 || res.Queries != 4 {
		t.Errorf("latencies %d, docs %d, queries %d", len(res.Latencies["peer"]), res.Docs, res.Queries)
	}
}

// listPeer is a working in-memory peer: it returns the relevant id of
// sweepDataset's queries, and records how it was called.
type listPeer struct {
	name     string
	batches  []int
	searches int
}

func (p *listPeer) Name() string { return p.name }
func (p *listPeer) Index(_ context.Context, docs []Doc) error {
	p.batches = append(p.batches, len(docs))
	return nil
}
func (p *listPeer) Search(_ context.Context, q string, k int) ([]string, error) {
	p.searches++
	return []string{"r" + string(q[1])}, nil
}
func (p *listPeer) Close() error { return nil }

func TestCDFSeries(t *testing.T) {
	lat := make([]time.Duration, 1000)
	for i := range lat {
		lat[i] = time.Duration(1000-i) * time.Millisecond // 1000 ms .. 1 ms, unsorted
	}
	s := cdfSeries("x", 0, lat)
	if len(s.XYs) > cdfPoints+1 {
		t.Errorf("%d points, want at most %d", len(s.XYs), cdfPoints+1)
	}
	first, last := s.XYs[0], s.XYs[len(s.XYs)-1]
	if first.X != 1 || first.Y != 0 || last.X != 1000 || last.Y != 1 {
		t.Errorf("CDF runs from %v to %v, want (1, 0) to (1000, 1)", first, last)
	}
	for i := 1; i < len(s.XYs); i++ {
		if s.XYs[i].X < s.XYs[i-1].X || s.XYs[i].Y < s.XYs[i-1].Y {
			t.Fatalf("CDF not monotone at %d: %v then %v", i, s.XYs[i-1], s.XYs[i])
		}
	}
	// The median point: rank 500 of 1000 is 500 ms.
	for _, p := range s.XYs {
		if p.Y == 0.5 && p.X != 500 {
			t.Errorf("CDF(0.5) at %v ms, want 500", p.X)
		}
	}
	small := cdfSeries("y", 1, []time.Duration{3 * time.Millisecond, 0})
	if len(small.XYs) != 3 || small.XYs[0].X != 0.001 || small.XYs[2].Y != 1 {
		t.Errorf("two samples give %v", small.XYs)
	}
}

// TestReportFromResultJSON: a report drawn again from result.json is the
// report of the run.
func TestReportFromResultJSON(t *testing.T) {
	r := sampleResult()
	dir := t.TempDir()
	if err := WriteRelevanceFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResult(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if back.Sweep == nil || len(back.Sweep.Rows) != 2 || back.Sweep.Default != 1 || back.Sweep.Test == nil || back.Sweep.Test.PT != 0.42 {
		t.Fatalf("sweep read back as %+v", back.Sweep)
	}
	if got, want := RelevanceMarkdown(back), RelevanceMarkdown(r); got != want {
		t.Errorf("report from result.json differs:\n%s\nwant\n%s", got, want)
	}
	again := t.TempDir()
	if err := WriteRelevanceReport(again, back); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{NDCGChart, LatencyChart, SweepChart} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if string(a) != string(b) {
			t.Errorf("%s drawn from result.json differs from the run's", f)
		}
	}
}

// TestRunRelevancePeerFailure checks that a peer whose queries hang or fail
// becomes a failed row while the run goes on, that a query out of time
// scores 0, and that the same failure of Hindsight's own mode is an error.
func TestRunRelevancePeerFailure(t *testing.T) {
	ds := sweepDataset()
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	search := func(ctx context.Context, mode, q string, k int) ([]string, error) {
		switch {
		case mode == "slow" && q == "qb": // one query hangs
			return nil, hang(ctx)
		case mode == "stuck": // every query hangs
			return nil, hang(ctx)
		case mode == "broken" && q == "qc":
			return nil, errors.New("malformed MATCH expression")
		}
		return []string{"r" + string(q[1])}, nil
	}
	o := RelevanceOptions{Modes: []string{"fulltext", "slow", "stuck", "broken"}, Peers: []string{"slow", "stuck", "broken"},
		Warmup: -1, QueryTimeout: 20 * time.Millisecond, MaxTimeouts: 2}
	res, err := RunRelevance(context.Background(), ds, search, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		ndcg     float64
		timedOut int
		failed   bool
	}{
		"fulltext": {1, 0, false},
		"slow":     {0.75, 1, false},
		"stuck":    {0, 3, true},
		"broken":   {0.5, 0, true},
	}
	for mode, w := range want {
		s, ok := res.Summary(mode)
		if !ok {
			t.Fatalf("no row for %s", mode)
		}
		if s.NDCG10 != w.ndcg || s.TimedOut != w.timedOut || (s.Failed != "") != w.failed {
			t.Errorf("%s: nDCG@10 %v, timed out %d, failed %q; want %v, %d, failed %v", mode, s.NDCG10, s.TimedOut, s.Failed, w.ndcg, w.timedOut, w.failed)
		}
	}
	if md := RelevanceMarkdown(&res); !strings.Contains(md, "| stuck | **failed**: more than 2 queries took over 20ms") ||
		!strings.Contains(md, "| broken | **failed**: query c: malformed MATCH expression") {
		t.Errorf("report does not mark the failed rows:\n%s", md)
	}
	o.Peers = nil // the same hang in Hindsight's own mode ends the run
	if _, err := RunRelevance(context.Background(), ds, search, o); err == nil {
		t.Error("a failing Hindsight mode did not fail the run")
	}
}
