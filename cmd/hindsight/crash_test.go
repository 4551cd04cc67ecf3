package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// TestCrashLosesNoAcknowledgedWrite kills a serving process with SIGKILL while
// clients post batches, restarts on the same data, and checks that every batch
// that got a 200 is fully present and that no batch is partly present.
func TestCrashLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := newKey(t, dir, "crash")
	srv := startServe(t, dir, "--rate-limit", "0")

	const writers, perBatch = 4, 40
	var mu sync.Mutex
	acked := map[batchID]bool{}
	sent := map[batchID]bool{}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				id := batchID{w, n}
				body := crashBatch(w, n, perBatch)
				mu.Lock()
				sent[id] = true
				mu.Unlock()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/sync/batch", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					return // the server died
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
	// Let some batches land, then kill without warning. (Writers that stop
	// first, the server gone, fail below with its log.)
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	deadline := deadline(t)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 30 || time.Now().After(deadline) {
			break
		}
		select {
		case <-stopped:
		case <-time.After(20 * time.Millisecond):
			continue
		}
		break
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = srv.cmd.Wait()
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 30 {
		t.Fatalf("only %d batches acknowledged before the kill; stderr:\n%s", len(acked), srv.stderr)
	}

	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatalf("reopen after crash: %v", err)
	}
	if err := st.Check(); err != nil {
		t.Fatalf("store invariants after crash: %v", err)
	}
	checkBatchesWhole(t, st, "crash", sent, acked, perBatch, func(id batchID, m kv.Message) {
		want := fmt.Sprintf("message %d of batch %d/%d", m.Seq, id.writer, id.n)
		if m.TextContent == nil || *m.TextContent != want || len(m.Parts) != 1 || m.Parts[0].Args != `{"n":1}` {
			t.Errorf("batch %v: message %s is not what was sent", id, m.ExternalID)
		}
	})
	t.Logf("%d batches acknowledged, %d sent before SIGKILL; all acknowledged ones intact", len(acked), len(sent))
	st.Close()

	// The restarted server serves the same data.
	srv2 := startServe(t, dir)
	req, _ := http.NewRequest(http.MethodGet, srv2.URL+"/api/stats", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats struct{ SessionCount int }
	_ = json.NewDecoder(resp.Body).Decode(&stats)
	if stats.SessionCount < len(acked) {
		t.Errorf("restarted server reports %d sessions, %d were acknowledged", stats.SessionCount, len(acked))
	}
}

func crashBatch(writer, n, size int) []byte {
	sid := fmt.Sprintf("crash-%d-%d", writer, n)
	msgs := make([]map[string]any, size)
	for i := range msgs {
		msgs[i] = map[string]any{
			"sessionExternalId": sid, "externalId": fmt.Sprintf("m%d", i), "role": "assistant",
			"textContent": fmt.Sprintf("message %d of batch %d/%d", i, writer, n),
			"parts":       []any{map[string]any{"type": "tool-call", "toolName": "Bash", "args": map[string]int{"n": 1}}},
		}
	}
	b, _ := json.Marshal(map[string]any{
		"sessions": []any{map[string]any{"externalId": sid, "title": "crash test", "promptTokens": 1, "completionTokens": 1, "cost": 0}},
		"messages": msgs,
	})
	return b
}

// checkBatchesWhole fails unless every acknowledged batch of sent is in st
// whole, perBatch messages in the session "NAME-W-N" of the user name, and
// no batch is there in part. check, when not nil, sees each message stored.
func checkBatchesWhole(t *testing.T, st *kv.Store, name string, sent, acked map[batchID]bool, perBatch int, check func(batchID, kv.Message)) {
	t.Helper()
	err := st.View(context.Background(), func(tx *kv.Tx) error {
		u, err := tx.UserByName(name)
		if err != nil {
			return err
		}
		for id := range sent {
			present := 0
			if sid, ok := tx.SessionIDByExternal(u.ID, fmt.Sprintf("%s-%d-%d", name, id.writer, id.n)); ok {
				err := tx.Messages(u.ID, sid, func(m kv.Message) error {
					if check != nil {
						check(id, m)
					}
					present++
					return nil
				})
				if err != nil {
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
}
