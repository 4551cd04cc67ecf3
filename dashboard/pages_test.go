package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/hindsight-dev/hindsight/ranking"
)

// seed gives alice four sessions (s1 oldest ... s4 newest) and bob one.
func seed(t *testing.T, f *fixture) (alice, bob string) {
	alice, bob = f.user("alice"), f.user("bob")
	// One batch per session: sessions of one batch share an updatedAt.
	f.sync(alice, `{"sessions":[
	  {"externalId":"s1","source":"claude-code","title":"Fix login redirect loop","model":"claude-sonnet","projectName":"web","promptTokens":1000,"completionTokens":200,"cost":0.0123,"durationMs":185000}],
	 "messages":[
	  {"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"the login redirect loops forever"},
	  {"sessionExternalId":"s1","externalId":"m2","role":"assistant","parts":[
	    {"type":"text","content":"The callback URL was **wrong**; see https://example.com/docs."},
	    {"type":"tool-call","toolName":"Bash","args":{"command":"go test ./..."}},
	    {"type":"tool-result","toolName":"Bash","content":"ok  \tweb\t0.1s"},
	    {"type":"thinking","text":"hmm"}]}]}`)
	f.sync(alice, `{"sessions":[
	  {"externalId":"s2","source":"opencode","title":"Refactor billing","model":"gpt-5","projectName":"billing","promptTokens":10,"completionTokens":5,"cost":0.5}],
	 "messages":[{"sessionExternalId":"s2","externalId":"m1","role":"user","textContent":"split the invoice module"}]}`)
	f.sync(alice, `{"sessions":[{"externalId":"s3","source":"cursor","title":"Flaky auth test","model":"gpt-5","projectName":"web"}]}`)
	f.sync(alice, `{"sessions":[{"externalId":"s4","source":"claude-code","title":"Docs pass","model":"claude-sonnet"}]}`)
	f.sync(bob, `{"sessions":[{"externalId":"b1","source":"opencode","title":"Bob's secret login plan"}],
	 "messages":[{"sessionExternalId":"b1","externalId":"m1","role":"user","textContent":"login secret"}]}`)
	return alice, bob
}

func rowTitles(t *testing.T, p *page) []string {
	t.Helper()
	return texts(t, p.doc, "table.sessions td.title > a")
}

func TestSessionsList(t *testing.T) {
	f := newFixture(t, Config{PageSize: 2})
	seed(t, f)
	b := f.browser()
	b.signIn("alice")
	p := b.get("/sessions").want(t, http.StatusOK)
	if got := rowTitles(t, p); !slices.Equal(got, []string{"Docs pass", "Flaky auth test"}) {
		t.Errorf("first page %q", got)
	}
	if a := one(t, p.doc, "header.top nav a[aria-current=page]"); textOf(a) != "Sessions" {
		t.Errorf("current nav %q", textOf(a))
	}
	next, _ := attr(one(t, p.doc, "nav.pager a[rel=next]"), "href")
	p = b.get(next).want(t, http.StatusOK)
	if got := rowTitles(t, p); !slices.Equal(got, []string{"Refactor billing", "Fix login redirect loop"}) {
		t.Errorf("second page %q", got)
	}
	if len(findAll(t, p.doc, "nav.pager a[rel=next]")) != 0 {
		t.Errorf("a third page is offered")
	}
	// Filters: choices come from the user's own sessions only.
	p = b.get("/sessions").want(t, http.StatusOK)
	if got := texts(t, p.doc, "select[name=source] option"); !slices.Equal(got, []string{"Any", "claude-code", "cursor-sync", "opencode"}) {
		t.Errorf("source choices %q", got)
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"source=claude-code", []string{"Docs pass", "Fix login redirect loop"}},
		{"model=gpt-5", []string{"Flaky auth test", "Refactor billing"}},
		{"project=web&model=gpt-5", []string{"Flaky auth test"}},
		{"project=nothing", nil},
	} {
		p := b.get("/sessions?"+tc.query).want(t, http.StatusOK)
		if got := rowTitles(t, p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
	}
	b.get("/sessions?cursor=garbage").want(t, http.StatusBadRequest)
}

func TestSessionsSearch(t *testing.T) {
	f := newFixture(t, Config{})
	seed(t, f)
	b := f.browser()
	b.signIn("alice")
	p := b.get("/sessions?q=login+redirect").want(t, http.StatusOK)
	if got := rowTitles(t, p); !slices.Equal(got, []string{"Fix login redirect loop"}) {
		t.Fatalf("search results %q (bob's session must not appear)", got)
	}
	if marks := texts(t, p.doc, "p.snippet mark"); len(marks) == 0 {
		t.Errorf("no highlighted snippet")
	}
	if got := textOf(one(t, p.doc, "p.count")); !strings.HasPrefix(got, "1 result for") {
		t.Errorf("count %q", got)
	}
	if v, _ := attr(one(t, p.doc, "input#q"), "value"); v != "login redirect" {
		t.Errorf("query not kept in the box: %q", v)
	}
	// Filters apply to search results too.
	p = b.get("/sessions?q=login&source=opencode").want(t, http.StatusOK)
	if got := rowTitles(t, p); len(got) != 0 {
		t.Errorf("filtered search %q", got)
	}
	// Without an embedder, semantic modes explain themselves.
	if _, ok := attr(one(t, p.doc, "option[value=semantic]"), "disabled"); !ok {
		t.Errorf("semantic offered without an embedder")
	}
	p = b.get("/sessions?q=login&mode=semantic").want(t, http.StatusBadRequest)
	if got := textOf(one(t, p.doc, "p.alert")); !strings.Contains(got, "embedder") {
		t.Errorf("semantic error %q", got)
	}
	b.get("/sessions?q=login&mode=fuzzy").want(t, http.StatusBadRequest)
	// Hostile queries never break the page.
	for _, q := range []string{`"unbalanced`, `*:*`, `-`, `\`, "<script>alert(1)</script>"} {
		p := b.get("/sessions?q=" + url.QueryEscape(q))
		if p.status != http.StatusOK && p.status != http.StatusBadRequest {
			t.Errorf("query %q: %d", q, p.status)
		}
		assertNoInjectedScript(t, p.doc)
	}
}

// assertNoInjectedScript fails on any <script> but the dashboard's own
// app.js, and on any inline event handler or javascript: URL.
func assertNoInjectedScript(t *testing.T, doc *html.Node) {
	t.Helper()
	for _, s := range findAll(t, doc, "script") {
		if src, _ := attr(s, "src"); !strings.HasPrefix(src, "/static/app.js") {
			t.Errorf("unexpected <script> element (src %q): %q", src, textOf(s))
		}
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
				t.Errorf("<%s %s=%q> rendered", n.Data, a.Key, a.Val)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// filename is the attachment file name of a Content-Disposition.
func filename(t *testing.T, cd string) string {
	t.Helper()
	typ, params, err := mime.ParseMediaType(cd)
	if err != nil || typ != "attachment" {
		t.Errorf("Content-Disposition %q: %v", cd, err)
	}
	return params["filename"]
}

func TestSessionPage(t *testing.T) {
	f := newFixture(t, Config{})
	alice, _ := seed(t, f)
	id := f.sessionID(alice, "s1")
	b := f.browser()
	b.signIn("alice")
	p := b.get("/sessions/"+id).want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, "h1")); got != "Fix login redirect loop" {
		t.Errorf("title %q", got)
	}
	facts := map[string]string{}
	for _, d := range findAll(t, p.doc, "dl.facts div") {
		facts[textOf(one(t, d, "dt"))] = textOf(one(t, d, "dd"))
	}
	for k, want := range map[string]string{"Tokens": "1,200 (1,000 in, 200 out)", "Cost": "$0.0123", "Duration": "3m 05s",
		"Model": "claude-sonnet", "Source": "claude-code", "Project": "web", "Messages": "2"} {
		if facts[k] != want {
			t.Errorf("%s = %q, want %q", k, facts[k], want)
		}
	}
	if got := texts(t, p.doc, "article.msg h2.role"); !slices.Equal(got, []string{"user", "assistant"}) {
		t.Errorf("roles %q", got)
	}
	asst := findAll(t, p.doc, "article.msg.role-assistant")[0]
	if got := texts(t, asst, ".md strong"); !slices.Equal(got, []string{"wrong"}) {
		t.Errorf("markdown not rendered: %q", got)
	}
	if href, _ := attr(one(t, asst, ".md a"), "href"); href != "https://example.com/docs" {
		t.Errorf("link %q", href)
	}
	// Tool calls, results and other parts are collapsed.
	parts := findAll(t, asst, "details.part")
	if len(parts) != 3 {
		t.Fatalf("%d collapsed parts, want 3", len(parts))
	}
	if _, open := attr(parts[0], "open"); open {
		t.Errorf("tool call is expanded")
	}
	if got := textOf(one(t, parts[0], "summary")); got != "Tool call · Bash" {
		t.Errorf("summary %q", got)
	}
	if got := textOf(one(t, parts[0], "pre")); !strings.Contains(got, `"command": "go test ./..."`) {
		t.Errorf("tool args %q", got)
	}
	// Export buttons, and the exports themselves.
	if got := texts(t, p.doc, ".actions a.button[download]"); !slices.Equal(got, []string{"json", "markdown", "jsonl"}) {
		t.Errorf("export links %q", got)
	}
	p = b.get("/sessions/"+id+"/export?format=json").want(t, http.StatusOK)
	if cd := p.header.Get("Content-Disposition"); filename(t, cd) != "fix-login-redirect-loop.json" {
		t.Errorf("Content-Disposition %q", cd)
	}
	var exp struct {
		Session  struct{ ID, Title string }
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal([]byte(p.body), &exp); err != nil || exp.Session.ID != id || len(exp.Messages) != 2 {
		t.Errorf("json export %v %+v", err, exp)
	}
	p = b.get("/sessions/"+id+"/export?format=markdown").want(t, http.StatusOK)
	if !strings.HasPrefix(p.header.Get("Content-Type"), "text/markdown") || !strings.Contains(p.body, "## Assistant") {
		t.Errorf("markdown export %q\n%s", p.header.Get("Content-Type"), p.body)
	}
	b.get("/sessions/"+id+"/export?format=pdf").want(t, http.StatusBadRequest)
}

func TestOtherUsersSessionIs404(t *testing.T) {
	f := newFixture(t, Config{})
	alice, bob := seed(t, f)
	bobs := f.sessionID(bob, "b1")
	b := f.browser()
	b.signIn("alice")
	missing := b.get("/sessions/zzzzzzzzzzzzzzzz").want(t, http.StatusNotFound)
	p := b.get("/sessions/"+bobs).want(t, http.StatusNotFound)
	if strings.Contains(p.body, "secret") {
		t.Errorf("404 page shows bob's data")
	}
	// Indistinguishable from a session that does not exist.
	if textOf(one(t, p.doc, "main")) != textOf(one(t, missing.doc, "main")) {
		t.Errorf("another user's session reads differently from a missing one")
	}
	b.get("/sessions/"+bobs+"/export?format=json").want(t, http.StatusNotFound)
	b.post("/sessions/"+bobs+"/eval", url.Values{"action": {"ready"}}).want(t, http.StatusNotFound)
	// Another user's id in an Evals form is a 404 for the whole form, as in
	// PATCH /api/sessions/eval, with nothing acted on; a form mixing it with
	// alice's own id changes neither.
	for _, path := range []string{"/evals/label", "/evals/export"} {
		p := b.post(path, url.Values{"id": {bobs}, "status": {"golden"}, "format": {"deepeval"}}).want(t, http.StatusNotFound)
		if strings.Contains(p.body, "secret") {
			t.Errorf("%s: 404 page shows bob's data", path)
		}
	}
	mine := f.session(alice, `{"externalId":"alice-mixed","title":"alice's own"}`)
	b.post("/evals/label", url.Values{"id": {mine, bobs}, "status": {"golden"}}).want(t, http.StatusNotFound)
	if s := f.stored(alice, mine); s.Status != "" {
		t.Errorf("a form naming another user's session still labelled alice's: %+v", s.Eval)
	}
	if s := f.stored(bob, bobs); s.Ready || s.Status != "" {
		t.Errorf("alice changed bob's session: %+v", s.Eval)
	}
	// Bob's key cannot be revoked from alice's account.
	_, rec, _ := f.acct.CreateKey(bg, "bob", "laptop")
	b.post("/settings/keys/revoke", url.Values{"prefix": {rec.Prefix}}).want(t, http.StatusNotFound)
	if ks, _ := f.acct.Keys(bg, bob); ks[0].Revoked != 0 {
		t.Errorf("alice revoked bob's key")
	}
}

func TestUserTextRendersInert(t *testing.T) {
	f := newFixture(t, Config{})
	alice := f.user("alice")
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	f.sync(alice, fmt.Sprintf(`{"sessions":[{"externalId":"x","title":%q,"model":%q,"projectName":%q}],
	 "messages":[
	  {"sessionExternalId":"x","externalId":"m1","role":"user","textContent":%q},
	  {"sessionExternalId":"x","externalId":"m2","role":"assistant","parts":[
	    {"type":"text","content":%q},
	    {"type":"tool-call","toolName":%q,"args":%q},
	    {"type":"tool-result","toolName":"t","content":%q},
	    {"type":"weird","content":%q}]}]}`,
		"title "+evil, "model"+evil, "proj"+evil, "script test "+evil, "[click](javascript:alert(3)) "+evil+" ```\n"+evil+"\n```",
		"tool"+evil, `{"a":"`+strings.ReplaceAll(evil, `"`, `\"`)+`"}`, evil, evil))
	id := f.sessionID(alice, "x")
	b := f.browser()
	b.signIn("alice")
	p := b.post("/sessions/"+id+"/eval", url.Values{"action": {"label"}, "status": {"golden"}, "tags": {"t" + evil},
		"notes": {"n" + evil}, "expected": {"e" + evil}}).want(t, http.StatusSeeOther)
	for _, path := range []string{"/sessions", "/sessions/" + id, "/sessions?q=script+test", "/evals", "/usage", "/settings"} {
		p = b.get(path).want(t, http.StatusOK)
		assertNoInjectedScript(t, p.doc)
		if len(findAll(t, p.doc, "img")) != 0 {
			t.Errorf("%s: an <img> was rendered", path)
		}
	}
	p = b.get("/sessions/" + id)
	user := findAll(t, p.doc, "article.msg.role-user .md")
	if len(user) != 1 || !strings.Contains(textOf(user[0]), "<script>alert(1)</script>") {
		t.Errorf("the message text must show as text: %q", texts(t, p.doc, "article.msg .md"))
	}
	if p.body == "" || strings.Contains(p.body, "<script>alert") || strings.Contains(p.body, "onerror=alert") && !strings.Contains(p.body, "&lt;img") {
		t.Errorf("raw markup in the page")
	}
	// CSP forbids inline scripts anyway.
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
}

func TestEvalWorkflow(t *testing.T) {
	f := newFixture(t, Config{})
	alice, _ := seed(t, f)
	s1, s2 := f.sessionID(alice, "s1"), f.sessionID(alice, "s2")
	b := f.browser()
	b.signIn("alice")
	p := b.get("/evals").want(t, http.StatusOK)
	if len(findAll(t, p.doc, "table.evals")) != 0 {
		t.Errorf("evals listed before any is eval-ready")
	}
	// Mark as Eval Ready from the session page.
	p = b.get("/sessions/" + s1)
	one(t, p.doc, "form[action=/sessions/"+s1+"/eval] button[value=ready]")
	p = b.post("/sessions/"+s1+"/eval", url.Values{"action": {"ready"}}).want(t, http.StatusSeeOther)
	p = b.get(p.location()).want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, "#eval-h .badge")); got != "Needs review" {
		t.Errorf("status after marking %q", got)
	}
	b.post("/sessions/"+s2+"/eval", url.Values{"action": {"ready"}}).want(t, http.StatusSeeOther)
	p = b.get("/evals").want(t, http.StatusOK)
	if got := texts(t, p.doc, "table.evals td.title > a"); len(got) != 2 {
		t.Fatalf("evals rows %q", got)
	}
	// Label s1 golden with an expected output, from the Evals page.
	f.clock.Add(time.Hour)
	p = b.post("/evals/label", url.Values{"id": {s1}, "status": {"golden"}, "expected": {"Fix the callback URL."},
		"tags": {"auth, redirect"}, "notes": {"good one"}, "f_status": {""}}).want(t, http.StatusSeeOther)
	if p.location() != "/evals?saved=1" {
		t.Errorf("after labelling: %s", p.location())
	}
	if got := textOf(one(t, b.get(p.location()).doc, "p.flash")); got != "Saved labels on 1 session." {
		t.Errorf("flash %q", got)
	}
	s := f.stored(alice, s1)
	if s.Status != "golden" || s.ExpectedOutput != "Fix the callback URL." || !slices.Equal(s.Tags, []string{"auth", "redirect"}) ||
		s.Notes != "good one" || s.ReviewedAt != f.clock.Now().UnixMilli() {
		t.Errorf("labels %+v", s.Eval)
	}
	// Empty batch fields leave labels alone.
	b.get("/evals")
	b.post("/evals/label", url.Values{"id": {s1}, "status": {"correct"}}).want(t, http.StatusSeeOther)
	if s := f.stored(alice, s1); s.Status != "correct" || s.ExpectedOutput == "" || len(s.Tags) != 2 {
		t.Errorf("batch label cleared fields: %+v", s.Eval)
	}
	b.post("/evals/label", url.Values{"id": {s1}, "status": {"golden"}}).want(t, http.StatusSeeOther)
	b.post("/evals/label", url.Values{"id": {s1}, "status": {"perfect"}}).want(t, http.StatusBadRequest)
	b.post("/evals/label", url.Values{"status": {"golden"}}).want(t, http.StatusBadRequest)
	// Filter by status and tag.
	p = b.get("/evals?saved=<b>phish</b>").want(t, http.StatusOK)
	if len(findAll(t, p.doc, "p.flash")) != 0 {
		t.Errorf("a flash message repeats arbitrary text from the URL")
	}
	p = b.get("/evals?status=golden").want(t, http.StatusOK)
	if got := texts(t, p.doc, "table.evals td.title > a"); !slices.Equal(got, []string{"Fix login redirect loop"}) {
		t.Errorf("golden filter %q", got)
	}
	counts := texts(t, p.doc, "nav.tabs a")
	if !slices.Equal(counts, []string{"All 2", "Golden 1", "Correct 0", "Incorrect 0", "Needs review 1"}) {
		t.Errorf("tabs %q", counts)
	}
	p = b.get("/evals?tag=redirect").want(t, http.StatusOK)
	if got := texts(t, p.doc, "table.evals td.title > a"); len(got) != 1 {
		t.Errorf("tag filter %q", got)
	}
	b.get("/evals?status=bogus").want(t, http.StatusBadRequest)

	// Export deepeval for the selection.
	p = b.post("/evals/export", url.Values{"id": {s1}, "format": {"deepeval"}}).want(t, http.StatusOK)
	cd := p.header.Get("Content-Disposition")
	if filename(t, cd) != "hindsight-evals-deepeval-2026-03-20.json" {
		t.Errorf("Content-Disposition %q", cd)
	}
	if p.header.Get("X-Export-Sessions") != "1" || p.header.Get("X-Export-TestCases") != "1" {
		t.Errorf("export counts %q %q", p.header.Get("X-Export-Sessions"), p.header.Get("X-Export-TestCases"))
	}
	var cases []struct {
		Input          string  `json:"input"`
		ActualOutput   string  `json:"actual_output"`
		ExpectedOutput *string `json:"expected_output"`
		Context        []string
		Retrieval      []string `json:"retrieval_context"`
	}
	if err := json.Unmarshal([]byte(p.body), &cases); err != nil || len(cases) != 1 {
		t.Fatalf("deepeval: %v\n%s", err, p.body)
	}
	if c := cases[0]; c.Input != "the login redirect loops forever" || !strings.Contains(c.ActualOutput, "callback URL") ||
		c.ExpectedOutput == nil || *c.ExpectedOutput != "Fix the callback URL." || c.Retrieval == nil {
		t.Errorf("deepeval case %+v", c)
	}
	// "All in this view" takes the filter, not the ticked boxes.
	p = b.post("/evals/export", url.Values{"all": {"1"}, "f_status": {"needs_review"}, "format": {"chat-jsonl"}}).want(t, http.StatusOK)
	lines := strings.Split(strings.TrimSpace(p.body), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "split the invoice module") {
		t.Errorf("chat-jsonl of the needs_review view: %q", lines)
	}
	p = b.post("/evals/export", url.Values{"all": {"1"}, "format": {"text"}}).want(t, http.StatusOK)
	if !strings.Contains(p.body, "Eval status: golden") || !strings.Contains(p.body, "Eval status: needs_review") {
		t.Errorf("text export:\n%s", p.body)
	}
	b.post("/evals/export", url.Values{"id": {s1}, "format": {"pdf"}}).want(t, http.StatusBadRequest)
	b.post("/evals/export", url.Values{"format": {"deepeval"}}).want(t, http.StatusBadRequest)

	// Labels on the session page set every field (and can clear).
	b.post("/sessions/"+s1+"/eval", url.Values{"action": {"label"}, "status": {"incorrect"}, "tags": {""}, "notes": {""}, "expected": {""}}).
		want(t, http.StatusSeeOther)
	if s := f.stored(alice, s1); s.Status != "incorrect" || len(s.Tags) != 0 || s.ExpectedOutput != "" || s.Notes != "" {
		t.Errorf("session-page labels %+v", s.Eval)
	}
	// Remove from Evals.
	b.post("/evals/label", url.Values{"id": {s1, s2}, "action": {"remove"}}).want(t, http.StatusSeeOther)
	p = b.get("/evals").want(t, http.StatusOK)
	if len(findAll(t, p.doc, "table.evals")) != 0 {
		t.Errorf("removed sessions still listed")
	}
	// Labelling never reorders the session list.
	p = b.get("/sessions")
	if got := rowTitles(t, p); got[0] != "Docs pass" {
		t.Errorf("labelling moved a session up: %q", got)
	}
}

func TestSettingsKeys(t *testing.T) {
	f := newFixture(t, Config{})
	alice := f.user("alice")
	b := f.browser()
	b.signIn("alice")
	p := b.get("/settings").want(t, http.StatusOK)
	one(t, p.doc, "p.empty")
	p = b.post("/settings/keys", url.Values{"label": {"laptop <1>"}}).want(t, http.StatusOK)
	key, _ := attr(one(t, p.doc, "input#new-key"), "value")
	if !strings.HasPrefix(key, "osk_") || len(key) != 36 {
		t.Fatalf("new key %q", key)
	}
	one(t, p.doc, "button[data-copy=new-key]")
	// The MCP block: the endpoint as the browser reached it, and the Claude
	// Code command with the new key.
	mcpURL, _ := attr(one(t, p.doc, "input#mcp-url"), "value")
	claude, _ := attr(one(t, p.doc, "input#mcp-claude"), "value")
	if !strings.HasPrefix(mcpURL, "http://127.0.0.1:") || !strings.HasSuffix(mcpURL, "/mcp") ||
		claude != "claude mcp add --transport http hindsight "+mcpURL+` --header "Authorization: Bearer `+key+`"` {
		t.Errorf("MCP setup: url %q, command %q", mcpURL, claude)
	}
	if p.header.Get("Cache-Control") != "no-store" {
		t.Errorf("the page with a key may be cached: %q", p.header.Get("Cache-Control"))
	}
	if uid, err := f.acct.Authenticate(bg, key); err != nil || uid != alice {
		t.Errorf("new key does not authenticate: %v", err)
	}
	// Shown once.
	p = b.get("/settings").want(t, http.StatusOK)
	if strings.Contains(p.body, key) || len(findAll(t, p.doc, "input#new-key")) != 0 || len(findAll(t, p.doc, "input#mcp-claude")) != 0 {
		t.Errorf("key shown again")
	}
	rows := findAll(t, p.doc, "table.keys tbody tr")
	if len(rows) != 1 || !strings.Contains(textOf(rows[0]), "laptop <1>") || !strings.Contains(textOf(rows[0]), "active") {
		t.Fatalf("keys table %q", texts(t, p.doc, "table.keys tbody tr"))
	}
	prefix, _ := attr(one(t, rows[0], "input[name=prefix]"), "value")
	p = b.post("/settings/keys/revoke", url.Values{"prefix": {prefix}}).want(t, http.StatusSeeOther)
	p = b.get(p.location()).want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, "p.flash")); !strings.Contains(got, "Revoked key "+prefix) {
		t.Errorf("flash %q", got)
	}
	if _, err := f.acct.Authenticate(bg, key); err == nil {
		t.Errorf("revoked key still authenticates")
	}
	if got := textOf(one(t, p.doc, "table.keys tbody tr")); !strings.Contains(got, "revoked") {
		t.Errorf("row after revoke %q", got)
	}
	b.post("/settings/keys/revoke", url.Values{"prefix": {prefix}}).want(t, http.StatusNotFound)
	// A prefix that names no single key is the form's fault, not the
	// server's (it was a 500).
	for _, bad := range []string{"", "osk_", "osk_x"} {
		b.post("/settings/keys/revoke", url.Values{"prefix": {bad}}).want(t, http.StatusBadRequest)
	}
	b.post("/settings/keys", url.Values{"label": {strings.Repeat("x", 201)}}).want(t, http.StatusBadRequest)
}

func TestChangePassword(t *testing.T) {
	f := newFixture(t, Config{})
	f.user("alice")
	other := f.browser()
	other.signIn("alice")
	b := f.browser()
	b.signIn("alice")
	p := b.post("/settings/password", url.Values{"current": {"wrong one!"}, "password": {"brand new pw"}, "password2": {"brand new pw"}}).
		want(t, http.StatusBadRequest)
	if got := textOf(one(t, p.doc, "p.alert")); got != "The current password is wrong." {
		t.Errorf("message %q", got)
	}
	b.post("/settings/password", url.Values{"current": {"alice-password"}, "password": {"brand new pw"}, "password2": {"different!"}}).
		want(t, http.StatusBadRequest)
	p = b.post("/settings/password", url.Values{"current": {"alice-password"}, "password": {"brand new pw"}, "password2": {"brand new pw"}}).
		want(t, http.StatusSeeOther)
	b.get(p.location()).want(t, http.StatusOK) // this browser stays signed in
	other.get("/sessions").want(t, http.StatusSeeOther)
	if _, err := f.web.SignIn(bg, "alice", "brand new pw"); err != nil {
		t.Errorf("new password: %v", err)
	}
}

func TestUsagePage(t *testing.T) {
	f := newFixture(t, Config{})
	alice := f.user("alice")
	day := func(d int) int64 { return time.Date(2026, 3, d, 10, 0, 0, 0, time.UTC).UnixMilli() }
	f.session(alice, fmt.Sprintf(`{"externalId":"a","model":"gpt-5","promptTokens":1000,"completionTokens":500,"cost":1.5,"createdAt":%d}`, day(18)))
	f.session(alice, fmt.Sprintf(`{"externalId":"b","model":"claude-sonnet","promptTokens":100,"completionTokens":50,"cost":0.25,"createdAt":%d}`, day(20)))
	f.session(alice, fmt.Sprintf(`{"externalId":"c","model":"<b>m</b>","promptTokens":1,"completionTokens":1,"cost":0,"createdAt":%d}`, day(1)-40*24*3600*1000))
	b := f.browser()
	b.signIn("alice")
	p := b.get("/usage").want(t, http.StatusOK)
	stats := map[string]string{}
	for _, d := range findAll(t, p.doc, "dl.stats div") {
		stats[textOf(one(t, d, "dt"))] = textOf(one(t, d, "dd"))
	}
	for k, want := range map[string]string{"Sessions": "3", "Tokens": "1,652", "Cost": "$1.75", "Prompt tokens": "1,101"} {
		if stats[k] != want {
			t.Errorf("%s = %q, want %q", k, stats[k], want)
		}
	}
	if n := len(findAll(t, p.doc, "svg.chart")); n != 4 {
		t.Errorf("%d charts, want 4", n)
	}
	tokens := one(t, p.doc, "svg[aria-labelledby=chart-tokens]")
	if bars := findAll(t, tokens, "rect.bar"); len(bars) != 30 {
		t.Errorf("%d day bars, want 30", len(bars))
	}
	if got := texts(t, tokens, "rect.bar title"); got[27] != "03-18: 1.5k" || got[29] != "03-20: 150" {
		t.Errorf("bars for 03-18 and 03-20: %q %q", got[27], got[29])
	}
	// The 30-day model chart leaves the old session out.
	if got := texts(t, one(t, p.doc, "svg[aria-labelledby=chart-model-tokens]"), "text.label"); !slices.Equal(got, []string{"gpt-5", "claude-sonnet"}) {
		t.Errorf("model chart labels %q", got)
	}
	p = b.get("/usage?days=365").want(t, http.StatusOK)
	if got := texts(t, one(t, p.doc, "svg[aria-labelledby=chart-model-tokens]"), "text.label"); len(got) != 3 || got[2] != "<b>m</b>" {
		t.Errorf("365-day model labels %q", got)
	}
	if len(findAll(t, p.doc, "svg b")) != 0 {
		t.Errorf("model name rendered as markup")
	}
}

func TestEveryPageRendersEmpty(t *testing.T) {
	f := newFixture(t, Config{})
	f.user("alice")
	b := f.browser()
	b.signIn("alice")
	for _, path := range []string{"/sessions", "/sessions?q=anything", "/sessions/deleted", "/evals", "/settings", "/usage", "/usage?days=7"} {
		p := b.get(path).want(t, http.StatusOK)
		one(t, p.doc, "main#main h1")
		assertNoInjectedScript(t, p.doc)
		if p.header.Get("X-Frame-Options") != "DENY" || p.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: security headers %v", path, p.header)
		}
	}
	for _, asset := range []string{"style.css", "app.js", "favicon.svg"} {
		p := b.get(f.dash.assetURL(asset)).want(t, http.StatusOK)
		if !strings.Contains(p.header.Get("Cache-Control"), "immutable") || len(p.body) == 0 {
			t.Errorf("%s: %q", asset, p.header.Get("Cache-Control"))
		}
	}
}

// fixedSearcher answers every query with the same ranked sessions: enough
// to see how the Sessions page treats semantic scores and degradation.
type fixedSearcher struct {
	results  []ranking.Result
	degraded string
}

func (f fixedSearcher) Semantic() bool { return true }
func (f fixedSearcher) Search(_ context.Context, q ranking.Query) (ranking.Response, error) {
	return ranking.Response{Results: f.results, Degraded: f.degraded}, nil
}

func TestSemanticResults(t *testing.T) {
	fs := &fixedSearcher{}
	f := newFixture(t, Config{Search: fs})
	alice, _ := seed(t, f)
	s1, s2 := f.sessionID(alice, "s1"), f.sessionID(alice, "s2")
	fs.results = []ranking.Result{{SessionID: s1, Score: 0.71}, {SessionID: "zzzzzzzzzzzzzzzz", Score: 0.6}, {SessionID: s2, Score: 0.12}}
	b := f.browser()
	b.signIn("alice")
	p := b.get("/sessions?q=anything&mode=semantic").want(t, http.StatusOK)
	if got := rowTitles(t, p); !slices.Equal(got, []string{"Fix login redirect loop"}) {
		t.Errorf("semantic rows %q (weak and unknown results must not show)", got)
	}
	if got := textOf(one(t, p.doc, "p.count")); !strings.Contains(got, "1 weak semantic match hidden") {
		t.Errorf("count %q", got)
	}
	if _, ok := attr(one(t, p.doc, "option[value=semantic]"), "selected"); !ok {
		t.Errorf("mode not kept")
	}
	// Hybrid keeps every result; a failed embedding says so.
	fs.degraded = "semantic"
	p = b.get("/sessions?q=anything&mode=hybrid").want(t, http.StatusOK)
	if got := rowTitles(t, p); len(got) != 2 {
		t.Errorf("hybrid rows %q", got)
	}
	if got := texts(t, p.doc, "p.note"); len(got) != 1 || !strings.Contains(got[0], "full-text results") {
		t.Errorf("degraded note %q", got)
	}
}
