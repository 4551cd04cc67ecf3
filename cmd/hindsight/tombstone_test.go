package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
)

// The real importer against a real server: a session deleted on the server
// is skipped by the next import and nothing of it comes back, for one
// session and for the whole account; allowing it to sync again lets the
// next import bring it back.
func TestImportSkipsDeletedSessions(t *testing.T) {
	dir := importFixture(t, "opencode")
	ta := newTestApp(t, t.TempDir())
	key := ta.key("bob")
	args := []string{"import", "opencode", dir, "--server", ta.srv.URL, "--key", key, "--quiet"}
	imp := func(wants ...string) {
		t.Helper()
		out, errOut, err := importRun(t, args...)
		if err != nil {
			t.Fatalf("import: %v\n%s\n%s", err, out, errOut)
		}
		importMustContain(t, "summary", out, wants...)
		if slices.Contains(wants, "no deleted") && strings.Contains(out, "deleted on the server") {
			t.Errorf("summary mentions deleted sessions:\n%s", out)
		}
	}
	imp("sessions: 2 imported, 0 updated, 0 unchanged, 0 skipped (nothing to import), 0 failed")
	ss := ta.importedSessions(key)
	if len(ss) != 2 {
		t.Fatalf("%d sessions imported", len(ss))
	}

	if code, b := ta.do(http.MethodDelete, key, "/api/sessions?id="+ss["ses_01"].ID, nil); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, b)
	}
	imp("sessions: 0 imported, 0 updated, 1 unchanged, 0 skipped (nothing to import), 0 failed",
		"messages: 0 imported, 1 unchanged, 0 failed",
		"skipped 1 sessions deleted on the server")
	if got := ta.importedSessions(key); len(got) != 1 || got["ses_02"].ID != ss["ses_02"].ID {
		t.Fatalf("after re-import: %v", got)
	}

	if code, b := ta.do(http.MethodDelete, key, "/api/account/data", nil); code != http.StatusOK {
		t.Fatalf("delete account data: %d %s", code, b)
	}
	imp("sessions: 0 imported, 0 updated, 0 unchanged, 0 skipped (nothing to import), 0 failed",
		"messages: 0 imported, 0 unchanged, 0 failed",
		"skipped 2 sessions deleted on the server")
	if got := ta.importedSessions(key); len(got) != 0 {
		t.Fatalf("an import after deleting everything brought back %d sessions", len(got))
	}
	ta.idle()
	if rs := ta.search(key, "rate limiter", ""); len(rs) != 0 {
		t.Errorf("search finds %q", titles(rs))
	}

	if code, b := ta.do(http.MethodPost, key, "/api/sessions/deleted/allow", map[string]any{"externalIds": []string{"ses_01"}}); code != http.StatusOK || !strings.Contains(string(b), `"allowed":1`) {
		t.Fatalf("allow: %d %s", code, b)
	}
	imp("sessions: 1 imported, 0 updated, 0 unchanged, 0 skipped (nothing to import), 0 failed",
		"skipped 1 sessions deleted on the server")
	if got := ta.importedSessions(key); len(got) != 1 || got["ses_01"].Title != ss["ses_01"].Title || got["ses_01"].ID == ss["ses_01"].ID {
		t.Errorf("after allowing: %v", got)
	}
}

// A plugin that keeps syncing a session its owner deleted gets 200
// "ignored" and nothing reappears anywhere: the list, the session, search
// in every mode, context, stats, exports and /sync/sessions/list.
func TestPluginResyncAfterDelete(t *testing.T) {
	fake := openaitest.New(t, openaitest.Options{Dim: 256})
	ta := newTestAppWith(t, t.TempDir(), config.Semantic{Embedder: "openai", OpenAIKey: "sk-test", OpenAIBaseURL: fake.URL(),
		OpenAIModel: "text-embedding-3-small", OpenAIDim: 256})
	key := ta.key("alice")
	post := func(path, body string) string {
		t.Helper()
		code, b := ta.do(http.MethodPost, key, path, json.RawMessage(body))
		if code != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, code, b)
		}
		return string(b)
	}
	// What claude-code-sync sends as a session goes.
	post("/sync/session", `{"externalId":"ses-zebra","source":"claude-code","title":"zebracorn migration plan","projectPath":"/home/dev/zoo","projectName":"zoo","model":"claude-sonnet-4","promptTokens":120,"completionTokens":40,"cost":0.5}`)
	post("/sync/message", `{"sessionExternalId":"ses-zebra","externalId":"u-1","role":"user","source":"claude-code","textContent":"plan the zebracorn migration"}`)
	post("/sync/message", `{"sessionExternalId":"ses-zebra","externalId":"a-1","role":"assistant","source":"claude-code","parts":[{"type":"text","content":"zebracorn steps: one, two"}]}`)
	post("/sync/session", `{"externalId":"ses-other","source":"claude-code","title":"unrelated work"}`)
	post("/sync/message", `{"sessionExternalId":"ses-other","externalId":"u-1","role":"user","textContent":"something else"}`)
	ta.idle()
	var list struct {
		Sessions []struct{ ID, ExternalID string }
	}
	_, b := ta.do(http.MethodGet, key, "/api/sessions", nil)
	json.Unmarshal(b, &list)
	var id string
	var all []string
	for _, s := range list.Sessions {
		if s.ExternalID == "ses-zebra" {
			id = s.ID
		}
		all = append(all, s.ID)
	}
	if id == "" || len(ta.search(key, "zebracorn", "")) != 1 {
		t.Fatalf("setup: %s", b)
	}
	// Both eval-ready, so the eval export would hold it.
	if code, b := ta.do(http.MethodPatch, key, "/api/sessions/eval", map[string]any{"ids": all, "evalReady": true}); code != http.StatusOK {
		t.Fatalf("label: %d %s", code, b)
	}
	if code, b := ta.do(http.MethodGet, key, "/api/export/evals?format=chat-jsonl", nil); code != http.StatusOK || !strings.Contains(string(b), "steps: one") {
		t.Fatalf("eval export before deleting: %d %.300s", code, b)
	}
	if code, b := ta.do(http.MethodDelete, key, "/api/sessions?id="+id, nil); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, b)
	}

	// The plugin's next hooks: every write acknowledged, none stored.
	for _, w := range []struct{ path, body string }{
		{"/sync/message", `{"sessionExternalId":"ses-zebra","externalId":"u-2","role":"user","source":"claude-code","textContent":"and the zebracorn rollback?"}`},
		{"/sync/message", `{"sessionExternalId":"ses-zebra","externalId":"a-1","role":"assistant","source":"claude-code","parts":[{"type":"text","content":"zebracorn steps: one, two"}]}`},
		{"/sync/session", `{"externalId":"ses-zebra","source":"claude-code","title":"zebracorn migration plan","promptTokens":300}`},
	} {
		var got map[string]any
		if json.Unmarshal([]byte(post(w.path, w.body)), &got); len(got) != 2 || got["ok"] != true || got["ignored"] != "deleted" {
			t.Errorf("POST %s after delete = %s", w.path, got)
		}
	}
	if got := post("/sync/batch", `{"messages":[{"sessionExternalId":"ses-zebra","externalId":"u-3","role":"user","textContent":"zebracorn?"}]}`); !strings.Contains(got, `"ignored":[{"entry":"messages[0]","externalId":"u-3","reason":"deleted"}]`) {
		t.Errorf("batch after delete = %s", got)
	}
	ta.idle()

	if code, _ := ta.do(http.MethodGet, key, "/api/sessions/get?id="+id, nil); code != http.StatusNotFound {
		t.Errorf("get of the deleted session: %d", code)
	}
	if code, _ := ta.do(http.MethodGet, key, "/api/export?id="+id, nil); code != http.StatusNotFound {
		t.Errorf("export of the deleted session: %d", code)
	}
	for _, p := range []string{
		"/api/sessions?limit=500", "/api/search?q=zebracorn&explain=true", "/api/search?q=zebracorn+migration&type=hybrid",
		"/api/search?q=zebracorn+migration&type=semantic", "/api/context?q=zebracorn+migration", "/api/context?q=zebracorn&format=messages",
		"/api/export/evals?format=chat-jsonl", "/api/stats",
	} {
		code, b := ta.do(http.MethodGet, key, p, nil)
		if code != http.StatusOK {
			t.Errorf("%s: %d %.200s", p, code, b)
			continue
		}
		for _, trace := range []string{"migration plan", "steps: one", "rollback", id, "ses-zebra"} {
			if strings.Contains(string(b), trace) {
				t.Errorf("%s shows the deleted session (%q): %.300s", p, trace, b)
			}
		}
	}
	var stats struct{ SessionCount, MessageCount, PromptTokens int }
	_, b = ta.do(http.MethodGet, key, "/api/stats", nil)
	if json.Unmarshal(b, &stats); stats.SessionCount != 1 || stats.MessageCount != 1 || stats.PromptTokens != 0 {
		t.Errorf("stats: %s", b)
	}
	var ids struct{ SessionIDs, DeletedIDs []string }
	_, b = ta.do(http.MethodGet, key, "/sync/sessions/list", nil)
	if json.Unmarshal(b, &ids); !slices.Equal(ids.SessionIDs, []string{"ses-other"}) || !slices.Equal(ids.DeletedIDs, []string{"ses-zebra"}) {
		t.Errorf("/sync/sessions/list: %s", b)
	}
	var deleted struct {
		Deleted []struct{ ExternalID, Source, Reason string }
	}
	_, b = ta.do(http.MethodGet, key, "/api/sessions/deleted", nil)
	if json.Unmarshal(b, &deleted); len(deleted.Deleted) != 1 || deleted.Deleted[0].ExternalID != "ses-zebra" ||
		deleted.Deleted[0].Source != "claude-code" || deleted.Deleted[0].Reason != "deleted" || strings.Contains(string(b), "zebracorn") {
		t.Errorf("/api/sessions/deleted: %s", b)
	}
	if err := ta.app.Store.Check(); err != nil {
		t.Error(err)
	}
}

// `hindsight backup` and `hindsight restore` carry the tombstones: a server
// started on the restored data still drops the deleted session's syncs.
func TestBackupCarriesTombstones(t *testing.T) {
	dir := t.TempDir()
	ta := newTestApp(t, dir)
	key := ta.key("alice")
	ta.batch(key, map[string]any{"sessions": []any{
		map[string]any{"externalId": "gone", "title": "to delete"}, map[string]any{"externalId": "kept", "title": "kept"}}})
	var list struct {
		Sessions []struct{ ID, ExternalID string }
	}
	_, b := ta.do(http.MethodGet, key, "/api/sessions", nil)
	json.Unmarshal(b, &list)
	for _, s := range list.Sessions {
		if s.ExternalID == "gone" {
			if code, b := ta.do(http.MethodDelete, key, "/api/sessions?id="+s.ID, nil); code != http.StatusOK {
				t.Fatalf("delete: %d %s", code, b)
			}
		}
	}
	ta.close()

	file := filepath.Join(t.TempDir(), "backup.db")
	if _, err := runCmd(t, "backup", "--out", file, "--data", dir); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := runCmd(t, "restore", file, "--data", restored); err != nil {
		t.Fatal(err)
	}
	rt := newTestApp(t, restored)
	code, b := rt.do(http.MethodPost, key, "/sync/message", json.RawMessage(`{"sessionExternalId":"gone","externalId":"m","role":"user","textContent":"back?"}`))
	if code != http.StatusOK || !strings.Contains(string(b), `"ignored":"deleted"`) {
		t.Errorf("restored server: the deleted session's message = %d %s", code, b)
	}
	var ids struct{ SessionIDs, DeletedIDs []string }
	_, b = rt.do(http.MethodGet, key, "/sync/sessions/list", nil)
	if json.Unmarshal(b, &ids); !slices.Equal(ids.SessionIDs, []string{"kept"}) || !slices.Equal(ids.DeletedIDs, []string{"gone"}) {
		t.Errorf("restored server: /sync/sessions/list %s", b)
	}
}
