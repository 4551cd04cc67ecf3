package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
)

// letters spells n in base 26 with letters only, so the analyser keeps it
// one term (the callers end it in x, which no stemming rule removes).
func letters(n int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('a' + n%26)}, b...)
		n /= 26
		if n == 0 {
			return string(b)
		}
	}
}

// nodeShards returns, per node name, the shards (collection/tenant) and
// their object counts, as the given node reports them (/v1/nodes verbose).
func nodeShards(t *testing.T, url string) map[string]map[string]int64 {
	t.Helper()
	resp, err := http.Get(url + "/v1/nodes?output=verbose")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Nodes []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
			Shards []struct {
				Class       string `json:"class"`
				Name        string `json:"name"`
				ObjectCount int64  `json:"objectCount"`
			} `json:"shards"`
		} `json:"nodes"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("nodes: %v: %s", err, b)
	}
	out := map[string]map[string]int64{}
	for _, n := range r.Nodes {
		out[n.Name] = map[string]int64{}
		for _, s := range n.Shards {
			out[n.Name][s.Class+"/"+s.Name] = s.ObjectCount
		}
	}
	return out
}

// TestWeaviateCluster runs the Weaviate text index on a three-node cluster
// (replication factor 3, QUORUM reads and writes) under a bounded load of
// syncs and searches, kills one node (SIGKILL), and checks that syncs keep
// answering 200 and searches keep answering, that every acknowledged write
// is searchable, once, and that the node catches up after its restart.
func TestWeaviateCluster(t *testing.T) {
	t.Parallel()
	cl := weaviatetest.StartCluster(t, 3,
		// Async replication compares replicas every second (default 30 s)
		// and propagates objects older than a second (default 30 s), so
		// the restarted node catches up within the test.
		"ASYNC_REPLICATION_FREQUENCY=1s", "ASYNC_REPLICATION_PROPAGATION_DELAY=1s",
		"ASYNC_REPLICATION_ALIVE_NODES_CHECKING_FREQUENCY=1s")
	ctx := context.Background()
	s, srv := startWith(t, config.Config{Semantic: config.Semantic{Embedder: "none", WeaviateURL: cl.Nodes[0].URL},
		TextIndex: "weaviate", WeaviateReplication: 3})
	if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}

	// The load: one writer syncing new sessions, two readers searching a
	// word every session has, each check its own answers.
	var (
		acked     []int // sessions whose sync answered 200
		ackMu     sync.Mutex
		syncFails atomic.Int64
		searches  atomic.Int64
		searchBad atomic.Int64
		dupes     atomic.Int64
		badMsg    atomic.Value
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 400; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ext := "c" + letters(i)
			code, _, body := call(t, http.MethodPost, srv.URL+"/sync/batch", key, map[string]any{
				"sessions": []any{map[string]any{"externalId": ext, "title": "cluster session " + ext}},
				"messages": []any{map[string]any{"sessionExternalId": ext, "externalId": ext + "-m", "role": "user",
					"textContent": "replicated words zq" + letters(i) + "x about the quorum"}},
			})
			if code != http.StatusOK {
				syncFails.Add(1)
				badMsg.Store(fmt.Sprintf("sync %d: %s", code, body))
				continue
			}
			ackMu.Lock()
			acked = append(acked, i)
			ackMu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, _, body := call(t, http.MethodGet, srv.URL+"/api/search?q=quorum&limit=100", key, nil)
				searches.Add(1)
				if code != http.StatusOK {
					searchBad.Add(1)
					badMsg.Store(fmt.Sprintf("search %d: %s", code, body))
					continue
				}
				var r searchReply
				json.Unmarshal([]byte(body), &r)
				seen := map[string]bool{}
				for _, h := range r.Results {
					if seen[h.ID] {
						dupes.Add(1)
					}
					seen[h.ID] = true
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	time.Sleep(4 * time.Second)
	before := searches.Load()
	cl.Nodes[2].Kill() // node3
	time.Sleep(8 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("load: %d syncs acknowledged, %d searches (%d while node3 was down)", len(acked), searches.Load(), searches.Load()-before)
	if n := syncFails.Load(); n > 0 {
		t.Errorf("%d syncs failed; last: %v", n, badMsg.Load())
	}
	if n := searchBad.Load(); n > 0 {
		t.Errorf("%d searches failed; last: %v", n, badMsg.Load())
	}
	if n := dupes.Load(); n > 0 {
		t.Errorf("%d duplicate results", n)
	}
	if searches.Load()-before < 10 || len(acked) < 20 {
		t.Fatalf("too little load to tell: %d syncs, %d searches after the kill", len(acked), searches.Load()-before)
	}

	// Every acknowledged write is searchable, once, with node3 still down.
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := s.Pipeline.WaitIdle(wctx); err != nil {
		t.Fatalf("indexing did not finish with one node down: %v (last error %v)", err, s.Pipeline.Status().LastErr)
	}
	for _, i := range acked {
		code, _, body := call(t, http.MethodGet, srv.URL+"/api/search?q=zq"+letters(i)+"x", key, nil)
		var r searchReply
		json.Unmarshal([]byte(body), &r)
		if code != http.StatusOK || len(r.Results) != 1 || r.Results[0].Title != "cluster session c"+letters(i) {
			t.Errorf("acknowledged session %d: %d %s", i, code, body)
		}
	}

	// node3 comes back and catches up: its replicas of the tenant hold as
	// many documents as node1's.
	if err := cl.Nodes[2].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	sessions, _ := s.Index.(interface{ Collections() (string, string) }).Collections()
	// A liveness bound: async replication repairs in rounds, and under -race
	// on two loaded cores a round can take tens of seconds.
	deadline := time.Now().Add(180 * time.Second)
	for {
		shards := nodeShards(t, cl.Nodes[2].URL)
		var want, got int64 = -1, -2
		for shard, n := range shards["node1"] {
			if strings.HasPrefix(shard, sessions+"/") {
				want = n
				got = shards["node3"][shard]
			}
		}
		if want == int64(len(acked)) && got == want {
			for node, sh := range shards {
				t.Logf("%s holds %d shards: %v", node, len(sh), sh)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node3 did not catch up: node1 has %d session documents, node3 %d (acknowledged %d)", want, got, len(acked))
		}
		time.Sleep(time.Second)
	}
}
