package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/vectors"
)

// After a deletion nothing of the session can be found through any endpoint,
// and its records and index documents are gone.
func TestDeleteRemovesEveryTrace(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("alice")
	var sessions, msgs []any
	for i := range 3 {
		sid := fmt.Sprintf("s%d", i)
		sessions = append(sessions, map[string]any{"externalId": sid, "title": fmt.Sprintf("session%d zebracorn", i), "model": "m", "promptTokens": 10, "completionTokens": 5, "cost": 1})
		for j := range 30 {
			msgs = append(msgs, msg(sid, fmt.Sprintf("m%d", j), "user", map[string]any{"textContent": fmt.Sprintf("zebracorn note %d of session%d", j, i)}))
		}
	}
	ta.batch(key, map[string]any{"sessions": sessions, "messages": msgs})
	ta.idle()
	var list struct {
		Sessions []struct{ ID, ExternalID string }
	}
	_, b := ta.do(http.MethodGet, key, "/api/sessions", nil)
	json.Unmarshal(b, &list)
	if len(list.Sessions) != 3 {
		t.Fatalf("setup: %s", b)
	}
	victim := list.Sessions[0]

	for _, p := range []string{"/api/sessions", "/api/sessions?id=nope0000nope0000", "/api/sessions?id=" + victim.ID + "x"} {
		code, b := ta.do(http.MethodDelete, key, p, nil)
		want := http.StatusNotFound
		if p == "/api/sessions" {
			want = http.StatusBadRequest
		}
		if code != want {
			t.Errorf("DELETE %s: %d %s, want %d", p, code, b, want)
		}
	}
	other := ta.key("mallory")
	if code, _ := ta.do(http.MethodDelete, other, "/api/sessions?id="+victim.ID, nil); code != http.StatusNotFound {
		t.Errorf("another user deleting the session: %d, want 404", code)
	}
	if code, b := ta.do(http.MethodDelete, key, "/api/sessions?id="+victim.ID, nil); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, b)
	}
	noTrace := func(what string, id, ext string) {
		t.Helper()
		if code, _ := ta.do(http.MethodGet, key, "/api/sessions/get?id="+id, nil); code != http.StatusNotFound {
			t.Errorf("%s: get is %d", what, code)
		}
		var list struct{ SessionIDs, DeletedIDs []string }
		_, b := ta.do(http.MethodGet, key, "/sync/sessions/list", nil)
		if json.Unmarshal(b, &list); slices.Contains(list.SessionIDs, ext) || !slices.Contains(list.DeletedIDs, ext) {
			t.Errorf("%s: /sync/sessions/list = %s, want %s among deletedIds only", what, b, ext)
		}
		for _, p := range []string{"/api/sessions?limit=500", "/api/search?q=zebracorn&limit=100&explain=true",
			"/api/context?q=zebracorn&limit=50", "/api/context?q=zebracorn&format=messages&limit=50"} {
			code, b := ta.do(http.MethodGet, key, p, nil)
			if code != http.StatusOK {
				t.Errorf("%s: %s answered %d, want 200: %.300s", what, p, code, b)
			}
			if strings.Contains(string(b), id) || strings.Contains(string(b), `"`+ext+`"`) || strings.Contains(string(b), "session"+ext[1:]+" ") {
				t.Errorf("%s: %s still shows the session: %.300s", what, p, b)
			}
		}
	}
	ta.idle()
	noTrace("right after delete", victim.ID, victim.ExternalID)
	var stats struct{ SessionCount, MessageCount int }
	_, b = ta.do(http.MethodGet, key, "/api/stats", nil)
	json.Unmarshal(b, &stats)
	if stats.SessionCount != 2 || stats.MessageCount != 60 {
		t.Errorf("stats after delete: %s", b)
	}
	// The background purge removes the records; the index holds nothing of it.
	waitFor(t, func() bool {
		var left int
		ta.app.Store.View(context.Background(), func(tx *kv.Tx) error {
			left = tx.PendingPurges()
			return nil
		})
		return left == 0
	})
	ta.app.Store.View(context.Background(), func(tx *kv.Tx) error {
		u, _ := tx.UserByName("alice")
		n := 0
		tx.Messages(u.ID, victim.ID, func(kv.Message) error { n++; return nil })
		if n != 0 {
			t.Errorf("%d messages of the deleted session remain", n)
		}
		return nil
	})
	if s, c, _ := ta.app.Index.Count(context.Background()); s != 2 || c != 2*30 {
		t.Errorf("index holds %d sessions, %d chunks after deleting 1 of 3", s, c)
	}
	// Re-syncing the same externalId is dropped (the deletion sticks); once
	// sync is allowed again it makes a new session, not a resurrection.
	ta.batch(key, map[string]any{"sessions": []any{map[string]any{"externalId": victim.ExternalID, "title": "reborn"}}})
	if _, b = ta.do(http.MethodGet, key, "/api/sessions", nil); strings.Contains(string(b), "reborn") {
		t.Errorf("re-sync after delete stored the session: %s", b)
	}
	if code, b := ta.do(http.MethodPost, key, "/api/sessions/deleted/allow", map[string]any{"externalIds": []string{victim.ExternalID}}); code != http.StatusOK {
		t.Fatalf("allow sync again: %d %s", code, b)
	}
	ta.batch(key, map[string]any{"sessions": []any{map[string]any{"externalId": victim.ExternalID, "title": "reborn"}}})
	_, b = ta.do(http.MethodGet, key, "/api/sessions", nil)
	if strings.Contains(string(b), victim.ID) || !strings.Contains(string(b), "reborn") {
		t.Errorf("re-sync after allowing: %s", b)
	}

	// Account data: every session goes, the key keeps working.
	code, b := ta.do(http.MethodDelete, key, "/api/account/data", nil)
	if code != http.StatusOK || !strings.Contains(string(b), `"deletedSessions":3`) {
		t.Fatalf("delete account data: %d %s", code, b)
	}
	ta.idle()
	for _, p := range []string{"/api/sessions", "/api/search?q=zebracorn", "/api/stats"} {
		code, b := ta.do(http.MethodGet, key, p, nil)
		if code != http.StatusOK || strings.Contains(string(b), "zebracorn") || strings.Contains(string(b), `"s1"`) ||
			strings.Contains(string(b), `"sessionCount":2`) {
			t.Errorf("after account deletion %s: %d %.200s", p, code, b)
		}
	}
	var ids struct{ SessionIDs, DeletedIDs []string }
	_, b = ta.do(http.MethodGet, key, "/sync/sessions/list", nil)
	if json.Unmarshal(b, &ids); len(ids.SessionIDs) != 0 || !slices.Equal(ids.DeletedIDs, []string{"s0", "s1", "s2"}) {
		t.Errorf("after account deletion /sync/sessions/list: %s", b)
	}
	waitFor(t, func() bool {
		s, _, _ := ta.app.Index.Count(context.Background())
		return s == 0
	})
	if err := ta.app.Store.Check(); err != nil {
		t.Errorf("store invariants after deletions: %v", err)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	waitUntil(t, "the condition", ok)
}

// Deletion removes the vectors too, in both vector stores.
func TestDeleteRemovesVectors(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"embedded", "weaviate"} {
		t.Run(store, func(t *testing.T) {
			fake := openaitest.New(t, openaitest.Options{Dim: 1536})
			cfg := config.Semantic{Embedder: "openai", OpenAIKey: "sk-test", OpenAIBaseURL: fake.URL(), OpenAIModel: "text-embedding-3-small"}
			if store == "weaviate" {
				cfg.WeaviateURL = weaviatetest.Start(t).URL
			}
			ta := newTestAppWith(t, t.TempDir(), cfg)
			key := ta.key("alice")
			ta.batch(key, sessionBatch(3, 4, "vector text"))
			ta.idle()
			ctx := context.Background()
			u, _ := ta.app.Accounts.User(ctx, "alice")
			var list struct {
				Sessions []struct{ ID, ExternalID string }
			}
			_, b := ta.do(http.MethodGet, key, "/api/sessions", nil)
			json.Unmarshal(b, &list)
			victim := list.Sessions[0]
			vs := ta.app.Semantic.Store
			if h, err := vs.Hashes(ctx, u.ID, victim.ID); err != nil || len(h) == 0 {
				t.Fatalf("no vectors stored before deletion: %v %v", h, err)
			}
			if code, b := ta.do(http.MethodDelete, key, "/api/sessions?id="+victim.ID, nil); code != http.StatusOK {
				t.Fatalf("delete: %d %s", code, b)
			}
			ta.idle()
			waitFor(t, func() bool {
				h, err := vs.Hashes(ctx, u.ID, victim.ID)
				return err == nil && len(h) == 0
			})
			n := victim.ExternalID[1:]
			q := fmt.Sprintf("vector text 0 of session %s\n\nvector text 1 of session %s", strings.TrimLeft(n, "0"), strings.TrimLeft(n, "0"))
			for _, mode := range []string{"semantic", "hybrid"} {
				rs := ta.search(key, q, "&type="+mode+"&limit=100")
				for _, r := range rs {
					if r.ID == victim.ID {
						t.Errorf("%s search still finds the deleted session", mode)
					}
				}
			}
			hits, err := vs.Nearest(ctx, u.ID, openaitest.Vector(q, 1536), 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				if h.SessionID == victim.ID {
					t.Errorf("the %s store still holds a vector of the deleted session", store)
				}
			}
			if store != "embedded" {
				return
			}
			// Deleting the account's data frees the user's vectors in
			// memory too (the searches above loaded them).
			emb, ok := vs.(*vectors.Embedded)
			if !ok {
				t.Fatalf("the embedded vector store is a %T", vs)
			}
			if st := emb.Stats(); st.Users != 1 || st.Vectors == 0 {
				t.Fatalf("before deleting the account's data: %+v, want alice's vectors in memory", st)
			}
			if code, b := ta.do(http.MethodDelete, key, "/api/account/data", nil); code != http.StatusOK {
				t.Fatalf("delete account data: %d %s", code, b)
			}
			ta.idle()
			if st := emb.Stats(); st.Users != 0 || st.Vectors != 0 || st.SlabBytes != 0 {
				t.Errorf("after deleting the account's data: %+v, want no vectors in memory", st)
			}
		})
	}
}
