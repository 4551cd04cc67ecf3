package server

// The harness of the fault tests: a whole server on loopback, driven over
// HTTP as a plugin and a user would, with a dependency made to fail under
// it. Each fault test reports one row of the table fault -> statuses seen ->
// data lost -> time to recover (t.Logf, and appended to the file named by
// HINDSIGHT_FAULT_REPORT when set).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// faultRig is a running server and a signed-up user.
type faultRig struct {
	t    *testing.T
	s    *Server
	url  string
	key  string
	user string
	logs *lockedBuffer
}

// startRig builds a server from cfg (Data is filled in), runs its
// background work and serves it on loopback until the test ends.
func startRig(t *testing.T, cfg config.Config) *faultRig {
	t.Helper()
	ctx := context.Background()
	logs := &lockedBuffer{}
	s, srv := serve(t, cfg, zerolog.New(logs))
	u, err := s.Accounts.CreateUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "faults")
	if err != nil {
		t.Fatal(err)
	}
	return &faultRig{t: t, s: s, url: srv.URL, key: key, user: u.ID, logs: logs}
}

// answer is one HTTP exchange's outcome.
type answer struct {
	status int
	header http.Header
	body   string
}

func (r *faultRig) do(method, path string, body any) answer {
	r.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			r.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	return exchange(r.t, method, r.url+path, r.key, rd)
}

// exchange sends one request with the API key and reads the whole answer;
// a transport error fails the test.
func exchange(t *testing.T, method, url, key string, body io.Reader) answer {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// syncSessions writes sessions named prefix-0..n-1, two messages each, in
// one batch, and returns their external ids.
func (r *faultRig) syncSessions(prefix string, n int) (answer, []string) {
	r.t.Helper()
	var sessions, messages []any
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		ids = append(ids, id)
		sessions = append(sessions, map[string]any{"externalId": id, "title": "session " + id})
		messages = append(messages,
			map[string]any{"sessionExternalId": id, "externalId": id + "-q", "role": "user",
				"textContent": fmt.Sprintf("how do I fix the %s flaky retry in worker %d", prefix, i)},
			map[string]any{"sessionExternalId": id, "externalId": id + "-a", "role": "assistant",
				"textContent": fmt.Sprintf("the %s worker %d retries with jittered backoff now", prefix, i)})
	}
	return r.do(http.MethodPost, "/sync/batch", map[string]any{"sessions": sessions, "messages": messages}), ids
}

func (r *faultRig) search(mode, q string, limit int) answer {
	r.t.Helper()
	return r.do(http.MethodGet, fmt.Sprintf("/api/search?type=%s&limit=%d&q=%s", mode, limit, url.QueryEscape(q)), nil)
}

func (r *faultRig) context(q string) answer {
	r.t.Helper()
	return r.do(http.MethodGet, "/api/context?q="+url.QueryEscape(q), nil)
}

// vectorCounts returns, over the user's sessions, how many vectors the
// chunks call for (one per chunk: the OpenAI-compatible embedder embeds a
// chunk whole) and how many the vector store holds with the current text.
func (r *faultRig) vectorCounts() (want, have int) {
	r.t.Helper()
	ctx := context.Background()
	docs := map[string]ingest.Doc{}
	err := r.s.Store.View(ctx, func(tx *kv.Tx) error {
		return tx.Sessions(r.user, func(s kv.Session) error {
			d, err := ingest.LoadDoc(tx, r.user, s.ID)
			docs[s.ID] = d
			return err
		})
	})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, sid := range slices.Sorted(maps.Keys(docs)) {
		d := docs[sid]
		want += len(d.Chunks)
		hashes, err := r.s.Semantic.Store.Hashes(ctx, r.user, sid)
		if err != nil {
			continue // the store is down: nothing counted as held
		}
		for _, c := range d.Chunks {
			// One window per chunk (the OpenAI embedder takes whole chunks),
			// embedded under the session's title.
			if h, ok := hashes[c.Ordinal*ingest.WindowsPerChunk]; ok && h == ingest.TextHash(ingest.EmbedText(d.Session.Title, c.Text)) {
				have++
			}
		}
	}
	return want, have
}

// waitEmbedded waits (until waitDeadline) until every chunk of the user's
// sessions has its vector, and returns how long that took (for the fault
// table) and how many are missing.
func (r *faultRig) waitEmbedded() (time.Duration, int) {
	r.t.Helper()
	start, deadline := time.Now(), waitDeadline(r.t)
	for {
		want, have := r.vectorCounts()
		if want > 0 && have == want {
			return time.Since(start), 0
		}
		if time.Now().After(deadline) {
			return time.Since(start), want - have
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFound waits until a full-text search for q finds n sessions.
func (r *faultRig) waitFound(q string, n int) {
	r.t.Helper()
	deadline := waitDeadline(r.t)
	for {
		a := r.search("fulltext", q, 100)
		var body struct {
			Results []json.RawMessage `json:"results"`
		}
		json.Unmarshal([]byte(a.body), &body)
		if a.status == http.StatusOK && len(body.Results) >= n {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("full-text search for %q found %d sessions, want %d (last answer %d %s)", q, len(body.Results), n, a.status, a.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// statuses tallies the status codes one kind of request got.
type statuses struct {
	mu sync.Mutex
	n  map[string]map[int]int // kind -> status -> count
}

func (s *statuses) add(kind string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]map[int]int{}
	}
	if s.n[kind] == nil {
		s.n[kind] = map[int]int{}
	}
	s.n[kind][status]++
}

// count is how many answers of any kind had status.
func (s *statuses) count(status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.n {
		n += m[status]
	}
	return n
}

func (s *statuses) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(s.n)) {
		var codes []string
		for _, c := range slices.Sorted(maps.Keys(s.n[kind])) {
			codes = append(codes, fmt.Sprintf("%d×%d", c, s.n[kind][c]))
		}
		parts = append(parts, kind+" "+strings.Join(codes, ","))
	}
	return strings.Join(parts, "; ")
}

// report logs a row of the fault table and appends it to
// $HINDSIGHT_FAULT_REPORT when set.
func report(t *testing.T, fault string, seen *statuses, lost int, recovered time.Duration) {
	t.Helper()
	row := fmt.Sprintf("| %s | %s | %d | %s |\n", fault, seen, lost, recovered.Round(10*time.Millisecond))
	t.Logf("fault table row: %s", strings.TrimSpace(row))
	if path := os.Getenv("HINDSIGHT_FAULT_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("fault report: %v", err)
			return
		}
		defer f.Close()
		f.WriteString(row)
	}
}

// readyReasons returns /ready's status and reasons.
func (r *faultRig) readyReasons() (int, string) {
	req, _ := http.NewRequest(http.MethodGet, r.url+"/ready", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of a series in /metrics (0 when absent).
func (r *faultRig) metric(series string) float64 {
	r.t.Helper()
	resp, err := http.Get(r.url + "/metrics")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			fmt.Sscanf(v, "%g", &f)
			return f
		}
	}
	return 0
}
