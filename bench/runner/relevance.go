package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/importer"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/index/weaviatetext"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/progress"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/server"
	"github.com/hindsight-dev/hindsight/vectors"
)

// RelevanceConfig is everything bench relevance reads from its flags.
type RelevanceConfig struct {
	Dataset    string
	Split      string
	MaxDocs    int
	MaxQueries int
	Modes      []string // nil: fulltext, plus semantic and hybrid when an embedder is configured
	Peers      []string
	Vectors    Vectors
	Sweeps     []bench.Param
	SweepMode  string // "" = hybrid when available, else fulltext
	SweepLimit int
	Baseline   string
	Via        string
	// TextIndex is the server's full-text index: "" or bleve, or weaviate
	// (then the run also measures hindsight-bleve, the other mode, as a
	// peer).
	TextIndex string
	// EmbedCache is the file keeping embedded windows across runs
	// (vectors.Cache); "" = none.
	EmbedCache string
	// SessionScores are experiment modes (ParseSessionScores): the
	// whole-session ranking re-scored from the sessions' chunks.
	SessionScores []string
	// QueryTimeout bounds each query (bench.RelevanceOptions); 0 = the
	// default.
	QueryTimeout time.Duration
	Out          string
	JSON         bool
	Seed         uint64
	Command      string // the command line, for the report
}

// FlagError is a combination of settings a run cannot measure, found once
// the server is wired; the command reports it as a usage error.
type FlagError struct{ Msg string }

func (e *FlagError) Error() string { return e.Msg }

// Sweepable settings. Query-time ones build a new ranking engine over the
// same index and vectors; index-time ones rebuild the full-text index once
// per value, from the records already ingested.
var sweepParams = map[string]struct {
	indexTime bool
	help      string
	valid     func(float64) bool
}{
	"rrf.k":       {false, "RRF constant k of hybrid ranking (> 0)", func(v float64) bool { return v > 0 }},
	"rrf.w":       {false, "weight of the vector leg in hybrid ranking (> 0)", func(v float64) bool { return v > 0 }},
	"depth":       {false, "results fetched per leg before hybrid fusion (integer >= 1)", func(v float64) bool { return v >= 1 && v == math.Trunc(v) }},
	"title.boost": {true, "times the title counts in the full-text index (1..100; re-indexes)", func(v float64) bool { return v >= 1 && v <= 100 }},
	"fusion": {false, "how hybrid merges the legs: " + fusionLegend + " (names or numbers)",
		func(v float64) bool { return v >= 0 && int(v) < len(fusions) && v == math.Trunc(v) }},
}

// fusions are the values of the sweep's fusion setting: a sweep point is a
// number, so fusion=1 is fusions[1]. rrf.k applies to rrf only; rrf.w is
// the vector leg's weight in all three.
var fusions = []ranking.Fusion{ranking.FusionRRF, ranking.FusionMinMax, ranking.FusionZScore}

const fusionLegend = "0 rrf, 1 minmax, 2 zscore"

// fusionNumbers rewrites the names in "fusion=rrf,minmax" as the numbers
// the sweep keeps.
func fusionNumbers(s string) string {
	name, list, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) != "fusion" {
		return s
	}
	vals := strings.Split(list, ",")
	for i, v := range vals {
		if j := slices.Index(fusions, ranking.Fusion(strings.TrimSpace(v))); j >= 0 {
			vals[i] = strconv.Itoa(j)
		}
	}
	return name + "=" + strings.Join(vals, ",")
}

// SweepFlag is the flag.Value of --sweep: repeated, it collects the
// settings to sweep into *Params, checking each.
type SweepFlag struct{ Params *[]bench.Param }

func (f SweepFlag) String() string { return "" }

func (f SweepFlag) Set(s string) error {
	p, err := bench.ParseParam(fusionNumbers(s))
	if err != nil {
		return err
	}
	spec, ok := sweepParams[p.Name]
	if !ok {
		names := make([]string, 0, len(sweepParams))
		for n := range sweepParams {
			names = append(names, n)
		}
		slices.Sort(names)
		return fmt.Errorf("cannot sweep %q (sweepable: %s)", p.Name, strings.Join(names, ", "))
	}
	for _, v := range p.Values {
		if !spec.valid(v) {
			return fmt.Errorf("%s=%v: %s", p.Name, v, spec.help)
		}
	}
	for _, q := range *f.Params {
		if q.Name == p.Name {
			return fmt.Errorf("%s is swept twice", p.Name)
		}
	}
	p.IndexTime = spec.indexTime
	*f.Params = append(*f.Params, p)
	return nil
}

// Relevance loads a BEIR-layout dataset into a fresh Hindsight through the
// sync API (each document a session: title = title, one user message =
// text), runs every query in every mode and peer, and reports nDCG@10,
// Recall@100, MRR@10 and latency, with per-query results for error
// analysis. base gives the semantic settings and WEAVIATE_URL (the
// environment).
func Relevance(ctx context.Context, base config.Config, c RelevanceConfig, stdout, stderr io.Writer) error {
	loadAtStart := loadAverage()
	progressOut := stderr
	if c.JSON {
		progressOut = io.Discard
	}
	var baseline *bench.RelevanceResult
	if c.Baseline != "" {
		b, err := bench.ReadResult(c.Baseline)
		if err != nil {
			return err
		}
		baseline = b
	}
	ds, err := bench.LoadBEIR(ctx, c.Dataset, bench.LoadOptions{Split: c.Split, MaxDocs: c.MaxDocs, MaxQueries: c.MaxQueries})
	if err != nil {
		return err
	}
	fmt.Fprintf(progressOut, "dataset %s: %d documents, %d queries (qrels %s)\n", ds.Name, len(ds.Corpus), len(ds.Queries), filepath.Base(ds.QrelsFile))

	work, err := os.MkdirTemp("", "hindsight-relevance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	stopText, err := prepareTextIndex(ctx, &base, &c.Peers, c.TextIndex, work, progressOut)
	if err != nil {
		return err
	}
	defer stopText()
	base.Semantic.EmbedCache = c.EmbedCache
	client, a, stop, err := startServer(ctx, filepath.Join(work, "data"), zerolog.Nop(), base, c.Vectors)
	if errors.Is(err, vectors.ErrCacheInUse) {
		return fmt.Errorf("%w: another run on this dataset holds it; wait for it to end, or pass --embed-cache with another directory (or none)", err)
	}
	if err != nil {
		return err
	}
	defer stop()
	vecSearch, emb, rawEmb := a.Semantic.Vectors()
	semantic := a.Search.Semantic()

	modes := c.Modes
	if modes == nil {
		modes = []string{string(ranking.FullText)}
		if semantic {
			modes = append(modes, string(ranking.Semantic), string(ranking.Hybrid))
		}
	}
	for _, m := range modes {
		if m != string(ranking.FullText) && m != ModeContext && !semantic {
			return fmt.Errorf("mode %s needs an embedder: --embedder local (offline model; `make model`, HINDSIGHT_MODEL_DIR) or --embedder openai (OPENAI_API_KEY)", m)
		}
	}
	sweepMode := c.SweepMode
	if sweepMode == "" {
		sweepMode = string(ranking.FullText)
		if semantic {
			sweepMode = string(ranking.Hybrid)
		}
	}
	if len(c.Sweeps) > 0 {
		if sweepMode != string(ranking.FullText) && !semantic {
			return fmt.Errorf("--sweep-mode %s needs an embedder (--embedder local or openai)", sweepMode)
		}
		for _, p := range c.Sweeps {
			if !sweepParams[p.Name].indexTime && sweepMode != string(ranking.Hybrid) {
				return &FlagError{fmt.Sprintf("%s only changes hybrid ranking; sweep it with --sweep-mode hybrid (needs an embedder)", p.Name)}
			}
		}
	}

	stored := &storedVectors{}
	peers, err := openPeers(ctx, c.Peers, peerEnv{work: work, weaviateURL: base.Semantic.WeaviateURL, weaviateKey: base.Semantic.WeaviateKey,
		embedder: emb, progress: progressOut, stored: stored})
	if err != nil {
		return err
	}
	defer func() {
		for _, p := range peers {
			p.Close()
		}
	}()

	// Ingest through the API, then wait until the pipeline has indexed (and
	// embedded) everything.
	if err := loadCorpus(ctx, client, ds, progressOut); err != nil {
		return err
	}
	label := "indexing"
	if semantic {
		label = "indexing+embedding"
	}
	if err := bench.WaitIdle(ctx, label, a.Pipeline.WaitIdle, server.OutboxDepth(a.Store), progressOut); err != nil {
		return err
	}
	// A Weaviate text index scores a bulk import wrongly until its
	// memtables are written out (weaviatetext.Index.Settle).
	if w, ok := a.Index.(*weaviatetext.Index); ok {
		if err := w.Settle(ctx); err != nil {
			return err
		}
	}
	// Search results name sessions; the metrics need corpus ids (= externalIds).
	userID, docOf, err := sessionDocIDs(ctx, a.Store)
	if err != nil {
		return err
	}
	var vstore vectors.Store
	if a.Semantic != nil {
		vstore = a.Semantic.Store
	}
	if sv, ok := vstore.(interface {
		Stored(ctx context.Context, userID, sessionID string) ([]vectors.Vector, error)
	}); ok {
		stored.userID, stored.store, stored.sessionOf = userID, sv, make(map[string]string, len(docOf))
		stored.records, stored.stage = a.Store, a.Semantic.Stage
		for sid, doc := range docOf {
			stored.sessionOf[doc] = sid
		}
	}

	for _, p := range peers {
		if err := bench.IndexPeer(ctx, p, ds, progressOut); err != nil {
			return err
		}
	}

	degraded := &degradedCounter{}
	var search bench.SearchFunc
	if c.Via == "http" {
		search = func(ctx context.Context, mode, q string, k int) ([]string, error) {
			ids, err := httpSearch(ctx, client, mode, q, k)
			return mapIDs(ids, docOf), err
		}
	} else {
		search = engineSearch(a.Search, userID, docOf, degraded)
	}
	if len(c.SessionScores) > 0 {
		inner, rescored := search, sessionScoreSearch(ctx, a.Index, userID, docOf)
		search = func(ctx context.Context, mode, q string, k int) ([]string, error) {
			if strings.HasPrefix(mode, sessionScorePrefix) {
				return rescored(ctx, mode, q, k)
			}
			return inner(ctx, mode, q, k)
		}
	}
	systems := append(slices.Clone(modes), c.SessionScores...)
	var peerNames []string
	for _, p := range peers {
		systems = append(systems, p.Name())
		peerNames = append(peerNames, p.Name())
	}
	res, err := bench.RunRelevance(ctx, ds, bench.WithPeers(search, peers...), bench.RelevanceOptions{Modes: systems, Progress: progressOut, Peers: peerNames,
		QueryTimeout: c.QueryTimeout})
	if err != nil {
		return err
	}
	res.Peers = peerNames
	if res.Paired, err = bench.ComparePairs(&res, bench.DefaultPairs(append(slices.Clone(modes), c.SessionScores...), peerNames), c.Seed); err != nil {
		return err
	}

	model := "none"
	if rawEmb != nil {
		model = fmt.Sprintf("%s (%d dimensions)", rawEmb.Model(), rawEmb.Dim())
	}
	defaults := a.Semantic.RankingOptions()
	res.Settings = runSettings(map[string]string{
		"command":       c.Command,
		"dataset":       c.Dataset,
		"qrels":         filepath.Base(ds.QrelsFile),
		"embedder":      model,
		"store":         c.Vectors.Store,
		"rrf.k":         strconv.FormatFloat(defaults.K, 'g', -1, 64),
		"rrf.w":         strconv.FormatFloat(defaults.SemanticWeight, 'g', -1, 64),
		"fusion":        string(cmp.Or(defaults.Fusion, ranking.FusionRRF)) + " (sweep values: " + fusionLegend + ")",
		"query timeout": cmp.Or(c.QueryTimeout, bench.DefaultQueryTimeout).String(),
		"depth":         "max(limit, 50); the table asks 100 results",
		"title.boost":   strconv.Itoa(index.DefaultTitleBoost),
		// What each system makes of text: the same words are terms in
		// one and not in another.
		"tokenization hindsight": "Unicode (UAX #29) words; compounds joined by - / \\ . : @ kept whole plus their parts; identifiers split " +
			"(camelCase, snake_case, digits) plus the whole; English possessives removed; lower-cased; Porter stemmer; no stop words. " +
			"BM25 k1 1.2, b 0.75, title written twice before the body in one field; query compounds scored by their parts",
		"tokenization sqlite-fts5": "porter unicode61 (letters, digits; case and diacritics folded; Porter stemmer; no stop words); " +
			"columns title and text, bm25() weights 1, 1 (k1 1.2, b 0.75)",
		"tokenization weaviate": "word tokenization (alphanumeric runs, lower-cased), the en stop words, no stemming; BM25 k1 1.2, b 0.75 over title + text",
		"via":                   c.Via,
	})
	if a.Semantic != nil && a.Semantic.Cache != nil {
		hits, misses := a.Semantic.Cache.Counts()
		res.Settings["embedding cache"] = fmt.Sprintf("%s: %d windows reused, %d embedded", c.EmbedCache, hits, misses)
	}
	if len(c.SessionScores) > 0 {
		res.Settings["session-score"] = "the fulltext:* modes re-rank the best 50 sessions of the whole-session ranking by scores of their chunks " +
			"(index.Chunks); a query's chunks are scored once for all variants, so their latency is not comparable"
	}
	if l := loadAverage(); l != "" {
		// Latency is wall time: say how busy the machine was.
		res.Settings["load average"] = fmt.Sprintf("%s at start, %s at the end (1 minute)", loadAtStart, l)
	}
	if c.MaxDocs > 0 || c.MaxQueries > 0 {
		res.Settings["slice"] = fmt.Sprintf("max-docs %d, max-queries %d", c.MaxDocs, c.MaxQueries)
	}

	if len(c.Sweeps) > 0 {
		sw, err := runSweep(ctx, a, ds, c, sweepMode, userID, docOf, vecSearch, emb, defaults, work, progressOut, degraded)
		if err != nil {
			return err
		}
		res.Sweep = sw
		// The peers get the same courtesy: each swept over its own settings.
		psw, failed, err := bench.PeerSweeps(ctx, ds, peers, c.SweepLimit, c.Seed, progressOut)
		if err != nil {
			return err
		}
		res.PeerSweeps = psw
		for name, err := range failed {
			res.Settings["peer sweep "+name] = "failed: " + err.Error()
		}
	}
	if n := degraded.String(); n != "" {
		res.Settings["degraded queries"] = n
		fmt.Fprintf(stderr, "warning: some hybrid queries fell back to full-text because the query could not be embedded: %s\n", n)
	}
	if baseline != nil {
		cmp, err := bench.CompareRuns(&res, baseline, c.Baseline, c.Seed)
		if err != nil {
			return err
		}
		res.Baseline = cmp
	}

	dir := c.Out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "hindsight-relevance-out-"); err != nil {
			return err
		}
	}
	if err := bench.WriteRelevanceFiles(dir, &res); err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	bench.PrintRelevance(stdout, res)
	fmt.Fprintf(stdout, "report: %s\nper-query results: %s\n", filepath.Join(dir, bench.ReportFile), filepath.Join(dir, bench.PerQueryFile))
	return nil
}

// runSweep measures the grid of c.Sweeps in sweepMode. Query-time settings
// get a new ranking engine over the app's index and vectors; each distinct
// title boost gets its own index, rebuilt from the records once.
func runSweep(ctx context.Context, a *server.Server, ds *bench.Dataset, c RelevanceConfig, sweepMode, userID string, docOf map[string]string,
	vec ranking.VectorSearcher, emb ranking.Embedder, defaults ranking.Options, work string, progressOut io.Writer, degraded *degradedCounter) (*bench.SweepResult, error) {
	def := bench.Point{
		{Name: "rrf.k", Value: defaults.K},
		{Name: "rrf.w", Value: defaults.SemanticWeight},
		{Name: "depth", Value: float64(max(c.SweepLimit, 50))}, // ranking's default per-leg depth
		{Name: "title.boost", Value: index.DefaultTitleBoost},
		{Name: "fusion", Value: float64(max(0, slices.Index(fusions, cmp.Or(defaults.Fusion, ranking.FusionRRF))))},
	}
	// Every grid point asks the same queries: embed each once, up front,
	// so the sweep neither pays for (nor, with a paid provider, is billed
	// for) the same query vectors per point, and every point's latency is
	// measured the same way: ranking work, without the query embedding.
	note := ""
	if emb != nil && sweepMode != string(ranking.FullText) {
		note = "Latency is the ranking work: each query was embedded once before the sweep."
		cached := &cachedEmbedder{e: emb, m: map[string][]float32{}}
		if err := cached.warm(ctx, ds, progressOut); err != nil {
			return nil, err
		}
		emb = cached
	}
	var (
		curBoost = float64(index.DefaultTitleBoost)
		curIndex = a.Index
		extra    *index.Index // an index this sweep built, closed when replaced
	)
	defer func() {
		if extra != nil {
			extra.Close()
		}
	}()
	at := func(ctx context.Context, p bench.Point) (bench.SearchFunc, error) {
		o := defaults
		if v, ok := p.Get("rrf.k"); ok {
			o.K = v
		}
		if v, ok := p.Get("rrf.w"); ok {
			o.SemanticWeight = v
		}
		if v, ok := p.Get("depth"); ok {
			o.Depth = int(v)
		}
		if v, ok := p.Get("fusion"); ok {
			o.Fusion = fusions[int(v)]
		}
		boost := float64(index.DefaultTitleBoost)
		if v, ok := p.Get("title.boost"); ok {
			boost = v
		}
		if boost != curBoost {
			if extra != nil {
				extra.Close()
				extra = nil
			}
			curIndex = a.Index
			if boost != index.DefaultTitleBoost {
				idx, _, err := rebuildWith(ctx, a.Store, filepath.Join(work, fmt.Sprintf("sweep-index-%g", boost)), index.Options{TitleBoost: boost},
					fmt.Sprintf("reindex title.boost=%g", boost), progressOut)
				if err != nil {
					return nil, err
				}
				extra, curIndex = idx, idx
			}
			curBoost = boost
		}
		return engineSearch(ranking.New(curIndex, vec, emb, o), userID, docOf, degraded), nil
	}
	return bench.RunSweep(ctx, ds, at, bench.SweepOptions{Mode: sweepMode, Limit: c.SweepLimit, Params: c.Sweeps, Default: def, QueryTimeout: c.QueryTimeout,
		Seed: c.Seed, Progress: progressOut, Note: note})
}

// cachedEmbedder remembers the vectors of the texts it has embedded.
type cachedEmbedder struct {
	e  ranking.Embedder
	mu sync.Mutex
	m  map[string][]float32
}

// warm embeds every query of ds, in batches, with a progress bar.
func (c *cachedEmbedder) warm(ctx context.Context, ds *bench.Dataset, progressOut io.Writer) error {
	const batch = 64
	bar := progress.New(progressOut, "embed queries", len(ds.Queries))
	defer bar.Done()
	for i := 0; i < len(ds.Queries); i += batch {
		var texts []string
		for _, q := range ds.Queries[i:min(i+batch, len(ds.Queries))] {
			texts = append(texts, q.Text)
		}
		if _, err := c.Embed(ctx, texts); err != nil {
			return fmt.Errorf("embed queries: %w", err)
		}
		bar.Set(min(i+batch, len(ds.Queries)))
	}
	return nil
}

// Embed returns cached vectors and embeds only the texts it has not seen.
func (c *cachedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []string
	missing := map[string]bool{}
	c.mu.Lock()
	for i, t := range texts {
		if v, ok := c.m[t]; ok {
			out[i] = v
		} else if !missing[t] {
			missing[t] = true
			miss = append(miss, t)
		}
	}
	c.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	vs, err := c.e.Embed(ctx, miss)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(miss) {
		return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vs), len(miss))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, t := range miss {
		c.m[t] = vs[i]
	}
	for i, t := range texts {
		if out[i] == nil {
			out[i] = c.m[t]
		}
	}
	return out, nil
}

// rebuildWith builds a full-text index with opts in dir from every session
// of st, as `hindsight reindex` does, and returns it with the number of
// sessions indexed. The caller closes it.
func rebuildWith(ctx context.Context, st *kv.Store, dir string, opts index.Options, label string, progressOut io.Writer) (*index.Index, int, error) {
	os.RemoveAll(dir)
	idx, err := index.Open(dir, opts)
	if err != nil {
		return nil, 0, err
	}
	n, err := countSessions(ctx, st)
	if err != nil {
		idx.Close()
		return nil, 0, err
	}
	bar := progress.New(progressOut, label, n)
	err = ingest.NewPipeline(st, idx, ingest.PipelineOptions{}).Rebuild(ctx, func(done, total int) {
		bar.Set(done)
		n = total
	})
	bar.Done()
	if err != nil {
		idx.Close()
		return nil, 0, fmt.Errorf("%s: %w", label, err)
	}
	return idx, n, nil
}

// countSessions counts the sessions of every user.
func countSessions(ctx context.Context, st *kv.Store) (int, error) {
	n := 0
	err := eachSession(ctx, st, func(*kv.Tx, string, kv.Session) error { n++; return nil })
	return n, err
}

// eachSession calls fn with every session of every user, in one read
// transaction.
func eachSession(ctx context.Context, st *kv.Store, fn func(tx *kv.Tx, userID string, s kv.Session) error) error {
	return st.View(ctx, func(tx *kv.Tx) error {
		users, err := tx.Users()
		if err != nil {
			return err
		}
		for _, u := range users {
			if err := tx.Sessions(u.ID, func(s kv.Session) error { return fn(tx, u.ID, s) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// ModeContext is the bench's name for the sessions /api/context picks
// (ranking.Engine.ContextHits: chunks by full-text, fused with the
// vector leg when there is an embedder, sessions by their best chunk), in
// their order.
const ModeContext = "context"

// engineSearch answers bench queries with e for the bench user, mapping
// session ids to corpus ids and counting hybrid answers that fell back to
// full-text.
func engineSearch(e *ranking.Engine, userID string, docOf map[string]string, degraded *degradedCounter) bench.SearchFunc {
	return func(ctx context.Context, mode, q string, k int) ([]string, error) {
		if mode == ModeContext {
			hits, degradedBy, _, err := e.ContextHits(ctx, userID, q, k) // a partial answer is scored as it is
			if errors.Is(err, index.ErrBadQuery) {
				return nil, bench.ErrNoTerms
			}
			if err != nil {
				return nil, err
			}
			if degradedBy != "" {
				degraded.add(mode)
			}
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = h.SessionID
			}
			return mapIDs(ids, docOf), nil
		}
		res, err := e.Search(ctx, ranking.Query{UserID: userID, Text: q, Mode: ranking.Mode(mode), Limit: k})
		if errors.Is(err, index.ErrBadQuery) {
			return nil, bench.ErrNoTerms
		}
		if err != nil {
			return nil, err
		}
		if res.Degraded != "" {
			degraded.add(mode)
		}
		ids := make([]string, len(res.Results))
		for i, r := range res.Results {
			ids[i] = r.SessionID
		}
		return mapIDs(ids, docOf), nil
	}
}

func mapIDs(ids []string, docOf map[string]string) []string {
	docs := make([]string, 0, len(ids))
	for _, id := range ids {
		docs = append(docs, docOf[id])
	}
	return docs
}

// degradedCounter counts degraded answers per mode.
type degradedCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *degradedCounter) add(mode string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[mode]++
}

func (d *degradedCounter) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var parts []string
	for m, n := range d.n {
		parts = append(parts, fmt.Sprintf("%s %d", m, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// runSettings adds what identifies the build and machine to s.
func runSettings(s map[string]string) map[string]string {
	s["go"] = runtime.Version()
	s["os/arch"] = runtime.GOOS + "/" + runtime.GOARCH
	s["cpus"] = strconv.Itoa(runtime.NumCPU())
	s["date"] = time.Now().UTC().Format("2006-01-02 15:04 UTC")
	bi, _ := debug.ReadBuildInfo()
	s["commit"] = buildCommit(bi, gitHead)
	if n := schedulerNote(autogroupFile); n != "" {
		s["scheduler"] = n
	}
	return s
}

// autogroupFile is where Linux says whether it schedules by autogroup.
const autogroupFile = "/proc/sys/kernel/sched_autogroup_enabled"

// schedulerNote says, for a run's settings, whether nice orders the run
// against other work on the machine. With autogroup scheduling on, the
// cores are shared between sessions (terminals, services) as groups,
// whatever their processes' nice values: other sessions' work takes its
// share from a bench run held at a lower nice, and figures measured "while
// the rest ran at nice 19" were not. "" where the file cannot be read.
func schedulerNote(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	switch strings.TrimSpace(string(b)) {
	case "1":
		return "autogroup on: nice does not order this run against other sessions' processes, which share the cores by session"
	case "0":
		return "autogroup off: nice orders this run against other processes"
	}
	return ""
}

// buildCommit names the commit the running binary was built from: the
// revision the go command stamped into it (vcs.revision; vcs.modified
// marks a build with uncommitted changes), so a result names the code that
// measured it even when the checkout has moved on since. A binary without
// the stamp (built with -buildvcs=false, which GOFLAGS may set, or outside
// a checkout) gets the working directory's HEAD at run time, labelled as
// such: it is only as good as the guess that the binary was built there
// and then.
func buildCommit(bi *debug.BuildInfo, head func() string) string {
	var rev, modified string
	if bi != nil {
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				modified = kv.Value
			}
		}
	}
	switch {
	case rev != "" && modified == "true":
		return rev + " (built with uncommitted changes)"
	case rev != "":
		return rev
	}
	if h := head(); h != "" {
		return h + " (not stamped: the binary carries no VCS information, this is the HEAD of the checkout in the working directory " +
			"at run time, uncommitted changes not detected; build with -buildvcs=true)"
	}
	return "unknown (not stamped: the binary carries no VCS information and the working directory is not a git checkout; build with -buildvcs=true)"
}

// gitHead returns the commit the working directory's git checkout is at,
// read from .git (no git command runs), or "". In a worktree .git is a file
// naming the worktree's git directory, whose branches live in the common
// one.
func gitHead() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for ; ; dir = filepath.Dir(dir) {
		git := filepath.Join(dir, ".git")
		common := git
		if b, err := os.ReadFile(git); err == nil { // a worktree
			gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
			if !ok {
				return ""
			}
			git, common = gd, gd
			if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
				common = filepath.Join(gd, strings.TrimSpace(string(c)))
			}
		}
		if head, err := os.ReadFile(filepath.Join(git, "HEAD")); err == nil {
			ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
			if !ok {
				return ref // detached: HEAD holds the hash
			}
			for _, d := range []string{git, common} {
				if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
					return strings.TrimSpace(string(b))
				}
			}
			packed, _ := os.ReadFile(filepath.Join(common, "packed-refs"))
			for _, line := range strings.Split(string(packed), "\n") {
				if hash, name, ok := strings.Cut(line, " "); ok && name == ref {
					return hash
				}
			}
			return ""
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// loadAverage returns the 1-minute load average (Linux), or "".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// CommandLine quotes args for a shell where needed (for the reports).
func CommandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// loadCorpus syncs the corpus through POST /sync/batch. A plain document
// becomes a session (title = title) with one user message (its text); a
// document that is a session (bench.Doc.Session) is synced as a plugin
// syncs it: the session, then each message with its role, its text as a
// text part and its tool output as a tool-result part, each cut as
// `hindsight import` cuts a part (importer.Truncate at
// importer.DefaultMaxPartBytes). Batches hold at most 500 documents and
// about 8 MiB.
func loadCorpus(ctx context.Context, c *bench.Client, ds *bench.Dataset, progressOut io.Writer) error {
	const (
		maxDocs  = 500
		maxBytes = 8 << 20
	)
	bar := progress.New(progressOut, "ingest", len(ds.Corpus))
	defer bar.Done()
	var batch api.SyncBatch
	size, docs := 0, 0
	flush := func() error {
		if docs == 0 {
			return nil
		}
		body, err := json.Marshal(batch)
		if err != nil {
			return err
		}
		if err := c.Post(ctx, "/sync/batch", body); err != nil {
			return err
		}
		bar.Add(docs)
		batch, size, docs = api.SyncBatch{}, 0, 0
		return nil
	}
	for _, d := range ds.Corpus {
		ss, ms, n, err := syncPayloads(d)
		if err != nil {
			return err
		}
		if docs > 0 && (docs == maxDocs || size+n > maxBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch.Sessions = append(batch.Sessions, ss)
		batch.Messages = append(batch.Messages, ms...)
		size += n
		docs++
	}
	return flush()
}

// syncPayloads is document d as sync payloads (see loadCorpus), with about
// how many bytes they take.
func syncPayloads(d bench.Doc) (api.SyncSession, []api.SyncMessage, int, error) {
	id, title := d.ID, d.Title
	sess := api.SyncSession{ExternalID: &id, Title: &title, Source: ptr("bench")}
	if d.Session == nil {
		text := d.Text
		return sess, []api.SyncMessage{{SessionExternalID: &id, ExternalID: ptr(d.ID + "-text"), Role: ptr("user"), TextContent: &text}},
			len(title) + len(text), nil
	}
	if d.Session.Source != "" {
		sess.Source = ptr(d.Session.Source)
	}
	if d.Session.Project != "" {
		sess.ProjectName = ptr(d.Session.Project)
	}
	size := len(title)
	var msgs []api.SyncMessage
	for i, m := range d.Session.Messages {
		var parts api.Parts
		add := func(typ, content string) error {
			if content == "" {
				return nil
			}
			b, err := json.Marshal(importer.Part{Type: typ, Content: importer.Truncate(content, importer.DefaultMaxPartBytes)})
			if err != nil {
				return err
			}
			parts = append(parts, b)
			size += len(b)
			return nil
		}
		if err := add(importer.PartText, m.Text); err != nil {
			return sess, nil, 0, err
		}
		if err := add(importer.PartToolResult, m.ToolOutput); err != nil {
			return sess, nil, 0, err
		}
		if len(parts) == 0 {
			continue // nothing a plugin would send
		}
		msgs = append(msgs, api.SyncMessage{SessionExternalID: &id, ExternalID: ptr(fmt.Sprintf("%s-%d", d.ID, i)), Role: ptr(m.Role),
			Source: sess.Source, Parts: parts})
	}
	return sess, msgs, size, nil
}

func ptr[T any](v T) *T { return &v }

// sessionDocIDs maps the bench user's session ids to corpus ids.
func sessionDocIDs(ctx context.Context, st *kv.Store) (string, map[string]string, error) {
	m := map[string]string{}
	var uid string
	err := st.View(ctx, func(tx *kv.Tx) error {
		u, err := tx.UserByName("bench")
		if err != nil {
			return err
		}
		uid = u.ID
		return tx.Sessions(u.ID, func(s kv.Session) error {
			m[s.ID] = s.ExternalID
			return nil
		})
	})
	return uid, m, err
}

func httpSearch(ctx context.Context, c *bench.Client, mode, q string, k int) ([]string, error) {
	u := fmt.Sprintf("%s/api/search?type=%s&limit=%d&q=%s", c.URL, mode, min(k, 100), url.QueryEscape(q))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusBadRequest {
		return nil, bench.ErrNoTerms
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("search: %d %s", resp.StatusCode, b)
	}
	var r struct{ Results []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	ids := make([]string, len(r.Results))
	for i, x := range r.Results {
		ids[i] = x.ID
	}
	return ids, nil
}
