package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
)

// start wires a server over a fresh directory without an embedder, runs its
// background work and serves it on loopback until the test ends.
func start(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	return serve(t, config.Config{Semantic: config.Semantic{Embedder: "none"}}, zerolog.Nop())
}

// startWith is start with a given configuration (Data is set here).
func startWith(t *testing.T, cfg config.Config) (*Server, *httptest.Server) {
	t.Helper()
	return serve(t, cfg, zerolog.Nop())
}

// serve is the one test harness: it wires a server from cfg (in a fresh
// directory unless cfg.Data is set), runs its background work and serves it
// on loopback, and closes it all when the test ends.
func serve(t *testing.T, cfg config.Config, log zerolog.Logger) (*Server, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	if cfg.Data == "" {
		cfg.Data = t.TempDir()
	}
	s, err := New(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	bg, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Background(bg)
	}()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		if err := s.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, srv
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetricsAndReady(t *testing.T) {
	s, srv := start(t)
	ctx := context.Background()
	if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "metrics"}},
		"messages": []any{map[string]any{"sessionExternalId": "s1", "externalId": "m1", "role": "user", "textContent": "hello"}},
	})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/sync/batch", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("batch: %d", resp.StatusCode)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Pipeline.WaitIdle(wctx); err != nil {
		t.Fatalf("pipeline did not drain: %v", err)
	}
	get(t, srv.URL+"/api/sessions/get?id=doesnotexist0000", key)
	if code, b := get(t, srv.URL+"/api/search?q=hello", key); code != http.StatusOK {
		t.Fatalf("search: %d %s", code, b)
	}

	_, text := get(t, srv.URL+"/metrics", "")
	for _, want := range []string{
		`hindsight_http_requests_total{method="POST",route="/sync/batch",status="200"} 1`,
		`hindsight_http_requests_total{method="GET",route="/api/sessions/get",status="404"} 1`,
		`hindsight_http_request_duration_seconds_bucket{method="GET",route="/api/search"`,
		"hindsight_outbox_depth 0",
		"hindsight_index_lag_seconds_count 1",
		"hindsight_records_bytes ",
		"hindsight_indexed_sessions_total 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(text, "doesnotexist") {
		t.Error("an id from a query string leaked into metric labels")
	}
	if code, b := get(t, srv.URL+"/ready", ""); code != http.StatusOK || !strings.Contains(b, `"ready"`) {
		t.Errorf("/ready: %d %s", code, b)
	}
	s.rebuilding.Store(true)
	if code, b := get(t, srv.URL+"/ready", ""); code != http.StatusServiceUnavailable || !strings.Contains(b, "rebuilt") {
		t.Errorf("/ready while rebuilding: %d %s", code, b)
	}
}

// lockedBuffer is a bytes.Buffer the server's goroutines may log to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Run logs the effective configuration once, with every secret redacted.
func TestRunLogsRedactedConfig(t *testing.T) {
	const openaiKey, weaviateKey, password = "sk-live-0123456789", "wv-key-9876543210", "hunter2secret"
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.Semantic.Embedder = "none"
	cfg.Semantic.OpenAIKey = openaiKey
	cfg.Semantic.WeaviateKey = weaviateKey
	cfg.Semantic.OpenAIBaseURL = "https://user:" + password + "@llm.example/v1"
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, cfg, zerolog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cancel() // Run returns at once: it logs the configuration first
	if err := s.Run(ctx, ln); err != nil {
		t.Fatal(err)
	}
	var entry struct {
		Msg    string         `json:"message"`
		Config map[string]any `json:"config"`
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "effective configuration") {
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatal(err)
			}
		}
	}
	if entry.Config == nil {
		t.Fatalf("no configuration logged:\n%s", logs.String())
	}
	for _, secret := range []string{openaiKey, weaviateKey, password} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds the secret %q:\n%s", secret, logs.String())
		}
	}
	for k, want := range map[string]any{
		"openai_api_key": "[redacted]", "weaviate_api_key": "[redacted]", "embedder": "none",
		"rate_limit": 200.0, "data": cfg.Data, "addr": config.DefaultAddr,
		"openai_base_url": "https://user:xxxxx@llm.example/v1",
	} {
		if entry.Config[k] != want {
			t.Errorf("config.%s = %v, want %v", k, entry.Config[k], want)
		}
	}
}
