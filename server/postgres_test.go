package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
)

// TestServeRecordsInPostgres: a server with --records in PostgreSQL
// accepts a sync, indexes it and finds it; a node started later on the
// same database with a new data directory (a replaced machine) has the
// records, rebuilds its index from them and finds the session too.
func TestServeRecordsInPostgres(t *testing.T) {
	ctx := context.Background()
	cfg := config.Config{Records: pgtest.Database(t), Semantic: config.Semantic{Embedder: "none"}}
	s, srv := startWith(t, cfg)
	if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "postgres records"}},
		"messages": []any{map[string]any{"sessionExternalId": "s1", "externalId": "m1", "role": "user", "textContent": "a walrus in the database"}},
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
	search := func(s *Server, url string) {
		t.Helper()
		if err := s.Pipeline.WaitIdle(ctx); err != nil {
			t.Fatalf("pipeline did not drain: %v", err)
		}
		if code, b := get(t, url+"/api/search?q=walrus", key); code != http.StatusOK || !strings.Contains(b, "postgres records") {
			t.Fatalf("search: %d %s", code, b)
		}
	}
	search(s, srv.URL)

	s2, srv2 := startWith(t, cfg) // a fresh data directory, the same records
	for {
		if code, _ := get(t, srv2.URL+"/ready", ""); code == http.StatusOK {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	search(s2, srv2.URL)
}
