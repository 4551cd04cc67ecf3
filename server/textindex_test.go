package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/kv"
)

// call sends a request with the key and returns status, headers and body.
func call(t *testing.T, method, url, key string, body any) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func syncOne(t *testing.T, base, key, ext, title, text string) {
	t.Helper()
	code, _, body := call(t, http.MethodPost, base+"/sync/batch", key, map[string]any{
		"sessions": []any{map[string]any{"externalId": ext, "title": title}},
		"messages": []any{
			map[string]any{"sessionExternalId": ext, "externalId": ext + "-u", "role": "user", "textContent": text},
			map[string]any{"sessionExternalId": ext, "externalId": ext + "-a", "role": "assistant", "textContent": "Answer about " + text},
		},
	})
	if code != http.StatusOK {
		t.Fatalf("sync %s: %d %s", ext, code, body)
	}
}

type searchReply struct {
	Results []struct {
		ID        string   `json:"id"`
		Title     string   `json:"title"`
		Snippet   string   `json:"snippet"`
		MatchedIn []string `json:"matchedIn"`
	} `json:"results"`
}

// waitSearch polls full-text search until want titles (in any order) are
// the results, and returns the last reply.
func waitSearch(t *testing.T, base, key, q string, want ...string) searchReply {
	t.Helper()
	deadline := waitDeadline(t)
	for {
		code, _, body := call(t, http.MethodGet, base+"/api/search?explain=true&q="+q, key, nil)
		var r searchReply
		json.Unmarshal([]byte(body), &r)
		var got []string
		for _, h := range r.Results {
			got = append(got, h.Title)
		}
		if code == http.StatusOK && fmt.Sprint(got) == fmt.Sprint(want) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("search %q: %d %s; want titles %v", q, code, body, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestWeaviateTextIndex runs the server with its full-text index in a real
// Weaviate: syncs become searchable with snippets, /api/context reads the
// chunks, deletion removes them, the node keeps no index directory, and
// while Weaviate is down syncs are accepted, search answers 503 with
// Retry-After, /ready says why, and the writes of the outage are indexed
// once it is back.
func TestWeaviateTextIndex(t *testing.T) {
	t.Parallel()
	wv := weaviatetest.Start(t)
	ctx := context.Background()
	data := t.TempDir()
	s, srv := startWith(t, config.Config{Data: data, Semantic: config.Semantic{Embedder: "none", WeaviateURL: wv.URL},
		TextIndex: "weaviate", WeaviateReplication: 1})
	if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	syncOne(t, srv.URL, key, "s1", "Flaky auth test", "the parseConfigFile helper fails when the token expires")
	syncOne(t, srv.URL, key, "s2", "Database migration", "add an index to the users table")

	r := waitSearch(t, srv.URL, key, "config+token", "Flaky auth test")
	if h := r.Results[0]; !strings.Contains(h.Snippet, "<mark>") || fmt.Sprint(h.MatchedIn) != "[messages]" {
		t.Errorf("explain: snippet %q matchedIn %v", h.Snippet, h.MatchedIn)
	}
	waitSearch(t, srv.URL, key, "%22users+table%22", "Database migration")
	waitSearch(t, srv.URL, key, "table+-migration") // excluded
	code, _, body := call(t, http.MethodGet, srv.URL+"/api/context?q=token+expires", key, nil)
	if code != http.StatusOK || !strings.Contains(body, "parseConfigFile") {
		t.Errorf("context: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(data, "index")); !os.IsNotExist(err) {
		t.Errorf("the node keeps an index directory in Weaviate mode: %v", err)
	}

	// Weaviate goes away.
	wv.Kill()
	code, hdr, body := call(t, http.MethodGet, srv.URL+"/api/search?q=token", key, nil)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("search with weaviate down: %d Retry-After %q %s", code, hdr.Get("Retry-After"), body)
	}
	code, _, body = call(t, http.MethodGet, srv.URL+"/api/context?q=token", key, nil)
	if code != http.StatusServiceUnavailable {
		t.Errorf("context with weaviate down: %d %s", code, body)
	}
	syncOne(t, srv.URL, key, "s3", "Kubernetes rollout", "the deployment stalled during the outage")
	code, body = get(t, srv.URL+"/ready", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "weaviate") {
		t.Errorf("ready with weaviate down: %d %s", code, body)
	}

	// It comes back: the outage's write is indexed, nothing was lost.
	if err := wv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	waitSearch(t, srv.URL, key, "deployment+outage", "Kubernetes rollout")
	// The search can find it before the server is ready again: a rebuild
	// the outage interrupted writes every session before it settles the
	// tenants and reports done, and the outbox's retry waits its backoff.
	waitFor(t, "/ready to turn 200 after weaviate is back", func() bool {
		code, _ := get(t, srv.URL+"/ready", "")
		return code == http.StatusOK
	})

	// Deletion removes the session's documents from Weaviate.
	var list struct {
		Sessions []struct{ ID, Title string } `json:"sessions"`
	}
	_, _, body = call(t, http.MethodGet, srv.URL+"/api/sessions", key, nil)
	json.Unmarshal([]byte(body), &list)
	for _, ss := range list.Sessions {
		if ss.Title == "Flaky auth test" {
			if code, _, body := call(t, http.MethodDelete, srv.URL+"/api/sessions?id="+ss.ID, key, nil); code != http.StatusOK {
				t.Fatalf("delete: %d %s", code, body)
			}
		}
	}
	if err := s.Pipeline.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if n, c, err := s.Index.Count(ctx); err != nil || n != 2 || c != 2 {
		t.Errorf("documents after deleting one of three sessions: %d sessions, %d chunks, %v", n, c, err)
	}
}

// seed starts a server on data, syncs n sessions through the API, waits
// until they are indexed and closes it.
func seed(t *testing.T, cfg config.Config, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := New(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	bg, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); s.Background(bg) }()
	if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		syncOne(t, srv.URL, key, fmt.Sprintf("s%02d", i), fmt.Sprintf("Session %d", i), "switching indexes keeps every session")
	}
	if err := s.Pipeline.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	cancel()
	<-done
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReindexResumes: a reindex that finds the mark of an interrupted one
// carries on after it (here the index directory was lost too, so what it
// holds afterwards shows which sessions it redid).
func TestReindexResumes(t *testing.T) {
	ctx := context.Background()
	cfg := config.Config{Data: t.TempDir(), Semantic: config.Semantic{Embedder: "none"}}
	seed(t, cfg, 5)
	if _, _, err := Reindex(ctx, cfg, nil); err != nil {
		t.Fatal(err)
	}
	// Interrupt a reindex after its second session, by hand.
	st, err := OpenStore(cfg.Data)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	st.View(ctx, func(tx *kv.Tx) error {
		users, _ := tx.Users()
		for _, u := range users {
			tx.Sessions(u.ID, func(s kv.Session) error { refs = append(refs, u.ID+"\x00"+s.ID); return nil })
		}
		return nil
	})
	slices.Sort(refs)
	if err := st.Commit(ctx, func(tx *kv.Tx) error {
		tx.SetMeta(stateKey(TextBleve), []byte("rebuilding"))
		return tx.SetMeta(markKey(TextBleve), []byte(refs[1]))
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	os.RemoveAll(filepath.Join(cfg.Data, "index"))
	var first []int
	n, _, err := Reindex(ctx, cfg, func(done, total int) { first = append(first, done, total) })
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 2 || first[0] != 2 || first[1] != 5 || n != 3 {
		t.Errorf("resumed reindex: progress %v, %d sessions indexed; want it to start at 2 of 5 and index 3", first, n)
	}
	// Finished: the next reindex starts over.
	if n, _, err := Reindex(ctx, cfg, nil); err != nil || n != 5 {
		t.Errorf("reindex after a finished one: %d sessions, %v", n, err)
	}
}

// TestSwitchTextIndex moves a deployment from Bleve to Weaviate and back
// with hindsight reindex, and checks each start serves every session.
func TestSwitchTextIndex(t *testing.T) {
	t.Parallel()
	wv := weaviatetest.Start(t)
	ctx := context.Background()
	bleve := config.Config{Data: t.TempDir(), Semantic: config.Semantic{Embedder: "none", WeaviateURL: wv.URL}, TextIndex: "bleve"}
	weav := bleve
	weav.TextIndex, weav.WeaviateReplication = "weaviate", 1
	seed(t, bleve, 4)
	if n, c, err := Reindex(ctx, weav, nil); err != nil || n != 4 || c != 4 {
		t.Fatalf("reindex into weaviate: %d sessions, %d chunks, %v", n, c, err)
	}
	s, err := New(ctx, weav, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if s.needsRebuild {
		t.Error("weaviate index marked incomplete right after a reindex")
	}
	hits, err := s.Index.Search(ctx, index.Query{UserID: firstUser(t, s), Text: "switching", Kind: index.Sessions})
	if err != nil || len(hits) != 4 {
		t.Errorf("weaviate search after reindex: %d hits, %v", len(hits), err)
	}
	s.Close(ctx)
	// Back to Bleve: its index missed nothing here, but it was marked
	// stale when Weaviate took over, so it is rebuilt at start.
	s, err = New(ctx, bleve, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if !s.needsRebuild {
		t.Error("bleve index not rebuilt after running on weaviate")
	}
	s.Close(ctx)
	if n, _, err := Reindex(ctx, bleve, nil); err != nil || n != 4 {
		t.Errorf("reindex back into bleve: %d sessions, %v", n, err)
	}
}

func firstUser(t *testing.T, s *Server) string {
	t.Helper()
	var id string
	s.Store.View(context.Background(), func(tx *kv.Tx) error {
		users, err := tx.Users()
		if err == nil && len(users) > 0 {
			id = users[0].ID
		}
		return err
	})
	return id
}

// A restored node rebuilds its text index whatever the backup's node had:
// the index states that travel with the records are reset to stale.
func TestRestoreMarksIndexesStale(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	st, err := OpenStore(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{TextBleve, TextWeaviate} {
		if err := setState(ctx, st, kind, "ready"); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Backup(ctx, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	st.Close()

	dir := filepath.Join(t.TempDir(), "restored")
	if err := Restore(ctx, file, dir); err != nil {
		t.Fatal(err)
	}
	if err := Restore(ctx, file, dir); err == nil {
		t.Error("a second restore into the same directory succeeded")
	}
	st, err = OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.View(ctx, func(tx *kv.Tx) error {
		for _, kind := range []string{TextBleve, TextWeaviate} {
			if got := string(tx.Meta(stateKey(kind))); got != "stale" {
				t.Errorf("%s index state after restore = %q, want stale", kind, got)
			}
		}
		return nil
	})
}

// An index that cannot be opened (damaged, or written in an older format by
// an earlier version) is removed and rebuilt from the records, even when kv
// says the index was complete.
func TestUnreadableIndexIsRebuilt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	idx, rebuild, err := openIndex(ctx, dir, st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	idx.Close()
	if !rebuild {
		t.Error("a new index directory is not rebuilt")
	}
	if err := setState(ctx, st, TextBleve, "ready"); err != nil {
		t.Fatal(err)
	}
	idx, rebuild, err = openIndex(ctx, dir, st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	idx.Close()
	if rebuild {
		t.Error("a complete, readable index is rebuilt")
	}
	// Damage the index: its sessions index becomes a plain file.
	sessions := filepath.Join(dir, "index", "sessions.bleve")
	if err := os.RemoveAll(sessions); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sessions, []byte("not an index"), 0o600); err != nil {
		t.Fatal(err)
	}
	idx, rebuild, err = openIndex(ctx, dir, st, zerolog.Nop())
	if err != nil {
		t.Fatalf("open a damaged index: %v", err)
	}
	defer idx.Close()
	if !rebuild {
		t.Error("a damaged index that was replaced by an empty one is not rebuilt")
	}
}
