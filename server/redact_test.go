package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
	"github.com/hindsight-dev/hindsight/kv"
)

// redactionRig syncs one generated secret of every kind through the sync
// API, in every field that takes text, and labels the session with a
// secret in its notes.
type redactionRig struct {
	srv     string
	key     string
	secrets []string // what must be nowhere
	kinds   []string
	word    string // a plain word of the same messages, which search must find
	session map[string]any
}

func syncSecrets(t *testing.T, s *Server, srv string) redactionRig {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	rig := redactionRig{srv: srv, key: key, word: "zanzibarian"}
	samples := bench.SecretCorpus(11, 1)
	var messages []map[string]any
	for i, smp := range samples {
		rig.secrets = append(rig.secrets, smp.Secret)
		rig.kinds = append(rig.kinds, smp.Kind)
		m := map[string]any{"sessionExternalId": "s1", "externalId": fmt.Sprintf("m%d", i), "role": "user"}
		switch i % 4 { // every field a secret can arrive in
		case 0:
			m["textContent"] = "the " + rig.word + " step: " + smp.Text
		case 1:
			m["parts"] = []any{map[string]any{"type": "text", "content": map[string]any{"text": smp.Text}}}
		case 2:
			args, _ := json.Marshal(map[string]any{"command": smp.Text, "timeout": 30})
			m["parts"] = []any{map[string]any{"type": "tool-call", "toolName": "Bash", "args": string(args)},
				map[string]any{"type": "tool-result", "toolName": "Bash", "content": "$ env\n" + smp.Text}}
		case 3:
			m["parts"] = []any{map[string]any{"type": "thinking", "text": "I should not repeat " + smp.Text}}
		}
		messages = append(messages, m)
	}
	title := "deploy with " + samples[0].Secret // an AWS key id in the title
	path := "/home/alice/" + samples[1].Text    // and something in the project path
	rig.session = map[string]any{"externalId": "s1", "title": title, "projectPath": path}
	post(t, srv+"/sync/session", key, rig.session)
	post(t, srv+"/sync/batch", key, map[string]any{"messages": messages[1:]})
	post(t, srv+"/sync/message", key, messages[0])
	// Eval labels are typed text too.
	var list struct{ Sessions []struct{ ID string } }
	getJSON(t, srv+"/api/sessions", key, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("%d sessions", len(list.Sessions))
	}
	notes := "works with " + samples[6].Secret // a GitHub token
	rig.secrets = append(rig.secrets, samples[6].Secret)
	patch(t, srv+"/api/sessions/eval", key, map[string]any{"ids": []string{list.Sessions[0].ID}, "evalReady": true,
		"evalNotes": notes, "expectedOutput": "use " + samples[7].Secret})
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := s.Pipeline.WaitIdle(wctx); err != nil {
		t.Fatal(err)
	}
	return rig
}

// TestRedactionEndToEnd syncs a secret of every kind through the HTTP API
// and looks for them wherever Hindsight keeps or sends text: the records as
// the API returns them, the exports, full-text search, what the embedding
// provider was asked to embed, the logs and a backup.
func TestRedactionEndToEnd(t *testing.T) {
	provider := openaitest.New(t, openaitest.Options{APIKey: "sk-test"})
	var logs lockedBuffer
	s, srv := serve(t, config.Config{Semantic: config.Semantic{
		Embedder: "openai", OpenAIKey: "sk-test", OpenAIBaseURL: provider.URL(), OpenAIDim: 64,
	}}, zerolog.New(&logs).Level(zerolog.DebugLevel))
	rig := syncSecrets(t, s, srv.URL)
	var list struct{ Sessions []struct{ ID string } }
	getJSON(t, srv.URL+"/api/sessions", rig.key, &list)
	id := list.Sessions[0].ID

	places := map[string]string{}
	_, places["GET /api/sessions/get"] = get(t, srv.URL+"/api/sessions/get?id="+id, rig.key)
	_, places["GET /api/sessions"] = get(t, srv.URL+"/api/sessions", rig.key)
	for _, f := range []string{"json", "markdown", "jsonl"} {
		code, body := get(t, srv.URL+"/api/export?id="+id+"&format="+f, rig.key)
		if code != http.StatusOK {
			t.Fatalf("export %s: %d %s", f, code, body)
		}
		places["export "+f] = body
	}
	_, places["GET /api/evals"] = get(t, srv.URL+"/api/evals", rig.key)
	_, places["GET /api/export/evals"] = get(t, srv.URL+"/api/export/evals", rig.key)
	_, places["GET /api/context"] = get(t, srv.URL+"/api/context?q="+rig.word, rig.key)
	var embedded strings.Builder
	for _, req := range provider.Received() {
		embedded.WriteString(strings.Join(req.Input, "\n"))
	}
	places["the embedding provider's inputs"] = embedded.String()
	places["the server's logs"] = logs.String()
	var backup bytes.Buffer
	if _, err := s.Store.Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	places["the backup file"] = backup.String()
	places["the backup's records"] = recordsOf(t, backup.Bytes())

	if embedded.Len() == 0 || !strings.Contains(embedded.String(), rig.word) {
		t.Fatal("the provider embedded nothing of the session: the vectors were not checked")
	}
	if !strings.Contains(places["GET /api/sessions/get"], rig.word) || !strings.Contains(places["the backup's records"], rig.word) {
		t.Fatal("the session's text is not where it is looked for")
	}
	for where, text := range places {
		for i, secret := range rig.secrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the secret of %s", where, kindOf(rig, i))
			}
		}
	}
	if !strings.Contains(places["GET /api/sessions/get"], "[redacted:github-pat]") {
		t.Error("the session shows no [redacted:github-pat] marker")
	}
	if !strings.Contains(places["GET /api/evals"], "[redacted:") {
		t.Error("the eval notes show no marker")
	}
	// Full-text search finds the session by its words, never by a secret.
	if !searchFinds(t, srv.URL, rig.key, rig.word) {
		t.Fatal("search does not find the session by a plain word")
	}
	for i, secret := range rig.secrets {
		if strings.ContainsAny(secret, "\n") || len(secret) > 200 {
			continue // a key body: its lines are checked above
		}
		if searchFinds(t, srv.URL, rig.key, secret) {
			t.Errorf("searching the secret of %s finds the session", kindOf(rig, i))
		}
	}
	// /api/stats counts what was redacted, by kind.
	var st struct{ Redactions map[string]int64 }
	getJSON(t, srv.URL+"/api/stats", rig.key, &st)
	for _, rule := range []string{"aws-access-token", "github-pat", "private-key", "url-password", "jwt", "private"} {
		if st.Redactions[rule] == 0 {
			t.Errorf("/api/stats redactions lack %s: %v", rule, st.Redactions)
		}
	}
	// Re-sending the same messages (a plugin retrying) counts nothing again.
	before := st.Redactions["aws-access-token"]
	post(t, srv.URL+"/sync/session", rig.key, rig.session)
	getJSON(t, srv.URL+"/api/stats", rig.key, &st)
	if st.Redactions["aws-access-token"] != before {
		t.Errorf("an unchanged title was counted again: %d, then %d", before, st.Redactions["aws-access-token"])
	}
}

// TestRedactionOffStoresSecrets is the control: with HINDSIGHT_REDACT=off
// the same checks find the secrets, so the test above can fail.
func TestRedactionOffStoresSecrets(t *testing.T) {
	s, srv := startWith(t, config.Config{Semantic: config.Semantic{Embedder: "none"}, Redact: config.Redact{Off: true}})
	rig := syncSecrets(t, s, srv.URL)
	var list struct{ Sessions []struct{ ID string } }
	getJSON(t, srv.URL+"/api/sessions", rig.key, &list)
	_, body := get(t, srv.URL+"/api/sessions/get?id="+list.Sessions[0].ID, rig.key)
	var backup bytes.Buffer
	if _, err := s.Store.Backup(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	records := recordsOf(t, backup.Bytes())
	for i, secret := range rig.secrets[:len(rig.secrets)-2] {
		if !strings.Contains(body, secret) && !strings.Contains(body, jsonEscaped(secret)) {
			t.Errorf("with redaction off, the session lacks the secret of %s", kindOf(rig, i))
		}
		if !strings.Contains(records, secret) && !strings.Contains(records, jsonEscaped(secret)) {
			t.Errorf("with redaction off, the backup lacks the secret of %s", kindOf(rig, i))
		}
	}
	if !searchFinds(t, srv.URL, rig.key, rig.secrets[0]) {
		t.Error("with redaction off, searching an AWS key id does not find its session")
	}
}

func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func kindOf(rig redactionRig, i int) string {
	if i < len(rig.kinds) {
		return rig.kinds[i]
	}
	return "the eval notes"
}

// recordsOf restores a backup and returns every record in it, decoded.
func recordsOf(t *testing.T, backup []byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, kv.FileName), backup, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := kv.Open(dir, kv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var b strings.Builder
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

func searchFinds(t *testing.T, srv, key, q string) bool {
	t.Helper()
	var res struct{ Results []json.RawMessage }
	getJSON(t, srv+"/api/search?mode=fulltext&q="+url.QueryEscape(`"`+q+`"`), key, &res)
	return len(res.Results) > 0
}

func post(t *testing.T, u, key string, body any) {
	t.Helper()
	send(t, http.MethodPost, u, key, body)
}

func patch(t *testing.T, u, key string, body any) {
	t.Helper()
	send(t, http.MethodPatch, u, key, body)
}

func send(t *testing.T, method, u, key string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, u, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"errors":["`)) {
		t.Fatalf("%s %s: %d %s", method, u, resp.StatusCode, out)
	}
}

func getJSON(t *testing.T, u, key string, v any) {
	t.Helper()
	code, body := get(t, u, key)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}
