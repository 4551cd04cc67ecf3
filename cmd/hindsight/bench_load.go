// Command hindsight bench load grows a generated data set through the REST
// API and measures what each size costs.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

// benchLoad grows a generated data set through the REST API and reports, at
// each size, ingest throughput, index lag, query latency per mode (in-process
// and over HTTP), rebuild speed, and memory and disk per session; with
// --grow, how each cost grows with the size, and with --out a report with
// growth charts.
func benchLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := newFlags("bench load", "bench load --sessions N [flags]", stderr)
	sessions := fset.Int("sessions", 10_000, "sessions to generate")
	messages := fset.Int("messages", 20, "mean messages per session (long-tailed)")
	concurrency := fset.Int("concurrency", 8, "concurrent sync clients")
	users := fset.Int("users", 4, "users the sessions are spread over")
	queries := fset.Int("queries", 300, "queries per mode and path")
	seed := fset.Uint64("seed", 1, "generator seed (same seed, same sessions)")
	grow := fset.String("grow", "", "comma-separated sizes to measure in turn, e.g. 10000,30000,100000,300000 (overrides --sessions)")
	modes := fset.String("modes", "fulltext", "search modes to time: fulltext, semantic, hybrid (the last two need --embedder)")
	var vec benchVectorConfig
	fset.StringVar(&vec.Embedder, "embedder", "none", "embedder: none, local, openai or auto; embedding a large generated set takes long (the offline model embeds a few dozen windows a second)")
	fset.StringVar(&vec.Store, "store", "embedded", "vector store: embedded or weaviate (needs WEAVIATE_URL)")
	noRebuild := fset.Bool("skip-rebuild", false, "do not time a full index rebuild at each step")
	asJSON := fset.Bool("json", false, "print only JSON")
	out := fset.String("out", "", "directory for report.md, growth charts and result.json")
	if _, err := parse(fset, args); err != nil {
		return err
	}
	sizes := []int{*sessions}
	if *grow != "" {
		sizes = nil
		for _, f := range strings.Split(*grow, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
				return &usageError{"--grow takes increasing positive sizes, e.g. 10000,30000,100000"}
			}
			sizes = append(sizes, n)
		}
	}
	if *users < 1 {
		return &usageError{"--users must be at least 1"}
	}
	if err := vec.validate(); err != nil {
		return err
	}
	progressOut := stderr
	if *asJSON {
		progressOut = io.Discard
	}
	work, err := os.MkdirTemp("", "hindsight-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dataDir := filepath.Join(work, "data")
	first, a, stop, err := benchServer(ctx, dataDir, zerolog.Nop(), func(cfg *serveConfig) error { return applyVectors(cfg, vec) })
	if err != nil {
		return err
	}
	defer stop()
	clients := []*bench.Client{first}
	userIDs := []string{}
	for i := 1; i < *users; i++ {
		name := fmt.Sprintf("bench%d", i)
		if _, err := a.accounts.CreateUser(ctx, name); err != nil {
			return err
		}
		key, _, err := a.accounts.CreateKey(ctx, name, "bench")
		if err != nil {
			return err
		}
		c := *first
		c.Key = key
		clients = append(clients, &c)
	}
	for _, c := range clients {
		uid, err := a.accounts.Authenticate(ctx, c.Key)
		if err != nil {
			return err
		}
		userIDs = append(userIDs, uid)
	}
	var modeList []string
	for _, m := range strings.Split(*modes, ",") {
		if _, err := ranking.ParseMode(strings.TrimSpace(m)); err != nil {
			return &usageError{err.Error()}
		}
		m = strings.TrimSpace(m)
		if m != string(ranking.FullText) && !a.search.Semantic() {
			return fmt.Errorf("mode %s needs an embedder: --embedder local or openai", m)
		}
		modeList = append(modeList, m)
	}
	target := bench.LoadTarget{
		Clients:  clients,
		Modes:    modeList,
		WaitIdle: a.pipeline.WaitIdle,
		Pending:  outboxDepth(a.store),
		Lags:     a.pipeline.Lags,
		Search: func(ctx context.Context, user int, mode, q string, k int) (int, error) {
			res, err := a.search.Search(ctx, ranking.Query{UserID: userIDs[user], Text: q, Mode: ranking.Mode(mode), Limit: k})
			return len(res.Results), err
		},
		Rebuild: func(ctx context.Context) (int, error) {
			return timedRebuild(ctx, a.store, filepath.Join(work, "rebuild-index"), progressOut)
		},
		DiskBytes: func() (int64, int64) {
			fi, _ := os.Stat(a.store.Path())
			var rec int64
			if fi != nil {
				rec = fi.Size()
			}
			return rec, dirSize(filepath.Join(dataDir, "index"))
		},
	}
	loader := bench.NewLoader(target, *seed)
	res := &bench.LoadResult{Modes: modeList, Settings: runSettings(map[string]string{
		"command":     commandLine(append([]string{"hindsight", "bench", "load"}, args...)),
		"messages":    fmt.Sprintf("%d mean per session (long-tailed)", *messages),
		"concurrency": strconv.Itoa(*concurrency),
		"users":       strconv.Itoa(*users),
		"seed":        strconv.FormatUint(*seed, 10),
		"queries":     fmt.Sprintf("%d per mode and path, limit 20", *queries),
		"embedder":    vec.Embedder,
	})}
	for _, n := range sizes {
		st, err := loader.Step(ctx, bench.StepOptions{Sessions: n, Messages: *messages, Concurrency: *concurrency,
			Queries: *queries, Progress: progressOut, SkipRebuild: *noRebuild})
		if err != nil {
			return err
		}
		res.Steps = append(res.Steps, st)
		if l := loadAverage(); l != "" {
			// Timings are wall time: say how busy the machine was.
			key := "load average after each step (1 minute)"
			res.Settings[key] = strings.TrimPrefix(res.Settings[key]+", "+l, ", ")
		}
		if !*asJSON {
			bench.PrintLoad(stdout, res.Steps[len(res.Steps)-1:], modeList)
		}
		if *out != "" {
			// Write after every step, so a long --grow run that is stopped
			// keeps what it measured.
			res.Finish()
			if err := bench.WriteLoadFiles(*out, res); err != nil {
				return err
			}
		}
	}
	res.Finish()
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	bench.PrintGrowth(stdout, res)
	if *out != "" {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(*out, bench.ReportFile))
	}
	return nil
}

// timedRebuild indexes every session into a fresh index in dir (as
// `hindsight reindex` does), removes it afterwards, and returns how many
// sessions it indexed.
func timedRebuild(ctx context.Context, st *kv.Store, dir string, progressOut io.Writer) (int, error) {
	defer os.RemoveAll(dir)
	idx, n, err := rebuildWith(ctx, st, dir, index.Options{}, "rebuild index", progressOut)
	if err != nil {
		return 0, err
	}
	return n, idx.Close()
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
