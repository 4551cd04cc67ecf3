package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
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

// TestDataDirCommandsRefusePostgres: redact, reembed and restore work on
// the records of a data directory only; given records in PostgreSQL
// (--records or HINDSIGHT_RECORDS) each refuses, saying so and what to do
// instead, and touches nothing (no PostgreSQL is needed to refuse).
func TestDataDirCommandsRefusePostgres(t *testing.T) {
	const dsn = "postgres://nobody@127.0.0.1:1/none?sslmode=disable"
	for _, tc := range []struct {
		cmd  string
		args []string
		want string // besides the common part
	}{
		{"redact", nil, "not supported yet"},
		{"reembed", nil, "not supported yet"},
		{"restore", []string{filepath.Join(t.TempDir(), "backup.db")}, "pg_restore"},
	} {
		for _, viaEnv := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/env=%v", tc.cmd, viaEnv), func(t *testing.T) {
				dir := t.TempDir()
				args := append([]string{tc.cmd, "--data", dir}, tc.args...)
				if viaEnv {
					t.Setenv("HINDSIGHT_RECORDS", dsn)
				} else {
					args = append(args, "--records", dsn)
				}
				_, err := runCmd(t, args...)
				if err == nil {
					t.Fatalf("hindsight %s with the records in PostgreSQL succeeded, want a refusal", tc.cmd)
				}
				for _, want := range []string{tc.cmd + ": the records are in PostgreSQL", tc.want} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("the refused %s wrote %d entries into the data directory", tc.cmd, len(entries))
				}
			})
		}
	}
}
