package httpd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/httpd"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/internal/racetest"
	"github.com/hindsight-dev/hindsight/kv"
)

func day(s string) int64 {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d.Add(12 * time.Hour).UnixMilli()
}

// exportFixture is ann's sessions for the export tests, by name:
//
//	login     golden, tags auth+bug, expectedOutput, 2 exchanges, tool calls,
//	          home directories, created 2026-01-10
//	refactor  incorrect, tag refactor, opencode / gpt-5, 1 exchange, 2026-02-15
//	draft     not eval-ready, 1 exchange, 2026-02-20
//	noreply   needs_review, tag auth, no title, no assistant reply, 2026-03-01
//
// reviewed in the order noreply, refactor, login; and bob's session "bobs"
// (eval-ready, title "bob's secret").
type exportFixture struct {
	a        *app
	clock    *clock
	ann, bob string
	ids      map[string]string // name -> id; bob's is "bobs"
}

func newExportFixture(t *testing.T) *exportFixture {
	c := &clock{t: epoch.Add(time.Hour)}
	a := newApp(t, options{now: c.Now})
	f := &exportFixture{a: a, clock: c, ann: a.user("ann"), bob: a.user("bob"), ids: map[string]string{}}
	session := func(key, name, body string) {
		f.ids[name] = a.ok("POST", "/sync/session", key, `{"externalId":"`+name+`",`+body+`}`)["sessionId"].(string)
	}
	session(f.ann, "login", fmt.Sprintf(`"title":"Fix login redirect ✓","source":"claude-code","model":"claude-sonnet","projectPath":"/home/ann/app",
		"promptTokens":300,"completionTokens":60,"cost":0.0123,"createdAt":%d`, day("2026-01-10")))
	session(f.ann, "refactor", fmt.Sprintf(`"title":"Refactor","source":"opencode","model":"gpt-5","createdAt":%d`, day("2026-02-15")))
	session(f.ann, "draft", fmt.Sprintf(`"title":"Draft","source":"claude-code","createdAt":%d`, day("2026-02-20")))
	session(f.ann, "noreply", `"source":"claude-code"`)
	session(f.bob, "bobs", `"title":"bob's secret","source":"claude-code"`)
	msg := func(session, id, role, rest string) string {
		return fmt.Sprintf(`{"sessionExternalId":%q,"externalId":%q,"role":%q,%s}`, session, id, role, rest)
	}
	a.batch(f.ann, `{"messages":[`+strings.Join([]string{
		msg("login", "1", "system", `"textContent":"Be brief."`),
		msg("login", "2", "user", `"textContent":"Fix the login redirect in /home/ann/app"`),
		msg("login", "3", "assistant", `"parts":[{"type":"tool-call","toolName":"Bash","args":"{\"command\":\"ls /home/ann/app\"}"}]`),
		msg("login", "4", "tool", `"parts":[{"type":"tool-result","toolName":"Bash","content":"main.go"}]`),
		msg("login", "5", "assistant", `"textContent":"Found it."`),
		msg("login", "6", "assistant", `"parts":[{"type":"text","content":"Fixed."}]`),
		msg("login", "7", "user", `"textContent":"And the tests?"`),
		msg("login", "8", "assistant", `"textContent":"Added one."`),
		msg("refactor", "1", "user", `"textContent":"Rename x to y."`),
		msg("refactor", "2", "assistant", `"textContent":"Done."`),
		msg("draft", "1", "user", `"textContent":"q"`),
		msg("draft", "2", "assistant", `"textContent":"a"`),
		msg("noreply", "1", "user", `"textContent":"Explain this trace"`),
	}, ",")+`]}`)
	a.batch(f.bob, `{"messages":[`+msg("bobs", "1", "user", `"textContent":"bob's secret question"`)+","+
		msg("bobs", "2", "assistant", `"textContent":"bob's secret answer"`)+`]}`)
	label := func(key, name, body string) {
		c.Add(time.Minute)
		a.label(key, `{"ids":["`+f.ids[name]+`"],`+body+`}`)
	}
	label(f.ann, "noreply", `"evalReady":true,"evalTags":["auth"]`)
	label(f.ann, "refactor", `"evalReady":true,"evalStatus":"incorrect","evalTags":["refactor"]`)
	label(f.ann, "login", `"evalReady":true,"evalStatus":"golden","evalTags":["auth","bug"],"expectedOutput":"Redirect to /dashboard."`)
	label(f.bob, "bobs", `"evalReady":true,"evalStatus":"golden"`)
	return f
}

// checkAttachment asserts the Content-Type and the attachment file name.
func checkAttachment(t *testing.T, r *response, contentType, filename string) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != contentType {
		t.Errorf("Content-Type %q, want %q", ct, contentType)
	}
	cd := r.header.Get("Content-Disposition")
	if filename == "" {
		if cd != "" {
			t.Errorf("Content-Disposition %q, want none", cd)
		}
		return
	}
	disp, params, err := mime.ParseMediaType(cd)
	if err != nil || disp != "attachment" || params["filename"] != filename {
		t.Errorf("Content-Disposition %q, want attachment; filename=%s", cd, filename)
	}
	if r.header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "Content-Disposition") {
		t.Errorf("download lacks CORS headers: %v", r.header)
	}
}

func TestExportSession(t *testing.T) {
	f := newExportFixture(t)
	a := f.a
	login := f.ids["login"]

	t.Run("json", func(t *testing.T) {
		r := a.req("GET", "/api/export?id="+login, f.ann, nil)
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		checkAttachment(t, r, "application/json", "")
		var got struct {
			Session  struct{ ID, Title, Model string }
			Messages []struct{ Role, Content string }
		}
		r.into(t, &got)
		if got.Session.ID != login || got.Session.Title != "Fix login redirect ✓" || got.Session.Model != "claude-sonnet" {
			t.Errorf("session %+v", got.Session)
		}
		var roles []string
		for _, m := range got.Messages {
			roles = append(roles, m.Role)
		}
		if want := []string{"system", "user", "assistant", "tool", "assistant", "assistant", "user", "assistant"}; !slices.Equal(roles, want) {
			t.Errorf("roles %v, want every message in order %v", roles, want)
		}
		if len(got.Messages) == 8 && (got.Messages[2].Content != `[tool-call Bash] {"command":"ls /home/user/app"}` ||
			got.Messages[1].Content != "Fix the login redirect in /home/user/app") {
			t.Errorf("tool call or anonymisation: %q / %q", got.Messages[2].Content, got.Messages[1].Content)
		}
	})
	t.Run("markdown", func(t *testing.T) {
		r := a.req("GET", "/api/export?format=markdown&id="+login, f.ann, nil)
		checkAttachment(t, r, "text/markdown; charset=utf-8", "fix-login-redirect.md")
		for _, want := range []string{"# Fix login redirect ✓\n", "## User\n", "## Assistant\n", "```json\n{\n  \"command\": \"ls /home/user/app\"\n}\n```", "- Cost: $0.0123"} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("markdown lacks %q:\n%s", want, r.body)
			}
		}
	})
	t.Run("jsonl", func(t *testing.T) {
		r := a.req("GET", "/api/export?format=jsonl&anonymize=false&include_tools=false&id="+login, f.ann, nil)
		checkAttachment(t, r, "application/x-ndjson", "fix-login-redirect.jsonl")
		lines := jsonLines(t, r.body)
		if len(lines) != 8 || lines[1]["content"] != "Fix the login redirect in /home/ann/app" || lines[2]["content"] != "" {
			t.Errorf("lines %v: want 8, home directory kept, tool call left out", lines)
		}
	})
	t.Run("untitled", func(t *testing.T) {
		r := a.req("GET", "/api/export?format=markdown&id="+f.ids["noreply"], f.ann, nil)
		checkAttachment(t, r, "text/markdown; charset=utf-8", f.ids["noreply"]+".md")
	})

	errs := []struct {
		query  string
		status int
		want   string
	}{
		{"", 400, "id is required"},
		{"?id=" + login + "&format=pdf", 400, `unknown export format "pdf": use json, markdown or jsonl`},
		{"?id=" + login + "&anonymize=maybe", 400, "anonymize must be true or false"},
		{"?id=" + f.ids["bobs"], 404, "no session with id"},
		{"?id=" + f.ids["bobs"] + "&format=markdown", 404, "no session with id"},
		{"?id=0123456789abcdef", 404, "no session with id"},
		{"?id=short", 404, "no session with id"},
	}
	for _, tt := range errs {
		t.Run("error "+tt.query, func(t *testing.T) {
			r := a.req("GET", "/api/export"+tt.query, f.ann, nil)
			checkError(t, r, tt.status, map[int]string{400: "Bad Request", 404: "Not Found"}[tt.status], tt.want)
			if bytes.Contains(r.body, []byte("secret")) || r.header.Get("Content-Disposition") != "" {
				t.Errorf("error response leaks or downloads: %v %s", r.header, r.body)
			}
		})
	}
}

func jsonLines(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d is not a JSON object: %v\n%s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, m)
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		t.Errorf("JSONL body does not end with a newline")
	}
	return out
}

type deepevalJSON struct {
	Input            string   `json:"input"`
	ActualOutput     string   `json:"actual_output"`
	ExpectedOutput   *string  `json:"expected_output"`
	Context          []string `json:"context"`
	RetrievalContext []string `json:"retrieval_context"`
	Metadata         struct {
		SessionID string   `json:"session_id"`
		Status    string   `json:"status"`
		Tags      []string `json:"tags"`
	} `json:"metadata"`
}

func headerInt(t *testing.T, r *response, name string) int {
	t.Helper()
	n, err := strconv.Atoi(r.header.Get(name))
	if err != nil {
		t.Fatalf("%s = %q, want a number", name, r.header.Get(name))
	}
	return n
}

// TestExportEvalsSelection: which sessions an eval export holds, by filter
// or by ids, and that the count headers match the body.
func TestExportEvalsSelection(t *testing.T) {
	f := newExportFixture(t)
	tests := []struct {
		query    string
		ids      []string // names; the ids parameter
		sessions []string // in export order
		cases    int
	}{
		{"", nil, []string{"login", "refactor", "noreply"}, 3},
		{"status=golden", nil, []string{"login"}, 2},
		{"status=golden,incorrect", nil, []string{"login", "refactor"}, 3},
		{"tags=auth", nil, []string{"login", "noreply"}, 2},
		{"tags=auth,bug", nil, []string{"login"}, 2},
		{"tags=bug&status=incorrect", nil, nil, 0},
		{"source=opencode", nil, []string{"refactor"}, 1},
		{"model=gpt-5", nil, []string{"refactor"}, 1},
		{"date_from=2026-02-01", nil, []string{"refactor", "noreply"}, 1},
		{"date_to=2026-01-10", nil, []string{"login"}, 2},
		{"date_from=2026-01-10&date_to=2026-01-10", nil, []string{"login"}, 2},
		{fmt.Sprintf("date_from=%d&date_to=%d", day("2026-02-15")-1, day("2026-02-15")), nil, []string{"refactor"}, 1},
		{"", []string{"draft"}, []string{"draft"}, 1},
		{"", []string{"draft", "login"}, []string{"draft", "login"}, 3},
		{"format=deepeval", []string{"login", "login"}, []string{"login"}, 2},
		{"status=incorrect", []string{"login", "refactor"}, []string{"refactor"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.query+fmt.Sprint(tt.ids), func(t *testing.T) {
			q := tt.query
			if tt.ids != nil {
				var ids []string
				for _, name := range tt.ids {
					ids = append(ids, f.ids[name])
				}
				q += "&ids=" + strings.Join(ids, ",")
			}
			if tt.sessions == nil {
				checkError(t, f.a.req("GET", "/api/export/evals?"+q, f.ann, nil), 404, "Not Found", "no eval-ready session matches")
				return
			}
			r := f.a.req("GET", "/api/export/evals?"+q, f.ann, nil)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			checkAttachment(t, r, "application/json", "hindsight-evals-deepeval-2026-03-01.json")
			if n := headerInt(t, r, "X-Export-Sessions"); n != len(tt.sessions) {
				t.Errorf("X-Export-Sessions %d, want %d", n, len(tt.sessions))
			}
			if n := headerInt(t, r, "X-Export-TestCases"); n != tt.cases {
				t.Errorf("X-Export-TestCases %d, want %d", n, tt.cases)
			}
			var cases []deepevalJSON
			r.into(t, &cases)
			if len(cases) != tt.cases {
				t.Errorf("%d test cases in the body, want %d", len(cases), tt.cases)
			}
			var got, want []string
			for _, c := range cases {
				if len(got) == 0 || got[len(got)-1] != c.Metadata.SessionID {
					got = append(got, c.Metadata.SessionID)
				}
			}
			for _, name := range tt.sessions {
				if name != "noreply" { // no exchange, so no test case
					want = append(want, f.ids[name])
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("sessions in the body %v, want %v (%v)", got, want, tt.sessions)
			}
		})
	}
}

// TestEvalExportWithAPIKey: the original service's eval export did not work
// with an API key; here the whole workflow (sync, label, list, export) does.
func TestEvalExportWithAPIKey(t *testing.T) {
	f := newExportFixture(t)
	r := f.a.req("GET", "/api/export/evals?status=golden", f.ann, nil)
	if r.status != 200 {
		t.Fatalf("eval export with an API key: %d %s", r.status, r.body)
	}
	var cases []deepevalJSON
	r.into(t, &cases)
	want := []deepevalJSON{
		{Input: "Fix the login redirect in /home/user/app", ActualOutput: "Found it.\n\nFixed.", Context: []string{"system: Be brief."}},
		{Input: "And the tests?", ActualOutput: "Added one.", ExpectedOutput: ptrTo("Redirect to /dashboard."),
			Context: []string{"system: Be brief.", "user: Fix the login redirect in /home/user/app", "assistant: Found it.", "assistant: Fixed."}},
	}
	if len(cases) != len(want) {
		t.Fatalf("%d cases: %+v", len(cases), cases)
	}
	for i, c := range cases {
		w := want[i]
		if c.Input != w.Input || c.ActualOutput != w.ActualOutput || !slices.Equal(c.Context, w.Context) ||
			(c.ExpectedOutput == nil) != (w.ExpectedOutput == nil) || c.ExpectedOutput != nil && *c.ExpectedOutput != *w.ExpectedOutput ||
			c.RetrievalContext == nil || len(c.RetrievalContext) != 0 ||
			c.Metadata.Status != "golden" || !slices.Equal(c.Metadata.Tags, []string{"auth", "bug"}) {
			t.Errorf("case %d: %+v\nwant %+v", i, c, w)
		}
	}
	if r := f.a.req("GET", "/api/export/evals", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("without a key: %d", r.status)
	}
	if r := f.a.req("GET", "/api/export/evals", "osk_"+strings.Repeat("z", 32), nil); r.status != http.StatusUnauthorized {
		t.Errorf("with an unknown key: %d", r.status)
	}
}

func ptrTo[T any](v T) *T { return &v }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestExportEvalsFormats: every format, its headers, and that the body holds
// as many test cases as X-Export-TestCases says.
func TestExportEvalsFormats(t *testing.T) {
	f := newExportFixture(t)
	tests := []struct {
		format, contentType, ext string
		units                    func(t *testing.T, body []byte) int
	}{
		{"deepeval", "application/json", "json", func(t *testing.T, body []byte) int {
			var v []map[string]any
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatal(err)
			}
			return len(v)
		}},
		{"chat-jsonl", "application/x-ndjson", "jsonl", func(t *testing.T, body []byte) int {
			lines := jsonLines(t, body)
			for _, l := range lines {
				if _, ok := l["messages"].([]any); !ok || len(l) != 1 {
					t.Errorf("chat line %v, want {\"messages\": [...]}", l)
				}
			}
			return len(lines)
		}},
		{"text", "text/plain; charset=utf-8", "txt", func(t *testing.T, body []byte) int {
			for _, want := range []string{"Session: Fix login redirect ✓", "[USER]\nAnd the tests?", "[ASSISTANT]\nAdded one.",
				"Tokens: 360 (prompt 300, completion 60)", "Cost: $0.0123", "Model: claude-sonnet", "Eval status: golden", "Tags: auth, bug",
				"[EXPECTED OUTPUT]\nRedirect to /dashboard.", "Session: Untitled session", "Eval status: needs_review"} {
				if !strings.Contains(string(body), want) {
					t.Errorf("text lacks %q", want)
				}
			}
			// Exchanges: a [USER] block directly followed by an [ASSISTANT] block.
			n, prev := 0, ""
			for _, l := range strings.Split(string(body), "\n") {
				if l == "[USER]" || l == "[ASSISTANT]" {
					if prev == "[USER]" && l == "[ASSISTANT]" {
						n++
					}
					prev = l
				}
			}
			return n
		}},
		{"openai-evals", "application/x-ndjson", "jsonl", func(t *testing.T, body []byte) int {
			lines := jsonLines(t, body)
			for _, l := range lines {
				if _, ok := l["input"].([]any); !ok || l["ideal"] == nil {
					t.Errorf("sample %v, want input and ideal", l)
				}
			}
			return len(lines)
		}},
		{"promptfoo", "application/json", "json", func(t *testing.T, body []byte) int {
			var v []struct {
				Vars   map[string]string
				Assert []map[string]any
			}
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatal(err)
			}
			for _, c := range v {
				if c.Vars["input"] == "" {
					t.Errorf("test case without vars.input: %+v", c)
				}
			}
			return len(v)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			r := f.a.req("GET", "/api/export/evals?format="+tt.format, f.ann, nil)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			checkAttachment(t, r, tt.contentType, "hindsight-evals-"+tt.format+"-2026-03-01."+tt.ext)
			cases := headerInt(t, r, "X-Export-TestCases")
			if cases != 3 || headerInt(t, r, "X-Export-Sessions") != 3 {
				t.Errorf("X-Export-TestCases %d, X-Export-Sessions %s; want 3 and 3", cases, r.header.Get("X-Export-Sessions"))
			}
			if n := tt.units(t, r.body); n != cases {
				t.Errorf("%d test cases in the body, X-Export-TestCases says %d", n, cases)
			}
			if bytes.Contains(r.body, []byte("/home/ann")) || bytes.Contains(r.body, []byte("secret")) {
				t.Errorf("body holds a home directory or another user's data:\n%s", r.body)
			}
		})
	}
	t.Run("options", func(t *testing.T) {
		r := f.a.req("GET", "/api/export/evals?status=golden&anonymize=false&include_tools=true", f.ann, nil)
		if !bytes.Contains(r.body, []byte("/home/ann/app")) || !bytes.Contains(r.body, []byte(`[tool-call Bash]`)) {
			t.Errorf("anonymize=false&include_tools=true: %s", r.body)
		}
		r = f.a.req("GET", "/api/export/evals?status=golden", f.ann, nil)
		if bytes.Contains(r.body, []byte(`[tool-call`)) {
			t.Errorf("tools included by default: %s", r.body)
		}
	})
}

func TestExportEvalsBadInput(t *testing.T) {
	f := newExportFixture(t)
	tests := []struct {
		query  string
		status int
		want   string
	}{
		{"format=csv", 400, `unknown export format "csv": use deepeval, chat-jsonl, text, openai-evals or promptfoo`},
		{"status=great", 400, `status "great" is not an eval status`},
		{"date_from=yesterday", 400, "date_from must be a date (YYYY-MM-DD, UTC) or a millisecond timestamp"},
		{"date_to=2026-13-01", 400, "date_to must be a date"},
		{"date_from=2026-02-01&date_to=2026-01-01", 400, "date_from is after date_to"},
		{"include_tools=maybe", 400, "include_tools must be true or false"},
		{"ids=bobs", 404, "no session with id"},
		{"ids=login,bobs", 404, "no session with id"},
		{"ids=0123456789abcdef", 404, "no session with id"},
		{"status=correct", 404, "no eval-ready session matches the selection"},
		{"source=nowhere", 404, "no eval-ready session matches the selection"},
		{"ids=draft&status=golden", 404, "none of the requested sessions matches the filters"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q := tt.query
			if before, list, ok := strings.Cut(q, "ids="); ok {
				list, rest, _ := strings.Cut(list, "&")
				var ids []string
				for _, name := range strings.Split(list, ",") {
					ids = append(ids, cmpOr(f.ids[name], name))
				}
				q = before + "ids=" + strings.Join(ids, ",") + "&" + rest
			}
			r := f.a.req("GET", "/api/export/evals?"+q, f.ann, nil)
			checkError(t, r, tt.status, map[int]string{400: "Bad Request", 404: "Not Found"}[tt.status], tt.want)
			for _, h := range []string{"Content-Disposition", "X-Export-Sessions", "X-Export-TestCases"} {
				if r.header.Get(h) != "" {
					t.Errorf("error response carries %s", h)
				}
			}
			if bytes.Contains(r.body, []byte("secret")) {
				t.Errorf("404 leaks bob's data: %s", r.body)
			}
		})
	}
}

// bigSession stores one eval-ready session of n messages (about 500 bytes
// each, every role, tool calls) straight into kv.
func bigSession(t *testing.T, st *kv.Store, userID string, n int) string {
	t.Helper()
	s := kv.Session{ID: kv.NewID(), UserID: userID, ExternalID: "big", Source: "claude-code", Title: "big session",
		CreatedAt: epoch.UnixMilli(), UpdatedAt: epoch.UnixMilli(), MessageCount: int64(n), NextSeq: uint64(n),
		Eval: kv.Eval{Ready: true, Status: kv.EvalGolden, ExpectedOutput: "ideal", ReviewedAt: epoch.UnixMilli()}}
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 16)
	err := st.Commit(bg, func(tx *kv.Tx) error {
		if err := tx.PutSession(&s, 0); err != nil {
			return err
		}
		for i := range n {
			m := kv.Message{ID: kv.NewID(), UserID: userID, SessionID: s.ID, Seq: uint64(i), ExternalID: "m" + strconv.Itoa(i),
				CreatedAt: epoch.UnixMilli() + int64(i), UpdatedAt: epoch.UnixMilli() + int64(i)}
			text := fmt.Sprintf("message %d in /home/ann/p: %s", i, filler)
			switch i % 4 {
			case 0:
				m.Role, m.TextContent = "user", &text
			case 1:
				m.Role, m.Parts = "assistant", []kv.Part{{Type: kv.PartText, Content: text}, {Type: kv.PartToolCall, ToolName: "Bash", Args: `{"command":"ls"}`}}
			case 2:
				m.Role, m.Parts = "tool", []kv.Part{{Type: kv.PartToolResult, ToolName: "Bash", Content: text}}
			default:
				m.Role, m.Parts = "assistant", []kv.Part{{Type: kv.PartText, Content: text}}
			}
			if err := tx.PutMessage(&m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// heapProbe discards what it is given and, every `every` bytes, collects
// garbage and records the live heap of the process (server and client).
type heapProbe struct {
	n, next, every int64
	base, peak     uint64
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC() // the second empties sync.Pools (bbolt's page pool) kept by the first
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func (p *heapProbe) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.n >= p.next {
		p.peak = max(p.peak, liveHeap())
		p.next += p.every
	}
	return len(b), nil
}

// TestExportStreamingMemory downloads exports of a 50,000-message session
// while sampling the live heap: it must stay flat (under 12 MiB of growth)
// while tens of megabytes go out (the stored messages are over 20 MiB), so
// nothing builds the file or holds the session in memory.
//
// Not under the race detector (racetest): the live heap it measures is
// the same without it, at a tenth of the cost; the same exports, of a
// session read in several chunks, run under it in TestExportReadsInChunks
// and the other export tests.
func TestExportStreamingMemory(t *testing.T) {
	racetest.SkipUnderRace(t)
	if testing.Short() {
		t.Skip("stores and exports 50,000 messages")
	}
	const n = 50_000
	// The server keeps making garbage while the client samples, so a few MiB
	// of growth is noise (3-5 MiB measured); a file built in memory would be
	// over 16 MiB.
	const limit = 12 << 20
	a := newApp(t, options{})
	ann := a.user("ann")
	id := bigSession(t, a.store, a.userIDs["ann"], n)
	tests := []struct {
		path  string
		cases int
	}{
		{"/api/export?format=jsonl&id=" + id, -1},
		{"/api/export?format=markdown&id=" + id, -1},
		{"/api/export/evals?format=chat-jsonl&include_tools=true", 1},
		{"/api/export/evals?format=text", n / 4},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			req, _ := http.NewRequest("GET", a.srv.URL+tt.path, nil)
			req.Header.Set("Authorization", "Bearer "+ann)
			p := &heapProbe{every: 2 << 20, next: 2 << 20}
			p.base = liveHeap()
			resp, err := a.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if _, err := io.Copy(p, resp.Body); err != nil {
				t.Fatal(err)
			}
			growth := int64(p.peak) - int64(p.base)
			t.Logf("%.1f MiB streamed, live heap %.1f MiB before, growth at most %.2f MiB",
				float64(p.n)/(1<<20), float64(p.base)/(1<<20), float64(growth)/(1<<20))
			if p.n < 16<<20 {
				t.Fatalf("only %d bytes: the probe never sampled enough", p.n)
			}
			if growth > limit {
				t.Errorf("live heap grew by %.1f MiB during the download; want < %d MiB (exports must stream)",
					float64(growth)/(1<<20), limit>>20)
			}
			if tt.cases >= 0 {
				if got, _ := strconv.Atoi(resp.Header.Get("X-Export-TestCases")); got != tt.cases {
					t.Errorf("X-Export-TestCases %q, want %d", resp.Header.Get("X-Export-TestCases"), tt.cases)
				}
			}
		})
	}
}

// TestExportReadsInChunks: a session longer than one read chunk comes out
// whole and in order.
func TestExportReadsInChunks(t *testing.T) {
	a := newApp(t, options{})
	ann := a.user("ann")
	const n = 1000 // about four chunks
	id := bigSession(t, a.store, a.userIDs["ann"], n)
	r := a.req("GET", "/api/export?format=jsonl&id="+id, ann, nil)
	lines := jsonLines(t, r.body)
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	for i, l := range lines {
		content, _ := l["content"].(string)
		if !strings.Contains(content, fmt.Sprintf("message %d in /home/user/p", i)) {
			t.Fatalf("line %d holds %.60q", i, content)
		}
	}
}

// flakyRecords fails the failAt-th View (fault injection at the store
// boundary); every other call reaches the real store.
type flakyRecords struct {
	st     *kv.Store
	calls  atomic.Int64
	failAt int64
}

var errInjected = errors.New("injected store fault")

func (f *flakyRecords) View(ctx context.Context, fn func(*kv.Tx) error) error {
	if f.calls.Add(1) == f.failAt {
		return errInjected
	}
	return f.st.View(ctx, fn)
}

func (f *flakyRecords) Commit(ctx context.Context, fn func(*kv.Tx) error) error {
	return f.st.Commit(ctx, fn)
}

// TestExportStoreFailure: a store fault before the first byte is a clean 500;
// after it, the connection is aborted so the client sees a broken transfer,
// never a complete-looking truncated file, and the fault is logged.
func TestExportStoreFailure(t *testing.T) {
	st := kvtest.Open(t)
	acct := accounts.New(st, nil)
	u, err := acct.CreateUser(bg, "ann")
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := acct.CreateKey(bg, "ann", "test")
	if err != nil {
		t.Fatal(err)
	}
	id := bigSession(t, st, u.ID, 3000) // about 1.5 MiB of messages: several chunks
	tests := []struct {
		name   string
		path   string
		failAt int64 // 1: the session read, 2: the first chunk of messages, ...
		abort  bool
	}{
		{"jsonl before the first byte", "/api/export?format=jsonl&id=" + id, 2, false},
		{"json before the first byte", "/api/export?format=json&id=" + id, 2, false},
		{"jsonl mid-stream", "/api/export?format=jsonl&id=" + id, 6, true},
		{"eval selection", "/api/export/evals?format=chat-jsonl", 1, false},
		{"eval counting", "/api/export/evals?format=chat-jsonl", 2, false},
		{"eval mid-stream", "/api/export/evals?format=deepeval", 32, true}, // 1 + 12 counting + 1 + 12 counting again (expectedOutput) + 6 writing
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncBuffer{}
			records := &flakyRecords{st: st, failAt: tt.failAt}
			api := httpd.New(httpd.Config{Auth: acct, Ingest: ingest.NewService(st, nil), Records: records,
				Logger: zerolog.New(logs)})
			r := mux.NewRouter()
			api.Install(r)
			srv := httptest.NewServer(api.Handler(r))
			defer srv.Close()
			req, _ := http.NewRequest("GET", srv.URL+tt.path, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, readErr := io.ReadAll(resp.Body)
			if !tt.abort {
				if resp.StatusCode != 500 || readErr != nil || !json.Valid(body) || resp.Header.Get("Content-Disposition") != "" {
					t.Errorf("status %d, read error %v, Content-Disposition %q, body %.200s; want a JSON 500 and no download",
						resp.StatusCode, readErr, resp.Header.Get("Content-Disposition"), body)
				}
				return
			}
			if resp.StatusCode != 200 || readErr == nil {
				t.Errorf("status %d after %d bytes, read error %v; want 200 and a broken transfer", resp.StatusCode, len(body), readErr)
			}
			if !strings.Contains(logs.String(), "export failed after the response began") || !strings.Contains(logs.String(), errInjected.Error()) {
				t.Errorf("the fault was not logged:\n%s", logs.String())
			}
		})
	}
}
