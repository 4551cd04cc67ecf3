package main

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestUsersAndKeysCommands(t *testing.T) {
	dir := t.TempDir()
	key := newKey(t, dir, "alice")

	out, err := runCmd(t, "users", "list", "--data", dir)
	if err != nil || !strings.Contains(out, "alice") {
		t.Fatalf("users list = %q, %v", out, err)
	}
	if _, err := runCmd(t, "users", "create", "alice", "--data", dir); err == nil {
		t.Error("creating a duplicate user succeeded")
	}
	if _, err := runCmd(t, "users", "create", "bad name!", "--data", dir); err == nil {
		t.Error("an invalid user name was accepted")
	}
	out, err = runCmd(t, "keys", "list", "--user", "alice", "--data", dir)
	if err != nil || !strings.Contains(out, key[:10]) || !strings.Contains(out, "active") {
		t.Fatalf("keys list = %q, %v", out, err)
	}
	if strings.Contains(out, key) {
		t.Fatal("keys list shows the whole key")
	}
	if _, err := runCmd(t, "keys", "revoke", key[:10], "--data", dir); err != nil {
		t.Fatal(err)
	}
	out, _ = runCmd(t, "keys", "list", "--user", "alice", "--data", dir)
	if !strings.Contains(out, "revoked") {
		t.Fatalf("revoked key not shown as revoked: %q", out)
	}
	if _, err := runCmd(t, "keys", "revoke", key[:10], "--data", dir); err == nil {
		t.Error("revoking an already revoked key succeeded")
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{}, {"nope"}, {"users"}, {"users", "create"}, {"keys", "create"}, {"keys", "list"},
		{"keys", "revoke"}, {"serve", "--addr"}, {"serve", "extra"}, {"serve", "--log-level", "loud"},
	} {
		_, err := runCmd(t, args...)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("hindsight %q: err = %v, want a usage error (exit 2)", args, err)
		}
	}
	if _, err := runCmd(t, "serve", "--help"); err != nil {
		t.Errorf("serve --help: %v", err)
	}
}

// While serve holds the data directory, key commands work through its admin
// socket (and never hang on the file lock).
func TestKeysThroughRunningServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	newKey(t, dir, "alice")
	srv := startServe(t, dir)

	// A command waiting on the file lock would wait for the server to
	// stop: runCmd's context ends it, with an error, at the test's deadline.
	out, err := runCmd(t, "keys", "create", "--user", "alice", "--label", "second", "--data", dir)
	if err != nil {
		t.Fatalf("keys create against a running server: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]

	get := func() int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/sessions", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("new key made through the server: status %d", code)
	}
	if _, err := runCmd(t, "users", "create", "bob", "--data", dir); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, "users", "list", "--data", dir)
	if err != nil || !strings.Contains(out, "bob") {
		t.Fatalf("users list through server = %q, %v", out, err)
	}
	// Revocation through the server takes effect at once, despite its key cache.
	if _, err := runCmd(t, "keys", "revoke", key[:10], "--data", dir); err != nil {
		t.Fatal(err)
	}
	if code := get(); code != http.StatusUnauthorized {
		t.Fatalf("revoked key: status %d, want 401", code)
	}
}

// A malformed setting stops the command before it starts, with exit status
// 2 and a message naming the variable or flag and what it accepts.
func TestBadConfigurationIsAUsageError(t *testing.T) {
	for _, tc := range []struct {
		env        map[string]string
		args       []string
		name, want string
	}{
		{map[string]string{"HINDSIGHT_RATE_LIMIT": "2OO"}, []string{"serve"}, "HINDSIGHT_RATE_LIMIT", "a number of requests per second"},
		{map[string]string{"HINDSIGHT_MAX_BODY_BYTES": "1k"}, []string{"serve"}, "HINDSIGHT_MAX_BODY_BYTES", "at least 1024"},
		{map[string]string{"HINDSIGHT_EMBEDDER": "bert"}, []string{"serve"}, "HINDSIGHT_EMBEDDER", "openai, local, none"},
		{map[string]string{"HINDSIGHT_EMBEDDER": "bert"}, []string{"reembed"}, "HINDSIGHT_EMBEDDER", "openai, local, none"},
		{nil, []string{"serve", "--rate-limit", "2OO"}, "-rate-limit", "a number of requests per second"},
		{nil, []string{"serve", "--log-format", "xml"}, "-log-format", "console, json"},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		_, err := runCmd(t, append(tc.args, "--data", t.TempDir())...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %q: err = %v, want exit 2 naming %s and %q", tc.env, tc.args, err, tc.name, tc.want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
	}
}
