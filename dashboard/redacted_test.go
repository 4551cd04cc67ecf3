package dashboard

import (
	"html/template"
	"net/http"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/redact"
)

func TestMarkRedactions(t *testing.T) {
	for _, tc := range []struct {
		in   template.HTML
		want template.HTML
	}{
		{`<p>key [redacted:github-pat] here</p>`,
			`<p>key <span class="redacted" title="redacted: github-pat">[redacted:github-pat]</span> here</p>`},
		// In an attribute the marker stays as it is: only text is marked.
		{`<a href="https://x.test/[redacted:url-password]">[redacted:url-password]</a>`,
			`<a href="https://x.test/[redacted:url-password]"><span class="redacted" title="redacted: url-password">[redacted:url-password]</span></a>`},
		{`<pre><code>a &lt;b&gt; [redacted:jwt]</code></pre>`,
			`<pre><code>a &lt;b&gt; <span class="redacted" title="redacted: jwt">[redacted:jwt]</span></code></pre>`},
		{`<p>nothing redacted</p>`, `<p>nothing redacted</p>`},
	} {
		if got := markRedactions(tc.in); got != tc.want {
			t.Errorf("markRedactions(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	if got := redactedText(`<script>x</script> [redacted:private] "[redacted:a<b]"`); got !=
		`&lt;script&gt;x&lt;/script&gt; <span class="redacted" title="redacted: private">[redacted:private]</span> &#34;[redacted:a&lt;b]&#34;` {
		t.Errorf("redactedText: %s", got)
	}
}

// The session page marks where text was redacted, in text, tool calls and
// the title; the Usage page counts redactions by kind.
func TestRedactionsShown(t *testing.T) {
	red, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, Config{Redactor: red})
	f.ingest.Redact(red)
	alice := f.user("alice")
	key := "ghp_" + "Q7xN2mK9pL4vR8tW1zY5cB3nH6jD0fGsA2eU"
	f.sync(alice, `{"sessions":[{"externalId":"s1","title":"token `+key+`"}],"messages":[
		{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"my key is `+key+` <b>ok</b>"},
		{"sessionExternalId":"s1","externalId":"m2","role":"assistant","parts":[{"type":"tool-call","toolName":"Bash","args":{"cmd":"GITHUB_TOKEN=`+key+` gh pr list"}}]}]}`)
	b := f.browser()
	b.signIn("alice")
	p := b.get("/sessions/"+f.sessionID(alice, "s1")).want(t, http.StatusOK)
	if strings.Contains(p.body, key) {
		t.Fatal("the session page shows the token")
	}
	spans := findAll(t, p.doc, "span.redacted")
	if len(spans) != 3 {
		t.Fatalf("%d redaction marks, want 3 (title, text, tool call)", len(spans))
	}
	for _, s := range spans {
		if textOf(s) != "[redacted:github-pat]" {
			t.Errorf("mark reads %q", textOf(s))
		}
	}
	one(t, p.doc, "h1 span.redacted")
	assertNoInjectedScript(t, p.doc)
	if len(findAll(t, p.doc, ".md b")) != 0 {
		t.Error("message text rendered as markup")
	}

	u := b.get("/usage").want(t, http.StatusOK)
	rows := texts(t, one(t, u.doc, "table.redactions"), "tbody tr")
	if len(rows) != 1 || !strings.Contains(rows[0], "github-pat") || !strings.Contains(rows[0], "3") {
		t.Errorf("usage redactions rows %q", rows)
	}
}
