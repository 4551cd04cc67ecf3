// Package runner runs Hindsight's benchmarks against a real server built by
// package server: relevance (ranking quality and its cost on a labelled
// dataset, next to peer systems), load (cost as generated data grows) and
// ingest (write throughput). The hindsight command parses their flags into
// the configurations here; package bench holds the measuring and reporting
// they share.
package runner

import (
	"context"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/server"
)

// startServer starts a Hindsight on a loopback port over a fresh data
// directory dir, with a user "bench" and its key, and rate limiting off (the
// bench measures capacity, not policy). Its embedder and vector store are
// vec's choice, the other semantic settings base's (the environment, as for
// serve). The returned stop closes it.
func startServer(ctx context.Context, dir string, log zerolog.Logger, base config.Config, vec Vectors) (*bench.Client, *server.Server, func(), error) {
	a, stopApp, err := startApp(ctx, dir, log, base, vec)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := a.Accounts.CreateUser(ctx, "bench"); err != nil {
		stopApp()
		return nil, nil, nil, err
	}
	key, _, err := a.Accounts.CreateKey(ctx, "bench", "bench")
	if err != nil {
		stopApp()
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stopApp()
		return nil, nil, nil, err
	}
	srv := &http.Server{Handler: a.Handler()}
	go srv.Serve(ln)
	c := &bench.Client{URL: "http://" + ln.Addr().String(), Key: key, HTTP: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: 256},
	}}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		stopApp()
	}
	return c, a, stop, nil
}

// startApp builds the server over dir as serve would (rate limiting off)
// and runs its background work (a rebuild when the index is missing, then
// the outbox); stop ends the background work and closes it.
func startApp(ctx context.Context, dir string, log zerolog.Logger, base config.Config, vec Vectors) (*server.Server, func(), error) {
	cfg := config.Config{Data: dir, Limits: config.Default().Limits, Semantic: base.Semantic,
		TextIndex: base.TextIndex, WeaviateReplication: max(1, base.WeaviateReplication), WeaviateTextPrefix: base.WeaviateTextPrefix}
	if err := vec.apply(&cfg); err != nil {
		return nil, nil, err
	}
	a, err := server.New(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	bgCtx, stopBg := context.WithCancel(context.Background())
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		a.Background(bgCtx)
	}()
	return a, func() {
		stopBg()
		<-bgDone
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Close(sctx)
	}, nil
}
