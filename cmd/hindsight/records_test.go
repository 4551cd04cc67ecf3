package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
)

// TestRecordsInPostgres: `serve --records postgres://...` keeps the records
// in PostgreSQL, and the users and keys commands given the same --records
// work on the database while the server runs (no lock to wait for): the
// key they create authenticates at the server at once. backup refuses,
// pointing to pg_dump; a --records that is not a PostgreSQL address is an
// error that says what it wants.
func TestRecordsInPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	srv := startServe(t, t.TempDir(), "--records", dsn)
	if _, err := runCmd(t, "users", "create", "alice", "--records", dsn); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, "keys", "create", "--user", "alice", "--records", dsn)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]

	body, _ := json.Marshal(map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "kept in postgres"}},
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
		t.Fatalf("sync with the key the CLI wrote to PostgreSQL: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodGet, srv.URL+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "kept in postgres") {
		t.Fatalf("sessions: %d %s", resp.StatusCode, b)
	}
	if out, err := runCmd(t, "users", "list", "--records", dsn); err != nil || !strings.Contains(out, "alice") {
		t.Errorf("users list: %q, %v", out, err)
	}

	_, err = runCmd(t, "backup", "--out", filepath.Join(t.TempDir(), "b.db"), "--records", dsn)
	if err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("backup with the records in PostgreSQL: %v, want an error naming pg_dump", err)
	}
	_, err = runCmd(t, "users", "list", "--records", "mysql://db/hindsight")
	if err == nil || !strings.Contains(err.Error(), "postgres://") {
		t.Errorf("users list --records mysql://...: %v, want an error naming what --records takes", err)
	}
}
