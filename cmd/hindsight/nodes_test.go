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
	common := []string{"--records", dsn, "--text-index", "weaviate", "--embedder", "none", "--rate-limit", "0"}
	a := startServe(t, t.TempDir(), common...)
	ready := func(c *child) {
		waitUntil(t, c.URL+" ready", func() bool {
			resp, err := http.Get(c.URL + "/ready")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
	ready(a) // the first node builds the (empty) text index; the others find it ready
	others := []*child{startServe(t, t.TempDir(), common...), startServe(t, t.TempDir(), common...)}
	for _, c := range others {
		ready(c)
	}
	if _, err := runCmd(t, "users", "create", "kill", "--records", dsn); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, "keys", "create", "--user", "kill", "--records", dsn)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]

	const writers, perBatch = 3, 20
	type batchID struct{ writer, n int }
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
				ext := fmt.Sprintf("kill-%d-%d", w, n)
				msgs := make([]map[string]any, perBatch)
				for i := range msgs {
					msgs[i] = map[string]any{"sessionExternalId": ext, "externalId": fmt.Sprintf("m%d", i), "role": "user",
						"textContent": fmt.Sprintf("message %d about %s", i, batchWord(w, n))}
				}
				body, _ := json.Marshal(map[string]any{
					"sessions": []any{map[string]any{"externalId": ext, "title": "batch " + batchWord(w, n)}},
					"messages": msgs,
				})
				mu.Lock()
				sent[id] = true
				mu.Unlock()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.URL+"/sync/batch", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					return // the node died
				}
				var res struct {
					OK     bool
					Errors []string
				}
				_ = json.NewDecoder(resp.Body).Decode(&res)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && res.OK && len(res.Errors) == 0 {
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
	err = st.View(context.Background(), func(tx *kv.Tx) error {
		u, err := tx.UserByName("kill")
		if err != nil {
			return err
		}
		for id := range sent {
			present := 0
			if sid, ok := tx.SessionIDByExternal(u.ID, fmt.Sprintf("kill-%d-%d", id.writer, id.n)); ok {
				if err := tx.Messages(u.ID, sid, func(kv.Message) error { present++; return nil }); err != nil {
					return err
				}
			}
			switch {
			case acked[id] && present != perBatch:
				t.Errorf("acknowledged batch %v has %d of %d messages", id, present, perBatch)
			case present != 0 && present != perBatch:
				t.Errorf("batch %v is half-written: %d of %d messages", id, present, perBatch)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the outbox drained by the surviving nodes", func() bool {
		busy := true
		_ = st.View(context.Background(), func(tx *kv.Tx) error { busy = tx.HasDirty(); return nil })
		return !busy
	})
	for id := range acked {
		word := batchWord(id.writer, id.n)
		for _, c := range others {
			var got []string
			waitUntil(t, fmt.Sprintf("batch %v found from %s", id, c.URL), func() bool {
				req, _ := http.NewRequest(http.MethodGet, c.URL+"/api/search?q="+url.QueryEscape(word), nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				var r struct {
					Results []struct{ Title string } `json:"results"`
				}
				if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&r) != nil {
					return false
				}
				got = got[:0]
				for _, h := range r.Results {
					got = append(got, h.Title)
				}
				return len(got) > 0
			})
			if len(got) != 1 || got[0] != "batch "+word {
				t.Errorf("search %q from %s: %q, want the one session", word, c.URL, got)
			}
		}
	}
	t.Logf("%d batches acknowledged, %d sent before SIGKILL, %d outbox claims standing just after the kill (mostly the dead node's); every acknowledged one whole and found from both other nodes", len(acked), len(sent), held)
}
