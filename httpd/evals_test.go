package httpd_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// evalSessionJSON is a session read object with its eval fields.
type evalSessionJSON struct {
	sessionJSON
	EvalReady      *bool    `json:"evalReady"`
	EvalStatus     string   `json:"evalStatus"`
	EvalNotes      string   `json:"evalNotes"`
	EvalTags       []string `json:"evalTags"`
	ExpectedOutput string   `json:"expectedOutput"`
	ReviewedAt     int64    `json:"reviewedAt"`
}

type labelJSON struct {
	OK       bool              `json:"ok"`
	Updated  int               `json:"updated"`
	Sessions []evalSessionJSON `json:"sessions"`
}

func (a *app) label(key string, body any) labelJSON {
	a.t.Helper()
	r := a.req("PATCH", "/api/sessions/eval", key, body)
	if r.status != http.StatusOK {
		a.t.Fatalf("PATCH /api/sessions/eval %v: %d %s", body, r.status, r.body)
	}
	var l labelJSON
	r.into(a.t, &l)
	if !l.OK {
		a.t.Fatalf("label response %s: want ok true", r.body)
	}
	return l
}

// sessions syncs one session per externalId (title = externalId, one user
// message) and returns their service ids in the same order.
func (a *app) sessions(key string, externalIDs ...string) []string {
	a.t.Helper()
	var ss, ms []string
	for _, e := range externalIDs {
		ss = append(ss, fmt.Sprintf(`{"externalId":%q,"title":%q,"source":"claude-code"}`, e, e))
		ms = append(ms, fmt.Sprintf(`{"sessionExternalId":%q,"externalId":"m1","role":"user","textContent":"hello"}`, e))
	}
	a.batch(key, `{"sessions":[`+strings.Join(ss, ",")+`],"messages":[`+strings.Join(ms, ",")+`]}`)
	var ids []string
	for _, e := range externalIDs {
		ids = append(ids, a.byExternal(key, e).ID)
	}
	return ids
}

// TestLabelling walks one session through the labelling workflow: each step
// is a PATCH and what the session must look like after it.
func TestLabelling(t *testing.T) {
	c := &clock{t: epoch.Add(time.Hour)}
	a := newApp(t, options{now: c.Now})
	ann := a.user("ann")
	ids := a.sessions(ann, "first", "second", "third")
	before := a.list(ann, "")

	steps := []struct {
		name        string
		body        string
		updated     int
		status      string
		ready       bool
		reviewedNow bool // reviewedAt must be this step's time; else unchanged
		check       func(t *testing.T, s evalSessionJSON)
	}{
		{"mark eval-ready defaults to needs_review", `{"evalReady":true}`, 1, "needs_review", true, true, nil},
		{"same again changes nothing", `{"evalReady":true}`, 0, "needs_review", true, false, nil},
		{"status change sets reviewedAt", `{"evalStatus":"golden"}`, 1, "golden", true, true, nil},
		{"tags and expected output do not", `{"evalTags":[" auth ","bug","auth"],"expectedOutput":"The ideal answer."}`, 1, "golden", true, false,
			func(t *testing.T, s evalSessionJSON) {
				if !slices.Equal(s.EvalTags, []string{"auth", "bug"}) || s.ExpectedOutput != "The ideal answer." {
					t.Errorf("tags %q expectedOutput %q", s.EvalTags, s.ExpectedOutput)
				}
			}},
		{"notes change sets reviewedAt", `{"evalNotes":"checked against the spec"}`, 1, "golden", true, true,
			func(t *testing.T, s evalSessionJSON) {
				if s.EvalNotes != "checked against the spec" || len(s.EvalTags) != 2 {
					t.Errorf("notes %q tags %q", s.EvalNotes, s.EvalTags)
				}
			}},
		{"unmark keeps the labels", `{"evalReady":false}`, 1, "golden", false, false, nil},
		{"re-mark keeps an earlier status", `{"evalReady":true}`, 1, "golden", true, false, nil},
		{"status and ready together", `{"evalReady":true,"evalStatus":"incorrect","unknownField":1}`, 1, "incorrect", true, true, nil},
		{"empty tags clear them", `{"evalTags":[],"expectedOutput":""}`, 1, "incorrect", true, false,
			func(t *testing.T, s evalSessionJSON) {
				if s.EvalTags != nil || s.ExpectedOutput != "" {
					t.Errorf("tags %q expectedOutput %q, want both cleared", s.EvalTags, s.ExpectedOutput)
				}
			}},
	}
	reviewedAt := int64(0)
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			c.Add(time.Minute)
			body := `{"ids":["` + ids[0] + `"],` + strings.TrimPrefix(st.body, "{")
			got := a.label(ann, body)
			if got.Updated != st.updated || len(got.Sessions) != 1 {
				t.Fatalf("updated %d, %d sessions; want %d, 1", got.Updated, len(got.Sessions), st.updated)
			}
			s := got.Sessions[0]
			if s.ID != ids[0] || s.EvalStatus != st.status || s.EvalReady == nil || *s.EvalReady != st.ready {
				t.Errorf("session %s: status %q ready %v; want %q %v", s.ID, s.EvalStatus, s.EvalReady, st.status, st.ready)
			}
			want := reviewedAt
			if st.reviewedNow {
				want = c.Now().UnixMilli()
			}
			if s.ReviewedAt != want {
				t.Errorf("reviewedAt %d, want %d", s.ReviewedAt, want)
			}
			reviewedAt = s.ReviewedAt
			if st.check != nil {
				st.check(t, s)
			}
			// The read endpoints show the same.
			var g struct{ Session evalSessionJSON }
			a.req("GET", "/api/sessions/get?id="+ids[0], ann, nil).into(t, &g)
			if g.Session.EvalStatus != s.EvalStatus || g.Session.ReviewedAt != s.ReviewedAt {
				t.Errorf("/api/sessions/get: status %q reviewedAt %d", g.Session.EvalStatus, g.Session.ReviewedAt)
			}
		})
	}

	// Labelling did not touch updatedAt nor the most-recently-updated order.
	after := a.list(ann, "")
	if !slices.Equal(externalIDs(after.Sessions), externalIDs(before.Sessions)) {
		t.Errorf("order changed: %v -> %v", externalIDs(before.Sessions), externalIDs(after.Sessions))
	}
	for i := range after.Sessions {
		if after.Sessions[i].UpdatedAt != before.Sessions[i].UpdatedAt {
			t.Errorf("%s: updatedAt %d -> %d", after.Sessions[i].ExternalID, before.Sessions[i].UpdatedAt, after.Sessions[i].UpdatedAt)
		}
	}

	// Several ids at once, in request order; duplicates count once.
	got := a.label(ann, `{"ids":["`+ids[2]+`","`+ids[1]+`","`+ids[2]+`"],"evalReady":true,"evalStatus":"correct"}`)
	if got.Updated != 2 || len(got.Sessions) != 2 || got.Sessions[0].ID != ids[2] || got.Sessions[1].ID != ids[1] {
		t.Errorf("batch label: updated %d sessions %+v", got.Updated, got.Sessions)
	}
}

// TestLabellingBadInput: every malformed request is a 400 naming the
// problem, another user's id is a 404, and none of them changes anything.
func TestLabellingBadInput(t *testing.T) {
	a := newApp(t, options{})
	ann, bob := a.user("ann"), a.user("bob")
	mine := a.sessions(ann, "mine")[0]
	theirs := a.sessions(bob, "theirs")[0]
	a.label(bob, `{"ids":["`+theirs+`"],"evalReady":true,"evalNotes":"bob's secret notes"}`)
	ids := func(list ...string) string { return `"ids":["` + strings.Join(list, `","`) + `"]` }
	tags := func(n, size int) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%q", fmt.Sprintf("%0*d", size, i)))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	big := strings.Repeat("x", 1<<20+1)
	tests := []struct {
		name   string
		body   string
		status int
		want   string
	}{
		{"invalid status", `{` + ids(mine) + `,"evalStatus":"great"}`, 400, "evalStatus must be one of golden, correct, incorrect, needs_review"},
		{"status of the wrong type", `{` + ids(mine) + `,"evalStatus":1}`, 400, "evalStatus must be one of"},
		{"empty status", `{` + ids(mine) + `,"evalStatus":""}`, 400, "evalStatus must be one of"},
		{"evalReady not a boolean", `{` + ids(mine) + `,"evalReady":"yes"}`, 400, "evalReady must be true or false"},
		{"notes not a string", `{` + ids(mine) + `,"evalNotes":["a"]}`, 400, "evalNotes must be a string"},
		{"notes too long", `{` + ids(mine) + `,"evalNotes":"` + big + `"}`, 400, "evalNotes is 1048577 bytes; the limit is 1 MiB"},
		{"expected output too long", `{` + ids(mine) + `,"expectedOutput":"` + big + `"}`, 400, "expectedOutput is 1048577 bytes"},
		{"tags not a list", `{` + ids(mine) + `,"evalTags":"auth"}`, 400, "evalTags must be a list of strings"},
		{"too many tags", `{` + ids(mine) + `,"evalTags":` + tags(51, 3) + `}`, 400, "at most 50 evalTags, got 51"},
		{"tag too long", `{` + ids(mine) + `,"evalTags":` + tags(1, 101) + `}`, 400, "evalTags[0] is longer than 100 characters"},
		{"empty tag", `{` + ids(mine) + `,"evalTags":["ok"," "]}`, 400, "evalTags[1] is empty"},
		{"tag with a comma", `{` + ids(mine) + `,"evalTags":["a,b"]}`, 400, "evalTags[0] holds a comma"},
		{"no ids", `{"evalReady":true}`, 400, "ids is required"},
		{"empty ids", `{"ids":[],"evalReady":true}`, 400, "ids is empty"},
		{"ids not strings", `{"ids":[1,2],"evalReady":true}`, 400, "ids must be a list of session id strings"},
		{"nothing to change", `{` + ids(mine) + `,"evalStatus":null}`, 400, "nothing to change"},
		{"not an object", `["x"]`, 400, "body must be a JSON object"},
		{"not JSON", `{"ids":`, 400, "body must be a JSON object"},
		{"another user's id", `{` + ids(theirs) + `,"evalStatus":"golden"}`, 404, "no session with id"},
		{"mine and another user's", `{` + ids(mine, theirs) + `,"evalStatus":"golden"}`, 404, "nothing was changed"},
		{"an id that does not exist", `{` + ids(mine, "0123456789abcdef") + `,"evalReady":true}`, 404, "nothing was changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.snapshot()
			r := a.req("PATCH", "/api/sessions/eval", ann, tt.body)
			code := map[int]string{400: "Bad Request", 404: "Not Found"}[tt.status]
			checkError(t, r, tt.status, code, tt.want)
			if strings.Contains(string(r.body), "secret") {
				t.Errorf("error leaks another user's data: %s", r.body)
			}
			if after := a.snapshot(); after != before {
				t.Errorf("a rejected request changed the store")
			}
		})
	}
	if r := a.req("PATCH", "/api/sessions/eval", "", `{"ids":["`+mine+`"],"evalReady":true}`); r.status != http.StatusUnauthorized {
		t.Errorf("without a key: %d", r.status)
	}
}

// TestEvalsList: /api/evals lists eval-ready sessions only, the caller's
// only, most recently reviewed first, with filters.
func TestEvalsList(t *testing.T) {
	c := &clock{t: epoch.Add(time.Hour)}
	a := newApp(t, options{now: c.Now})
	ann, bob := a.user("ann"), a.user("bob")
	ids := a.sessions(ann, "s0", "s1", "s2", "s3", "s4")
	a.sessions(bob, "b0")
	a.batch(ann, `{"sessions":[{"externalId":"s3","source":"opencode","model":"gpt-5"}],"messages":[]}`)
	label := func(i int, body string) {
		c.Add(time.Minute)
		a.label(ann, `{"ids":["`+ids[i]+`"],`+body+`}`)
	}
	label(0, `"evalReady":true,"evalStatus":"golden","evalTags":["auth","bug"]`)
	label(1, `"evalReady":true,"evalTags":["auth"]`)
	label(2, `"evalStatus":"correct"`) // labelled but not eval-ready
	label(3, `"evalReady":true,"evalStatus":"incorrect"`)
	label(0, `"evalNotes":"reviewed again"`) // now the most recently reviewed
	a.label(bob, `{"ids":["`+a.byExternal(bob, "b0").ID+`"],"evalReady":true}`)

	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"s0", "s3", "s1"}},
		{"?status=golden", []string{"s0"}},
		{"?status=needs_review,incorrect", []string{"s3", "s1"}},
		{"?tag=auth", []string{"s0", "s1"}},
		{"?tag=auth,bug", []string{"s0"}},
		{"?tags=bug&tag=auth", []string{"s0"}},
		{"?source=opencode", []string{"s3"}},
		{"?model=gpt-5&status=incorrect", []string{"s3"}},
		{"?source=cursor-sync", []string{}},
		{"?limit=2", []string{"s0", "s3"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var got struct {
				Sessions []evalSessionJSON
				Total    int
			}
			r := a.req("GET", "/api/evals"+tt.query, ann, nil)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			r.into(t, &got)
			var ext []string
			for _, s := range got.Sessions {
				ext = append(ext, s.ExternalID)
				if s.EvalReady == nil || !*s.EvalReady {
					t.Errorf("%s is not eval-ready", s.ExternalID)
				}
			}
			if !slices.Equal(ext, tt.want) && !(len(ext) == 0 && len(tt.want) == 0) {
				t.Errorf("sessions %v, want %v", ext, tt.want)
			}
			if got.Sessions == nil {
				t.Errorf("sessions is null, want []")
			}
		})
	}
	checkError(t, a.req("GET", "/api/evals?status=great", ann, nil), 400, "Bad Request", `status "great" is not an eval status`)
}
