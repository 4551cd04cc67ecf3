package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
)

// The stored-XSS sub-suite: payloads go into every field the dashboard
// renders, through the API (sessions, messages, parts, labels) and the
// dashboard's own forms (labels, key labels); then headless Chromium loads
// every page that shows them, and reflected ones (search text, filters,
// error messages, sign-in's next). A payload that runs calls __xss (which
// the test defines in every page) or opens a dialog. The browser bypasses
// the Content-Security-Policy, so the pages must be inert by their markup
// alone; the policy itself is checked on every page. Besides scripts that
// run, each page is searched for what a payload would leave even when it
// does not run: an element marked xssmark, any on* attribute, a
// javascript:, vbscript: or data:text URL, srcdoc, and elements the
// dashboard never renders itself (iframe, object, embed, base, style,
// meta refresh, foreign scripts).

// xssPayloads each call __xss with their number when they run.
var xssPayloads = []string{
	`<script>__xss(0)</script>`,
	`<img class=xssmark src=x onerror=__xss(1)>`,
	`"><img class=xssmark src=x onerror=__xss(2)>`,
	`'><svg class=xssmark onload=__xss(3)>`,
	`<svg class=xssmark><script>__xss(4)</script></svg>`,
	`" onmouseover="__xss(5)" autofocus onfocus="__xss(5)" x="`,
	`' onfocus='__xss(6)' autofocus x='`,
	`javascript:__xss(7)`,
	`[click me](javascript:__xss(8))`,
	`![img](javascript:__xss(9))`,
	`[x](JaVaScRiPt:__xss(10))`,
	`[x](&#106;avascript:__xss(11))`,
	`<javascript:__xss(12)>`,
	"[ref][r13]\n\n[r13]: javascript:__xss(13)",
	`![x](x" onerror="__xss(14))`,
	`[x](data:text/html;base64,PHNjcmlwdD5wYXJlbnQuX194c3MoMTUpPC9zY3JpcHQ+)`,
	`</textarea><script>__xss(16)</script><textarea>`,
	`</title><script>__xss(17)</script>`,
	"</code></pre><img class=xssmark src=x onerror=__xss(18)>\n```\n<img class=xssmark src=x onerror=__xss(18)>\n```",
	`<iframe class=xssmark srcdoc="<script>parent.__xss(19)</script>"></iframe>`,
	`<details class=xssmark open ontoggle=__xss(20)>`,
	`<body onload=__xss(21)>`,
	`<input class=xssmark autofocus onfocus=__xss(22)>`,
	`<a class=xssmark href="javascript:__xss(23)">x</a>`,
	`<object class=xssmark data="javascript:__xss(24)"></object>`,
	`<base class=xssmark href="javascript:__xss(25)//">`,
	`<meta class=xssmark http-equiv="refresh" content="0;url=javascript:__xss(26)">`,
	`<math><mtext><table><mglyph><style><img class=xssmark src=x onerror=__xss(27)>`,
	`<scr<script>ipt>__xss(28)</scr</script>ipt>`,
	`{{define "content"}}<script>__xss(29)</script>{{end}}{{.CSRF}}{{template "layout" .}}`,
	`\u003cimg class=xssmark src=x onerror=__xss(30)\u003e`,
	`＜script＞__xss(31)＜/script＞`,
	`&lt;img class=xssmark src=x onerror=__xss(32)&gt; &#60;script&#62;__xss(32)&#60;/script&#62;`,
	`<mark class=xssmark onmouseover=__xss(33)>xssword</mark>`,
	`</mark><img class=xssmark src=x onerror=__xss(34)><mark>`,
	`';__xss(35);//";__xss(35);//</script><script>__xss(35)</script>`,
	`<style class=xssmark>*{background:url("javascript:__xss(36)")}</style>`,
	`<form class=xssmark action="javascript:__xss(37)"><button>x</button></form>`,
	`<https://example.com/"onmouseover="__xss(38)>`,
	`<svg><a xlink:href="javascript:__xss(39)"><text x=20 y=20>x</text></a></svg>`,
	`<!--<img class=xssmark src="--><img class=xssmark src=x onerror=__xss(40)//">`,
	`<noscript><p title="</noscript><img class=xssmark src=x onerror=__xss(41)>">`,
	"[x](javascript&colon;__xss(42)) [y](\tjavascript:__xss(42)) [z](java\nscript:__xss(42))",
	"<img class=xssmark src=x onerror=\"&#95;&#95;xss(43)\">",
}

// xssDetector defines __xss in every page before its own scripts run.
const xssDetector = `window.__xssHits = []; window.__xss = function (n) { window.__xssHits.push(String(n)); document.title = "XSS " + n; };`

// xssReport is evaluated on every page: what payloads left in the DOM.
const xssReport = `(() => {
  const r = {hits: (window.__xssHits || []).slice(), title: document.title, found: []};
  const appScript = /\/static\/app\.js(\?|$)/;
  for (const el of document.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    const cls = (el.getAttribute('class') || '') + '';
    if (cls.includes('xssmark') || tag.includes('xssmark')) r.found.push('marked element ' + el.outerHTML.slice(0, 100));
    for (const at of el.attributes) {
      const n = at.name.toLowerCase();
      const v = at.value.replace(/[\u0000-\u0020]/g, '').toLowerCase();
      if (n.startsWith('on')) r.found.push('handler ' + tag + '[' + n + '=' + at.value.slice(0, 60) + ']');
      if (n === 'srcdoc') r.found.push('srcdoc on ' + tag);
      if (['href', 'src', 'action', 'formaction', 'data', 'xlink:href', 'background', 'poster', 'cite'].includes(n) &&
          (v.startsWith('javascript:') || v.startsWith('vbscript:') || v.startsWith('data:text') || v.startsWith('data:image/svg'))) {
        r.found.push('url ' + tag + '[' + n + '=' + at.value.slice(0, 60) + ']');
      }
    }
    if (['iframe', 'frame', 'frameset', 'object', 'embed', 'base', 'style', 'applet', 'portal'].includes(tag)) r.found.push('element ' + tag);
    if (tag === 'meta' && el.hasAttribute('http-equiv')) r.found.push('meta http-equiv');
    if (tag === 'script' && !appScript.test(el.getAttribute('src') || '')) r.found.push('script ' + el.outerHTML.slice(0, 80));
    if (tag === 'form' && !(el.getAttribute('action') || '').startsWith('/')) r.found.push('form action ' + el.getAttribute('action'));
  }
  return JSON.stringify(r);
})()`

type xssRun struct {
	*adv
	u       *ui
	mu      sync.Mutex
	dialogs []string
	pages   int
	ids     []string // the live sessions, in payload order
}

func runXSS(t *testing.T, tl *tally) {
	requireChromium(t)
	tl.start(catXSS)
	fake := openaitest.New(t, openaitest.Options{Dim: 64})
	a := newAdv(t, tl, config.Config{Semantic: config.Semantic{Embedder: "openai", OpenAIKey: "sk-test",
		OpenAIBaseURL: fake.URL(), OpenAIModel: "text-embedding-3-small", OpenAIDim: 64}})
	x := &xssRun{adv: a}
	x.u = newUI(t, a.base)
	dialogs := chromedp.Events(x.u.ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			x.mu.Lock()
			x.dialogs = append(x.dialogs, string(ev.Type)+": "+ev.Message)
			x.mu.Unlock()
		}
	}()
	if _, err := chromedp.Call(x.u.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: xssDetector}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(x.u.ctx, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	x.control()

	// User names cannot hold markup: first-run setup with payloads for a
	// name is refused, on a page that shows the name back.
	link, err := a.ta.app.Dashboard.SetupLink(context.Background())
	if err != nil || link == "" {
		t.Fatalf("setup link %q: %v", link, err)
	}
	const pw = "mallory's password"
	for g := range xssGroups {
		x.visit(link)
		x.u.do("fill setup", chromedp.SetValue(chromedp.ID("name"), oneLine(group(g, " "))),
			chromedp.SetValue(chromedp.ID("password"), pw), chromedp.SetValue(chromedp.ID("password2"), pw))
		x.submit("setup with a payload for a name", css(`form[action="/setup"] button[type=submit]`), http.StatusBadRequest)
	}
	x.u.do("fill setup", chromedp.SetValue(chromedp.ID("name"), "mallory"),
		chromedp.SetValue(chromedp.ID("password"), pw), chromedp.SetValue(chromedp.ID("password2"), pw))
	x.submit("setup", css(`form[action="/setup"] button[type=submit]`), http.StatusOK)
	x.attacker = &tenant{name: "mallory", password: pw}
	if x.attacker.key, _, err = a.ta.app.Accounts.CreateKey(context.Background(), "mallory", "first key"); err != nil {
		t.Fatal(err)
	}
	x.attacker.api = &http.Client{Transport: bearerTransport{x.attacker.key}, CheckRedirect: noFollow}
	a.signIn(x.attacker, http.DefaultTransport)
	x.store()

	for _, p := range x.xssPages() {
		x.visit(p)
	}
	// Signed out: the sign-in page reflects next, and the name after a
	// failed sign-in.
	x.u.load("sign out", chromedp.Click(css("form.signout button")))
	for g := range xssGroups {
		x.visit("/login?next=" + url.QueryEscape(group(g, " ")))
		x.visit("/login?next=" + url.QueryEscape("/sessions?q="+group(g, " ")))
		x.u.do("fill sign-in", chromedp.SetValue(chromedp.ID("name"), oneLine(group(g+1, " "))), chromedp.SetValue(chromedp.ID("password"), "wrong"))
		x.submit("sign in with a payload for a name", css(`form[action="/login"] button`), http.StatusUnauthorized)
	}
	x.visit("/setup?token=" + url.QueryEscape(xssPayloads[2]))
	x.u.mu.Lock()
	if len(x.u.foreign) > 0 {
		t.Errorf("XSS: the browser requested other hosts: %q", x.u.foreign)
	}
	x.u.mu.Unlock()
	tl.figure("xss payloads: %d, stored in %d fields, pages loaded in Chromium: %d", len(xssPayloads), xssFields, x.pages)
}

// xssFields counts the fields each payload is stored in (see store).
const xssFields = 22

// xssGroups: the payloads are stored in groups (payload j in group j mod
// xssGroups), one group per field of a session, so a page shows many at
// once; session i's field f holds group i+f, so over the xssGroups
// sessions every payload is in every field.
const xssGroups = 6

// group is the payloads of group g (mod xssGroups) joined by sep.
func group(g int, sep string) string {
	var out []string
	for j, p := range xssPayloads {
		if j%xssGroups == g%xssGroups {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// oneLine is s as a one-line input holds it.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// tagsOf is group g as eval tags: one tag per payload, within the tag
// rules (no comma, at most 100 characters).
func tagsOf(g int) []string {
	var tags []string
	for j, p := range xssPayloads {
		if j%xssGroups != g%xssGroups {
			continue
		}
		t := oneLine(strings.ReplaceAll(p, ",", ";"))
		for utf8.RuneCountInString(t) > 100 {
			_, size := utf8.DecodeLastRuneInString(t)
			t = t[:len(t)-size]
		}
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}

// store writes every payload into every field, through the API and the
// dashboard's forms.
func (x *xssRun) store() {
	x.t.Helper()
	tn := x.attacker
	md := func(g int) string { return group(g, "\n\n") }
	line := func(g int) string { return group(g, " ") }
	var sessions, messages []any
	for i := range xssGroups {
		ext := fmt.Sprintf("xss-%d", i)
		s := map[string]any{"externalId": ext, "title": line(i), "projectPath": "/home/x/" + line(i+2), "model": line(i + 3),
			"provider": line(i + 4), "source": line(i + 5), "promptTokens": 10, "completionTokens": 5}
		if i%2 == 0 {
			s["projectName"] = line(i + 1) // else the path is the project
		}
		sessions = append(sessions, s)
		messages = append(messages,
			msg(ext, "m1", "user", map[string]any{"textContent": md(i+6) + "\n\nxssword"}),
			msg(ext, "m2", "assistant", map[string]any{"model": line(i + 12), "parts": []any{
				map[string]any{"type": "text", "content": md(i+7) + " xssword"},
				map[string]any{"type": "tool-call", "toolName": line(i + 8), "args": map[string]any{"command": md(i + 9)}},
				map[string]any{"type": "tool-result", "toolName": "Bash", "content": md(i + 10)},
				map[string]any{"type": "x-" + line(i+11), "content": md(i + 16)},
				map[string]any{"type": "thinking", "text": md(i + 20)},
			}}),
			msg(ext, "m3", "tool", map[string]any{"textContent": md(i + 21)}),
		)
	}
	// Deleted sessions: the Deleted page shows their externalId and source.
	for j, p := range xssPayloads {
		sessions = append(sessions, map[string]any{"externalId": p, "source": xssPayloads[(j+1)%len(xssPayloads)], "title": "to delete"})
	}
	r := x.sendJSON(tn.api, http.MethodPost, "/sync/batch", map[string]any{"sessions": sessions, "messages": messages})
	var br batchReply
	if r.status != http.StatusOK || json.Unmarshal(r.body, &br) != nil || len(br.Errors) != 0 || br.Sessions.Inserted != len(sessions) {
		x.t.Fatalf("the payload batch: %s", r)
	}
	byExt := map[string]string{}
	for _, s := range x.listAll(tn) {
		byExt[s.ExternalID] = s.ID
	}
	for i := range xssGroups {
		x.ids = append(x.ids, byExt[fmt.Sprintf("xss-%d", i)])
	}
	for j, p := range xssPayloads {
		id := byExt[p]
		if j%2 == 0 {
			x.want("delete a payload session", x.send(tn.api, http.MethodDelete, "/api/sessions?id="+id, nil, ""), http.StatusOK)
		} else {
			x.want("delete a payload session from the dashboard", x.webAs(tn, http.MethodPost, "/sessions/"+id+"/delete", url.Values{"confirm": {"yes"}}), http.StatusSeeOther)
		}
	}
	// Labels: half through the API, half through the session page's form.
	for i, id := range x.ids {
		if i%2 == 0 {
			r := x.sendJSON(tn.api, http.MethodPatch, "/api/sessions/eval", map[string]any{"ids": []string{id}, "evalReady": true, "evalStatus": "golden",
				"evalNotes": md(i + 13), "evalTags": tagsOf(i + 14), "expectedOutput": md(i + 15)})
			x.want("label a payload session", r, http.StatusOK)
		} else {
			x.want("label a payload session from the dashboard", x.webAs(tn, http.MethodPost, "/sessions/"+id+"/eval", url.Values{"action": {"label"},
				"status": {"correct"}, "notes": {md(i + 13)}, "tags": {strings.Join(tagsOf(i+14), ",")}, "expected": {md(i + 15)}}), http.StatusSeeOther)
		}
	}
	// Key labels, from Settings: one key per payload.
	for _, p := range xssPayloads {
		x.want("a key labelled with a payload", x.webAs(tn, http.MethodPost, "/settings/keys", url.Values{"label": {p}}), http.StatusOK)
	}
	x.ta.idle()
}

// xssPages lists every page that renders the payloads, and the reflected
// ones.
func (x *xssRun) xssPages() []string {
	pages := []string{"/sessions", "/sessions/deleted", "/evals", "/settings", "/usage", "/usage?days=7"}
	modes := []string{"fulltext", "semantic", "hybrid"}
	for _, m := range modes {
		pages = append(pages, "/sessions?mode="+m+"&q=xssword")
	}
	for i, id := range x.ids {
		project := group(i+1, " ")
		if i%2 != 0 {
			project = "/home/x/" + group(i+2, " ")
		}
		pages = append(pages, "/sessions/"+id, "/sessions/"+id+"/delete",
			"/sessions?project="+url.QueryEscape(project), "/sessions/delete-project?project="+url.QueryEscape(project),
			"/evals?tag="+url.QueryEscape(tagsOf(i + 14)[0]), "/evals?source="+url.QueryEscape(group(i+5, " ")),
			"/sessions?source="+url.QueryEscape(group(i+5, " "))+"&model="+url.QueryEscape(group(i+3, " ")))
		// Reflected: the search text (a search for the payloads' own
		// text, so snippets hold them too) and an unknown status.
		for _, m := range modes {
			pages = append(pages, "/sessions?mode="+m+"&q="+url.QueryEscape(group(i, " ")))
		}
		pages = append(pages, "/evals?status="+url.QueryEscape(group(i, " ")))
	}
	return pages
}

// visit loads target in Chromium and fails on anything a payload left.
func (x *xssRun) visit(target string) {
	x.t.Helper()
	x.mu.Lock()
	before := len(x.dialogs)
	x.mu.Unlock()
	resp, err := chromedp.RunResponse(x.u.ctx, chromedp.Navigate(x.base+target))
	if err != nil {
		x.t.Errorf("XSS: load %s: %v", target, err)
		return
	}
	x.inspect(target, resp, before)
}

// inspect checks the page the browser shows (reached by target) for
// anything a payload left; before is the count of dialogs until then.
func (x *xssRun) inspect(target string, resp *network.Response, before int) {
	x.t.Helper()
	x.pages++
	x.tally.add(catXSS, int(resp.Status))
	if resp.Status >= 500 {
		x.t.Errorf("XSS: %s answered %d", target, resp.Status)
	}
	ct, _ := resp.Headers["Content-Type"].(string)
	if strings.HasPrefix(ct, "text/html") {
		csp, _ := resp.Headers["Content-Security-Policy"].(string)
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-") || !strings.Contains(csp, "object-src 'none'") {
			x.t.Errorf("XSS: %s has Content-Security-Policy %q", target, csp)
		}
	}
	raw, err := chromedp.Run(x.u.ctx, chromedp.Evaluate[string](xssReport))
	if err != nil {
		x.t.Errorf("XSS: inspect %s: %v", target, err)
		return
	}
	var rep struct {
		Hits  []string
		Title string
		Found []string
	}
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		x.t.Fatalf("XSS report: %v: %s", err, raw)
	}
	x.mu.Lock()
	opened := x.dialogs[before:]
	x.mu.Unlock()
	if len(rep.Hits) > 0 || strings.Contains(rep.Title, "XSS") || len(opened) > 0 || len(rep.Found) > 0 {
		x.u.snap("xss")
		x.t.Errorf("XSS on %s (status %d): payloads ran %v, title %q, dialogs %q, injected markup %q", target, resp.Status, rep.Hits, rep.Title, opened, rep.Found)
	}
}

// submit clicks a form's button and inspects the page it leads to.
func (x *xssRun) submit(step string, button chromedp.CSS, want int) {
	x.t.Helper()
	x.mu.Lock()
	before := len(x.dialogs)
	x.mu.Unlock()
	resp, err := chromedp.RunResponse(x.u.ctx, chromedp.Click(button))
	if err != nil {
		x.u.snap(step + "-failed")
		x.t.Fatalf("%s: %v", step, err)
	}
	if int(resp.Status) != want {
		x.t.Errorf("%s: %s answered %d, want %d", step, resp.URL, resp.Status, want)
	}
	x.inspect(step, resp, before)
}

// control proves the detector: a page that does carry a payload is caught.
func (x *xssRun) control() {
	x.t.Helper()
	if _, err := chromedp.RunResponse(x.u.ctx, chromedp.Navigate("data:text/html,<p>control</p><img class=xssmark src=x onerror=__xss(99)>")); err != nil {
		x.t.Fatalf("control page: %v", err)
	}
	raw, err := chromedp.Run(x.u.ctx, chromedp.Poll[string](`(window.__xssHits || []).length > 0 ? `+xssReport+` : null`,
		chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil || !strings.Contains(raw, `"hits":["99"]`) || !strings.Contains(raw, "marked element") || !strings.Contains(raw, "handler img[onerror") {
		x.t.Fatalf("the XSS detector does not see a payload that runs: %s %v", raw, err)
	}
}
