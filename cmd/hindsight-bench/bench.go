// hindsight bench measures Hindsight: relevance (ranking quality and its
// cost on a labelled dataset, next to peer systems), load (cost as
// generated data grows), ingest (write throughput), nodes (records in
// PostgreSQL, several nodes), redact, import, watch and embed. This file parses their flags; package bench/runner runs them.

package main

import (
	"cmp"
	"context"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/bench/runner"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ranking"
)

const benchUsage = `bench relevance --dataset DIR [--modes fulltext,semantic,hybrid] [--embedder auto|none|local|openai]
                       [--store embedded|weaviate] [--text-index bleve|weaviate]
                       [--peers sqlite-fts5,weaviate-bm25,weaviate-hybrid,hindsight-bleve,hindsight-weaviate]
                       [--sweep rrf.k=10,30,60 --sweep depth=20,50,100 --sweep title.boost=1,2,4] [--sweep-mode M]
                       [--baseline result.json] [--max-docs N] [--max-queries N] [--split NAME] [--out DIR] [--json]
       bench load      [--sessions N | --grow 10000,30000,100000] [--messages M] [--concurrency C] [--users U]
                       [--modes fulltext,semantic,hybrid] [--embedder none|local|openai|auto|synthetic]
                       [--store embedded|weaviate] [--text-index bleve|weaviate|both] [--out DIR] [--json]
       bench ingest    [--batch-messages N] [--batch-size N] [--singles N] [--concurrency C] [--seed S] [--json]
       bench nodes     [--figures ingest,search,takeover] [--rounds 3] [--batch-messages N] [--singles N] [--corpus-messages N]
                       [--queries N] [--search-concurrency C] [--search-rounds R] [--seed S] [--out DIR] [--json]
       bench redact    [--datasets DIR] [--labels FILE] [--seed S] [--per-kind N] [--ingest-messages N] [--rounds R] [--out DIR] [--json]
       bench import    [--size 1GB] [--formats claude-code,codex] [--transcripts DIR|none] [--seed S] [--out DIR] [--json]
       bench watch     [--messages 600] [--sessions-per-agent 3] [--interval 100ms-500ms] [--seed S] [--out DIR] [--json]
       bench longsession [--size 50MB] [--appends 2m] [--settle 30s] [--message 2KB-20KB] [--seed S] [--dir DIR] [--out DIR] [--json]
       bench embed     [--windows 256] [--rounds 5] [--seed S] [--out DIR] [--json]
       bench vectors   [--vectors 1000000] [--dims 1536] [--queries 1000] [--k 10] [--seed S] [--dir DIR]
                       [--reuse-truth] [--reference CACHE.db] [--out DIR] [--json]

See bench/README.md: bring your own data, what each metric means, comparing two commits.`

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Usage: hindsight "+benchUsage)
		return cli.Usage("bench needs a subcommand: relevance, load, ingest, nodes, redact, import, watch, longsession, embed or vectors")
	}
	// The semantic settings (model directory, OpenAI key, WEAVIATE_URL...)
	// come from the environment, as for serve.
	cfg := config.Default()
	switch args[0] {
	case "ingest":
		c, err := parseBenchIngest(args[1:], stderr)
		if err != nil {
			return err
		}
		return runner.Ingest(ctx, c, stdout, stderr)
	case "nodes":
		c, err := parseBenchNodes(args[1:], stderr)
		if err != nil {
			return err
		}
		exe, err := hindsightBinary()
		if err != nil {
			return fmt.Errorf("bench nodes: %w", err)
		}
		c.Self = []string{exe}
		return runner.Nodes(ctx, c, stdout, stderr)
	case "redact":
		c, err := parseBenchRedact(args[1:], stderr)
		if err != nil {
			return err
		}
		return runner.Redact(ctx, c, stdout, stderr)
	case "relevance":
		c, err := parseBenchRelevance(args[1:], &cfg, stderr)
		if err != nil {
			return err
		}
		return runner.Relevance(ctx, cfg, c, stdout, stderr)
	case "load":
		c, err := parseBenchLoad(args[1:], &cfg, stderr)
		if err != nil {
			return err
		}
		return runner.Load(ctx, cfg, c, stdout, stderr)
	case "import":
		c, err := parseBenchImport(args[1:], stderr)
		if err != nil {
			return err
		}
		exe, err := hindsightBinary()
		if err != nil {
			return fmt.Errorf("bench import: %w", err)
		}
		c.Self = []string{exe}
		return runner.Import(ctx, c, stdout, stderr)
	case "embed":
		c, err := parseBenchEmbed(args[1:], cfg, stderr)
		if err != nil {
			return err
		}
		return runner.Embed(ctx, c, stdout, stderr)
	case "vectors":
		c, err := parseBenchVectors(args[1:], stderr)
		if err != nil {
			return err
		}
		return runner.VectorIndex(ctx, c, stdout, stderr)
	case "longsession":
		c, err := parseBenchLongSession(args[1:], stderr)
		if err != nil {
			return err
		}
		exe, err := hindsightBinary()
		if err != nil {
			return fmt.Errorf("bench longsession: %w", err)
		}
		c.Self = []string{exe}
		return runner.LongSession(ctx, c, stdout, stderr)
	case "watch":
		c, err := parseBenchWatch(args[1:], stderr)
		if err != nil {
			return err
		}
		exe, err := hindsightBinary()
		if err != nil {
			return fmt.Errorf("bench watch: %w", err)
		}
		c.Self = []string{exe}
		return runner.Watch(ctx, c, stdout, stderr)
	}
	fmt.Fprintln(stderr, "Usage: hindsight "+benchUsage)
	return cli.Usagef("unknown bench %q (relevance, load, ingest, nodes, redact, import, watch, longsession, embed or vectors)", args[0])
}

func parseBenchRelevance(args []string, cfg *config.Config, stderr io.Writer) (runner.RelevanceConfig, error) {
	var c runner.RelevanceConfig
	fs := cli.NewFlags("bench relevance", "bench relevance --dataset DIR [flags]", stderr)
	ld := config.NewLoader(fs, os.LookupEnv, config.Checks{})
	ld.Semantic(cfg)
	fs.StringVar(&c.Dataset, "dataset", "", "BEIR-layout directory: corpus.jsonl[.gz], queries.jsonl, qrels/*.tsv (required)")
	modes := fs.String("modes", "", "comma-separated Hindsight modes: fulltext, semantic, hybrid, context (the sessions /api/context picks, by their best chunk) "+
		"(default: fulltext, plus semantic and hybrid when an embedder is configured)")
	peers := fs.String("peers", bench.FTS5Name, "comma-separated peers run on the same documents: "+strings.Join(runner.KnownPeers, ", ")+
		", or none; the Weaviate peers use WEAVIATE_URL, else start the pinned weaviate-server (make weaviate)")
	fs.StringVar(&c.Vectors.Embedder, "embedder", cmp.Or(cfg.Semantic.Embedder, "auto"), "embedder for semantic and hybrid: auto (as serve chooses), none, local, openai (env HINDSIGHT_EMBEDDER)")
	fs.StringVar(&c.Vectors.Store, "store", "embedded", "Hindsight's vector store: embedded or weaviate (needs WEAVIATE_URL)")
	fs.Var(runner.SweepFlag{Params: &c.Sweeps}, "sweep", "sweep a setting over values, e.g. rrf.k=10,30,60 (repeatable: the grid is every combination); sweepable: depth, rrf.k, rrf.w, fusion (rrf, minmax, zscore), title.boost")
	fs.StringVar(&c.SweepMode, "sweep-mode", "", "mode the sweep measures (default: hybrid when an embedder is configured, else fulltext)")
	fs.IntVar(&c.SweepLimit, "sweep-limit", 20, "results per query during the sweep (the API's default page); per-leg depths below it have no effect")
	fs.StringVar(&c.Baseline, "baseline", "", "result.json of an earlier run: print per-mode deltas with paired significance")
	fs.StringVar(&c.Split, "split", "", "qrels file to use (test, dev, train...); default: test, then dev, then train")
	fs.IntVar(&c.MaxDocs, "max-docs", 0, "use a slice of at most N documents holding every judged document of the kept queries (0 = all)")
	fs.IntVar(&c.MaxQueries, "max-queries", 0, "use at most N queries (0 = all)")
	fs.StringVar(&c.Via, "via", "inprocess", "run Hindsight's queries in-process (ranking engine) or over HTTP (full API path)")
	fs.StringVar(&c.TextIndex, "text-index", "bleve", "the server's full-text index: bleve, or weaviate (WEAVIATE_URL, else the pinned server; adds the peer hindsight-bleve)")
	fs.StringVar(&c.Out, "out", "", "directory for report.md, charts, result.json and perquery.jsonl (default: a new temp dir, printed)")
	fs.BoolVar(&c.JSON, "json", false, "print only the JSON result (no table, no progress)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the randomisation tests")
	fs.DurationVar(&c.QueryTimeout, "query-timeout", bench.DefaultQueryTimeout,
		"time limit of one query: a peer's query past it scores 0, one of Hindsight's modes ends the run (raise it on a busy machine)")
	embedCache := fs.String("embed-cache", filepath.Join(".cache", "embeddings"),
		"directory keeping the embedded windows by model and text across runs, one file per dataset (DIR/<dataset>.db), so a second run "+
			"does not embed the corpus again (none: no cache)")
	sessionScores := fs.String("session-score", "", "experiment: also measure the full-text ranking with its best sessions re-scored from their chunks, "+
		"one mode fulltext:VARIANT each, comma-separated: "+strings.Join(runner.SessionScores, ", "))
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if err := ld.Err(); err != nil {
		return c, cli.Usage(err.Error())
	}
	if len(pos) > 0 {
		return c, cli.Usagef("bench relevance takes no arguments, got %q", pos)
	}
	if c.Dataset == "" {
		return c, cli.Usage("--dataset is required")
	}
	if c.Via != "inprocess" && c.Via != "http" {
		return c, cli.Usage("--via must be inprocess or http")
	}
	if c.TextIndex != "bleve" && c.TextIndex != "weaviate" {
		return c, cli.Usage("--text-index must be bleve or weaviate")
	}
	if c.MaxDocs < 0 || c.MaxQueries < 0 {
		return c, cli.Usage("--max-docs and --max-queries must not be negative")
	}
	if c.QueryTimeout <= 0 {
		return c, cli.Usage("--query-timeout must be positive")
	}
	if c.SweepLimit < 10 {
		return c, cli.Usage("--sweep-limit must be at least 10 (nDCG@10 needs 10 results)")
	}
	if err := c.Vectors.Validate(); err != nil {
		return c, cli.Usage(err.Error())
	}
	if strings.TrimSpace(*modes) != "" {
		for _, m := range strings.Split(*modes, ",") {
			m = strings.TrimSpace(m)
			if _, err := ranking.ParseMode(m); (err != nil && m != runner.ModeContext) || m == "" {
				return c, cli.Usagef("unknown mode %q (fulltext, semantic, hybrid, context)", m)
			}
			if !slices.Contains(c.Modes, m) {
				c.Modes = append(c.Modes, m)
			}
		}
	}
	if c.SweepMode != "" {
		if _, err := ranking.ParseMode(c.SweepMode); err != nil {
			return c, cli.Usagef("--sweep-mode: unknown mode %q", c.SweepMode)
		}
	}
	if c.Peers, err = runner.ParsePeers(*peers); err != nil {
		return c, cli.Usage(err.Error())
	}
	if *embedCache != "none" {
		abs, err := filepath.Abs(c.Dataset)
		if err != nil {
			return c, cli.Usagef("--dataset %s: %v", c.Dataset, err)
		}
		c.EmbedCache = filepath.Join(*embedCache, filepath.Base(abs)+".db")
	}
	if c.SessionScores, err = runner.ParseSessionScores(*sessionScores); err != nil {
		return c, cli.Usage("--session-score: " + err.Error())
	}
	c.Command = runner.CommandLine(append([]string{"hindsight", "bench", "relevance"}, args...))
	return c, nil
}

func parseBenchLoad(args []string, cfg *config.Config, stderr io.Writer) (runner.LoadConfig, error) {
	c := runner.LoadConfig{Command: runner.CommandLine(append([]string{"hindsight", "bench", "load"}, args...))}
	fs := cli.NewFlags("bench load", "bench load --sessions N [flags]", stderr)
	ld := config.NewLoader(fs, os.LookupEnv, config.Checks{})
	ld.Semantic(cfg)
	sessions := fs.Int("sessions", 10_000, "sessions to generate")
	fs.IntVar(&c.Messages, "messages", 20, "mean messages per session (long-tailed)")
	fs.IntVar(&c.Concurrency, "concurrency", 8, "concurrent sync clients")
	fs.IntVar(&c.Users, "users", 4, "users the sessions are spread over")
	fs.IntVar(&c.Queries, "queries", 300, "queries per mode and path")
	fs.Uint64Var(&c.Seed, "seed", 1, "generator seed (same seed, same sessions)")
	grow := fs.String("grow", "", "comma-separated sizes to measure in turn, e.g. 10000,30000,100000,300000 (overrides --sessions)")
	modes := fs.String("modes", "fulltext", "search modes to time: fulltext, semantic, hybrid (the last two need --embedder)")
	fs.StringVar(&c.Vectors.Embedder, "embedder", "none", "embedder: none, local, openai, auto, or synthetic (1,536-d clustered vectors picked by each text's hash, served on loopback: times semantic and hybrid at any size; their rankings mean nothing); embedding a large generated set with a real model takes long (the offline model embeds a few dozen windows a second)")
	fs.StringVar(&c.Vectors.Store, "store", "embedded", "vector store: embedded or weaviate (needs WEAVIATE_URL)")
	fs.BoolVar(&c.SkipRebuild, "skip-rebuild", false, "do not time a full index rebuild at each step")
	fs.BoolVar(&c.Restore, "restore", false, "after the last step, time a hot backup, a restore and a server start until /ready")
	fs.StringVar(&c.TextIndex, "text-index", "bleve", "the server's full-text index: bleve, weaviate (WEAVIATE_URL, else the pinned server), or both (Bleve, then Weaviate)")
	fs.BoolVar(&c.JSON, "json", false, "print only JSON")
	fs.StringVar(&c.Out, "out", "", "directory for report.md, growth charts and result.json")
	if _, err := cli.Parse(fs, args); err != nil {
		return c, err
	}
	if err := ld.Err(); err != nil {
		return c, cli.Usage(err.Error())
	}
	c.Sizes = []int{*sessions}
	if *grow != "" {
		c.Sizes = nil
		for _, f := range strings.Split(*grow, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 || (len(c.Sizes) > 0 && n <= c.Sizes[len(c.Sizes)-1]) {
				return c, cli.Usage("--grow takes increasing positive sizes, e.g. 10000,30000,100000")
			}
			c.Sizes = append(c.Sizes, n)
		}
	}
	if c.Users < 1 {
		return c, cli.Usage("--users must be at least 1")
	}
	if c.TextIndex != "bleve" && c.TextIndex != "weaviate" && c.TextIndex != "both" {
		return c, cli.Usage("--text-index must be bleve, weaviate or both")
	}
	if err := c.Vectors.Validate(); err != nil {
		return c, cli.Usage(err.Error())
	}
	for _, m := range strings.Split(*modes, ",") {
		m = strings.TrimSpace(m)
		if _, err := ranking.ParseMode(m); err != nil {
			return c, cli.Usage(err.Error())
		}
		c.Modes = append(c.Modes, m)
	}
	return c, nil
}

func parseBenchIngest(args []string, stderr io.Writer) (runner.IngestConfig, error) {
	var c runner.IngestConfig
	fs := cli.NewFlags("bench ingest", benchUsage, stderr)
	fs.IntVar(&c.BatchMessages, "batch-messages", 50_000, "messages sent in the batch phase")
	fs.IntVar(&c.BatchSize, "batch-size", 500, "messages per /sync/batch")
	fs.IntVar(&c.Singles, "singles", 20_000, "single-message POSTs in the single phase")
	fs.IntVar(&c.Concurrency, "concurrency", 32, "concurrent clients in the single phase")
	fs.Uint64Var(&c.Seed, "seed", 1, "generator seed (same seed, same traffic)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON object instead of the table and progress")
	fs.StringVar(&c.Dir, "dir", "", "scratch directory on the disk to measure (default: a temp dir)")
	_, err := cli.Parse(fs, args)
	return c, err
}

const nodesSynopsis = `bench nodes [flags]

Hindsight with its records in PostgreSQL (--records), every node a ` + "`hindsight serve`" + ` process of its
own on this machine. The bench launches its own PostgreSQL (Debian's initdb and pg_ctl, fsync on) and,
for the search and takeover figures, its own weaviate-server (make weaviate); the nodes embed nothing.
Three figures (--figures picks some):

  ingest    bench ingest's workload (batches of 500 messages from two clients, then single-message
            syncs from --concurrency clients) through the HTTP API of a node keeping its records in
            bbolt and of one keeping them in PostgreSQL, both with the text index in Bleve in their
            data directory, --rounds times each, alternated, the same data every time: batch
            messages/s and single syncs/s of each (medians) and PostgreSQL over bbolt.
  search    three nodes over one PostgreSQL database and one Weaviate (the text index in Weaviate,
            as several nodes need) hold a corpus of --corpus-messages generated messages; the same
            --queries full-text queries go from --search-concurrency clients (a) all to node 1 and
            (b) round robin over the three, and (c) to a node keeping the corpus in bbolt with its
            embedded index (the peer): p50 and p99 of each, and (b) over (a).
  takeover  a bulk is synced to node 3 until its indexer holds claims on outbox entries; it is
            killed (SIGKILL); the time from the kill until every entry it had claimed is indexed by
            the others, and found by a search on node 1, against the claims' lease (30 s,
            kv.DefaultLease): the others may take an entry only once its lease has run out.

report.md and result.json go to --out (see bench/README.md). The hindsight run is HINDSIGHT_BIN,
else the one beside this binary, else the one on PATH.`

func parseBenchNodes(args []string, stderr io.Writer) (runner.NodesConfig, error) {
	c := runner.NodesConfig{Invocation: runner.Invocation{Command: runner.CommandLine(append([]string{"hindsight", "bench", "nodes"}, args...))}}
	fs := cli.NewFlags("bench nodes", nodesSynopsis, stderr)
	figures := fs.String("figures", strings.Join(runner.NodesFigures, ","), "comma-separated figures to measure: "+strings.Join(runner.NodesFigures, ", "))
	fs.IntVar(&c.Rounds, "rounds", 3, "ingest: runs against each store, alternated")
	fs.IntVar(&c.Ingest.BatchMessages, "batch-messages", 20_000, "ingest: messages of the batch phase, in /sync/batch requests of 500")
	fs.IntVar(&c.Ingest.Singles, "singles", 5_000, "ingest: single-message POSTs of the single phase")
	fs.IntVar(&c.Ingest.Concurrency, "concurrency", 32, "ingest: concurrent clients of the single phase")
	fs.IntVar(&c.CorpusMessages, "corpus-messages", 50_000, "search: messages of the corpus (sessions of about 40)")
	fs.IntVar(&c.Queries, "queries", 2000, "search: queries sent through each way in each round")
	fs.IntVar(&c.SearchConcurrency, "search-concurrency", 8, "search: clients querying at once")
	fs.IntVar(&c.SearchRounds, "search-rounds", 2, "search: rounds of every way, alternated")
	fs.IntVar(&c.BulkSessions, "bulk-sessions", 5, "takeover: sessions (of about 40 messages) in each /sync/batch of the bulk")
	fs.Uint64Var(&c.Ingest.Seed, "seed", 1, "generator seed (same seed, same data and queries)")
	fs.StringVar(&c.Dir, "dir", "", "scratch directory for the nodes' data and Weaviate's (default: a temp dir; PostgreSQL's is always one)")
	fs.StringVar(&c.Out, "out", "", "directory for report.md and result.json")
	fs.BoolVar(&c.JSON, "json", false, "print only the JSON result")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, cli.Usagef("bench nodes takes no arguments, got %q", pos)
	}
	for _, f := range strings.Split(*figures, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(runner.NodesFigures, f) {
			return c, cli.Usagef("--figures: unknown figure %q (%s)", f, strings.Join(runner.NodesFigures, ", "))
		}
		if !slices.Contains(c.Figures, f) {
			c.Figures = append(c.Figures, f)
		}
	}
	if c.Rounds < 1 || c.Ingest.BatchMessages < 1 || c.Ingest.Singles < 1 || c.Ingest.Concurrency < 1 || c.CorpusMessages < 1 ||
		c.Queries < 1 || c.SearchConcurrency < 1 || c.SearchRounds < 1 || c.BulkSessions < 1 {
		return c, cli.Usage("--rounds, --batch-messages, --singles, --concurrency, --corpus-messages, --queries, --search-concurrency, --search-rounds and --bulk-sessions must be at least 1")
	}
	return c, nil
}

func parseBenchRedact(args []string, stderr io.Writer) (runner.RedactConfig, error) {
	c := runner.RedactConfig{Command: runner.CommandLine(append([]string{"hindsight", "bench", "redact"}, args...))}
	fs := cli.NewFlags("bench redact", benchUsage, stderr)
	datasets := "../shared/datasets"
	if d, ok := os.LookupEnv("HINDSIGHT_DATASETS"); ok && d != "" {
		datasets = d
	}
	fs.StringVar(&c.Datasets, "datasets", datasets, "directory holding coding-sessions, cosqa-dev and scifact-train (the clean corpora) and transcripts (held out) (env HINDSIGHT_DATASETS)")
	fs.StringVar(&c.Labels, "labels", "bench/testdata/redact/clean-labels.tsv", "findings in the clean corpora that are credentials they really hold (corpus, sha256, label, note; tab-separated)")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the generated secret corpus")
	fs.IntVar(&c.PerKind, "per-kind", 20, "generated samples per kind of secret")
	fs.IntVar(&c.IngestMessages, "ingest-messages", 50_000, "messages in each batch-ingest run")
	fs.IntVar(&c.Rounds, "rounds", 2, "batch-ingest runs with redaction off and with it on, alternated")
	fs.StringVar(&c.Out, "out", "", "directory for report.md and result.json")
	fs.BoolVar(&c.JSON, "json", false, "print only the JSON result")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, cli.Usagef("bench redact takes no arguments, got %q", pos)
	}
	if c.PerKind < 1 || c.Rounds < 1 || c.IngestMessages < 500 {
		return c, cli.Usage("--per-kind and --rounds must be at least 1, --ingest-messages at least 500")
	}
	return c, nil
}

func parseBenchImport(args []string, stderr io.Writer) (runner.ImportConfig, error) {
	c := runner.ImportConfig{Invocation: runner.Invocation{Command: runner.CommandLine(append([]string{"hindsight", "bench", "import"}, args...))}}
	fs := cli.NewFlags("bench import", "bench import [flags]", stderr)
	size := fs.String("size", "1GB", "generated history per format: a number of bytes with KB, MB or GB (binary units)")
	formats := fs.String("formats", "", "comma-separated formats to generate (default: all of "+strings.Join(historyAgents(), ", ")+")")
	fs.StringVar(&c.Transcripts, "transcripts", "", "the real transcripts (a directory with manifest.tsv; default $HINDSIGHT_DATASETS/transcripts or ../shared/datasets/transcripts when there); none to skip")
	fs.Uint64Var(&c.Seed, "seed", 1, "generator seed (same seed, same history)")
	fs.StringVar(&c.Dir, "dir", "", "scratch directory for the histories and the server's data (default: a temp dir; needs about twice --size per format)")
	fs.StringVar(&c.Out, "out", "", "directory for report.md and result.json")
	fs.BoolVar(&c.JSON, "json", false, "print only JSON")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, cli.Usagef("bench import takes no arguments, got %q", pos)
	}
	if c.Size, err = parseBytes(*size); err != nil || c.Size <= 0 {
		return c, cli.Usagef("--size %q: want a positive number of bytes, e.g. 200MB or 1GB", *size)
	}
	for _, f := range strings.Split(*formats, ",") {
		if f = strings.TrimSpace(f); f != "" {
			if !slices.Contains(historyAgents(), f) {
				return c, cli.Usagef("--formats: no generator for %q (%s)", f, strings.Join(historyAgents(), ", "))
			}
			c.Formats = append(c.Formats, f)
		}
	}
	switch c.Transcripts {
	case "none":
		c.Transcripts = ""
	case "":
		d := filepath.Join("..", "shared", "datasets", "transcripts")
		if ds := os.Getenv("HINDSIGHT_DATASETS"); ds != "" {
			d = filepath.Join(ds, "transcripts")
		}
		if _, err := os.Stat(filepath.Join(d, "manifest.tsv")); err == nil {
			c.Transcripts = d
		}
	default:
		if _, err := os.Stat(filepath.Join(c.Transcripts, "manifest.tsv")); err != nil {
			return c, cli.Usagef("--transcripts %s: no manifest.tsv there", c.Transcripts)
		}
	}
	return c, nil
}

func parseBenchEmbed(args []string, cfg config.Config, stderr io.Writer) (runner.EmbedConfig, error) {
	c := runner.EmbedConfig{Command: runner.CommandLine(append([]string{"hindsight", "bench", "embed"}, args...))}
	fs := cli.NewFlags("bench embed", benchUsage, stderr)
	modelDir := cfg.Semantic.ModelDir
	if d, ok := os.LookupEnv("HINDSIGHT_MODEL_DIR"); ok && d != "" {
		modelDir = d
	}
	fs.StringVar(&c.ModelDir, "model-dir", modelDir, "the offline model's directory (env HINDSIGHT_MODEL_DIR; `make model` fetches it)")
	fs.IntVar(&c.Windows, "windows", 256, "windows (of the model's 128 tokens) embedded per round")
	fs.IntVar(&c.Rounds, "rounds", 5, "rounds of every setting, alternated; the report gives medians")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the generated text and matrices")
	fs.StringVar(&c.Out, "out", "", "directory for report.md and result.json")
	fs.BoolVar(&c.JSON, "json", false, "print only the JSON result")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, cli.Usagef("bench embed takes no arguments, got %q", pos)
	}
	if c.Windows < 1 || c.Rounds < 1 {
		return c, cli.Usage("--windows and --rounds must be at least 1")
	}
	return c, nil
}

func parseBenchVectors(args []string, stderr io.Writer) (runner.VectorIndexConfig, error) {
	c := runner.VectorIndexConfig{Command: runner.CommandLine(append([]string{"hindsight", "bench", "vectors"}, args...))}
	fs := cli.NewFlags("bench vectors", benchUsage, stderr)
	fs.IntVar(&c.Vectors, "vectors", 1000000, "vectors of the one user searched, generated with the clustered structure of real embeddings (internal/embedgen)")
	fs.IntVar(&c.Dims, "dims", 1536, "dimensions of every vector")
	fs.IntVar(&c.Queries, "queries", 1000, "queries timed, each answered by the store's index and by the exact scan (the ground truth)")
	fs.IntVar(&c.K, "k", 10, "hits per query")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the generated set and queries")
	fs.StringVar(&c.Dir, "dir", "", "directory keeping the store file (1M × 1536 makes an 8 GB file), reused by a later run of the same set (default: a temp dir, removed)")
	fs.BoolVar(&c.ReuseTruth, "reuse-truth", false, "take the exact scan's hits from the file an earlier run of the same --dir, --queries and --k left there, and skip the exact scan (no exact timings then)")
	fs.StringVar(&c.Reference, "reference", "", "an embedding cache file (e.g. .cache/embeddings/coding-sessions.db) whose cosine spread the generator's is compared with")
	fs.StringVar(&c.Out, "out", "", "directory for report.md and result.json")
	fs.BoolVar(&c.JSON, "json", false, "print only the JSON result")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, cli.Usagef("bench vectors takes no arguments, got %q", pos)
	}
	if c.Vectors < 20 || c.Dims < 1 || c.Queries < 1 || c.K < 1 {
		return c, cli.Usage("--vectors must be at least 20, --dims, --queries and --k at least 1")
	}
	return c, nil
}

func parseBenchWatch(args []string, stderr io.Writer) (runner.WatchConfig, error) {
	c := runner.WatchConfig{Invocation: runner.Invocation{Command: runner.CommandLine(append([]string{"hindsight", "bench", "watch"}, args...))}}
	fs := cli.NewFlags("bench watch", "bench watch [flags]", stderr)
	fs.IntVar(&c.Messages, "messages", 600, "messages appended (at least 1)")
	fs.IntVar(&c.PerAgent, "sessions-per-agent", 3, "sessions of each agent (Claude Code, Codex) appended to")
	interval := fs.String("interval", "100ms-500ms", "appends are this far apart, uniformly: MIN-MAX")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the writers' pace and choice of session")
	fs.StringVar(&c.Dir, "dir", "", "scratch directory for the home and the server's data (default: a temp dir)")
	fs.StringVar(&c.Out, "out", "", "directory for report.md and result.json")
	fs.BoolVar(&c.JSON, "json", false, "print only JSON")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, cli.Usagef("bench watch takes no arguments, got %q", pos)
	}
	lo, hi, ok := strings.Cut(*interval, "-")
	if ok {
		c.MinInterval, err = time.ParseDuration(lo)
		if err == nil {
			c.MaxInterval, err = time.ParseDuration(hi)
		}
	}
	if !ok || err != nil || c.MinInterval <= 0 || c.MaxInterval < c.MinInterval {
		return c, cli.Usagef("--interval %q: want MIN-MAX durations, e.g. 100ms-500ms", *interval)
	}
	if c.Messages < 1 || c.PerAgent < 1 {
		return c, cli.Usage("--messages and --sessions-per-agent must be at least 1")
	}
	return c, nil
}

func historyAgents() []string {
	var out []string
	for _, f := range bench.HistoryFormats() {
		out = append(out, f.Agent)
	}
	return out
}

// parseBytes reads 512, 64KB, 200MB or 1GB (binary units).
func parseBytes(s string) (int64, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	return int64(f * float64(mult)), nil
}

func parseBenchLongSession(args []string, stderr io.Writer) (runner.LongSessionConfig, error) {
	c := runner.LongSessionConfig{Invocation: runner.Invocation{Command: runner.CommandLine(append([]string{"hindsight", "bench", "longsession"}, args...))}}
	fs := cli.NewFlags("bench longsession", "bench longsession [flags]", stderr)
	size := fs.String("size", "50MB", "message text the long session is grown to before the appends (KB, MB, GB: binary units)")
	fs.DurationVar(&c.Appends, "appends", 2*time.Minute, "how long one message a second is appended (and another user's live messages probed)")
	fs.DurationVar(&c.Settle, "settle", 30*time.Second, "how long the server is left alone between growing the session and the appends")
	message := fs.String("message", "2KB-20KB", "an appended message holds MIN-MAX bytes of text, uniformly")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the generated text")
	fs.StringVar(&c.Dir, "dir", "", "scratch directory for the server's data (default: a temp dir)")
	fs.StringVar(&c.Out, "out", "", "directory for report.txt and result.json")
	fs.BoolVar(&c.JSON, "json", false, "print only JSON")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, cli.Usagef("bench longsession takes no arguments, got %q", pos)
	}
	s, err := parseBytes(*size)
	if err != nil || s < 1 {
		return c, cli.Usagef("--size %q: want a size such as 50MB", *size)
	}
	c.Size = s
	lo, hi, ok := strings.Cut(*message, "-")
	var a, b int64
	if ok {
		if a, err = parseBytes(lo); err == nil {
			b, err = parseBytes(hi)
		}
	}
	if !ok || err != nil || a < 1 || b < a || b > 512<<10 {
		return c, cli.Usagef("--message %q: want MIN-MAX sizes up to 512KB, e.g. 2KB-20KB", *message)
	}
	c.MinBytes, c.MaxBytes = int(a), int(b)
	if c.Appends < time.Second {
		return c, cli.Usage("--appends must be at least 1s")
	}
	return c, nil
}
