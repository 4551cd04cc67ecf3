// Command hindsight bench measures Hindsight: relevance (ranking quality
// and its cost on a labelled dataset, next to peer systems), load (cost as
// generated data grows) and ingest (write throughput).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/ingest"
)

const benchUsage = `bench relevance --dataset DIR [--modes fulltext,semantic,hybrid] [--embedder auto|none|local|openai]
                       [--store embedded|weaviate] [--peers sqlite-fts5,weaviate-bm25,weaviate-hybrid]
                       [--sweep rrf.k=10,30,60 --sweep depth=20,50,100 --sweep title.boost=1,2,4] [--sweep-mode M]
                       [--baseline result.json] [--max-docs N] [--max-queries N] [--split NAME] [--out DIR] [--json]
       bench load      [--sessions N | --grow 10000,30000,100000] [--messages M] [--concurrency C] [--users U] [--out DIR] [--json]
       bench ingest    [--batch-messages N] [--batch-size N] [--singles N] [--concurrency C] [--seed S] [--json]

See bench/README.md: bring your own data, what each metric means, comparing two commits.`

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Usage: hindsight "+benchUsage)
		return &usageError{"bench needs a subcommand: relevance, load or ingest"}
	}
	switch args[0] {
	case "ingest":
		return benchIngest(ctx, args[1:], stdout, stderr)
	case "relevance":
		return benchRelevance(ctx, args[1:], stdout, stderr)
	case "load":
		return benchLoad(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintln(stderr, "Usage: hindsight "+benchUsage)
	return &usageError{fmt.Sprintf("unknown bench %q (relevance, load or ingest)", args[0])}
}

// benchServer starts a Hindsight on a loopback port over a fresh data
// directory dir, with a user "bench" and its key, and rate limiting off (the
// bench measures capacity, not policy). configure, when not nil, adjusts the
// server configuration first (the embedder and vector store). The returned
// stop closes it.
func benchServer(ctx context.Context, dir string, log zerolog.Logger, configure func(*serveConfig) error) (*bench.Client, *app, func(), error) {
	cfg := serveConfig{Data: dir, Limits: ingest.DefaultLimits()}
	if configure != nil {
		if err := configure(&cfg); err != nil {
			return nil, nil, nil, err
		}
	}
	a, err := buildApp(ctx, cfg, log)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := a.accounts.CreateUser(ctx, "bench"); err != nil {
		a.Close(ctx)
		return nil, nil, nil, err
	}
	key, _, err := a.accounts.CreateKey(ctx, "bench", "bench")
	if err != nil {
		a.Close(ctx)
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		a.Close(ctx)
		return nil, nil, nil, err
	}
	srv := &http.Server{Handler: a.handler}
	go srv.Serve(ln)
	bgCtx, stopBg := context.WithCancel(context.Background())
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		a.start(bgCtx)
	}()
	c := &bench.Client{URL: "http://" + ln.Addr().String(), Key: key, HTTP: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256},
	}}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		stopBg()
		<-bgDone
		a.Close(sctx)
	}
	return c, a, stop, nil
}

func benchIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench ingest", benchUsage, stderr)
	var o bench.IngestOptions
	fs.IntVar(&o.BatchMessages, "batch-messages", 50_000, "messages sent in the batch phase")
	fs.IntVar(&o.BatchSize, "batch-size", 500, "messages per /sync/batch")
	fs.IntVar(&o.Singles, "singles", 20_000, "single-message POSTs in the single phase")
	fs.IntVar(&o.Concurrency, "concurrency", 32, "concurrent clients in the single phase")
	fs.Uint64Var(&o.Seed, "seed", 1, "generator seed (same seed, same traffic)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table and progress")
	dirFlag := fs.String("dir", "", "scratch directory on the disk to measure (default: a temp dir)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	dir := *dirFlag
	if dir == "" {
		d, err := os.MkdirTemp("", "hindsight-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if !*asJSON {
		o.Progress = stderr
	}
	c, a, stop, err := benchServer(ctx, dir+"/data", zerolog.Nop(), func(cfg *serveConfig) error {
		return applyVectors(cfg, benchVectorConfig{Embedder: "none", Store: "embedded"}) // measure the write path and full-text indexing
	})
	if err != nil {
		return err
	}
	defer stop()
	o.Indexer = &bench.Indexer{Lags: a.pipeline.Lags, WaitIdle: a.pipeline.WaitIdle, Pending: outboxDepth(a.store)}
	res, err := bench.RunIngest(ctx, c, dir, o)
	if err != nil {
		return fmt.Errorf("bench ingest: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	bench.PrintIngest(stdout, res)
	return nil
}
