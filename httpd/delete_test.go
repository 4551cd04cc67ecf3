package httpd_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

type deletedJSON struct {
	Deleted []struct {
		ExternalID string `json:"externalId"`
		Source     string `json:"source"`
		DeletedAt  int64  `json:"deletedAt"`
		Reason     string `json:"reason"`
	} `json:"deleted"`
	NextCursor string `json:"nextCursor"`
}

func (a *app) deleted(key, query string) deletedJSON {
	a.t.Helper()
	r := a.req("GET", "/api/sessions/deleted"+query, key, nil)
	if r.status != http.StatusOK {
		a.t.Fatalf("GET /api/sessions/deleted%s: %d %s", query, r.status, r.body)
	}
	var d deletedJSON
	r.into(a.t, &d)
	if d.Deleted == nil {
		a.t.Fatalf("GET /api/sessions/deleted%s: %s, want a deleted array", query, r.body)
	}
	return d
}

func (d deletedJSON) ids() []string {
	var out []string
	for _, e := range d.Deleted {
		out = append(out, e.ExternalID)
	}
	return out
}

// syncList is GET /sync/sessions/list.
func (a *app) syncList(key string) (sessionIDs, deletedIDs []string) {
	a.t.Helper()
	var l struct{ SessionIDs, DeletedIDs []string }
	a.req("GET", "/sync/sessions/list", key, nil).into(a.t, &l)
	return sorted(l.SessionIDs...), sorted(l.DeletedIDs...)
}

// The API's deletions stick: a deleted session's later syncs answer 200
// "ignored" and store nothing, by id, by project and for the whole
// account, until the owner allows them again.
func TestDeletionsStick(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	a.batch(key, `{"sessions":[
	    {"externalId":"s1","source":"opencode","title":"one","projectPath":"/p/a"},
	    {"externalId":"s2","source":"pi","title":"two","projectPath":"/p/a"},
	    {"externalId":"s3","source":"codex","title":"three","projectPath":"/p/b","projectName":"bee"},
	    {"externalId":"s4","title":"four","projectPath":"/p/c"}],
	  "messages":[{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"hello"}]}`)

	s1 := a.byExternal(key, "s1")
	if got := a.ok("DELETE", "/api/sessions?id="+s1.ID, key, nil); !jsonEqual(t, mustJSON(got), []byte(`{"ok":true,"deleted":1}`)) {
		t.Errorf("DELETE by id = %v", got)
	}
	// The plugin's next writes of s1: acknowledged, dropped, every time.
	for range 2 {
		for _, w := range []struct{ path, body string }{
			{"/sync/message", `{"sessionExternalId":"s1","externalId":"m2","role":"assistant","textContent":"back from the dead"}`},
			{"/sync/message", `{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"hello"}`},
			{"/sync/session", `{"externalId":"s1","title":"one again"}`},
		} {
			r := a.req("POST", w.path, key, w.body)
			if r.status != http.StatusOK || !jsonEqual(t, r.body, []byte(`{"ok":true,"ignored":"deleted"}`)) {
				t.Errorf("POST %s after delete: %d %s", w.path, r.status, r.body)
			}
		}
	}
	r := a.req("POST", "/sync/batch", key, `{"sessions":[{"externalId":"s1"},{"externalId":"s5"}],
	  "messages":[{"sessionExternalId":"s5","externalId":"x","role":"user"},{"sessionExternalId":"s1","externalId":"m17","role":"user"}]}`)
	if !jsonEqual(t, r.body, []byte(`{"ok":true,"sessions":{"inserted":1,"updated":0},"messages":{"inserted":1,"updated":0},"errors":[],
	    "ignored":[{"entry":"sessions[0]","externalId":"s1","reason":"deleted"},{"entry":"messages[1]","externalId":"m17","reason":"deleted"}]}`)) {
		t.Errorf("batch after delete: %d %s", r.status, r.body)
	}
	if ids, del := a.syncList(key); !slices.Equal(ids, []string{"s2", "s3", "s4", "s5"}) || !slices.Equal(del, []string{"s1"}) {
		t.Errorf("/sync/sessions/list: sessionIds %v deletedIds %v", ids, del)
	}
	if got := externalIDs(a.list(key, "").Sessions); slices.Contains(got, "s1") {
		t.Errorf("/api/sessions still lists s1: %v", got)
	}

	// By project: exact projectPath, or projectName.
	if got := a.ok("DELETE", "/api/sessions?project="+url.QueryEscape("/p/a"), key, nil); !jsonEqual(t, mustJSON(got), []byte(`{"ok":true,"deleted":1}`)) {
		t.Errorf("DELETE by project = %v", got)
	}
	checkError(t, a.req("DELETE", "/api/sessions?project=/p/a", key, nil), http.StatusNotFound, "Not Found", `no session with projectPath "/p/a"`)
	checkError(t, a.req("DELETE", "/api/sessions?project=/p", key, nil), http.StatusNotFound, "Not Found", `projectPath "/p"`)
	if got := a.ok("DELETE", "/api/sessions?projectName=bee", key, nil); got["deleted"] != 1.0 {
		t.Errorf("DELETE by projectName = %v", got)
	}
	if got := a.req("POST", "/sync/session", key, `{"externalId":"s2"}`); !jsonEqual(t, got.body, []byte(`{"ok":true,"ignored":"deleted"}`)) {
		t.Errorf("a session deleted with its project syncs again: %s", got.body)
	}

	// The list: newest first, exact fields, in pages.
	d := a.deleted(key, "")
	if !slices.Equal(d.ids(), []string{"s3", "s2", "s1"}) || d.NextCursor != "" {
		t.Errorf("deleted list %+v", d)
	}
	raw := a.req("GET", "/api/sessions/deleted", key, nil)
	obj := raw.json(t)
	entry := obj["deleted"].([]any)[0].(map[string]any)
	if !slices.Equal(keysOf(obj), []string{"deleted"}) || !slices.Equal(keysOf(entry), []string{"deletedAt", "externalId", "reason", "source"}) ||
		entry["source"] != "codex" || entry["reason"] != "deleted" {
		t.Errorf("deleted list shape: %s", raw.body)
	}
	p1 := a.deleted(key, "?limit=2")
	if !slices.Equal(p1.ids(), []string{"s3", "s2"}) || p1.NextCursor == "" {
		t.Fatalf("page 1: %+v", p1)
	}
	if p2 := a.deleted(key, "?limit=2&cursor="+url.QueryEscape(p1.NextCursor)); !slices.Equal(p2.ids(), []string{"s1"}) || p2.NextCursor != "" {
		t.Errorf("page 2: %+v", p2)
	}

	// Allow sync again: only ids with a tombstone count.
	if got := a.ok("POST", "/api/sessions/deleted/allow", key, `{"externalIds":["s1","s1","nope"]}`); !jsonEqual(t, mustJSON(got), []byte(`{"ok":true,"allowed":1}`)) {
		t.Errorf("allow = %v", got)
	}
	m := a.ok("POST", "/sync/message", key, `{"sessionExternalId":"s1","externalId":"m9","role":"user","textContent":"new life"}`)
	if !isID(m["messageId"]) {
		t.Fatalf("message after allowing: %v", m)
	}
	if g := a.get(key, a.byExternal(key, "s1").ID); g.Session.Title != "" || len(g.Messages) != 1 || *g.Messages[0].TextContent != "new life" {
		t.Errorf("the old session came back: %+v", g)
	}

	// Account data: everything tombstoned, the key keeps working.
	if got := a.ok("DELETE", "/api/account/data", key, nil); got["deletedSessions"] != 3.0 {
		t.Errorf("DELETE /api/account/data = %v", got)
	}
	if ids, del := a.syncList(key); len(ids) != 0 || !slices.Equal(del, []string{"s1", "s2", "s3", "s4", "s5"}) {
		t.Errorf("after deleting the account's data: sessionIds %v deletedIds %v", ids, del)
	}
	b := a.batch(key, `{"sessions":[{"externalId":"s4"},{"externalId":"s5"}]}`)
	if b.Sessions.Inserted+b.Sessions.Updated != 0 || len(a.list(key, "").Sessions) != 0 {
		t.Errorf("re-sync after deleting the account's data: %+v", b)
	}
}

// mustJSON marshals a decoded response back for jsonEqual.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDeletionBadInput(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	a.batch(key, `{"sessions":[{"externalId":"s","projectPath":"/p"}]}`)
	before := a.snapshot()
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"DELETE", "/api/sessions", nil, 400, "id, project or projectName is required"},
		{"DELETE", "/api/sessions?project=", nil, 400, "id, project or projectName is required"},
		{"DELETE", "/api/sessions?id=abc&project=/p", nil, 400, "only one of id, project and projectName (got id, project)"},
		{"DELETE", "/api/sessions?project=/p&projectName=p", nil, 400, "only one"},
		{"GET", "/api/sessions/deleted?limit=0", nil, 400, "limit must be at least 1"},
		{"GET", "/api/sessions/deleted?limit=many", nil, 400, "limit must be a whole number"},
		{"GET", "/api/sessions/deleted?cursor=garbage", nil, 400, "cursor is malformed"},
		{"GET", "/api/sessions/deleted?cursor=12.%21%21", nil, 400, "cursor is malformed"},
		{"GET", "/api/sessions/deleted?cursor=12.", nil, 400, "cursor is malformed"},
		{"POST", "/api/sessions/deleted/allow", nil, 400, "request body is empty"},
		{"POST", "/api/sessions/deleted/allow", `[]`, 400, "body must be a JSON object"},
		{"POST", "/api/sessions/deleted/allow", `{"externalIds":["s"]`, 400, "body must be a JSON object"},
		{"POST", "/api/sessions/deleted/allow", `{}`, 400, "externalIds is required"},
		{"POST", "/api/sessions/deleted/allow", `{"externalIds":null}`, 400, "externalIds is required"},
		{"POST", "/api/sessions/deleted/allow", `{"externalIds":"s"}`, 400, "externalIds must be a list"},
		{"POST", "/api/sessions/deleted/allow", `{"externalIds":[1]}`, 400, "externalIds must be a list"},
		{"POST", "/api/sessions/deleted/allow", `{"externalIds":[]}`, 400, "externalIds is empty"},
		{"POST", "/api/sessions/deleted/allow", `{"externalIds":["s",""]}`, 400, "externalIds[1] is empty"},
		{"GET", "/api/sessions/deleted/allow", nil, 405, "GET is not supported"},
		{"POST", "/api/sessions/deleted", `{}`, 405, "POST is not supported"},
	} {
		r := a.req(tc.method, tc.path, key, tc.body)
		code := map[int]string{400: "Bad Request", 405: "Method Not Allowed"}[tc.status]
		t.Run(tc.method+" "+tc.path, func(t *testing.T) { checkError(t, r, tc.status, code, tc.want) })
	}
	if after := a.snapshot(); after != before {
		t.Errorf("bad requests changed the store:\nbefore %s\nafter  %s", before, after)
	}
}

// One user's deletions never touch another's: user B can neither list,
// allow nor delete user A's sessions or tombstones, and the same
// externalId of two users is two independent sessions.
func TestDeletionIsPerUser(t *testing.T) {
	a := newApp(t, options{})
	ann, bob := a.user("ann"), a.user("bob")
	a.batch(ann, `{"sessions":[{"externalId":"shared","projectPath":"/p"},{"externalId":"ann-only","projectPath":"/p"}]}`)
	a.batch(bob, `{"sessions":[{"externalId":"shared","projectPath":"/q"}]}`)
	annShared, annOnly := a.byExternal(ann, "shared"), a.byExternal(ann, "ann-only")

	before := a.snapshot()
	checkError(t, a.req("DELETE", "/api/sessions?id="+annOnly.ID, bob, nil), http.StatusNotFound, "Not Found", "no session with id")
	checkError(t, a.req("DELETE", "/api/sessions?project=/p", bob, nil), http.StatusNotFound, "Not Found", `projectPath "/p"`)
	if after := a.snapshot(); after != before {
		t.Fatalf("bob's deletions changed ann's data:\nbefore %s\nafter  %s", before, after)
	}

	a.ok("DELETE", "/api/sessions?id="+annShared.ID, ann, nil)
	// bob's "shared" is his own: it still syncs, and nothing of ann's
	// tombstone shows through bob's key.
	if m := a.ok("POST", "/sync/message", bob, `{"sessionExternalId":"shared","externalId":"m","role":"user","textContent":"bob"}`); !isID(m["messageId"]) {
		t.Errorf("bob's message: %v", m)
	}
	if d := a.deleted(bob, ""); len(d.Deleted) != 0 {
		t.Errorf("bob lists ann's tombstones: %+v", d)
	}
	if _, del := a.syncList(bob); len(del) != 0 {
		t.Errorf("bob's deletedIds: %v", del)
	}
	if got := a.ok("POST", "/api/sessions/deleted/allow", bob, `{"externalIds":["shared","ann-only"]}`); got["allowed"] != 0.0 {
		t.Errorf("bob allowing ann's: %v", got)
	}
	if r := a.req("POST", "/sync/session", ann, `{"externalId":"shared"}`); !jsonEqual(t, r.body, []byte(`{"ok":true,"ignored":"deleted"}`)) {
		t.Errorf("bob's allow lifted ann's tombstone: %s", r.body)
	}
	// bob's deletions are his: deleting his "shared" and his account data
	// leaves ann's sessions, and ann's allow leaves bob's tombstone.
	a.ok("DELETE", "/api/account/data", bob, nil)
	if got := externalIDs(a.list(ann, "").Sessions); !slices.Equal(got, []string{"ann-only"}) {
		t.Errorf("ann's sessions after bob deleted his data: %v", got)
	}
	if got := a.ok("POST", "/api/sessions/deleted/allow", ann, `{"externalIds":["shared"]}`); got["allowed"] != 1.0 {
		t.Errorf("ann allowing hers: %v", got)
	}
	if r := a.req("POST", "/sync/session", bob, `{"externalId":"shared"}`); !jsonEqual(t, r.body, []byte(`{"ok":true,"ignored":"deleted"}`)) {
		t.Errorf("ann's allow lifted bob's tombstone: %s", r.body)
	}
	if d := a.deleted(ann, ""); len(d.Deleted) != 0 {
		t.Errorf("ann's tombstones: %+v", d)
	}
	if d := a.deleted(bob, ""); !slices.Equal(d.ids(), []string{"shared"}) {
		t.Errorf("bob's tombstones: %+v", d)
	}
}

// Sessions of excluded projects are answered like deleted ones, listed with
// reason "excluded", and cannot be allowed while the pattern is set.
func TestExcludedProjectsAPI(t *testing.T) {
	a := newApp(t, options{exclude: "/home/*/clients/**,internal-*"})
	key := a.user("ann")
	for _, body := range []string{
		`{"externalId":"c1","projectPath":"/home/ann/clients/acme","title":"acme work"}`,
		`{"externalId":"c2","projectName":"internal-tools"}`,
	} {
		r := a.req("POST", "/sync/session", key, body)
		if !jsonEqual(t, r.body, []byte(`{"ok":true,"ignored":"excluded"}`)) {
			t.Errorf("excluded session %s: %d %s", body, r.status, r.body)
		}
	}
	r := a.req("POST", "/sync/batch", key, `{"sessions":[{"externalId":"ok","projectPath":"/home/ann/own"},{"externalId":"c3","projectPath":"/home/bo/clients/x"}],
	  "messages":[{"sessionExternalId":"c1","externalId":"m","role":"user","textContent":"x"}]}`)
	if !jsonEqual(t, r.body, []byte(`{"ok":true,"sessions":{"inserted":1,"updated":0},"messages":{"inserted":0,"updated":0},"errors":[],
	    "ignored":[{"entry":"sessions[1]","externalId":"c3","reason":"excluded"},{"entry":"messages[0]","externalId":"m","reason":"excluded"}]}`)) {
		t.Errorf("batch with excluded entries: %s", r.body)
	}
	if got := externalIDs(a.list(key, "").Sessions); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("sessions %v", got)
	}
	d := a.deleted(key, "")
	if len(d.Deleted) != 3 {
		t.Fatalf("deleted list %+v", d)
	}
	for _, e := range d.Deleted {
		if e.Reason != "excluded" {
			t.Errorf("%s listed with reason %q", e.ExternalID, e.Reason)
		}
	}
	before := a.snapshot()
	checkError(t, a.req("POST", "/api/sessions/deleted/allow", key, `{"externalIds":["c2"]}`), http.StatusBadRequest, "Bad Request",
		`externalIds[0] (c2): its project is excluded on this server (HINDSIGHT_EXCLUDE_PROJECTS pattern "internal-*")`)
	if after := a.snapshot(); after != before {
		t.Errorf("a refused allow changed the store")
	}
	if strings.Contains(a.snapshot(), "acme work") {
		t.Error("the excluded session's title was stored")
	}
}
