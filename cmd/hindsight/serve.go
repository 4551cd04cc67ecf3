package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/dashboard"
	"github.com/hindsight-dev/hindsight/httpd"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/metrics"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/vectors"
)

// serveConfig is everything `serve` reads from flags and the environment.
type serveConfig struct {
	Semantic  semanticConfig
	Addr      string
	Data      string
	Limits    ingest.Limits
	Rate      float64
	Burst     int
	LogFormat string
	LogLevel  string
	// bcryptCost is the dashboard's password work factor; 0 = bcrypt's
	// default. Tests lower it.
	bcryptCost int
}

func envInt(name string, def int64) int64 {
	v, err := strconv.ParseInt(env(name, ""), 10, 64)
	if err != nil {
		return def
	}
	return v
}

func envFloat(name string, def float64) float64 {
	v, err := strconv.ParseFloat(env(name, ""), 64)
	if err != nil {
		return def
	}
	return v
}

func parseServe(args []string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	d := ingest.DefaultLimits()
	fs := newFlags("serve", "serve [flags]", stderr)
	fs.StringVar(&c.Addr, "addr", env("HINDSIGHT_ADDR", "127.0.0.1:7420"), "listen address (env HINDSIGHT_ADDR)")
	fs.StringVar(&c.Data, "data", env("HINDSIGHT_DATA", "./hindsight-data"), "data directory (env HINDSIGHT_DATA)")
	fs.Int64Var(&c.Limits.MaxBody, "max-body-bytes", envInt("HINDSIGHT_MAX_BODY_BYTES", d.MaxBody), "largest request body; larger ones get 413 (env HINDSIGHT_MAX_BODY_BYTES)")
	maxEntries := fs.Int64("max-batch-entries", envInt("HINDSIGHT_MAX_BATCH_ENTRIES", int64(d.MaxBatchEntries)), "most sessions+messages in one /sync/batch (env HINDSIGHT_MAX_BATCH_ENTRIES)")
	maxPart := fs.Int64("max-part-bytes", envInt("HINDSIGHT_MAX_PART_BYTES", int64(d.MaxPartBytes)), "largest message part or textContent (env HINDSIGHT_MAX_PART_BYTES)")
	maxField := fs.Int64("max-field-bytes", envInt("HINDSIGHT_MAX_FIELD_BYTES", int64(d.MaxFieldBytes)), "largest title, path or other string field (env HINDSIGHT_MAX_FIELD_BYTES)")
	fs.Float64Var(&c.Rate, "rate-limit", envFloat("HINDSIGHT_RATE_LIMIT", 200), "requests per second per API key, sustained; 0 disables (env HINDSIGHT_RATE_LIMIT)")
	burst := fs.Int64("rate-burst", envInt("HINDSIGHT_RATE_BURST", 1000), "requests per API key allowed in a burst (env HINDSIGHT_RATE_BURST)")
	fs.StringVar(&c.LogFormat, "log-format", env("HINDSIGHT_LOG_FORMAT", "console"), "log format: console or json (env HINDSIGHT_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", env("HINDSIGHT_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env HINDSIGHT_LOG_LEVEL)")
	c.Semantic = semanticFromEnv()
	fs.StringVar(&c.Semantic.Embedder, "embedder", c.Semantic.Embedder, "openai, local or none; default: openai when OPENAI_API_KEY is set, else local when the model is present (env HINDSIGHT_EMBEDDER)")
	pos, err := parse(fs, args)
	if err != nil {
		return c, err
	}
	if len(pos) > 0 {
		return c, &usageError{fmt.Sprintf("serve takes no arguments, got %q", pos)}
	}
	c.Limits.MaxBatchEntries, c.Limits.MaxPartBytes, c.Limits.MaxFieldBytes = int(*maxEntries), int(*maxPart), int(*maxField)
	c.Burst = int(*burst)
	if c.Limits.MaxBody < 1024 || c.Limits.MaxBatchEntries < 1 || c.Limits.MaxPartBytes < 1 || c.Limits.MaxFieldBytes < 1 {
		return c, &usageError{"limits must be positive (and the body limit at least 1024 bytes)"}
	}
	if c.Rate < 0 {
		return c, &usageError{"--rate-limit must be 0 (off) or positive"}
	}
	return c, nil
}

func newLogger(format, level string, w io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), &usageError{fmt.Sprintf("unknown log level %q", level)}
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)}
	default:
		return zerolog.Nop(), &usageError{fmt.Sprintf("unknown log format %q (console or json)", format)}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// app is a wired Hindsight: the parts serve runs, built so tests can drive them.
type app struct {
	store    *kv.Store
	index    *index.Index
	accounts *accounts.Accounts
	ingest   *ingest.Service
	pipeline *ingest.Pipeline
	search   *ranking.Engine
	semantic *semantic
	api      *httpd.Server
	dash     *dashboard.Server
	handler  http.Handler
	log      zerolog.Logger
	metrics  *metrics.Metrics
	// needsRebuild: the index is new or incomplete and start must rebuild it.
	needsRebuild bool
	rebuilding   atomic.Bool
	// rebuildFailed: the index is incomplete until the next start or reindex.
	rebuildFailed atomic.Bool
}

func openStore(dir string) (*kv.Store, error) {
	st, err := kv.Open(dir, kv.Options{LockTimeout: time.Second})
	if errors.Is(err, kv.ErrLocked) {
		return nil, fmt.Errorf("data directory %s is in use by another hindsight process (is `hindsight serve` running on it?): %w", dir, err)
	}
	return st, err
}

func buildApp(ctx context.Context, cfg serveConfig, log zerolog.Logger) (*app, error) {
	st, err := openStore(cfg.Data)
	if err != nil {
		return nil, err
	}
	idx, rebuild, err := openIndex(ctx, cfg.Data, st, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	sem, err := openSemantic(ctx, cfg.Semantic, cfg.Data)
	if err != nil {
		idx.Close()
		st.Close()
		return nil, err
	}
	a := &app{store: st, index: idx, log: log, needsRebuild: rebuild, semantic: sem}
	a.rebuilding.Store(rebuild)
	a.accounts = accounts.New(st, nil)
	a.ingest = ingest.NewService(st, nil)
	a.metrics = metrics.New(a.metricSources())
	var stages []ingest.Stage
	var vs ranking.VectorSearcher
	var emb ranking.Embedder
	if sem.stage != nil {
		stages = append(stages, sem.stage)
		vs, emb = vectorSearcher{sem.store}, sem.embedder
	}
	a.pipeline = ingest.NewPipeline(st, idx, ingest.PipelineOptions{Logger: log, OnLag: a.metrics.ObserveLag}, stages...)
	a.ingest.OnWrite(a.pipeline.Notify)
	a.search = ranking.New(idx, vs, emb, sem.options)
	a.api = httpd.New(httpd.Config{
		Auth: a.accounts, Ingest: a.ingest, Records: st, Search: a.search, Limits: cfg.Limits,
		RatePerSecond: cfg.Rate, RateBurst: cfg.Burst, Logger: log,
		Observe: a.metrics.ObserveRequest, Ready: a.readiness,
	})
	a.dash, err = dashboard.New(dashboard.Config{Store: st, Accounts: a.accounts, Search: a.search, Deleter: a.ingest, Logger: log,
		Web: accounts.NewWeb(st, accounts.WebOptions{BcryptCost: cfg.bcryptCost})})
	if err != nil {
		a.Close(ctx)
		return nil, err
	}
	r := mux.NewRouter()
	a.api.Install(r)
	a.dash.Install(r)
	r.Handle("/metrics", a.metrics.Handler()).Methods(http.MethodGet)
	a.handler = a.api.Handler(r)
	return a, nil
}

func (a *app) metricSources() metrics.Sources {
	usage := func(f func(vectors.UsageSnapshot) float64) func() float64 {
		if a.semantic.stage == nil {
			return nil
		}
		return func() float64 { return f(a.semantic.usage.Snapshot()) }
	}
	var skipped func() float64
	if a.semantic.stage != nil {
		skipped = func() float64 { _, s := a.semantic.stage.Counts(); return float64(s) }
	}
	return metrics.Sources{
		EmbedRequests: usage(func(u vectors.UsageSnapshot) float64 { return float64(u.Requests) }),
		EmbedTokens:   usage(func(u vectors.UsageSnapshot) float64 { return float64(u.Tokens + u.EstimatedTokens) }),
		EmbedCostUSD:  usage(func(u vectors.UsageSnapshot) float64 { return u.CostUSD }),
		EmbedErrors:   usage(func(u vectors.UsageSnapshot) float64 { return float64(u.Errors) }),
		EmbedSkipped:  skipped,
		OutboxDepth: func() float64 {
			var n int
			a.store.View(context.Background(), func(tx *kv.Tx) error {
				n = tx.OutboxLen()
				return nil
			})
			return float64(n)
		},
		RecordsBytes: func() float64 {
			fi, err := os.Stat(a.store.Path())
			if err != nil {
				return 0
			}
			return float64(fi.Size())
		},
		IndexedTotal: func() float64 { return float64(a.pipeline.Status().Indexed) },
	}
}

// readiness lists why the service cannot fully answer yet (none = ready).
func (a *app) readiness(ctx context.Context) []string {
	var reasons []string
	if a.rebuilding.Load() {
		reasons = append(reasons, "full-text index is being rebuilt from the records")
	}
	if a.rebuildFailed.Load() {
		reasons = append(reasons, "full-text index rebuild failed: restart or run hindsight reindex")
	}
	if err := a.pipeline.Status().LastErr; err != nil {
		reasons = append(reasons, "indexing is failing: "+err.Error())
	}
	return reasons
}

// start runs the background work: the index rebuild when needed, then the
// outbox drain. The API answers meanwhile. It returns when ctx ends.
func (a *app) start(ctx context.Context) {
	if a.needsRebuild {
		a.log.Info().Msg("building the full-text index from the records")
		if err := rebuildIndex(ctx, a.store, a.pipeline, logProgress(a.log, "indexing sessions")); err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.Error().Err(err).Msg("index rebuild failed; it is retried at the next start (or run hindsight reindex)")
			a.rebuildFailed.Store(true)
		}
		a.rebuilding.Store(false)
	}
	a.pipeline.Run(ctx)
}

func (a *app) Close(ctx context.Context) error {
	return errors.Join(a.accounts.Flush(ctx), a.index.Close(), a.semantic.Close(), a.store.Close())
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.LogFormat, cfg.LogLevel, stderr)
	if err != nil {
		return err
	}
	a, err := buildApp(ctx, cfg, log)
	if err != nil {
		return err
	}
	bgCtx, stopBg := context.WithCancel(context.Background())
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		a.start(bgCtx)
	}()
	stopBackground := func() {
		stopBg()
		<-bgDone
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		stopBackground()
		a.Close(context.Background())
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute, // a 16 MiB batch over a slow link
		IdleTimeout:       2 * time.Minute,
	}
	admin, adminPath := a.serveAdmin(cfg.Data)

	url := "http://" + ln.Addr().String()
	abs, _ := filepath.Abs(cfg.Data)
	log.Info().Str("url", url).Str("data", abs).Str("go", runtime.Version()).
		Str("os", runtime.GOOS+"/"+runtime.GOARCH).Int("cpus", runtime.NumCPU()).
		Float64("rate_limit", cfg.Rate).Int64("max_body_bytes", cfg.Limits.MaxBody).
		Str("embedder", a.semantic.describe).Str("version", version).Msg("hindsight serving")
	fmt.Fprintf(stdout, "Hindsight %s listening on %s (data: %s)\nsemantic search: %s\n", version, url, abs, a.semantic.describe)
	if link, err := a.dash.SetupLink(ctx); err != nil {
		log.Warn().Err(err).Msg("could not issue the first-run setup link")
	} else if link != "" {
		fmt.Fprintf(stdout, "No account yet. Create the first one (this link works once): %s%s\n", url, link)
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	flush := time.NewTicker(30 * time.Second)
	defer flush.Stop()
	for {
		select {
		case err := <-errc:
			stopBackground()
			a.Close(context.Background())
			return fmt.Errorf("serve: %w", err)
		case <-flush.C:
			if err := a.accounts.Flush(ctx); err != nil {
				log.Warn().Err(err).Msg("write key last-used times")
			}
			continue
		case <-ctx.Done():
		}
		break
	}
	log.Info().Msg("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn().Err(err).Msg("in-flight requests did not finish in time")
	}
	if admin != nil {
		admin.Shutdown(sctx)
		os.Remove(adminPath)
	}
	// Writes are done: let the indexer finish its step, then stop it. What is
	// still on the outbox is indexed at the next start.
	stopBackground()
	if err := a.Close(sctx); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	log.Info().Msg("stopped cleanly")
	return nil
}

// isTerminal reports whether w is a character device (colour only then).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
