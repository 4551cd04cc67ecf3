package index_test

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// update rewrites the ranking goldens from this run instead of comparing:
//
//	go test ./index -run TestRankingGoldens -update
var update = flag.Bool("update", false, "rewrite index/testdata/rank_stats.txt and index/testdata/rank/*.txt from this run")

// Where the goldens live (see testdata/README.md).
const (
	statsGolden = "testdata/rank_stats.txt"
	rankDir     = "testdata/rank"
)

// The ranking the goldens record: Kind Sessions with the default Options,
// 100 hits a query (Recall@100), the first goldenTop of them written down.
const (
	goldenLimit = 100
	goldenTop   = 10
	// scoreTolerance is how far a score may move before it is a change.
	// Goldens hold scores to four decimals; the ids are compared exactly.
	// The index's scores are deterministic on one machine (summed in a
	// fixed order, ties broken by session id), but math.Log and fused
	// multiply-adds may differ in the last bits between GOARCHes.
	scoreTolerance = 1.5e-4
	goldenUser     = "golden"
)

// rankSlice is one dataset slice the goldens cover: its sessions as the
// index is given them and its judged queries.
type rankSlice struct {
	name     string
	sessions []index.Session
	ds       *bench.Dataset    // queries and qrels
	kinds    map[string]string // query id -> kind, when the set has kinds
}

// TestRankingGoldens indexes each dataset slice whole and checks the
// full-text ranking against the committed goldens: per slice nDCG@10,
// Recall@100 and MRR@10 to four decimals (testdata/rank_stats.txt), and per
// query the top 10 session ids with their scores (testdata/rank/<slice>.txt).
// Any ranking change fails it with the queries, ranks and metrics that
// moved; run it with -update to accept the change, and review the diff of
// index/testdata with the commit.
//
// The slices are the whole of SciFact train (5,183 abstracts, 809 queries),
// CoSQA dev (6,267 functions, 500 queries) and the coding-session set (253
// real sessions, 129 queries, also reported per query kind). Every document
// becomes a session the way the sync pipeline makes one: its messages
// grouped into exchanges and chunks by ingest, then ingest.IndexSession.
func TestRankingGoldens(t *testing.T) {
	if raceBuild {
		t.Skip("SKIPPING under -race: the goldens check scores and order, which the race detector cannot change, " +
			"at ten times the cost with it; make test runs them in a build without -race " +
			"(go test ./index -run TestRankingGoldens)")
	}
	root := datasetsRoot(t)
	sets := []struct {
		name string
		load func(t *testing.T, dir string) rankSlice
	}{
		{"scifact-train", loadBEIRSlice},
		{"cosqa-dev", loadBEIRSlice},
		{"coding-sessions", loadCodingSessions},
	}
	var stats []statsLine
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			sl := s.load(t, filepath.Join(root, s.name))
			sl.name = s.name
			got := rankAll(t, sl)
			stats = append(stats, got.stats...)
			path := filepath.Join(rankDir, s.name+".txt")
			if *update {
				writeGolden(t, path, formatRanking(sl, got))
				return
			}
			want, err := readRanking(path)
			if err != nil {
				t.Fatalf("%v (run go test ./index -run TestRankingGoldens -update to write it)", err)
			}
			if diff := diffRanking(got, want); diff != "" {
				t.Errorf("%s: top %d changed against %s:\n%s", s.name, goldenTop, path, diff)
			}
		})
	}
	if t.Skipped() || (*update && t.Failed()) {
		return
	}
	checkStats(t, stats)
	if t.Failed() {
		t.Log("if the change is intended: go test ./index -run TestRankingGoldens -update, then review git diff index/testdata")
	}
}

// datasetsRoot is the directory holding the shared datasets:
// HINDSIGHT_DATASETS, else ../shared/datasets beside the repository. The
// test is skipped loudly without them, and fails instead when
// HINDSIGHT_REQUIRE_DATASETS is set, as make test does.
func datasetsRoot(t *testing.T) string {
	t.Helper()
	root := cmp.Or(os.Getenv("HINDSIGHT_DATASETS"), filepath.Join("..", "..", "shared", "datasets"))
	for _, name := range []string{"scifact-train", "cosqa-dev", "coding-sessions"} {
		if _, err := os.Stat(filepath.Join(root, name)); err != nil {
			msg := fmt.Sprintf("SKIPPING the ranking goldens: dataset %s not available (%v); set HINDSIGHT_DATASETS to its parent directory", name, err)
			if os.Getenv("HINDSIGHT_REQUIRE_DATASETS") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return root
}

// loadBEIRSlice reads a BEIR-layout set whole. Each document is a session
// of one user message holding its text, titled with its title, as `hindsight
// bench relevance` syncs it.
func loadBEIRSlice(t *testing.T, dir string) rankSlice {
	ds, err := bench.LoadBEIR(t.Context(), dir, bench.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sl := rankSlice{ds: ds}
	for _, d := range ds.Corpus {
		text := d.Text
		sl.sessions = append(sl.sessions, indexSession(d.ID, d.Title, []kv.Message{{Role: "user", TextContent: &text}}))
	}
	ds.Corpus = nil // the sessions hold the text
	return sl
}

// loadCodingSessions reads the coding-session set: the sessions as a plugin
// syncs them (sessions.jsonl.gz: messages with their text and tool output)
// and the queries with their kinds. Tool output is sent as a tool-result
// part, which the index does not search.
func loadCodingSessions(t *testing.T, dir string) rankSlice {
	ds, err := bench.LoadBEIR(t.Context(), dir, bench.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sl := rankSlice{ds: ds, kinds: map[string]string{}}
	err = eachJSONLine(filepath.Join(dir, "queries.jsonl"), func(line []byte) error {
		var q struct {
			ID   string `json:"_id"`
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		sl.kinds[q.ID] = q.Kind
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]index.Session{}
	err = eachJSONLine(filepath.Join(dir, "sessions.jsonl.gz"), func(line []byte) error {
		var s struct {
			ID       string `json:"id"`
			Title    string `json:"title"`
			Messages []struct {
				Role       string `json:"role"`
				Text       string `json:"text"`
				ToolOutput string `json:"tool_output"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		var msgs []kv.Message
		for _, m := range s.Messages {
			parts := []kv.Part{{Type: kv.PartText, Content: m.Text}}
			if m.ToolOutput != "" {
				parts = append(parts, kv.Part{Type: kv.PartToolResult, Content: m.ToolOutput})
			}
			msgs = append(msgs, kv.Message{Role: m.Role, Parts: parts})
		}
		byID[s.ID] = indexSession(s.ID, s.Title, msgs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Corpus { // in corpus order
		s, ok := byID[d.ID]
		if !ok {
			t.Fatalf("corpus document %s has no session in sessions.jsonl.gz", d.ID)
		}
		sl.sessions = append(sl.sessions, s)
	}
	ds.Corpus = nil // text and tool output joined: not what the index is given
	return sl
}

// indexSession is the index document the sync pipeline writes for a
// session of these messages.
func indexSession(id, title string, msgs []kv.Message) index.Session {
	for i := range msgs {
		msgs[i].Seq = uint64(i + 1)
	}
	ex := ingest.Exchanges(msgs)
	return ingest.IndexSession(ingest.Doc{UserID: goldenUser, SessionID: id, Session: kv.Session{Title: title},
		Exchanges: ex, Chunks: ingest.Chunks(ex)})
}

func eachJSONLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		sc = bufio.NewScanner(zr)
	}
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// ranked is one query's outcome: the hits (up to goldenLimit) and its
// metrics.
type ranked struct {
	id                       string
	hits                     []index.Hit
	rel                      map[string]int // the query's judgements
	ndcg10, recall100, mrr10 float64
}

type sliceResult struct {
	queries []ranked // in queries-file order
	stats   []statsLine
}

// rankAll indexes the slice's sessions into a fresh index and runs every
// judged query.
func rankAll(t *testing.T, sl rankSlice) sliceResult {
	ctx := context.Background()
	text := make(textSource, len(sl.sessions))
	for _, s := range sl.sessions {
		text[s.SessionID] = s
	}
	ix, err := index.Open(t.TempDir(), index.Options{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	docs := len(sl.sessions)
	// Batches as the pipeline's steps take them by default: up to 256
	// sessions and about 2 MiB of text (at least one session), which also
	// bounds what one Put analyses at once (the coding sessions run to
	// 2.6 MB). The batching changes the segments, not the ranking.
	const maxBatch, maxBytes = 256, 2 << 20
	for len(sl.sessions) > 0 {
		n, size := 0, 0
		for n < len(sl.sessions) && n < maxBatch && (n == 0 || size+sessionBytes(sl.sessions[n]) <= maxBytes) {
			size += sessionBytes(sl.sessions[n])
			n++
		}
		if err := ix.Put(ctx, sl.sessions[:n]); err != nil {
			t.Fatal(err)
		}
		sl.sessions = sl.sessions[n:]
	}
	var res sliceResult
	byKind := map[string][]ranked{}
	for _, q := range sl.ds.Queries {
		// Search orders hits by score, then session id, but which of the
		// hits tied at the limit-th score make the cut follows the
		// documents' order in the index, which background merges may
		// change. Asked for twice the hits, the first goldenLimit are
		// those of the whole tie.
		hits, err := ix.Search(ctx, index.Query{UserID: goldenUser, Text: q.Text, Kind: index.Sessions, Limit: 2 * goldenLimit})
		if err != nil && !errors.Is(err, index.ErrBadQuery) {
			t.Fatalf("query %s: %v", q.ID, err)
		}
		hits = hits[:min(goldenLimit, len(hits))]
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.SessionID
		}
		rel := sl.ds.Qrels[q.ID]
		r := ranked{id: q.ID, hits: hits, rel: rel,
			ndcg10: bench.NDCG(ids, rel, 10), recall100: bench.Recall(ids, rel, 100), mrr10: bench.MRR(ids, rel, 10)}
		res.queries = append(res.queries, r)
		if k := sl.kinds[q.ID]; k != "" {
			byKind[k] = append(byKind[k], r)
		}
	}
	if len(res.queries) == 0 {
		t.Fatalf("%s: no judged queries", sl.name)
	}
	res.stats = append(res.stats, meanStats(sl.name, docs, res.queries))
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		res.stats = append(res.stats, meanStats(sl.name+"/"+k, docs, byKind[k]))
	}
	return res
}

// textSource serves the sessions' text to the index, as the records do in
// the server: the index then stores none of it.
type textSource map[string]index.Session

func (ts textSource) SessionText(_ context.Context, userID string, ids []string, _ int) (map[string]index.Session, error) {
	out := make(map[string]index.Session, len(ids))
	for _, id := range ids {
		if s, ok := ts[id]; ok && s.UserID == userID {
			out[id] = s
		}
	}
	return out, nil
}

func sessionBytes(s index.Session) int { return len(s.Title) + len(s.Body) }

// statsLine is one line of rank_stats.txt, its metrics formatted to four
// decimals: the goldens compare what they print.
type statsLine struct {
	slice                    string
	docs, queries            int
	ndcg10, recall100, mrr10 string
}

func meanStats(name string, docs int, rs []ranked) statsLine {
	var n, r, m float64
	for _, q := range rs {
		n, r, m = n+q.ndcg10, r+q.recall100, m+q.mrr10
	}
	k := float64(len(rs))
	return statsLine{slice: name, docs: docs, queries: len(rs),
		ndcg10: four(n / k), recall100: four(r / k), mrr10: four(m / k)}
}

func four(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

const statsHeader = `# Full-text ranking of the index on the shared datasets, checked by
# TestRankingGoldens (index/golden_test.go); the top 10 of every query are in
# rank/<slice>.txt. Kind Sessions, default Options, 100 hits a query.
# Refresh: go test ./index -run TestRankingGoldens -update (see README.md).
#
# slice                       docs  queries  nDCG@10  Recall@100  MRR@10
`

func (l statsLine) String() string {
	return fmt.Sprintf("%-26s %6d %8d %8s %11s %7s", l.slice, l.docs, l.queries, l.ndcg10, l.recall100, l.mrr10)
}

func parseStatsLine(s string) (statsLine, error) {
	f := strings.Fields(s)
	if len(f) != 6 {
		return statsLine{}, fmt.Errorf("want 6 fields, got %d in %q", len(f), s)
	}
	docs, err1 := strconv.Atoi(f[1])
	queries, err2 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2); err != nil {
		return statsLine{}, fmt.Errorf("%q: %w", s, err)
	}
	return statsLine{slice: f[0], docs: docs, queries: queries, ndcg10: f[3], recall100: f[4], mrr10: f[5]}, nil
}

// readStats reads rank_stats.txt: its lines in file order.
func readStats(path string) ([]statsLine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []statsLine
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		l, err := parseStatsLine(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// checkStats compares the measured lines with rank_stats.txt, or with
// -update writes them there (keeping the lines of slices not run, when
// -run picked some).
func checkStats(t *testing.T, got []statsLine) {
	want, err := readStats(statsGolden)
	if *update {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		// The golden's lines in their order, those measured replaced, then
		// any new ones.
		var merged []statsLine
		for _, w := range want {
			if i := slices.IndexFunc(got, func(g statsLine) bool { return g.slice == w.slice }); i >= 0 {
				w = got[i]
			}
			merged = append(merged, w)
		}
		for _, g := range got {
			if !slices.ContainsFunc(want, func(w statsLine) bool { return w.slice == g.slice }) {
				merged = append(merged, g)
			}
		}
		var b strings.Builder
		b.WriteString(statsHeader)
		for _, l := range merged {
			b.WriteString(l.String() + "\n")
		}
		writeGolden(t, statsGolden, b.String())
		return
	}
	if err != nil {
		t.Fatalf("%v (run go test ./index -run TestRankingGoldens -update to write it)", err)
	}
	wantBy := map[string]statsLine{}
	for _, w := range want {
		wantBy[w.slice] = w
	}
	var diffs []string
	for _, g := range got {
		w, ok := wantBy[g.slice]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("  %s: not in the golden (now %s)", g.slice, g))
			continue
		}
		if g.docs != w.docs || g.queries != w.queries {
			diffs = append(diffs, fmt.Sprintf("  %s: %d docs, %d queries; golden %d, %d", g.slice, g.docs, g.queries, w.docs, w.queries))
		}
		for _, m := range []struct{ name, got, want string }{
			{"nDCG@10", g.ndcg10, w.ndcg10}, {"Recall@100", g.recall100, w.recall100}, {"MRR@10", g.mrr10, w.mrr10},
		} {
			if m.got != m.want {
				gv, _ := strconv.ParseFloat(m.got, 64)
				wv, _ := strconv.ParseFloat(m.want, 64)
				diffs = append(diffs, fmt.Sprintf("  %s %s: golden %s, now %s (%+.4f)", g.slice, m.name, m.want, m.got, gv-wv))
			}
		}
	}
	if len(diffs) > 0 {
		t.Errorf("metrics changed against %s:\n%s", statsGolden, strings.Join(diffs, "\n"))
	}
}

// A ranking golden holds one line per query, in queries-file order:
//
//	<query id> TAB <session id>:<score>[*<grade>] ...
//
// the top 10 hits best first, scores to four decimals, *grade marking the
// hits the qrels judge relevant.
func formatRanking(sl rankSlice, r sliceResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: top %d of index.Search (Kind Sessions, default Options) per judged query,\n", sl.name, goldenTop)
	b.WriteString("# best first, as session-id:score, *grade on the hits the qrels judge relevant.\n")
	b.WriteString("# Checked and refreshed by TestRankingGoldens (see ../README.md).\n")
	for _, q := range r.queries {
		b.WriteString(q.id)
		b.WriteByte('\t')
		rel := sl.ds.Qrels[q.id]
		for i, h := range q.hits[:min(goldenTop, len(q.hits))] {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(h.SessionID + ":" + four(h.Score))
			if g := rel[h.SessionID]; g > 0 {
				b.WriteString("*" + strconv.Itoa(g))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// goldenHit is one hit of a golden line.
type goldenHit struct {
	id    string
	score float64
}

type goldenQuery struct {
	id   string
	hits []goldenHit
}

func readRanking(path string) ([]goldenQuery, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []goldenQuery
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		qid, rest, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("%s:%d: no tab after the query id", path, n+1)
		}
		q := goldenQuery{id: qid}
		for _, tok := range strings.Fields(rest) {
			tok, _, _ = strings.Cut(tok, "*")
			i := strings.LastIndexByte(tok, ':')
			if i < 0 {
				return nil, fmt.Errorf("%s:%d: hit %q is not id:score", path, n+1, tok)
			}
			s, err := strconv.ParseFloat(tok[i+1:], 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
			}
			q.hits = append(q.hits, goldenHit{id: tok[:i], score: s})
		}
		out = append(out, q)
	}
	return out, nil
}

// diffRanking describes, query by query, how got's top hits differ from
// the golden: "" when they are the same ids in the same order with scores
// within scoreTolerance.
func diffRanking(got sliceResult, want []goldenQuery) string {
	const maxShown = 25
	wantBy := make(map[string]goldenQuery, len(want))
	for _, q := range want {
		wantBy[q.id] = q
	}
	var lines []string
	changed := 0
	report := func(s string) {
		changed++
		if changed <= maxShown {
			lines = append(lines, s)
		}
	}
	seen := map[string]bool{}
	for _, q := range got.queries {
		seen[q.id] = true
		w, ok := wantBy[q.id]
		if !ok {
			report(fmt.Sprintf("  query %s: not in the golden", q.id))
			continue
		}
		top := q.hits[:min(goldenTop, len(q.hits))]
		var ranks []string
		for i := range max(len(top), len(w.hits)) {
			switch {
			case i >= len(top):
				ranks = append(ranks, fmt.Sprintf("rank %d: golden %s (%.4f), now nothing", i+1, w.hits[i].id, w.hits[i].score))
			case i >= len(w.hits):
				ranks = append(ranks, fmt.Sprintf("rank %d: golden nothing, now %s (%.4f)", i+1, top[i].SessionID, top[i].Score))
			case top[i].SessionID != w.hits[i].id:
				ranks = append(ranks, fmt.Sprintf("rank %d: golden %s (%.4f), now %s (%.4f)", i+1, w.hits[i].id, w.hits[i].score, top[i].SessionID, top[i].Score))
			case math.Abs(top[i].Score-w.hits[i].score) > scoreTolerance:
				ranks = append(ranks, fmt.Sprintf("rank %d: %s scored %.4f, now %.4f", i+1, top[i].SessionID, w.hits[i].score, top[i].Score))
			}
		}
		if len(ranks) > 0 {
			ids := make([]string, len(w.hits))
			for i, h := range w.hits {
				ids[i] = h.id
			}
			report(fmt.Sprintf("  query %s (nDCG@10 golden %.4f, now %.4f): %s",
				q.id, bench.NDCG(ids, q.rel, 10), q.ndcg10, strings.Join(ranks, "; ")))
		}
	}
	for _, q := range want {
		if !seen[q.id] {
			report(fmt.Sprintf("  query %s: in the golden, not run", q.id))
		}
	}
	if changed > maxShown {
		lines = append(lines, fmt.Sprintf("  ... and %d more queries", changed-maxShown))
	}
	return strings.Join(lines, "\n")
}

func writeGolden(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
