package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
	"github.com/hindsight-dev/hindsight/server"
)

// openaiApp is an app whose embedder is the OpenAI-compatible server on loopback.
func openaiApp(t *testing.T, dir string, fake *openaitest.Server, dim int) *testApp {
	t.Helper()
	return newTestAppWith(t, dir, config.Semantic{Embedder: "openai", OpenAIKey: "sk-test", OpenAIBaseURL: fake.URL(),
		OpenAIModel: "text-embedding-3-small", OpenAIDim: dim})
}

func sessionBatch(n, msgs int, word string) map[string]any {
	var sessions, messages []any
	for i := range n {
		sid := fmt.Sprintf("s%04d", i)
		sessions = append(sessions, map[string]any{"externalId": sid, "title": fmt.Sprintf("session %d", i)})
		for j := range msgs {
			role := []string{"user", "assistant"}[j%2]
			messages = append(messages, msg(sid, fmt.Sprintf("m%d", j), role,
				map[string]any{"textContent": fmt.Sprintf("%s %d of session %d", word, j, i)}))
		}
	}
	return map[string]any{"sessions": sessions, "messages": messages}
}

// The embedding lifecycle: asynchronous, never re-embedding unchanged text,
// only new text when a session grows, and a new message searchable once embedded.
func TestEmbeddingLifecycle(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t, openaitest.Options{Dim: 1536})
	// Vectors shortened to 256 dimensions (as HINDSIGHT_OPENAI_DIM does):
	// what is embedded when does not depend on their size, and every one of
	// the thousands embedded is encoded, sent, decoded and stored under -race.
	ta := openaiApp(t, t.TempDir(), fake, 256)
	key := ta.key("alice")
	// 600 sessions: more than two of the pipeline's batches of 256.
	const n = 600
	ta.batch(key, sessionBatch(n, 2, "message"))
	ta.idle()
	first := fake.Requests()
	if first == 0 {
		t.Fatalf("no embedding requests for %d new sessions", n)
	}
	// Re-sync the same sessions: nothing changed, nothing embedded.
	ta.batch(key, sessionBatch(n, 2, "message"))
	ta.idle()
	if got := fake.Requests(); got != first {
		t.Fatalf("re-syncing %d unchanged sessions made %d embedding requests", n, got-first)
	}
	// A title change re-embeds each session's window once, under the new
	// title (its header); syncing the same again embeds nothing.
	b := sessionBatch(n, 2, "message")
	for _, s := range b["sessions"].([]any) {
		s.(map[string]any)["title"] = "renamed"
	}
	renamedFrom := len(fake.Received())
	ta.batch(key, b)
	ta.idle()
	var reembedded int
	for _, r := range fake.Received()[renamedFrom:] {
		for _, in := range r.Input {
			reembedded++
			if !strings.HasPrefix(in, "renamed\n\n") {
				t.Fatalf("after a title change a window was embedded without the title header: %q", in)
			}
		}
	}
	if reembedded != n {
		t.Errorf("renaming %d one-window sessions embedded %d texts, want %d", n, reembedded, n)
	}
	first = fake.Requests()
	ta.batch(key, b)
	ta.idle()
	if got := fake.Requests(); got != first {
		t.Fatalf("re-syncing %d renamed sessions made %d embedding requests", n, got-first)
	}
	// One new message: exactly its text is embedded, not the session again.
	before := len(fake.Received())
	code, body := ta.do(http.MethodPost, key, "/sync/message", msg("s0007", "m9", "user", map[string]any{"textContent": "an entirely new question about quasars"}))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	searches := 0
	waitUntil(t, "a new message semantically searchable", func() bool {
		searches++
		rs := ta.search(key, "an entirely new question about quasars", "&type=semantic&limit=1")
		return len(rs) == 1 && rs[0].Title == "renamed" && rs[0].AltID == rs[0].ID
	})
	ta.idle()
	inputs := 0
	for _, r := range fake.Received()[before:] {
		inputs += len(r.Input)
	}
	// Every search embedded its query (one input each); the rest is indexing,
	// which must have embedded the new message's text and nothing else.
	if got := inputs - searches; got != 1 {
		t.Errorf("growing a session by one message embedded %d texts, want 1", got)
	}
	if ta.app.Semantic.Usage.Snapshot().CostUSD <= 0 {
		t.Error("embedding cost was not counted")
	}
}

func TestSemanticAndHybridSearch(t *testing.T) {
	fake := openaitest.New(t, openaitest.Options{Dim: 1536})
	ta := openaiApp(t, t.TempDir(), fake, 0)
	alice, bob := ta.key("alice"), ta.key("bob")
	ta.batch(alice, map[string]any{
		"sessions": []any{map[string]any{"externalId": "a1", "title": "nil map"}, map[string]any{"externalId": "a2", "title": "other"}},
		"messages": []any{
			msg("a1", "m1", "user", map[string]any{"textContent": "the crash with the nil map"}),
			msg("a2", "m1", "user", map[string]any{"textContent": "tune the connection pool size"}),
		},
	})
	ta.batch(bob, map[string]any{
		"sessions": []any{map[string]any{"externalId": "b1", "title": "bob's secret"}},
		"messages": []any{msg("b1", "m1", "user", map[string]any{"textContent": "the crash with the nil map"})},
	})
	ta.idle()
	for _, mode := range []string{"semantic", "hybrid"} {
		// The fake embedder's vectors match only identical text: the query
		// is the window as embedded, under its session's title.
		rs := ta.search(alice, "nil map\n\nthe crash with the nil map", "&type="+mode+"&explain=true")
		if len(rs) == 0 || rs[0].Title != "nil map" || rs[0].AltID == "" || rs[0].Score == nil {
			t.Errorf("%s: %+v", mode, rs)
		}
		for _, r := range rs {
			if strings.Contains(r.Title, "bob") {
				t.Errorf("%s: alice sees bob's session", mode)
			}
		}
	}
	code, b := ta.do(http.MethodGet, alice, "/api/search?q=nil+map&type=hybrid&explain=true", nil)
	if code != 200 || !strings.Contains(string(b), `"legs"`) {
		t.Errorf("hybrid explain has no legs: %d %s", code, b)
	}
	// Context retrieves through both legs.
	_, b = ta.do(http.MethodGet, alice, "/api/context?q=the+crash+with+the+nil+map&format=messages", nil)
	if !strings.Contains(string(b), "the crash with the nil map") || strings.Contains(string(b), "secret") {
		t.Errorf("context: %s", b)
	}
	// The provider fails at query time: hybrid degrades to full-text and says so.
	fake.Script(openaitest.ServerError(), openaitest.ServerError(), openaitest.ServerError(), openaitest.ServerError(),
		openaitest.ServerError(), openaitest.ServerError(), openaitest.ServerError(), openaitest.ServerError())
	req, _ := http.NewRequest(http.MethodGet, ta.srv.URL+"/api/search?q=nil+map&type=hybrid", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Results []searchResult }
	json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Search-Degraded") != "semantic" || len(res.Results) == 0 {
		t.Errorf("hybrid with the provider down: %d degraded=%q results=%d", resp.StatusCode, resp.Header.Get("X-Search-Degraded"), len(res.Results))
	}
}

// A provider outage keeps embedding work queued while full-text keeps working.
func TestProviderOutageKeepsWorkQueued(t *testing.T) {
	t.Parallel()
	fake := openaitest.New(t, openaitest.Options{Dim: 1536})
	ta := openaiApp(t, t.TempDir(), fake, 0)
	key := ta.key("alice")
	outage := make([]openaitest.Fault, 40)
	for i := range outage {
		outage[i] = openaitest.ServerError()
	}
	fake.Script(outage...)
	ta.batch(key, map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "outage"}},
		"messages": []any{msg("s1", "m1", "user", map[string]any{"textContent": "flux capacitor overheating"})},
	})
	// Full-text finds it while the provider is down.
	waitFor(t, func() bool {
		rs := ta.search(key, "capacitor", "")
		return len(rs) == 1
	})
	// Once the provider answers again the vectors arrive; meanwhile
	// semantic search is a 503 (the provider's outage, not a server fault).
	deadline := time.Now().Add(60 * time.Second)
	for {
		// Polling stops at the first 200 that finds the session; a provider
		// outage is a 503, never a 500.
		code, rs := ta.searchStatus(key, "flux capacitor overheating", "&type=semantic")
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Fatalf("semantic search during the outage: %d, want 200 or 503", code)
		}
		if code == http.StatusOK && len(rs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("vectors never arrived after the outage")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A store holding another model's vectors is refused at start, naming reembed.
func TestModelChangeIsRefused(t *testing.T) {
	dir := t.TempDir()
	fake := openaitest.New(t, openaitest.Options{Dim: 1536})
	ta := openaiApp(t, dir, fake, 0)
	key := ta.key("alice")
	ta.batch(key, sessionBatch(3, 2, "hello"))
	ta.idle()
	ta.close()
	_, err := server.New(context.Background(), config.Config{Data: dir, Semantic: config.Semantic{Embedder: "openai", OpenAIKey: "k",
		OpenAIBaseURL: fake.URL(), OpenAIModel: "text-embedding-3-small", OpenAIDim: 256}}, nopLogger())
	if err == nil || !strings.Contains(err.Error(), "hindsight reembed") {
		t.Fatalf("start with another dimension: %v", err)
	}
	// Without an embedder the same data still serves full-text search.
	ta2 := newTestApp(t, dir)
	if rs := ta2.search(key, "hello", ""); len(rs) != 3 {
		t.Errorf("full-text after refusing semantic: %d results", len(rs))
	}
}

// The offline model finds paraphrases (skipped loudly without `make model`).
func TestLocalEmbedderParaphrase(t *testing.T) {
	dir := os.Getenv("HINDSIGHT_MODEL_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", ".cache", "models", "use-lite")
	}
	if _, err := os.Stat(filepath.Join(dir, "model.json")); err != nil {
		if os.Getenv("HINDSIGHT_REQUIRE_MODEL") == "1" {
			t.Fatalf("the offline model is required but missing in %s: run make model", dir)
		}
		t.Skipf("SKIPPING: offline model not found in %s (run `make model`)", dir)
	}
	ta := newTestAppWith(t, t.TempDir(), config.Semantic{Embedder: "local", ModelDir: dir})
	key := ta.key("alice")
	ta.batch(key, map[string]any{
		"sessions": []any{map[string]any{"externalId": "a", "title": "debugging"}, map[string]any{"externalId": "b", "title": "baking"}},
		"messages": []any{
			msg("a", "m1", "user", map[string]any{"textContent": "debugging a crash with a null pointer dereference"}),
			msg("b", "m1", "user", map[string]any{"textContent": "bake a chocolate cake for the party"}),
		},
	})
	ta.idle()
	rs := ta.search(key, "how do I fix a segfault in my C program", "&type=semantic")
	if len(rs) != 2 || rs[0].Title != "debugging" {
		t.Errorf("semantic search with the offline model: %v", titles(rs))
	}
	// A session whose words are only in its title is found by semantic
	// search: windows are embedded under the title, and a session without
	// message text is embedded by its title alone.
	bob := ta.key("bob")
	ta.batch(bob, map[string]any{
		"sessions": []any{map[string]any{"externalId": "k", "title": "kubernetes pod stuck restarting in CrashLoopBackOff"},
			map[string]any{"externalId": "c", "title": "notes"}},
		"messages": []any{msg("c", "m1", "user", map[string]any{"textContent": "bake a chocolate cake for the party"})},
	})
	ta.idle()
	rs = ta.search(bob, "my kubernetes pod keeps restarting", "&type=semantic")
	if len(rs) == 0 || rs[0].Title != "kubernetes pod stuck restarting in CrashLoopBackOff" {
		t.Errorf("a title-only session is not found by semantic search: %v", titles(rs))
	}
}

// reembed replaces another model's vectors, is resumable, and serve accepts
// the store afterwards.
func TestReembed(t *testing.T) {
	dir := t.TempDir()
	fake := openaitest.New(t, openaitest.Options{Dim: 1536})
	ta := openaiApp(t, dir, fake, 0)
	key := ta.key("alice")
	ta.batch(key, sessionBatch(20, 2, "hello"))
	ta.idle()
	ta.close()
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", fake.URL())
	t.Setenv("HINDSIGHT_OPENAI_DIM", "256")
	t.Setenv("HINDSIGHT_EMBEDDER", "openai")
	out, err := runCmd(t, "reembed", "--data", dir)
	if err != nil || !strings.Contains(out, "reembedded 20 sessions: 20 texts embedded") {
		t.Fatalf("reembed: %q %v", out, err)
	}
	out, err = runCmd(t, "reembed", "--data", dir) // resumes: nothing left to embed
	if err != nil || !strings.Contains(out, "0 texts embedded, 20 unchanged kept") {
		t.Fatalf("second reembed: %q %v", out, err)
	}
	ta2 := openaiApp(t, dir, fake, 256)
	if rs := ta2.search(key, "session 3\n\nhello 0 of session 3\n\nhello 1 of session 3", "&type=semantic&limit=1"); len(rs) != 1 || rs[0].Title != "session 3" {
		t.Errorf("semantic search after reembed: %v", titles(rs))
	}
}
