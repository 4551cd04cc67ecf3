package runner

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
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/index/weaviatetext"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/progress"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/server"
)

// LoadConfig is what bench load measures.
type LoadConfig struct {
	Sizes       []int // data set sizes measured in turn, increasing
	Messages    int   // mean messages per session (long-tailed)
	Concurrency int   // concurrent sync clients
	Users       int   // users the sessions are spread over (at least 1)
	Queries     int   // queries per mode and path
	Seed        uint64
	Modes       []string // search modes to time
	Vectors     Vectors
	SkipRebuild bool // do not time a full index rebuild at each step
	Restore     bool // after the last step, time backup, restore and start to ready
	// TextIndex is the server's full-text index: bleve (or ""), weaviate,
	// or both (the whole run with Bleve, then again with Weaviate; Out gets
	// a directory per mode).
	TextIndex string
	JSON      bool   // print only JSON
	Out       string // directory for report.md, growth charts and result.json; "" = none
	Command   string // the command line, for the report
}

// Load grows a generated data set through the REST API and reports, at
// each size, ingest throughput, index lag, query latency per mode (in-process
// and over HTTP), rebuild speed, and memory and disk per session; with
// several sizes, how each cost grows with the size, and with Out a report
// with growth charts. base gives the semantic settings (the environment).
func Load(ctx context.Context, base config.Config, c LoadConfig, stdout, stderr io.Writer) error {
	if c.TextIndex != "both" {
		return loadOne(ctx, base, c, stdout, stderr)
	}
	out := c.Out
	for _, ti := range []string{"bleve", "weaviate"} {
		c.TextIndex = ti
		if out != "" {
			c.Out = filepath.Join(out, ti)
		}
		if !c.JSON {
			fmt.Fprintf(stdout, "== text index: %s ==\n", ti)
		}
		if err := loadOne(ctx, base, c, stdout, stderr); err != nil {
			return fmt.Errorf("text index %s: %w", ti, err)
		}
	}
	return nil
}

func loadOne(ctx context.Context, base config.Config, c LoadConfig, stdout, stderr io.Writer) error {
	progressOut := stderr
	if c.JSON {
		progressOut = io.Discard
	}
	work, err := os.MkdirTemp("", "hindsight-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if c.Vectors.Embedder == "synthetic" {
		url, stop, err := startSynthetic(c.Seed)
		if err != nil {
			return fmt.Errorf("synthetic embedder: %w", err)
		}
		defer stop()
		c.Vectors.SyntheticURL = url
	}
	dataDir := filepath.Join(work, "data")
	stopText, err := prepareTextIndex(ctx, &base, nil, c.TextIndex, work, progressOut)
	if err != nil {
		return err
	}
	defer stopText()
	first, a, stop, err := startServer(ctx, dataDir, zerolog.Nop(), base, c.Vectors)
	if err != nil {
		return err
	}
	defer stop()
	clients := []*bench.Client{first}
	userIDs := []string{}
	for i := 1; i < c.Users; i++ {
		name := fmt.Sprintf("bench%d", i)
		if _, err := a.Accounts.CreateUser(ctx, name); err != nil {
			return err
		}
		key, _, err := a.Accounts.CreateKey(ctx, name, "bench")
		if err != nil {
			return err
		}
		c := *first
		c.Key = key
		clients = append(clients, &c)
	}
	for _, c := range clients {
		uid, err := a.Accounts.Authenticate(ctx, c.Key)
		if err != nil {
			return err
		}
		userIDs = append(userIDs, uid)
	}
	modeList := c.Modes
	for _, m := range modeList {
		if m != string(ranking.FullText) && !a.Search.Semantic() {
			return fmt.Errorf("mode %s needs an embedder: --embedder local or openai", m)
		}
	}
	target := bench.LoadTarget{
		Clients:  clients,
		Modes:    modeList,
		WaitIdle: a.Pipeline.WaitIdle,
		Pending:  server.OutboxDepth(a.Store),
		Lags:     a.Pipeline.Lags,
		Search: func(ctx context.Context, user int, mode, q string, k int) (int, bool, error) {
			res, err := a.Search.Search(ctx, ranking.Query{UserID: userIDs[user], Text: q, Mode: ranking.Mode(mode), Limit: k})
			return len(res.Results), res.Partial, err
		},
		Rebuild: func(ctx context.Context) (int, error) {
			if base.TextIndex == "weaviate" {
				return timedWeaviateRebuild(ctx, a.Store, base, progressOut)
			}
			return timedRebuild(ctx, a.Store, filepath.Join(work, "rebuild-index"), progressOut)
		},
		RawBleve: func(ctx context.Context) (bench.RawRun, error) {
			if base.TextIndex == "weaviate" {
				return bench.RawRun{}, nil
			}
			return timedRawBleve(ctx, a.Store, filepath.Join(work, "raw-bleve"), progressOut)
		},
		Disk: func() bench.DiskUse {
			var d bench.DiskUse
			if fi, err := os.Stat(a.Store.Path()); err == nil {
				d.Records = fi.Size()
			}
			// In Weaviate mode the node's index directory is empty; the
			// index's size is the launched server's data (0 with a server of
			// WEAVIATE_URL, which this run cannot see).
			d.Index = dirSize(filepath.Join(dataDir, "index")) + dirSize(filepath.Join(work, "weaviate-text"))
			// The rest of the data directory is the embedded vector store.
			d.Vectors = max(dirSize(dataDir)-d.Records-dirSize(filepath.Join(dataDir, "index")), 0)
			return d
		},
		TextBytes: func(ctx context.Context) (int64, error) { return searchableText(ctx, a.Store, userIDs) },
	}
	loader := bench.NewLoader(target, c.Seed)
	res := &bench.LoadResult{Modes: modeList, Settings: runSettings(map[string]string{
		"command":     c.Command,
		"messages":    fmt.Sprintf("%d mean per session (long-tailed)", c.Messages),
		"concurrency": strconv.Itoa(c.Concurrency),
		"users":       strconv.Itoa(c.Users),
		"seed":        strconv.FormatUint(c.Seed, 10),
		"queries":     fmt.Sprintf("%d per mode and path, limit 20", c.Queries),
		"embedder":    c.Vectors.Embedder,
		"text index":  base.TextIndex,
		"store":       c.Vectors.Store,
	})}
	for _, n := range c.Sizes {
		st, err := loader.Step(ctx, bench.StepOptions{Sessions: n, Messages: c.Messages, Concurrency: c.Concurrency,
			Queries: c.Queries, Progress: progressOut, SkipRebuild: c.SkipRebuild})
		if err != nil {
			return err
		}
		res.Steps = append(res.Steps, st)
		if l := loadAverage(); l != "" {
			// Timings are wall time: say how busy the machine was.
			key := "load average after each step (1 minute)"
			res.Settings[key] = strings.TrimPrefix(res.Settings[key]+", "+l, ", ")
		}
		if !c.JSON {
			bench.PrintLoad(stdout, res.Steps[len(res.Steps)-1:], modeList)
			bench.PrintLoadBytes(stdout, res.Steps[len(res.Steps)-1:])
			bench.PrintLoadPhrases(stdout, res.Steps[len(res.Steps)-1:])
		}
		if c.Out != "" {
			// Write after every step, so a long --grow run that is stopped
			// keeps what it measured.
			res.Finish()
			if err := bench.WriteLoadFiles(c.Out, res); err != nil {
				return err
			}
		}
	}
	if c.Restore {
		if res.Restore, err = timedRestore(ctx, a.Store, base, c.Vectors, work, progressOut); err != nil {
			return fmt.Errorf("restore drill: %w", err)
		}
		if c.Out != "" {
			res.Finish()
			if err := bench.WriteLoadFiles(c.Out, res); err != nil {
				return err
			}
		}
	}
	res.Finish()
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	bench.PrintGrowth(stdout, res)
	if c.Out != "" {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(c.Out, bench.ReportFile))
	}
	return nil
}

// timedRebuild indexes every session into a fresh index in dir (as
// `hindsight reindex` does), removes it afterwards, and returns how many
// sessions it indexed.
func timedRebuild(ctx context.Context, st *kv.Store, dir string, progressOut io.Writer) (int, error) {
	defer os.RemoveAll(dir)
	idx, n, err := rebuildWith(ctx, st, dir, index.Options{Text: ingest.Texts{Store: st}}, "rebuild index", progressOut)
	if err != nil {
		return 0, err
	}
	return n, idx.Close()
}

// timedRawBleve reads every session's documents as a rebuild does, then
// times only their indexing with Bleve's plain batch API (plainIndex), in
// batches of the rebuild's size, into a fresh index in dir that it removes
// afterwards.
func timedRawBleve(ctx context.Context, st *kv.Store, dir string, progressOut io.Writer) (bench.RawRun, error) {
	defer os.RemoveAll(dir)
	var batches [][]index.Session
	n := 0
	err := eachSession(ctx, st, func(tx *kv.Tx, userID string, s kv.Session) error {
		d, err := ingest.LoadDoc(tx, userID, s.ID)
		if err != nil {
			return err
		}
		if len(batches) == 0 || len(batches[len(batches)-1]) == ingest.RebuildBatch {
			batches = append(batches, make([]index.Session, 0, ingest.RebuildBatch))
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], ingest.IndexSession(d))
		n++
		return nil
	})
	if err != nil {
		return bench.RawRun{}, err
	}
	p, err := openPlain(dir, index.Options{Text: ingest.Texts{Store: st}})
	if err != nil {
		return bench.RawRun{}, err
	}
	bar := progress.New(progressOut, "raw bleve", n)
	start, cpu, done := time.Now(), bench.ProcessCPU(), 0
	for i, b := range batches {
		if err := p.put(ctx, b); err != nil {
			p.close()
			return bench.RawRun{}, err
		}
		batches[i] = nil // the documents are written: let them go
		done += len(b)
		bar.Set(done)
	}
	r := bench.RawRun{Sessions: n, Took: time.Since(start), CPU: bench.ProcessCPU() - cpu}
	bar.Done()
	return r, p.close()
}

// searchableText is the size of the text the index scores for the users'
// sessions: each session's title and message text (ingest.IndexSession),
// counted once (the index writes the title more than once, and the chunks
// repeat the body).
func searchableText(ctx context.Context, st *kv.Store, userIDs []string) (int64, error) {
	var n int64
	err := st.View(ctx, func(tx *kv.Tx) error {
		for _, uid := range userIDs {
			if err := tx.Sessions(uid, func(s kv.Session) error {
				d, err := ingest.LoadDoc(tx, uid, s.ID)
				if err != nil {
					return err
				}
				is := ingest.IndexSession(d)
				n += int64(len(is.Title) + len(is.Body))
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// timedWeaviateRebuild indexes every session into fresh Weaviate
// collections (as `hindsight reindex --text-index weaviate` does), drops
// them afterwards, and returns how many sessions it indexed.
func timedWeaviateRebuild(ctx context.Context, st *kv.Store, base config.Config, progressOut io.Writer) (int, error) {
	ix, err := weaviatetext.Open(weaviatetext.Config{URL: base.Semantic.WeaviateURL, APIKey: base.Semantic.WeaviateKey,
		Prefix: scratchPrefix("HindsightRebuild")}, &docTexts{m: map[string]index.Session{}})
	if err != nil {
		return 0, err
	}
	defer func() {
		ix.Drop(context.Background())
		ix.Close()
	}()
	n, err := countSessions(ctx, st)
	if err != nil {
		return 0, err
	}
	bar := progress.New(progressOut, "rebuild index (weaviate)", n)
	err = ingest.NewPipeline(st, ix, ingest.PipelineOptions{}).Rebuild(ctx, func(done, total int) {
		bar.Set(done)
		n = total
	})
	bar.Done()
	return n, err
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
