package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium, which `make test` installs
// (scripts/install-chromium.sh).
const chromiumPath = "/usr/bin/chromium"

// requireChromium returns the browser to drive, or skips the test loudly;
// with HINDSIGHT_REQUIRE_BROWSER=1 (CI) a missing browser fails it.
func requireChromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		msg := fmt.Sprintf("SKIPPING browser test: %s is missing (%v); run scripts/install-chromium.sh, or `make test`, which does", chromiumPath, err)
		if os.Getenv("HINDSIGHT_REQUIRE_BROWSER") == "1" {
			t.Fatal(msg + " [HINDSIGHT_REQUIRE_BROWSER=1]")
		}
		t.Skip(msg)
	}
	return chromiumPath
}

// ui drives one headless Chromium tab against the test server. It keeps a
// screenshot of every page it reaches and writes them to a directory when
// the test fails.
type ui struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu      sync.Mutex
	shots   []shot
	seen    int      // requests the browser made
	foreign []string // requests to anything but the test server
}

type shot struct {
	name string
	png  []byte
}

// password is the dashboard password firstRunSetup gives alice.
const password = "correct horse battery"

// firstRunSetup opens a browser on ta, follows the one-time setup link and
// creates alice's account; the browser is then signed in as alice.
func firstRunSetup(t *testing.T, ta *testApp) *ui {
	t.Helper()
	link, err := ta.app.Dashboard.SetupLink(context.Background())
	if err != nil || link == "" {
		t.Fatalf("setup link: %q %v", link, err)
	}
	u := newUI(t, ta.srv.URL)
	u.goTo("setup", link)
	u.do("fill setup",
		chromedp.SendKeys(chromedp.ID("name"), "alice"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.SendKeys(chromedp.ID("password2"), password))
	u.load("setup done", chromedp.Click(css(`form[action="/setup"] button[type=submit]`)))
	return u
}

func newUI(t *testing.T, base string) *ui {
	t.Helper()
	exec := requireChromium(t)
	profile := t.TempDir() // a fresh user-data dir
	host, _ := url.Parse(base)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exec),
		chromedp.UserDataDir(profile),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		// Beyond the required flags: no name resolves except the test
		// server's address, so the browser cannot reach anything else.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE "+host.Hostname()),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.WindowSize(1024, 640),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	tctx, cancelTime := context.WithTimeout(ctx, 4*time.Minute)
	u := &ui{t: t, ctx: tctx, base: base}
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
		u.saveShotsOnFailure()
	})
	// Start the browser with the long-lived context, then watch its requests.
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1024, 640)); err != nil {
		t.Fatalf("start %s: %v", exec, err)
	}
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			u.mu.Lock()
			u.seen++
			if !strings.HasPrefix(ev.Request.URL, base+"/") && !strings.HasPrefix(ev.Request.URL, "data:") {
				u.foreign = append(u.foreign, ev.Request.URL)
			}
			u.mu.Unlock()
		}
	}()
	// Accept confirm() dialogs (revoking a key asks first).
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return u
}

// saveShotsOnFailure keeps the screenshots when the test failed (or when
// HINDSIGHT_KEEP_SCREENSHOTS=1, to look at the pages).
func (u *ui) saveShotsOnFailure() {
	if !u.t.Failed() && os.Getenv("HINDSIGHT_KEEP_SCREENSHOTS") != "1" || len(u.shots) == 0 {
		return
	}
	dir, err := os.MkdirTemp("", "hindsight-browser-")
	if err != nil {
		u.t.Logf("cannot keep screenshots: %v", err)
		return
	}
	for i, s := range u.shots {
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-%s.png", i, s.name)), s.png, 0o644)
	}
	u.t.Logf("screenshots of every page this test reached: %s", dir)
}

// snap keeps a screenshot of the current page.
func (u *ui) snap(name string) []byte {
	png, err := chromedp.Run(u.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		u.t.Logf("screenshot %s: %v", name, err)
		return nil
	}
	u.mu.Lock()
	u.shots = append(u.shots, shot{name, png})
	u.mu.Unlock()
	return png
}

// do runs actions that stay on the page.
func (u *ui) do(step string, actions ...chromedp.Action[chromedp.Void]) {
	u.t.Helper()
	if err := chromedp.Do(u.ctx, actions...); err != nil {
		u.snap(step + "-failed")
		u.t.Fatalf("%s: %v", step, err)
	}
}

// load runs actions that navigate (a link, a form), waits for the page, and
// checks it answered 200.
func (u *ui) load(step string, actions ...chromedp.Action[chromedp.Void]) {
	u.t.Helper()
	resp, err := chromedp.RunResponse(u.ctx, actions...)
	if err != nil {
		u.snap(step + "-failed")
		u.t.Fatalf("%s: %v", step, err)
	}
	u.snap(step)
	if resp.Status != http.StatusOK {
		u.t.Fatalf("%s: %s answered %d", step, resp.URL, resp.Status)
	}
}

func (u *ui) goTo(step, path string) { u.t.Helper(); u.load(step, chromedp.Navigate(u.base+path)) }

func (u *ui) text(sel string) string {
	u.t.Helper()
	s, err := chromedp.Run(u.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		u.snap("text-failed")
		u.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func (u *ui) eval(js string) bool {
	u.t.Helper()
	ok, err := chromedp.Run(u.ctx, chromedp.Evaluate[bool](js))
	if err != nil {
		u.t.Fatalf("evaluate %s: %v", js, err)
	}
	return ok
}

func (u *ui) path() string {
	u.t.Helper()
	loc, err := chromedp.Run(u.ctx, chromedp.Location())
	if err != nil {
		u.t.Fatal(err)
	}
	p, _ := url.Parse(loc)
	return p.RequestURI()
}

// download clicks sel and returns the downloaded file's bytes.
func (u *ui) download(step, sel string) []byte {
	u.t.Helper()
	dir := u.t.TempDir()
	wait, cancel := context.WithTimeout(u.ctx, 30*time.Second)
	defer cancel()
	progress := chromedp.Events(wait, browser.DownloadProgress)
	u.do(step,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			on := true
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &on})
			return err
		}),
		chromedp.Click(chromedp.CSS(sel)),
	)
	for ev, err := range progress {
		if err != nil {
			u.t.Fatalf("%s: waiting for the download: %v", step, err)
		}
		switch ev.State {
		case browser.DownloadProgressStateCompleted:
			b, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				u.t.Fatal(err)
			}
			return b
		case browser.DownloadProgressStateCanceled:
			u.t.Fatalf("%s: download cancelled", step)
		}
	}
	u.t.Fatalf("%s: no download", step)
	return nil
}

func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// TestDashboardBrowser walks the dashboard in headless Chromium the way a
// person would: first-run setup, sign out and in, create and revoke an API
// key, sync sessions with that key over REST, find one by search, open it
// (also on a phone-width screen), mark it eval-ready, label it golden with
// an expected output, and download the DeepEval dataset.
func TestDashboardBrowser(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ta := newDashboardApp(t)
	u := firstRunSetup(t, ta)
	if p := u.path(); p != "/settings?welcome=1" {
		t.Fatalf("after setup at %s", p)
	}
	if who := u.text(".who"); who != "alice" {
		t.Fatalf("signed in as %q", who)
	}

	// Sign out, and sign in again.
	u.load("sign out", chromedp.Click(css("form.signout button")))
	if p := u.path(); p != "/login?out=1" {
		t.Fatalf("after sign-out at %s", p)
	}
	u.do("fill sign-in",
		chromedp.SendKeys(chromedp.ID("name"), "alice"),
		chromedp.SendKeys(chromedp.ID("password"), password))
	u.load("sign in", chromedp.Click(css(`form[action="/login"] button`)))
	if p := u.path(); p != "/sessions" {
		t.Fatalf("after sign-in at %s", p)
	}

	// Settings: create two keys, copy one, revoke the other.
	u.load("settings", chromedp.Click(css(`header nav a[href="/settings"]`)))
	newKey := func(label string) string {
		u.do("label "+label, chromedp.SendKeys(chromedp.ID("label"), label))
		u.load("create key "+label, chromedp.Click(css(`form[action="/settings/keys"] button`)))
		key, err := chromedp.Run(u.ctx, chromedp.Value(chromedp.ID("new-key")))
		if err != nil || !strings.HasPrefix(key, "osk_") {
			t.Fatalf("new key %q: %v", key, err)
		}
		return key
	}
	key := newKey("laptop")
	u.do("copy key", chromedp.Click(css(`button[data-copy="new-key"]`)))
	if _, err := chromedp.Run(u.ctx, chromedp.Poll[bool](`document.querySelector('[data-copied-for="new-key"]').textContent.length > 0`,
		chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Errorf("the copy button said nothing: %v", err)
	}
	oldKey := newKey("old")
	prefix := oldKey[:10]
	u.load("revoke key", chromedp.Click(css(`input[name=prefix][value="`+prefix+`"] ~ button`)))
	if flash := u.text("p.flash"); !strings.Contains(flash, "Revoked key "+prefix) {
		t.Errorf("after revoking: %q", flash)
	}
	if code, _ := ta.do(http.MethodGet, oldKey, "/api/sessions", nil); code != http.StatusUnauthorized {
		t.Errorf("revoked key: %d", code)
	}
	if u.eval(`document.body.textContent.includes(` + jsString(key) + `)`) {
		t.Errorf("the key is shown again after leaving the page")
	}

	// Sync sessions with the new key over REST.
	long := strings.Repeat("a_very_long_identifier_without_spaces_", 12)
	ta.batch(key, map[string]any{
		"sessions": []any{
			map[string]any{"externalId": "s1", "source": "claude-code", "title": "Fix login redirect loop", "model": "claude-sonnet-4", "projectName": "webapp", "promptTokens": 18230, "completionTokens": 2210, "cost": 0.0871, "durationMs": 754000},
			map[string]any{"externalId": "s2", "source": "opencode", "title": "Flaky auth test in CI", "model": "gpt-5", "projectName": "api", "promptTokens": 40210, "completionTokens": 5120, "cost": 0.2134, "durationMs": 1320000},
			map[string]any{"externalId": "s3", "source": "codex-cli", "title": "Speed up the ingest benchmark", "model": "gpt-5-codex", "projectName": "hindsight", "promptTokens": 9021, "completionTokens": 1733, "cost": 0.0412, "durationMs": 402000},
			map[string]any{"externalId": "s4", "source": "cursor", "title": "Migrate config parsing to YAML", "model": "claude-sonnet-4", "projectName": "cli", "promptTokens": 25510, "completionTokens": 3902, "cost": 0.1188, "durationMs": 960000},
			map[string]any{"externalId": "s5", "source": "claude-code", "title": "Explain the RRF fusion weights", "model": "claude-opus-4", "projectName": "hindsight", "promptTokens": 6120, "completionTokens": 1507, "cost": 0.2031, "durationMs": 305000},
		},
		"messages": []any{
			msg("s2", "m1", "user", map[string]any{"textContent": "Why is TestLogin flaky on CI but never locally? <script>alert(1)</script>"}),
			msg("s2", "m2", "assistant", map[string]any{"parts": []any{
				map[string]any{"type": "text", "content": "The test shares a **global clock** with `TestSessionExpiry`.\n\n- run with `-race`\n- inject the clock\n\n```go\nfunc TestLogin(t *testing.T) { clock := fake.New(); " + long + " }\n```\n" + long},
				map[string]any{"type": "tool-call", "toolName": "Bash", "args": map[string]any{"command": "go test -race -count=20 ./auth/"}},
				map[string]any{"type": "tool-result", "toolName": "Bash", "content": "--- FAIL: TestLogin (0.01s)\n    login_test.go:41: token expired"},
			}}),
			msg("s2", "m3", "user", map[string]any{"textContent": "Fix it then."}),
			msg("s2", "m4", "assistant", map[string]any{"textContent": "Done: the clock is now a parameter of the handler."}),
			msg("s1", "m1", "user", map[string]any{"textContent": "the login redirect loops forever"}),
			msg("s1", "m2", "assistant", map[string]any{"textContent": "The callback URL lacked the trailing slash."}),
		},
	})
	ta.idle()
	for i := range 30 { // long enough to scroll on a phone
		ta.batch(key, map[string]any{"messages": []any{msg("s2", fmt.Sprintf("x%d", i), "user", map[string]any{"textContent": fmt.Sprintf("follow-up %d: %s", i, strings.Repeat("words ", 30))})}})
	}
	ta.idle()

	// Find the flaky test session by search and open it.
	u.load("sessions", chromedp.Click(css(`header nav a[href="/sessions"]`)))
	u.do("type search", chromedp.SendKeys(chromedp.ID("q"), "flaky"))
	u.load("search", chromedp.Click(css(".searchrow button")))
	if got := u.text("table.sessions td.title > a"); got != "Flaky auth test in CI" {
		t.Fatalf("first search result %q", got)
	}
	if !u.eval(`document.querySelectorAll('p.snippet mark').length > 0`) {
		t.Errorf("search result has no highlighted snippet")
	}
	u.load("open session", chromedp.Click(css("table.sessions td.title > a")))
	sid := strings.TrimPrefix(u.path(), "/sessions/")
	if got := u.text("h1"); got != "Flaky auth test in CI" {
		t.Fatalf("session page title %q", got)
	}
	if !u.eval(`[...document.querySelectorAll('article.msg .md')].some(e => e.textContent.includes('<script>alert(1)</script>'))`) {
		t.Errorf("the message's <script> is not shown as text")
	}
	if u.eval(`[...document.scripts].some(s => !s.src.includes('/static/app.js'))`) {
		t.Errorf("a script element other than app.js is on the page")
	}
	// Tool calls are collapsed and open from the keyboard.
	if u.eval(`document.querySelector('details.part').open`) {
		t.Errorf("tool call expanded by default")
	}
	u.do("open tool call", chromedp.Focus(css("details.part summary")), chromedp.KeyEvent("\r"))
	if !u.eval(`document.querySelector('details.part').open`) {
		t.Errorf("Enter on a tool call's summary did not open it")
	}

	// Phone width: the page scrolls vertically and never sideways.
	u.do("phone", chromedp.EmulateViewport(375, 740, chromedp.EmulateMobile))
	u.do("phone reload", chromedp.Reload())
	u.snap("session-375px")
	if !u.eval(`document.documentElement.scrollWidth <= document.documentElement.clientWidth`) {
		w, _ := chromedp.Run(u.ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		t.Errorf("session page overflows a 375px screen sideways (scrollWidth %d)", w)
	}
	if !u.eval(`window.scrollTo(0, document.documentElement.scrollHeight); window.scrollY > 500`) {
		t.Errorf("session page does not scroll on a 375px screen")
	}
	u.do("desktop", chromedp.EmulateViewport(1024, 640), chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))

	// Mark as Eval Ready, then label it golden on the Evals page.
	u.load("mark eval ready", chromedp.Click(css(`button[name=action][value=ready]`)))
	if flash := u.text("p.flash"); !strings.Contains(flash, "eval ready") {
		t.Errorf("after marking: %q", flash)
	}
	u.load("evals", chromedp.Click(css(`header nav a[href="/evals"]`)))
	if got := u.text("table.evals td.title > a"); got != "Flaky auth test in CI" {
		t.Fatalf("Evals lists %q", got)
	}
	const expected = "Inject the clock into the handler; do not share it between tests."
	u.do("label",
		chromedp.Click(css(`input[name=id][value="`+sid+`"]`)),
		chromedp.SetValue(chromedp.ID("label-status"), "golden"),
		chromedp.SendKeys(chromedp.ID("label-expected"), expected))
	u.load("apply labels", chromedp.Click(css(`button[name=action][value=label]`)))
	if got := u.text("table.evals tbody .badge"); got != "Golden" {
		t.Errorf("status after labelling %q", got)
	}
	if got := u.text("table.evals td.expected"); got != expected {
		t.Errorf("expected output shown as %q", got)
	}

	// Download DeepEval for everything in the view ("select all").
	u.do("select all", chromedp.Click(chromedp.ID("select-all")))
	if !u.eval(`[...document.querySelectorAll('input[name=id]')].every(b => b.checked)`) {
		t.Errorf("select all did not tick the rows")
	}
	data := u.download("download deepeval", `button[name=format][value=deepeval]`)
	var cases []struct {
		Input          string   `json:"input"`
		ActualOutput   string   `json:"actual_output"`
		ExpectedOutput *string  `json:"expected_output"`
		Context        []string `json:"context"`
		Retrieval      []string `json:"retrieval_context"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("downloaded deepeval file: %v\n%s", err, data)
	}
	if len(cases) != 2 {
		t.Fatalf("deepeval: %d test cases, want 2 (one per exchange)", len(cases))
	}
	if c := cases[0]; !strings.HasPrefix(c.Input, "Why is TestLogin flaky") || !strings.Contains(c.ActualOutput, "global clock") ||
		c.ExpectedOutput != nil || len(c.Context) != 0 || c.Retrieval == nil {
		t.Errorf("first case %+v", c)
	}
	if c := cases[1]; c.Input != "Fix it then." || c.ExpectedOutput == nil || *c.ExpectedOutput != expected || len(c.Context) != 2 {
		t.Errorf("last case must carry the expected output: %+v", c)
	}

	// Usage renders its charts.
	u.load("usage", chromedp.Click(css(`header nav a[href="/usage"]`)))
	if !u.eval(`document.querySelectorAll('svg.chart rect.bar').length > 0 && document.querySelectorAll('svg.chart').length === 4`) {
		t.Errorf("usage charts missing")
	}

	if os.Getenv("HINDSIGHT_UPDATE_SCREENSHOTS") == "1" {
		updateScreenshots(t, u, ta, key)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen < 20 {
		t.Errorf("only %d requests observed: the request watch is not working", u.seen)
	}
	if len(u.foreign) > 0 {
		t.Errorf("the browser requested other hosts: %q", u.foreign)
	}
}

// TestDashboardBrowserDelete deletes through the dashboard's buttons: one
// session from its page (after the confirmation page), then, on Settings,
// all the rest (after typing the confirmation). Each is gone from the list
// and from search, and the page says so.
func TestDashboardBrowserDelete(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ta := newDashboardApp(t)
	u := firstRunSetup(t, ta)
	u.do("label", chromedp.SendKeys(chromedp.ID("label"), "laptop"))
	u.load("create key", chromedp.Click(css(`form[action="/settings/keys"] button`)))
	key, err := chromedp.Run(u.ctx, chromedp.Value(chromedp.ID("new-key")))
	if err != nil || !strings.HasPrefix(key, "osk_") {
		t.Fatalf("new key %q: %v", key, err)
	}
	ta.batch(key, map[string]any{
		"sessions": []any{
			map[string]any{"externalId": "s1", "source": "claude-code", "title": "Fix login redirect loop"},
			map[string]any{"externalId": "s2", "source": "opencode", "title": "Flaky auth test in CI"},
		},
		"messages": []any{
			msg("s1", "m1", "user", map[string]any{"textContent": "the login redirect loops forever"}),
			msg("s2", "m1", "user", map[string]any{"textContent": "why is the auth test flaky on CI?"}),
			msg("s2", "m2", "assistant", map[string]any{"textContent": "It shares a clock with another test.\n\n" +
				"| test | runs | fails |\n|---|--:|--:|\n| TestLogin | 20 | 3 |\n| TestSessionExpiry | 20 | 0 |\n\n" +
				"- [x] find the shared clock\n  - `auth.Now`\n  - ~~time.Now~~\n- [ ] inject it"}),
		},
	})
	ta.idle()
	titles := func() []string {
		got, err := chromedp.Run(u.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('table.sessions td.title > a')].map(a => a.textContent.trim())`))
		if err != nil {
			t.Fatalf("list titles: %v", err)
		}
		return got
	}
	search := func(step, q string) []string {
		u.goTo(step, "/sessions")
		u.do("type "+step, chromedp.SendKeys(chromedp.ID("q"), q))
		u.load(step+" results", chromedp.Click(css(".searchrow button")))
		return titles()
	}
	if got := search("search before", "flaky"); len(got) != 1 || got[0] != "Flaky auth test in CI" {
		t.Fatalf("search before deleting: %q", got)
	}

	// Delete the flaky session from its page; the confirmation page asks first.
	u.load("open session", chromedp.Click(css("table.sessions td.title > a")))
	sid := strings.TrimPrefix(u.path(), "/sessions/")
	if !u.eval(`document.querySelectorAll('article.msg .md table tbody tr').length === 2 && document.querySelectorAll('article.msg .md li ul li').length === 2`) {
		t.Errorf("the message's table or nested list did not render")
	}
	u.load("delete button", chromedp.Click(css(`.actions a.button.danger`)))
	if p := u.path(); p != "/sessions/"+sid+"/delete" {
		t.Fatalf("Delete… went to %s", p)
	}
	if got := u.text("h1"); got != "Delete this session?" {
		t.Errorf("confirmation page heading %q", got)
	}
	u.load("confirm delete", chromedp.Click(css(`.confirm button.danger`)))
	if p := u.path(); p != "/sessions?deleted=1" {
		t.Fatalf("after deleting at %s", p)
	}
	if flash := u.text("p.flash"); !strings.Contains(flash, "Session deleted") {
		t.Errorf("notice after deleting: %q", flash)
	}
	if got := titles(); len(got) != 1 || got[0] != "Fix login redirect loop" {
		t.Errorf("list after deleting: %q", got)
	}
	ta.idle()
	if got := search("search after", "flaky"); len(got) != 0 {
		t.Errorf("search still finds the deleted session: %q", got)
	}
	if code, _ := ta.do(http.MethodGet, key, "/api/sessions/get?id="+sid, nil); code != http.StatusNotFound {
		t.Errorf("the API still has the deleted session: %d", code)
	}

	// Delete all the rest from Settings: typing the word is required.
	u.load("settings", chromedp.Click(css(`header nav a[href="/settings"]`)))
	u.do("scroll to delete all", chromedp.ScrollIntoView(css("section.danger-zone")))
	u.snap("settings-delete-all")
	u.do("type wrong", chromedp.SendKeys(chromedp.ID("delete-all-confirm"), "delete"))
	if _, err := chromedp.RunResponse(u.ctx, chromedp.Click(css(`form[action="/settings/delete-all"] button`))); err != nil {
		t.Fatalf("submit a wrong confirmation: %v", err)
	}
	if msg := u.text("p.alert"); !strings.Contains(msg, "Nothing was deleted") {
		t.Errorf("wrong confirmation says %q", msg)
	}
	u.do("type confirmation", chromedp.SendKeys(chromedp.ID("delete-all-confirm"), "delete all"))
	u.load("delete all", chromedp.Click(css(`form[action="/settings/delete-all"] button`)))
	if flash := u.text("p.flash"); !strings.Contains(flash, "Deleted 1 session (1 message)") {
		t.Errorf("notice after deleting all: %q", flash)
	}
	u.load("sessions after", chromedp.Click(css(`header nav a[href="/sessions"]`)))
	if got := titles(); len(got) != 0 {
		t.Errorf("sessions left after deleting all: %q", got)
	}
	ta.idle()
	if got := search("search after all", "login"); len(got) != 0 {
		t.Errorf("search still finds %q", got)
	}

	// The deletions stick: the plugin's next sync stores nothing, and the
	// Deleted sessions page lists both, each with Allow sync again.
	ta.batch(key, map[string]any{"sessions": []any{map[string]any{"externalId": "s1", "title": "Fix login redirect loop"}}})
	u.load("sessions after resync", chromedp.Click(css(`header nav a[href="/sessions"]`)))
	if got := titles(); len(got) != 0 {
		t.Errorf("a deleted session came back with the next sync: %q", got)
	}
	u.load("deleted sessions", chromedp.Click(css(`a[href="/sessions/deleted"]`)))
	rows := func() []string {
		got, err := chromedp.Run(u.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('table.deleted td.mono')].map(td => td.textContent.trim())`))
		if err != nil {
			t.Fatalf("deleted rows: %v", err)
		}
		return got
	}
	if got := rows(); len(got) != 2 || got[0] != "s1" || got[1] != "s2" {
		t.Fatalf("deleted sessions listed: %q", got)
	}
	u.load("allow sync again", chromedp.Click(css(`table.deleted tbody tr:first-child form button`)))
	if flash := u.text("p.flash"); !strings.Contains(flash, "Sync allowed again for 1 session") {
		t.Errorf("notice after allowing: %q", flash)
	}
	if got := rows(); len(got) != 1 || got[0] != "s2" {
		t.Errorf("deleted sessions after allowing s1: %q", got)
	}
	ta.batch(key, map[string]any{"sessions": []any{map[string]any{"externalId": "s1", "title": "Fix login redirect loop"}}})
	u.load("sessions after allowing", chromedp.Click(css(`header nav a[href="/sessions"]`)))
	if got := titles(); len(got) != 1 || got[0] != "Fix login redirect loop" {
		t.Errorf("after allowing, the next sync stored %q", got)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.foreign) > 0 {
		t.Errorf("the browser requested other hosts: %q", u.foreign)
	}
}

// updateScreenshots writes docs/screenshots/{sessions,evals}.png for the
// README (HINDSIGHT_UPDATE_SCREENSHOTS=1), at 1024x640.
func updateScreenshots(t *testing.T, u *ui, ta *testApp, key string) {
	// A second labelled session, through the REST API, so Evals shows a mix.
	var ids []string
	code, b := ta.do(http.MethodGet, key, "/api/sessions?limit=10", nil)
	var list struct {
		Sessions []struct{ ID, ExternalID string }
	}
	if code != http.StatusOK || json.Unmarshal(b, &list) != nil {
		t.Fatalf("list sessions: %d %s", code, b)
	}
	for _, s := range list.Sessions {
		if s.ExternalID == "s1" || s.ExternalID == "s4" {
			ids = append(ids, s.ID)
		}
	}
	for i, id := range ids {
		status := []string{"correct", "needs_review"}[i]
		body := map[string]any{"ids": []string{id}, "evalReady": true, "evalStatus": status, "evalTags": []string{"auth"}}
		if code, b := ta.do(http.MethodPatch, key, "/api/sessions/eval", body); code != http.StatusOK {
			t.Fatalf("label over REST: %d %s", code, b)
		}
	}
	dir := filepath.Join("..", "..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ path, file string }{{"/sessions", "sessions.png"}, {"/evals", "evals.png"}} {
		u.goTo("screenshot "+p.file, p.path)
		png := u.snap(p.file)
		if png == nil {
			t.Fatalf("no screenshot of %s", p.path)
		}
		if err := os.WriteFile(filepath.Join(dir, p.file), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", filepath.Join(dir, p.file), len(png))
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
