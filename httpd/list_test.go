package httpd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func externalIDs(ss []sessionJSON) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.ExternalID)
	}
	return out
}

func TestListOrderMostRecentlyUpdatedFirst(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		a.ok("POST", "/sync/session", key, fmt.Sprintf(`{"externalId":%q}`, id))
	}
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"creation order", func() {}, []string{"s4", "s3", "s2", "s1"}},
		{"a new message moves its session to the top", func() {
			a.ok("POST", "/sync/message", key, `{"sessionExternalId":"s2","externalId":"m","role":"user","textContent":"x"}`)
		}, []string{"s2", "s4", "s3", "s1"}},
		{"a session update moves it", func() {
			a.ok("POST", "/sync/session", key, `{"externalId":"s1","title":"renamed"}`)
		}, []string{"s1", "s2", "s4", "s3"}},
		{"an identical re-send does not", func() {
			a.ok("POST", "/sync/session", key, `{"externalId":"s4"}`)
			a.ok("POST", "/sync/message", key, `{"sessionExternalId":"s2","externalId":"m","role":"user","textContent":"x"}`)
		}, []string{"s1", "s2", "s4", "s3"}},
		{"a batch message moves its session", func() {
			a.batch(key, `{"messages":[{"sessionExternalId":"s3","externalId":"m","role":"user"}]}`)
		}, []string{"s3", "s1", "s2", "s4"}},
		{"a message auto-creating a session puts it on top", func() {
			a.ok("POST", "/sync/message", key, `{"sessionExternalId":"s5","externalId":"m","role":"user"}`)
		}, []string{"s5", "s3", "s1", "s2", "s4"}},
	}
	for _, st := range steps {
		st.do()
		l := a.list(key, "")
		if got := externalIDs(l.Sessions); !slices.Equal(got, st.want) {
			t.Errorf("%s: order %v, want %v", st.name, got, st.want)
		}
		for i := 1; i < len(l.Sessions); i++ {
			if l.Sessions[i-1].UpdatedAt < l.Sessions[i].UpdatedAt {
				t.Errorf("%s: updatedAt not descending at %d: %d < %d", st.name, i, l.Sessions[i-1].UpdatedAt, l.Sessions[i].UpdatedAt)
			}
		}
		if l.NextCursor != "" {
			t.Errorf("%s: nextCursor %q on a complete listing", st.name, l.NextCursor)
		}
	}
}

// bigBatch is one /sync/batch creating n sessions (and a message in some).
func bigBatch(n int, source func(i int) string) string {
	var ss, ms []string
	for i := range n {
		ss = append(ss, fmt.Sprintf(`{"externalId":"s%04d","source":%q}`, i, source(i)))
		if i%7 == 0 {
			ms = append(ms, fmt.Sprintf(`{"sessionExternalId":"s%04d","externalId":"m","role":"user"}`, i))
		}
	}
	return `{"sessions":[` + strings.Join(ss, ",") + `],"messages":[` + strings.Join(ms, ",") + `]}`
}

func TestListLimitAndPagination(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	const n = 520
	// One batch: most sessions share one updatedAt, so order and cursors
	// rely on the id tie-break.
	b := a.batch(key, bigBatch(n, func(i int) string { return []string{"pi", "claude-code", "cursor"}[i%3] }))
	if b.Sessions.Inserted != n || len(b.Errors) != 0 {
		t.Fatalf("batch: %+v", b)
	}
	// Default limit 50.
	l := a.list(key, "")
	if len(l.Sessions) != 50 || l.NextCursor == "" {
		t.Errorf("default listing: %d sessions, nextCursor %q; want 50 and a cursor", len(l.Sessions), l.NextCursor)
	}
	// Clamped to 500.
	// Any whole number above the maximum is clamped, however large.
	for _, q := range []string{"?limit=100000", "?limit=501", "?limit=1e9", "?limit=9223372036854775807",
		"?limit=99999999999999999999", "?limit=1e300"} {
		r := a.req("GET", "/api/sessions"+q, key, nil)
		if r.status != http.StatusOK {
			t.Errorf("%s: status %d %s; want 200 with the limit clamped to 500", q, r.status, r.body)
			continue
		}
		var l listJSON
		r.into(t, &l)
		if len(l.Sessions) != 500 || l.NextCursor == "" {
			t.Errorf("%s: %d sessions, nextCursor %q; want 500 (the maximum) and a cursor", q, len(l.Sessions), l.NextCursor)
		}
	}
	all := a.list(key, "?limit=500")
	if rest := a.list(key, "?limit=500&cursor="+url.QueryEscape(all.NextCursor)); len(rest.Sessions) != n-500 || rest.NextCursor != "" {
		t.Errorf("second page: %d sessions, cursor %q; want %d and none", len(rest.Sessions), rest.NextCursor, n-500)
	}
	for _, tc := range []struct {
		q    string
		want int
	}{{"?limit=1", 1}, {"?limit=7", 7}, {"?limit=500", 500}, {"?limit=20.0", 20}, {"?limit=%2012", 12}} {
		if l := a.list(key, tc.q); len(l.Sessions) != tc.want {
			t.Errorf("%s: %d sessions, want %d", tc.q, len(l.Sessions), tc.want)
		}
	}

	// Paging with a cursor visits every session exactly once, in order.
	for _, tc := range []struct {
		name, query string
		want        int
		match       func(sessionJSON) bool
	}{
		{"all", "", n, func(sessionJSON) bool { return true }},
		{"source filter", "&source=claude-code", n / 3, func(s sessionJSON) bool { return s.Source == "claude-code" }},
		{"normalised source", "&source=cursor-sync", n / 3, func(s sessionJSON) bool { return s.Source == "cursor-sync" }},
		{"unknown source", "&source=nope", 0, func(sessionJSON) bool { return false }},
	} {
		for _, limit := range []int{1, 33, 500} {
			if limit == 1 && tc.name != "all" {
				continue // the one-per-page walk is slow; once is enough
			}
			t.Run(fmt.Sprintf("%s/limit=%d", tc.name, limit), func(t *testing.T) {
				seen := map[string]bool{}
				var prev *sessionJSON
				cursor, pages := "", 0
				for {
					q := fmt.Sprintf("?limit=%d%s", limit, tc.query)
					if cursor != "" {
						q += "&cursor=" + url.QueryEscape(cursor)
					}
					l := a.list(key, q)
					pages++
					if len(l.Sessions) > limit {
						t.Fatalf("page %d has %d sessions, limit %d", pages, len(l.Sessions), limit)
					}
					for _, s := range l.Sessions {
						if seen[s.ID] {
							t.Fatalf("session %s listed twice", s.ExternalID)
						}
						seen[s.ID] = true
						if !tc.match(s) {
							t.Fatalf("session %s (source %s) does not match the filter", s.ExternalID, s.Source)
						}
						if prev != nil && (prev.UpdatedAt < s.UpdatedAt || prev.UpdatedAt == s.UpdatedAt && prev.ID < s.ID) {
							t.Fatalf("order broken between %s and %s", prev.ExternalID, s.ExternalID)
						}
						s := s
						prev = &s
					}
					if l.NextCursor == "" {
						break
					}
					if len(l.Sessions) != limit {
						t.Fatalf("page %d: nextCursor with a short page (%d < %d)", pages, len(l.Sessions), limit)
					}
					cursor = l.NextCursor
				}
				if len(seen) != tc.want {
					t.Errorf("visited %d sessions in %d pages, want %d", len(seen), pages, tc.want)
				}
			})
		}
	}
}

func TestListBadParameters(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	a.ok("POST", "/sync/session", key, `{"externalId":"s"}`)
	for _, q := range []string{"limit=abc", "limit=-1", "limit=0", "limit=1.5", "limit=NaN", "limit=Inf", "limit=-1e300", "limit=0x10",
		"cursor=garbage", "cursor=123", "cursor=abc.0123456789abcdef", "cursor=1.short"} {
		t.Run(q, func(t *testing.T) {
			r := a.req("GET", "/api/sessions?"+q, key, nil)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			e := r.json(t)
			name, _, _ := strings.Cut(q, "=")
			if e["error"] != "Bad Request" || !strings.Contains(fmt.Sprint(e["message"]), name) {
				t.Errorf("body %s: want error Bad Request and a message naming %s", r.body, name)
			}
		})
	}
}

func TestGetSessionBadID(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	a.ok("POST", "/sync/session", key, `{"externalId":"s"}`)
	for _, tc := range []struct {
		query  string
		status int
	}{
		{"", http.StatusBadRequest},
		{"?id=", http.StatusBadRequest},
		{"?id=s", http.StatusNotFound},                // an externalId is not an id
		{"?id=0123456789abcdef", http.StatusNotFound}, // well-formed, unknown
		{"?id=" + url.QueryEscape(strings.Repeat("\xff", 16)), http.StatusNotFound},
	} {
		r := a.req("GET", "/api/sessions/get"+tc.query, key, nil)
		if r.status != tc.status {
			t.Errorf("%q: status %d, want %d (%s)", tc.query, r.status, tc.status, r.body)
			continue
		}
		var e map[string]string
		if err := json.Unmarshal(r.body, &e); err != nil || e["error"] == "" || e["message"] == "" {
			t.Errorf("%q: body %s, want {error, message}", tc.query, r.body)
		}
	}
}
