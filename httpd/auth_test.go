package httpd_test

import (
	"bytes"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/kv"
)

func TestAuthRequired(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	a.ok("POST", "/sync/session", key, `{"externalId":"s"}`) // key cached from here on
	revoked := a.user("bob")
	a.ok("GET", "/api/sessions", revoked, nil) // cached before it is revoked
	if _, err := a.acct.Revoke(bg, a.userIDs["bob"], revoked[:10]); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	headers := []struct {
		name, value string // value "-" = no header
	}{
		{"missing header", "-"},
		{"empty header", ""},
		{"not Bearer", "Basic " + key},
		{"token scheme", "Token " + key},
		{"Bearer without key", "Bearer"},
		{"Bearer and a space", "Bearer "},
		{"bare key", key},
		{"malformed key", "Bearer bad_key"},
		{"wrong prefix", "Bearer osx_" + key[4:]},
		{"key too short", "Bearer " + key[:len(key)-1]},
		{"key with a bad character", "Bearer " + key[:len(key)-1] + "!"},
		{"unknown well-formed key", "Bearer osk_" + strings.Repeat("Z", 32)},
		{"revoked key (was cached)", "Bearer " + revoked},
	}
	endpoints := []struct{ method, path, body string }{
		{"GET", "/api/sessions", ""},
		{"GET", "/api/sessions/get?id=0123456789abcdef", ""},
		{"GET", "/api/stats", ""},
		{"GET", "/sync/sessions/list", ""},
		{"POST", "/sync/session", `{"externalId":"intruder"}`},
		{"POST", "/sync/message", `{"sessionExternalId":"intruder","externalId":"m","role":"user"}`},
		{"POST", "/sync/batch", `{"sessions":[{"externalId":"intruder"}]}`},
		{"DELETE", "/api/sessions?project=/p", ""},
		{"DELETE", "/api/account/data", ""},
		{"GET", "/api/sessions/deleted", ""},
		{"POST", "/api/sessions/deleted/allow", `{"externalIds":["s"]}`},
	}
	before := a.snapshot()
	for _, h := range headers {
		t.Run(h.name, func(t *testing.T) {
			for _, ep := range endpoints {
				var body any
				if ep.body != "" {
					body = ep.body
				}
				var extra []string
				if h.value != "-" {
					extra = []string{"Authorization", h.value}
				}
				r := a.req(ep.method, ep.path, "", body, extra...)
				checkError(t, r, http.StatusUnauthorized, "Unauthorized", "")
			}
		})
	}
	if after := a.snapshot(); after != before {
		t.Errorf("unauthorized requests changed the store:\nbefore %s\nafter  %s", before, after)
	}
	// The valid key still works.
	a.ok("GET", "/api/sessions", key, nil)
}

func TestKeysStoredOnlyAsSHA256(t *testing.T) {
	a := newApp(t, options{})
	keys := []string{a.user("ann"), a.user("bob")}
	for _, k := range keys {
		a.ok("POST", "/sync/session", k, `{"externalId":"s"}`)
	}
	if err := a.acct.Flush(bg); err != nil { // last-used times are written too
		t.Fatal(err)
	}
	raw := recordBytes(t, a.store)
	for _, k := range keys {
		if bytes.Contains(raw, []byte(k)) || bytes.Contains(raw, []byte(k[10:])) {
			t.Errorf("the data file contains key %s... or its secret part", k[:10])
		}
		if !bytes.Contains(raw, []byte(accounts.Hash(k))) {
			t.Errorf("the data file lacks the SHA-256 of key %s...", k[:10])
		}
	}
}

// clock is a settable fake time for the rate limiter.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestRateLimit(t *testing.T) {
	c := &clock{t: epoch}
	a := newApp(t, options{rate: 1, burst: 2, now: c.Now})
	ann, bob := a.user("ann"), a.user("bob")
	for i := range 2 {
		if r := a.req("GET", "/api/sessions", ann, nil); r.status != 200 {
			t.Fatalf("request %d within the burst: %d %s", i+1, r.status, r.body)
		}
	}
	r := a.req("GET", "/api/sessions", ann, nil)
	checkError(t, r, http.StatusTooManyRequests, "Too Many Requests", "")
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Errorf("Retry-After %q, want whole seconds >= 1", r.header.Get("Retry-After"))
	}
	// Writes are limited too, and a limited write stores nothing.
	before := a.snapshot()
	if r := a.req("POST", "/sync/session", ann, `{"externalId":"s"}`); r.status != http.StatusTooManyRequests {
		t.Errorf("write over the limit: %d", r.status)
	}
	if a.snapshot() != before {
		t.Errorf("a rate-limited write changed the store")
	}
	// Buckets are per key.
	if r := a.req("GET", "/api/sessions", bob, nil); r.status != 200 {
		t.Errorf("another key is limited too: %d", r.status)
	}
	// Spelling the header differently is the same key, and the same bucket.
	for _, h := range []string{"Bearer  " + ann, "Bearer \t" + ann, "Bearer " + ann + " "} {
		if r := a.req("GET", "/api/sessions", "", nil, "Authorization", h); r.status != http.StatusTooManyRequests {
			t.Errorf("Authorization %q: status %d, want 429 (the same key must share one bucket)", strings.ReplaceAll(h, ann, "<key>"), r.status)
		}
	}
	// Unauthenticated requests are rejected before the limiter.
	if r := a.req("GET", "/api/sessions", "osk_"+strings.Repeat("q", 32), nil); r.status != http.StatusUnauthorized {
		t.Errorf("unknown key: %d, want 401", r.status)
	}
	// /health is public and not limited.
	for range 5 {
		if r := a.req("GET", "/health", "", nil); r.status != 200 {
			t.Fatalf("health: %d", r.status)
		}
	}
	// After Retry-After seconds a request passes again.
	c.Add(time.Duration(secs) * time.Second)
	if r := a.req("GET", "/api/sessions", ann, nil); r.status != 200 {
		t.Errorf("after waiting Retry-After: %d %s", r.status, r.body)
	}
}

func TestUserIsolation(t *testing.T) {
	a := newApp(t, options{})
	ann, bob := a.user("ann"), a.user("bob")
	// Both users use the same externalIds for different sessions and messages.
	batch := func(who string) string {
		return `{"sessions":[{"externalId":"shared","source":"pi","title":"` + who + `'s session","model":"` + who + `-model","promptTokens":` +
			map[string]string{"ann": "100", "bob": "7"}[who] + `}],
		  "messages":[{"sessionExternalId":"shared","externalId":"m1","role":"user","textContent":"` + who + ` speaking"}]}`
	}
	if b := a.batch(ann, batch("ann")); b.Sessions.Inserted != 1 || b.Messages.Inserted != 1 {
		t.Fatalf("ann's batch: %+v", b)
	}
	annOnly := a.ok("POST", "/sync/session", ann, `{"externalId":"ann-only","title":"secret"}`)["sessionId"].(string)
	// Bob's identical externalIds insert new records: the upsert key is per user.
	if b := a.batch(bob, batch("bob")); b.Sessions.Inserted != 1 || b.Messages.Inserted != 1 || b.Sessions.Updated+b.Messages.Updated != 0 {
		t.Fatalf("bob's batch: %+v, want 1 and 1 inserted (not updated)", b)
	}
	bobMsg := a.ok("POST", "/sync/message", bob, `{"sessionExternalId":"shared","externalId":"m1","role":"user","textContent":"bob again"}`)["messageId"]

	annShared, bobShared := a.byExternal(ann, "shared"), a.byExternal(bob, "shared")
	if annShared.ID == bobShared.ID {
		t.Fatalf("both users' \"shared\" sessions have id %s", annShared.ID)
	}
	if annShared.Title != "ann's session" || annShared.PromptTokens != 100 || annShared.MessageCount != 1 {
		t.Errorf("ann's session changed by bob: %+v", annShared)
	}
	ga, gb := a.get(ann, annShared.ID), a.get(bob, bobShared.ID)
	if len(ga.Messages) != 1 || *ga.Messages[0].TextContent != "ann speaking" {
		t.Errorf("ann's messages: %+v", ga.Messages)
	}
	if len(gb.Messages) != 1 || *gb.Messages[0].TextContent != "bob again" || gb.Messages[0].ID != bobMsg || gb.Messages[0].ID == ga.Messages[0].ID {
		t.Errorf("bob's messages: %+v", gb.Messages)
	}

	// Bob cannot see ann's sessions: 404, never 403.
	for _, id := range []string{annShared.ID, annOnly} {
		r := a.req("GET", "/api/sessions/get?id="+id, bob, nil)
		checkError(t, r, http.StatusNotFound, "Not Found", "")
		if bytes.Contains(r.body, []byte("secret")) || bytes.Contains(r.body, []byte("ann")) {
			t.Errorf("the 404 reveals ann's data: %s", r.body)
		}
	}
	// Nothing of ann's in any of bob's reads.
	l := a.list(bob, "?limit=500")
	if got := externalIDs(l.Sessions); !slices.Equal(got, []string{"shared"}) || l.Sessions[0].ID != bobShared.ID {
		t.Errorf("bob's /api/sessions: %+v", l.Sessions)
	}
	if l := a.list(bob, "?limit=500&source=opencode"); len(l.Sessions) != 0 {
		t.Errorf("bob sees ann's opencode session: %+v", l.Sessions)
	}
	var ids struct{ SessionIDs []string }
	a.req("GET", "/sync/sessions/list", bob, nil).into(t, &ids)
	if !slices.Equal(ids.SessionIDs, []string{"shared"}) {
		t.Errorf("bob's /sync/sessions/list: %v", ids.SessionIDs)
	}
	st := a.ok("GET", "/api/stats", bob, nil)
	if st["sessionCount"] != 1.0 || st["messageCount"] != 1.0 || st["totalTokens"] != 7.0 {
		t.Errorf("bob's stats include ann's data: %v", st)
	}
	if mu := st["modelUsage"].(map[string]any); len(mu) != 1 || mu["bob-model"] == nil {
		t.Errorf("bob's modelUsage: %v", mu)
	}
	// And ann sees both of hers.
	if got := externalIDs(a.list(ann, "").Sessions); !slices.Equal(got, []string{"ann-only", "shared"}) {
		t.Errorf("ann's sessions: %v", got)
	}
}

// recordBytes returns the bytes of st's bbolt file; for records in
// PostgreSQL, those of a bbolt file they are copied into (kv.Copy: every
// record as its logical value), which holds what every row holds.
func recordBytes(t *testing.T, st *kv.Store) []byte {
	t.Helper()
	path := st.Path()
	if path == "" {
		dir := t.TempDir()
		file, err := kv.Open(dir, kv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Copy(bg, st, file, kv.CopyOptions{From: "the test's PostgreSQL"}); err != nil {
			file.Close()
			t.Fatalf("copy the records out of PostgreSQL: %v", err)
		}
		path = file.Path()
		if err := file.Close(); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
