package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
)

// TestWeaviateFaults runs the server against the real pinned
// weaviate-server and takes it away twice: down when the server starts
// (the server starts anyway, /ready says why it is not ready, writes and
// full-text search work, the embedding queue waits and drains when
// Weaviate comes up), and killed with SIGKILL while syncs and hybrid
// searches run, then restarted: no 500s, no vector lost, the queue drains.
func TestWeaviateFaults(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and kills a weaviate-server: not in -short")
	}
	wv := weaviatetest.Start(t)
	ctx := context.Background()
	provider := openaitest.New(t, openaitest.Options{APIKey: "sk-test"})
	if err := wv.Kill(); err != nil {
		t.Fatal(err)
	}

	// Down at start.
	seen := &statuses{}
	r := startRig(t, config.Config{Semantic: config.Semantic{
		Embedder: "openai", OpenAIKey: "sk-test", OpenAIBaseURL: provider.URL(), OpenAIDim: 64,
		WeaviateURL: wv.URL,
	}})
	code, reasons := r.readyReasons()
	seen.add("ready", code)
	if code != http.StatusServiceUnavailable || !strings.Contains(reasons, "vector store unavailable") {
		t.Errorf("/ready with Weaviate down: %d %s; want 503 naming the vector store", code, reasons)
	}
	a, _ := r.syncSessions("early", 5)
	seen.add("sync", a.status)
	if a.status != http.StatusOK {
		t.Fatalf("sync with Weaviate down: %d %s", a.status, a.body)
	}
	r.waitFound("flaky", 5)
	seen.add("fulltext", http.StatusOK)
	hyb := r.search("hybrid", "jittered backoff", 20)
	seen.add("hybrid", hyb.status)
	if hyb.status != http.StatusOK || hyb.header.Get("X-Search-Degraded") != "semantic" || strings.Count(hyb.body, `"title":"session `) != 5 {
		t.Errorf("hybrid with Weaviate down: %d degraded=%q %.300s", hyb.status, hyb.header.Get("X-Search-Degraded"), hyb.body)
	}
	cx := r.context("jittered backoff")
	seen.add("context", cx.status)
	if cx.status != http.StatusOK || cx.header.Get("X-Search-Degraded") != "semantic" {
		t.Errorf("context with Weaviate down: %d degraded=%q %.300s", cx.status, cx.header.Get("X-Search-Degraded"), cx.body)
	}
	sem := r.search("semantic", "jittered backoff", 20)
	seen.add("semantic", sem.status)
	if sem.status != http.StatusServiceUnavailable || sem.header.Get("Retry-After") == "" || !strings.Contains(sem.body, "vector store") {
		t.Errorf("semantic with Weaviate down: %d Retry-After %q %s; want 503 naming the vector store", sem.status, sem.header.Get("Retry-After"), sem.body)
	}
	if err := wv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	up := time.Now() // recovery counts from Weaviate answering again
	took, missing := r.waitEmbedded()
	if missing != 0 {
		t.Fatalf("%d chunks not embedded %s after Weaviate came up", missing, took)
	}
	took = time.Since(up)
	waitFor(t, "/ready to turn 200", func() bool { c, _ := r.readyReasons(); return c == http.StatusOK })
	seen.add("ready after", http.StatusOK)
	report(t, "weaviate unreachable at start, then started", seen, missing, took)

	// Killed under load.
	seen = &statuses{}
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var batches, degraded atomic.Int64
	wg.Add(2)
	go func() { // a plugin syncing
		defer wg.Done()
		for i := 0; load.Err() == nil; i++ {
			a, _ := r.syncSessions(fmt.Sprintf("live%d", i), 2)
			seen.add("sync", a.status)
			batches.Add(1)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	go func() { // a user searching
		defer wg.Done()
		for load.Err() == nil {
			h := r.search("hybrid", "jittered backoff", 20)
			seen.add("hybrid", h.status)
			if h.header.Get("X-Search-Degraded") != "" {
				degraded.Add(1)
			}
			c := r.context("jittered backoff")
			seen.add("context", c.status)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(time.Second)
	if err := wv.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a hybrid search answered from full-text", func() bool { return degraded.Load() > 0 })
	sem = r.search("semantic", "jittered backoff", 20)
	seen.add("semantic", sem.status)
	if sem.status != http.StatusServiceUnavailable || !strings.Contains(sem.body, "vector store") {
		t.Errorf("semantic with Weaviate killed: %d %s; want 503 naming the vector store", sem.status, sem.body)
	}
	time.Sleep(time.Second)
	if err := wv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	up = time.Now()
	time.Sleep(time.Second) // the load goes on across the restart
	stop()
	wg.Wait()
	took, missing = r.waitEmbedded()
	if missing != 0 {
		t.Errorf("%d chunks not embedded %s after Weaviate was restarted", missing, took)
	}
	took = time.Since(up)
	want := 5 + 2*int(batches.Load())
	var after answer
	for deadline := waitDeadline(t); ; {
		after = r.search("semantic", "jittered backoff", 100)
		if after.status != http.StatusOK || strings.Count(after.body, `"title":"session `) == min(want, 100) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	seen.add("semantic after", after.status)
	if after.status != http.StatusOK || strings.Count(after.body, `"title":"session `) != min(want, 100) {
		t.Errorf("semantic after the restart: %d, %d sessions; want 200 and %d", after.status, strings.Count(after.body, `"title":"session `), min(want, 100))
	}
	if n := seen.count(http.StatusInternalServerError); n > 0 {
		t.Errorf("%d answers were 500 (%s)", n, seen)
	}
	if n := r.metric(`hindsight_search_degraded_total{reason="vector_store"}`); n == 0 {
		t.Errorf("no degraded answer counted for the vector store")
	}
	report(t, "weaviate SIGKILL during syncs and hybrid searches, then restarted", seen, missing, took)
}
