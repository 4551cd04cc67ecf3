package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// Secrets as they would sit in sessions synced before redaction was on.
// They are split so that this file holds none whole.
var (
	oldAWSKey = "AKIA" + "QYLPMN5HHHFPZAM2"
	oldGHPat  = "ghp_" + "Q7xN2mK9pL4vR8tW1zY5cB3nH6jD0fGsA2eU"
	oldDBPass = "Kq7" + "#vT2!pWz9x"
)

// hindsight redact rewrites a store written with redaction off: a dry run
// counts and changes nothing, the run removes every secret from the records
// and queues the sessions for re-indexing (after which search no longer
// finds them), a second run finds nothing, and a running server that does
// not redact refuses to through its admin socket.
func TestRedactCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := newKey(t, dir, "alice")
	srv := startServe(t, dir, "--rate-limit", "0", "--redact=off", "--embedder", "none")
	batch := map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "fix login (password=" + oldDBPass + ")"}},
		"messages": []any{
			map[string]any{"sessionExternalId": "s1", "externalId": "m1", "role": "user", "textContent": "deploy with AWS_ACCESS_KEY_ID=" + oldAWSKey + " please, quokka"},
			map[string]any{"sessionExternalId": "s1", "externalId": "m2", "role": "assistant", "parts": []any{
				map[string]any{"type": "tool-call", "toolName": "Bash", "args": map[string]any{"command": "gh auth login --with-token " + oldGHPat}},
			}},
		},
	}
	postJSON(t, srv.URL+"/sync/batch", key, batch)
	searchUntil(t, srv.URL, key, oldAWSKey, 1)

	if _, err := runCmd(t, "redact", "--data", dir); err == nil || !strings.Contains(err.Error(), "does not redact") {
		t.Fatalf("redact through a server with redaction off: %v, want a refusal", err)
	}
	stop(t, srv)

	out, err := runCmd(t, "redact", "--data", dir, "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"would redact: 1 sessions, 2 messages", "aws-access-token 1", "github-pat 1", "generic-password 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(storedText(t, dir), oldAWSKey) {
		t.Fatal("the dry run changed the records")
	}

	out, err = runCmd(t, "redact", "--data", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "redacted: 1 sessions, 2 messages") || !strings.Contains(out, "3 secrets") {
		t.Errorf("redact output:\n%s", out)
	}
	text := storedText(t, dir)
	for _, secret := range []string{oldAWSKey, oldGHPat, oldDBPass} {
		if strings.Contains(text, secret) {
			t.Errorf("a secret is still stored after hindsight redact: %.12s...", secret)
		}
	}
	if !strings.Contains(text, "[redacted:aws-access-token]") || !strings.Contains(text, "quokka") {
		t.Errorf("the records lost more than the secrets:\n%s", text)
	}
	if out, _ := runCmd(t, "redact", "--data", dir); !strings.Contains(out, "redacted: 0 sessions") {
		t.Errorf("a second run redacted again:\n%s", out)
	}

	// The server (redacting by default) re-indexes the queued session: the
	// old text leaves the index; through its socket there is nothing left.
	srv = startServe(t, dir, "--rate-limit", "0", "--embedder", "none")
	searchUntil(t, srv.URL, key, oldAWSKey, 0)
	searchUntil(t, srv.URL, key, "quokka", 1)
	out, err = runCmd(t, "redact", "--data", dir)
	if err != nil || !strings.Contains(out, "through the running server") || !strings.Contains(out, "0 sessions") {
		t.Errorf("redact through the running server: %v\n%s", err, out)
	}
	var stats struct{ Redactions map[string]int64 }
	getAPI(t, srv.URL+"/api/stats", key, &stats)
	if stats.Redactions["aws-access-token"] != 1 || stats.Redactions["github-pat"] != 1 {
		t.Errorf("/api/stats redactions = %v", stats.Redactions)
	}
}

func stop(t *testing.T, c *child) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("serve did not stop cleanly: %v\n%s", err, c.stderr)
	}
}

// storedText returns every session and message record in dir, as JSON.
func storedText(t *testing.T, dir string) string {
	t.Helper()
	st, err := kv.Open(dir, kv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err = st.View(context.Background(), func(tx *kv.Tx) error {
		users, err := tx.Users()
		if err != nil {
			return err
		}
		for _, u := range users {
			if err := tx.Sessions(u.ID, func(s kv.Session) error {
				enc.Encode(s)
				return tx.Messages(u.ID, s.ID, func(m kv.Message) error { return enc.Encode(m) })
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func postJSON(t *testing.T, u, key string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d", u, resp.StatusCode)
	}
}

func getAPI(t *testing.T, u, key string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// searchUntil polls full-text search until q finds want sessions; indexing
// is asynchronous. It gives up after a minute, generous for a loaded machine.
func searchUntil(t *testing.T, base, key, q string, want int) {
	t.Helper()
	var res struct{ Results []json.RawMessage }
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		getAPI(t, base+"/api/search?mode=fulltext&q="+url.QueryEscape(`"`+q+`"`), key, &res)
		if len(res.Results) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("search %q finds %d sessions, want %d", q, len(res.Results), want)
		}
	}
}
