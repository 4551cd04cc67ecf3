package importer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/redact"
)

// With Options.Redact, nothing an import sends holds a secret: the hook
// runs on each session before it is compared or sent.
func TestUploadRedactsBeforeSending(t *testing.T) {
	red, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := "ghp_" + "Q7xN2mK9pL4vR8tW1zY5cB3nH6jD0fGsA2eU" // split: this file holds no token whole
	var mu sync.Mutex
	var sent strings.Builder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Write([]byte(`{"sessions":[]}`))
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent.Write(b)
		mu.Unlock()
		w.Write([]byte(`{"ok":true,"id":"x","sessions":{},"messages":{}}`))
	}))
	defer srv.Close()
	p := filepath.Join(t.TempDir(), "s.jsonl")
	line := `{"type":"user","uuid":"u1","timestamp":"2025-01-01T00:00:00Z","message":{"content":"export GITHUB_TOKEN=` + key + ` and <private>my address</private>"}}` + "\n"
	if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	items, err := ClaudeCode(p, ReadOptions{MaxPartBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	hook, found := Redaction(red)
	var waits []time.Duration
	if _, err := Upload(context.Background(), testClient(srv.URL, &waits), items, Options{Concurrency: 1, Singles: true, Redact: hook}); err != nil {
		t.Fatal(err)
	}
	out := sent.String()
	if !strings.Contains(out, "[redacted:github-pat]") || strings.Contains(out, key) || strings.Contains(out, "my address") {
		t.Fatalf("sent:\n%s", out)
	}
	// Twice each: in the message and in the title the reader makes of it.
	if c := found(); c["github-pat"] != 2 || c[redact.RulePrivate] != 2 {
		t.Errorf("found %v", c)
	}
}
