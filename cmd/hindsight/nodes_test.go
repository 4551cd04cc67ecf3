package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/kv"
)

// batchID names a batch a test's writer posted: its writer and its number.
type batchID struct{ writer, n int }

// batchWord is a word of letters only that names batch (w, n), so search
// finds the batch's session and nothing else.
func batchWord(w, n int) string {
	b := []byte("qz")
	for v := w*10000 + n; ; v /= 26 {
		b = append(b, byte('a'+v%26))
		if v < 26 {
			break
		}
	}
	return string(b)
}

// startNodes starts n `hindsight serve` nodes that share the records in
// dsn and the Weaviate text index at WEAVIATE_URL (which the caller sets:
// the children read it from their environment), each with a data
// directory of its own, and waits until each is ready. The first builds
// the (empty) text index; the others find it ready.
func startNodes(t *testing.T, n int, dsn string) []*child {
	t.Helper()
	flags := []string{"--records", dsn, "--text-index", "weaviate", "--embedder", "none", "--rate-limit", "0"}
	var nodes []*child
	for range n {
		c := startServe(t, t.TempDir(), flags...)
		waitUntil(t, c.URL+" ready", func() bool {
			resp, err := http.Get(c.URL + "/ready")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		nodes = append(nodes, c)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// Their warnings and errors say what went wrong. Read once they
		// exited: the log is written by exec's copying goroutine until then.
		for i, c := range nodes {
			if c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Signal(syscall.SIGTERM)
				_ = c.cmd.Wait()
			}
			var lines []string
			for _, l := range strings.Split(c.stderr.String(), "\n") {
				if (strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`)) && !strings.Contains(l, "answered 503") {
					lines = append(lines, l)
				}
			}
			t.Logf("node %d (%s): %d warnings and errors (besides the 503s), the last:\n%s", i, c.URL, len(lines), strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
	})
	return nodes
}

// recordsKey creates user in the records at dsn and returns an API key
// of theirs.
func recordsKey(t *testing.T, dsn, user string) string {
	t.Helper()
	if _, err := runCmd(t, "users", "create", user, "--records", dsn); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, "keys", "create", "--user", user, "--records", dsn)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// nodeBatch is a /sync/batch body: session ext, titled "batch "+word, of
// perBatch messages m0, m1, ... each naming word.
func nodeBatch(ext, word string, perBatch int) []byte {
	msgs := make([]map[string]any, perBatch)
	for i := range msgs {
		msgs[i] = map[string]any{"sessionExternalId": ext, "externalId": fmt.Sprintf("m%d", i), "role": "user",
			"textContent": fmt.Sprintf("message %d about %s", i, word)}
	}
	body, _ := json.Marshal(map[string]any{
		"sessions": []any{map[string]any{"externalId": ext, "title": "batch " + word}},
		"messages": msgs,
	})
	return body
}

// nodeResponse is what a node answered.
type nodeResponse struct {
	status     int
	retryAfter string // the Retry-After header
	message    string // an error's message
	acked      bool   // a sync answered 200 with ok and no entry errors
	titles     []string
}

// postBatch posts body to base's /sync/batch; err is a transport error.
func postBatch(ctx context.Context, client *http.Client, base, key string, body []byte) (nodeResponse, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/sync/batch", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return nodeResponse{}, err
	}
	defer resp.Body.Close()
	var res struct {
		OK      bool
		Errors  []string
		Message string
	}
	_ = json.NewDecoder(resp.Body).Decode(&res)
	return nodeResponse{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), message: res.Message,
		acked: resp.StatusCode == http.StatusOK && res.OK && len(res.Errors) == 0}, nil
}

// searchNode runs a full-text search for word on base and returns the
// titles found; err is a transport error.
func searchNode(ctx context.Context, client *http.Client, base, key, word string) (nodeResponse, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/search?q="+url.QueryEscape(word), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return nodeResponse{}, err
	}
	defer resp.Body.Close()
	r := nodeResponse{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
	var body struct {
		Results []struct{ Title string } `json:"results"`
		Message string
	}
	if json.NewDecoder(resp.Body).Decode(&body) == nil {
		for _, h := range body.Results {
			r.titles = append(r.titles, h.Title)
		}
		r.message = body.Message
	}
	return r, nil
}

// checkFoundEverywhere waits until the outbox in st has drained, then
// until a search for each acknowledged batch's word (batchWord) finds
// something from each of nodes, and fails unless what it finds is the
// batch's one session ("batch WORD").
func checkFoundEverywhere(t *testing.T, st *kv.Store, nodes []*child, key string, acked map[batchID]bool) {
	t.Helper()
	waitUntil(t, "the outbox drained", func() bool {
		busy := true
		_ = st.View(context.Background(), func(tx *kv.Tx) error { busy = tx.HasDirty(); return nil })
		return !busy
	})
	for id := range acked {
		word := batchWord(id.writer, id.n)
		for _, c := range nodes {
			var got []string
			waitUntil(t, fmt.Sprintf("batch %v found from %s", id, c.URL), func() bool {
				r, err := searchNode(context.Background(), http.DefaultClient, c.URL, key, word)
				got = r.titles
				return err == nil && len(got) > 0
			})
			if len(got) != 1 || got[0] != "batch "+word {
				t.Errorf("search %q from %s: %q, want the one session", word, c.URL, got)
			}
		}
	}
}

// TestNodeKilledMidBatch: three nodes share one PostgreSQL and one
// Weaviate text index; clients post batches to the first, which is killed
// with SIGKILL among them (its indexer holding claims on outbox entries).
// Every batch it acknowledged is in the records once and whole, no batch
// is half there, the outbox drains (the other nodes take the dead node's
// entries once its claims' lease runs out), and each acknowledged batch is
// found, once, from both other nodes.
func TestNodeKilledMidBatch(t *testing.T) {
	wv := weaviatetest.Start(t)
	t.Setenv("WEAVIATE_URL", wv.URL) // the children read it from their environment
	dsn := pgtest.Database(t)
	nodes := startNodes(t, 3, dsn)
	a, others := nodes[0], nodes[1:]
	key := recordsKey(t, dsn, "kill")

	const writers, perBatch = 3, 20
	var mu sync.Mutex
	acked, sent := map[batchID]bool{}, map[batchID]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				id := batchID{w, n}
				mu.Lock()
				sent[id] = true
				mu.Unlock()
				resp, err := postBatch(ctx, client, a.URL, key, nodeBatch(fmt.Sprintf("kill-%d-%d", w, n), batchWord(w, n), perBatch))
				if err != nil {
					return // the node died
				}
				if resp.acked {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				}
			}
		}()
	}
	waitUntil(t, "20 batches acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 20
	})
	// Kill it while its indexer holds claims, when the poll catches one
	// (a step may end between the poll and the kill: the log says).
	claims := func() (n int64) {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			return 0
		}
		defer conn.Close(context.Background())
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM kv_entries WHERE bucket = 'outbox.claims'`).Scan(&n)
		return n
	}
	for range 200 {
		if claims() > 0 {
			break
		}
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()

	// Claims standing now are mostly the dead node's, which the others
	// take once their lease runs out (the log says how many).
	held := claims()
	st, err := kv.OpenPostgres(context.Background(), dsn, kv.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkBatchesWhole(t, st, "kill", sent, acked, perBatch, nil)
	checkFoundEverywhere(t, st, others, key, acked)
	t.Logf("%d batches acknowledged, %d sent before SIGKILL, %d outbox claims standing just after the kill (mostly the dead node's); every acknowledged one whole and found from both other nodes", len(acked), len(sent), held)
}
