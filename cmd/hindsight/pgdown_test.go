package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/kv"
)

// indexedSessions reads a node's hindsight_indexed_sessions_total: the
// sessions its indexer made searchable since it started.
func indexedSessions(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "hindsight_indexed_sessions_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s/metrics: %q: %v", base, sc.Text(), err)
			}
			return int(f)
		}
	}
	t.Fatalf("%s/metrics: no hindsight_indexed_sessions_total", base)
	return 0
}

// getJSON GETs u without a key and decodes its JSON body into out; it
// returns the status.
func getJSON(t *testing.T, u string, out any) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Errorf("GET %s: %d, body not JSON: %v", u, resp.StatusCode, err)
	}
	return resp.StatusCode
}

// Phases of TestPostgresRestartedUnderLoad, by when a request was sent.
const (
	pgUp        int32 = iota // before PostgreSQL was killed
	pgDown                   // killed
	pgRestarted              // started again, the nodes not yet seen answering
	pgRecovered              // every node answered a read since the restart
)

// TestPostgresRestartedUnderLoad: three nodes share one PostgreSQL and one
// Weaviate text index, under a sync load (batches to every node, each its
// own session named by a unique word, sent again until acknowledged, as a
// plugin does) and a search load (acknowledged words, on every node). The
// PostgreSQL server is killed (immediate shutdown: a crash, recovered from
// the WAL) and, once every node answered a sync and a search while it was
// down, started again. Every answer is 2xx, or 503 with Retry-After for a
// request sent before the nodes were seen answering again: never a 500,
// never a 503 of the outage after (a write that lost every attempt to
// conflicts with the other writers is a 503 "too busy" in any phase). Then every batch sent is acknowledged and in the
// records once and whole (read through the API), the outbox drains, each
// batch's word is found from every node, and the nodes together made each
// stored session searchable exactly once (their
// hindsight_indexed_sessions_total): no outbox entry indexed twice or
// lost.
func TestPostgresRestartedUnderLoad(t *testing.T) {
	wv := weaviatetest.Start(t)
	t.Setenv("WEAVIATE_URL", wv.URL)
	pg := pgtest.Start(t)
	dsn, err := pg.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nodes := startNodes(t, 3, dsn)
	key := recordsKey(t, dsn, "pgdown")
	before := make([]int, len(nodes)) // what starting counted
	for i, c := range nodes {
		before[i] = indexedSessions(t, c.URL)
	}

	const perBatch = 5
	var (
		phase atomic.Int32
		mu    sync.Mutex
		// Guarded by mu:
		sent, acked = map[batchID]bool{}, map[batchID]bool{}
		bad         []string       // answers the test forbids
		downAnswers [3][2]int      // by node: 503s with Retry-After to syncs, to searches
		count       map[string]int // "sync 200", "search 503", ... for the log
		afterAcks   [3]int         // by writer: batches acknowledged after recovery
	)
	count = map[string]int{}
	// judge records an answer to a request sent in phase sentIn.
	judge := func(node int, what string, sentIn int32, r nodeResponse, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s to node %d (phase %d): %v", what, node, sentIn, err))
		case r.status/100 == 2:
			count[fmt.Sprintf("%s %d", what, r.status)]++
		case r.status == http.StatusServiceUnavailable && r.retryAfter != "" && strings.Contains(r.message, "too busy"):
			// A write that lost every attempt to conflicts with the other
			// nodes' writers (kv.ErrBusy): load, not the outage, so
			// allowed in any phase; nothing of it was stored.
			count[fmt.Sprintf("%s 503 busy", what)]++
		case r.status == http.StatusServiceUnavailable && r.retryAfter != "" && sentIn < pgRecovered:
			count[fmt.Sprintf("%s 503", what)]++
			if sentIn >= pgDown {
				downAnswers[node][slices.Index([]string{"sync", "search"}, what)]++
			}
		default:
			bad = append(bad, fmt.Sprintf("%s to node %d (phase %d): %d (Retry-After %q)", what, node, sentIn, r.status, r.retryAfter))
		}
	}

	// Writers stop between batches (stop), never in the middle of one: a
	// sync cut off by the client may still commit after the records are
	// counted. Searchers are cut off (ctx).
	var stop atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{} // no timeout: a loaded machine may be slow
	var wg sync.WaitGroup
	for w := range nodes {
		wg.Add(1)
		go func() { // writer w posts to node w
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				id := batchID{w, n}
				body := nodeBatch(fmt.Sprintf("pgdown-%d-%d", w, n), batchWord(w, n), perBatch)
				mu.Lock()
				sent[id] = true
				mu.Unlock()
				for { // sent again until acknowledged, as a plugin does
					p := phase.Load()
					r, err := postBatch(context.Background(), client, nodes[w].URL, key, body)
					judge(w, "sync", p, r, err)
					if err != nil {
						return // the node is gone: judged a failure
					}
					if r.acked {
						mu.Lock()
						acked[id] = true
						if p == pgRecovered {
							afterAcks[w]++
						}
						mu.Unlock()
						break
					}
				}
			}
		}()
		wg.Add(1)
		go func() { // searcher w searches node w for acknowledged words
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				mu.Lock()
				var word string
				for id := range acked { // any one
					word = batchWord(id.writer, id.n)
					break
				}
				mu.Unlock()
				if word == "" {
					word = "nothingyet"
				}
				p := phase.Load()
				r, err := searchNode(ctx, client, nodes[w].URL, key, word)
				if ctx.Err() != nil {
					return
				}
				judge(w, "search", p, r, err)
			}
		}()
	}
	waitUntil(t, "30 batches acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 30
	})

	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	phase.Store(pgDown)
	waitUntil(t, "every node answered a sync and a search with 503 while PostgreSQL was down", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			return true // reported below, once the load stopped
		}
		for _, d := range downAnswers {
			if d[0] < 2 || d[1] < 2 {
				return false
			}
		}
		return true
	})
	// Liveness holds; readiness names the records.
	for _, c := range nodes {
		var ready struct{ Reasons []string }
		if code := getJSON(t, c.URL+"/ready", &ready); code != http.StatusServiceUnavailable || !strings.Contains(strings.Join(ready.Reasons, "; "), "records database") {
			t.Errorf("%s/ready with PostgreSQL down: %d %q, want 503 naming the records database", c.URL, code, ready.Reasons)
		}
		var health struct{ Status string }
		if code := getJSON(t, c.URL+"/health", &health); code != http.StatusOK || health.Status != "ok" {
			t.Errorf("%s/health with PostgreSQL down: %d %q, want 200 ok (the process is alive)", c.URL, code, health.Status)
		}
	}
	if err := pg.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	phase.Store(pgRestarted)
	mu.Lock()
	early := len(bad) > 0
	mu.Unlock()
	if early { // answers the test forbids during the outage: no point going on
		stop.Store(true)
		cancel()
		wg.Wait()
		for _, b := range bad[:min(len(bad), 20)] {
			t.Error(b)
		}
		t.Fatalf("%d forbidden answers while PostgreSQL was down (the first %d above)", len(bad), min(len(bad), 20))
	}
	// The nodes' pools connect again by themselves: wait until each
	// answers an authenticated read.
	for _, c := range nodes {
		waitUntil(t, c.URL+" answering reads after the restart", func() bool {
			req, _ := http.NewRequest(http.MethodGet, c.URL+"/api/stats", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	phase.Store(pgRecovered)
	waitUntil(t, "every writer's batches acknowledged after the recovery", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return min(afterAcks[0], afterAcks[1], afterAcks[2]) >= 5
	})
	stop.Store(true)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bad {
		t.Error(b)
	}
	if len(acked) != len(sent) {
		t.Errorf("%d batches sent, %d acknowledged: every batch is sent again until acknowledged", len(sent), len(acked))
	}
	t.Logf("answers: %v; %d batches sent, %d acknowledged", count, len(sent), len(acked))

	// Every acknowledged batch once and whole, read through the API of a
	// node other than the one it was sent to; none half there.
	st, err := kv.OpenPostgres(context.Background(), dsn, kv.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := map[batchID]string{} // session ids of the batches stored
	stored := 0                 // the user's sessions
	err = st.View(context.Background(), func(tx *kv.Tx) error {
		u, err := tx.UserByName("pgdown")
		if err != nil {
			return err
		}
		for id := range sent {
			if sid, ok := tx.SessionIDByExternal(u.ID, fmt.Sprintf("pgdown-%d-%d", id.writer, id.n)); ok {
				ids[id] = sid
			}
		}
		return tx.RecentSessions(u.ID, kv.Position{}, func(kv.Session) bool { stored++; return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	if stored != len(ids) {
		t.Errorf("%d sessions stored, %d of them the batches sent", stored, len(ids))
	}
	for id := range sent {
		sid, ok := ids[id]
		if !ok {
			if acked[id] {
				t.Errorf("acknowledged batch %v is not in the records", id)
			}
			continue
		}
		var g struct {
			Messages []struct {
				ExternalID string `json:"externalId"`
			} `json:"messages"`
		}
		node := nodes[(id.writer+1)%len(nodes)]
		apiGet(t, node.URL, key, "/api/sessions/get?id="+sid, &g)
		var ext []string
		for _, m := range g.Messages {
			ext = append(ext, m.ExternalID)
		}
		slices.Sort(ext)
		if len(ext) != perBatch || len(slices.Compact(slices.Clone(ext))) != perBatch {
			t.Errorf("batch %v (acknowledged %v) has messages %v, want each of its %d once", id, acked[id], ext, perBatch)
		}
	}

	checkFoundEverywhere(t, st, nodes, key, acked)
	// Each stored session was written once: its outbox entry was indexed
	// by one node, once. The counters rise just after the outbox empties.
	indexed := func() (n int, by []int) {
		for i, c := range nodes {
			d := indexedSessions(t, c.URL) - before[i]
			n, by = n+d, append(by, d)
		}
		return n, by
	}
	waitUntil(t, "the nodes' indexed counters reach the sessions stored", func() bool {
		n, _ := indexed()
		return n >= stored
	})
	if n, by := indexed(); n != stored {
		t.Errorf("the nodes made %d sessions searchable (%v by node), want each of the %d stored once", n, by, stored)
	} else {
		t.Logf("%d sessions stored, each indexed once (%v by node)", stored, by)
	}
}
