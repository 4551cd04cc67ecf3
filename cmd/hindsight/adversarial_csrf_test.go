package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/server"
)

// The CSRF sub-suite: every dashboard POST route (from the router walk,
// each with its csrf case in adversarialRoutes) is posted into the
// victim's signed-in browser four ways: without a token, with a random
// token, with the attacker's valid token, and with the victim's own token
// from another site (Origin and Sec-Fetch-Site cross-site). Each must be a
// 403 that changes nothing the victim can see. Then the same form with the
// victim's token from the victim's own pages (the positive control) must
// take effect, so a form that changes nothing anyway cannot pass for a
// refused one. Every form found on the victim's pages must be one of
// these routes.

// csrfForm is the form a csrf case forges.
type csrfForm struct {
	target string     // where it posts
	form   url.Values // its fields, without csrf
	anon   bool       // a sign-in form: its token is the double-submit cookie
	export bool       // a download: accepted, it answers the data and changes nothing
	rank   int        // positive controls run by rank: sign-in changes last, deleting everything after them
	after  func(c *csrfRun)
}

// csrfRun is the CSRF suite's server, victim and attacker.
type csrfRun struct {
	*adv
	victimPW   string
	forged     *http.Client // the victim's browser, through the probe (counted)
	browser    *http.Client // the same browser, not counted
	jar        http.CookieJar
	sids       map[string]string // externalId -> the victim's session id
	setupToken string
	k2Prefix   string
}

func runCSRF(t *testing.T, tl *tally) {
	tl.start(catCSRF)
	a := newAdv(t, tl, config.Config{Semantic: config.Semantic{Embedder: "none"}})
	c := &csrfRun{adv: a, victimPW: "victim password 1", sids: map[string]string{}}
	c.jar, _ = cookiejar.New(nil)
	c.browser = &http.Client{Jar: c.jar, CheckRedirect: noFollow}
	c.forged = &http.Client{Jar: c.jar, Transport: &probe{t: t, cat: catCSRF, tally: tl, sec: a.sec, allow403: true}, CheckRedirect: noFollow}
	routes, err := a.ta.app.Routes()
	if err != nil {
		t.Fatal(err)
	}
	cases := checkRouteCoverage(t, routes)

	// First-run setup: forged first (nothing may be created), then the
	// real one creates the victim.
	link, err := a.ta.app.Dashboard.SetupLink(context.Background())
	if err != nil || link == "" {
		t.Fatalf("setup link %q: %v", link, err)
	}
	c.setupToken = strings.TrimPrefix(link, "/setup?token=")
	setupPage := a.send(c.browser, http.MethodGet, link, nil, "")
	forms := formsOf(setupPage.body)
	setup := csrfSetup(c)
	c.forge(setup, func() string {
		users, _ := a.ta.app.Accounts.Users(context.Background())
		return fmt.Sprintf("%d users", len(users))
	})
	c.accept(setup)
	v, err := a.ta.app.Accounts.User(context.Background(), "victim")
	if err != nil {
		t.Fatalf("setup did not create the victim: %v", err)
	}
	c.victim = &tenant{name: "victim", id: v.ID, password: c.victimPW, web: c.browser}
	a.refreshCSRF(c.victim)
	c.plant()
	c.attacker = a.newTenant("mallory", "mallory's key", true)

	// The victim's pages: every form on them must be a route with a CSRF case.
	pages := []string{"/sessions", "/sessions/" + c.sids["s1"], "/sessions/" + c.sids["s2"], "/sessions/" + c.sids["s1"] + "/delete",
		"/sessions/delete-project?project=projA", "/sessions/deleted", "/evals", "/settings", "/usage"}
	for _, p := range pages {
		r := a.send(c.browser, http.MethodGet, p, nil, "")
		if r.status != http.StatusOK {
			t.Fatalf("the victim's page %s: %s", p, r)
		}
		forms = append(forms, formsOf(r.body)...)
	}
	anon := &http.Client{CheckRedirect: noFollow}
	forms = append(forms, formsOf(a.send(anon, http.MethodGet, "/login", nil, "").body)...)
	checkForms(t, routes, cases, forms)

	// Forge every form, then apply each for real.
	var all []csrfForm
	for _, rc := range cases {
		if rc.csrf == nil || slices.Contains(rc.routes, "POST /setup") {
			continue
		}
		f := rc.csrf(c)
		c.forge(f, c.state)
		all = append(all, f)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].rank < all[j].rank })
	for _, f := range all {
		c.accept(f)
	}
	tl.figure("csrf forms forged: %d routes, %d forms found on pages", len(all)+1, len(forms))
}

// plant gives the victim sessions (two projects, one eval-ready), a
// deleted session and two API keys.
func (c *csrfRun) plant() {
	c.t.Helper()
	ctx := context.Background()
	key, _, err := c.ta.app.Accounts.CreateKey(ctx, "victim", "k1")
	if err != nil {
		c.t.Fatal(err)
	}
	c.victim.key = key
	c.victim.api = &http.Client{Transport: bearerTransport{key}, CheckRedirect: noFollow}
	k2, _, err := c.ta.app.Accounts.CreateKey(ctx, "victim", "k2")
	if err != nil {
		c.t.Fatal(err)
	}
	c.k2Prefix = k2[:10]
	var sessions, messages []any
	for i := 1; i <= 6; i++ {
		ext := fmt.Sprintf("s%d", i)
		sessions = append(sessions, map[string]any{"externalId": ext, "title": "victim session " + ext, "projectName": map[bool]string{true: "projA", false: "projB"}[i == 3]})
		messages = append(messages, msg(ext, "m1", "user", map[string]any{"textContent": "hello"}), msg(ext, "m2", "assistant", map[string]any{"textContent": "hi"}))
	}
	sessions = append(sessions, map[string]any{"externalId": "t1", "title": "to delete", "projectName": "projB"})
	r := c.sendJSON(c.victim.api, http.MethodPost, "/sync/batch", map[string]any{"sessions": sessions, "messages": messages})
	if r.status != http.StatusOK {
		c.t.Fatalf("victim batch: %s", r)
	}
	for _, s := range c.listAll(c.victim) {
		c.sids[s.ExternalID] = s.ID
	}
	c.want("delete t1", c.send(c.victim.api, http.MethodDelete, "/api/sessions?id="+c.sids["t1"], nil, ""), http.StatusOK)
	c.want("s2 eval-ready", c.sendJSON(c.victim.api, http.MethodPatch, "/api/sessions/eval", map[string]any{"ids": []string{c.sids["s2"]}, "evalReady": true}), http.StatusOK)
}

// state is everything a forged form could change for the victim: the
// sessions and their labels, the deleted ones, the keys, who the browser is
// signed in as, and whether the password still works.
func (c *csrfRun) state() string {
	c.t.Helper()
	var b strings.Builder
	b.WriteString(string(c.send(c.victim.api, http.MethodGet, "/api/sessions?limit=500", nil, "").body))
	b.WriteString(string(c.send(c.victim.api, http.MethodGet, "/api/sessions/deleted", nil, "").body))
	keys, _ := c.ta.app.Accounts.Keys(context.Background(), c.victim.id)
	for _, k := range keys {
		fmt.Fprintf(&b, "\nkey %s %q revoked=%d", k.Prefix, k.Label, k.Revoked)
	}
	r := c.send(c.browser, http.MethodGet, "/settings", nil, "")
	who := regexp.MustCompile(`class="who"[^>]*>([^<]*)<`).FindSubmatch(r.body)
	fmt.Fprintf(&b, "\nbrowser: %d %q", r.status, who)
	web := accounts.NewWeb(c.ta.app.Store, accounts.WebOptions{BcryptCost: bcrypt.MinCost})
	_, err := web.SignIn(context.Background(), "victim", c.victimPW)
	fmt.Fprintf(&b, "\npassword works: %v", err == nil)
	return b.String()
}

// tokens: the victim browser's CSRF token for f (the session's, or the
// double-submit cookie), and the attacker's.
func (c *csrfRun) tokens(f csrfForm) (victim, attacker string) {
	if !f.anon {
		if c.attacker == nil {
			return c.victim.csrf, accounts.RandomToken()
		}
		return c.victim.csrf, c.attacker.csrf
	}
	u, _ := url.Parse(c.base)
	cookie := func(jar http.CookieJar) string {
		for _, k := range jar.Cookies(u) {
			if k.Name == "hindsight_csrf" {
				return k.Value
			}
		}
		return ""
	}
	victim = cookie(c.jar)
	if victim == "" {
		c.send(c.browser, http.MethodGet, "/login", nil, "")
		victim = cookie(c.jar)
	}
	attacker = accounts.RandomToken()
	if c.attacker != nil {
		attacker = cookie(c.attacker.web.Jar)
	}
	return victim, attacker
}

// forge posts f into the victim's browser the four forged ways; each must
// be a 403 and state must not change.
func (c *csrfRun) forge(f csrfForm, state func() string) {
	c.t.Helper()
	before := state()
	mine, theirs := c.tokens(f)
	for _, try := range []struct {
		name, token string
		omit        bool
		crossSite   bool
	}{{"no token", "", true, false}, {"a random token", accounts.RandomToken(), false, false},
		{"the attacker's token", theirs, false, false}, {"the victim's token from another site", mine, false, true}} {
		form := url.Values{}
		for k, v := range f.form {
			form[k] = v
		}
		if !try.omit {
			form.Set("csrf", try.token)
		}
		req, _ := http.NewRequest(http.MethodPost, c.base+f.target, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", formType)
		if try.crossSite {
			req.Header.Set("Origin", "http://evil.example")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		resp, err := c.forged.Do(req)
		if err != nil {
			c.t.Fatalf("forged POST %s: %v", f.target, err)
		}
		body := make([]byte, 512)
		n, _ := resp.Body.Read(body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			c.t.Errorf("CSRF: POST %s with %s: %d, want 403: %.300s", f.target, try.name, resp.StatusCode, body[:n])
		}
		if resp.Header.Get("Content-Disposition") != "" || len(resp.Cookies()) > 0 && !f.anon {
			c.t.Errorf("CSRF: POST %s with %s answered a download or set a cookie", f.target, try.name)
		}
		if after := state(); after != before {
			c.t.Errorf("CSRF: POST %s with %s changed the victim's state:\n  before %.400s\n  after  %.400s", f.target, try.name, before, after)
			before = after
		}
	}
}

// accept posts f with the victim's own token (the positive control): it
// must take effect.
func (c *csrfRun) accept(f csrfForm) {
	c.t.Helper()
	var before string
	if c.victim != nil {
		before = c.state()
	}
	mine, _ := c.tokens(f)
	form := url.Values{"csrf": {mine}}
	for k, v := range f.form {
		form[k] = v
	}
	r := c.send(c.forged, http.MethodPost, f.target, []byte(form.Encode()), formType)
	switch {
	case f.export:
		if r.status != http.StatusOK || r.header.Get("Content-Disposition") == "" {
			c.t.Errorf("CSRF positive control: POST %s with the victim's token: %s, want the download", f.target, r)
		}
	case r.status != http.StatusSeeOther && r.status != http.StatusOK:
		c.t.Errorf("CSRF positive control: POST %s with the victim's token: %s, want it accepted", f.target, r)
	case c.victim != nil && c.state() == before:
		c.t.Errorf("CSRF positive control: POST %s with the victim's token changed nothing: the forged posts prove nothing", f.target)
	}
	if f.after != nil {
		f.after(c)
	}
}

// signBackIn signs the victim's browser in again (after a positive
// control signed it out or in as someone else).
func (c *csrfRun) signBackIn() {
	c.t.Helper()
	mine, _ := c.tokens(csrfForm{anon: true})
	r := c.send(c.browser, http.MethodPost, "/login", []byte(url.Values{"csrf": {mine}, "name": {"victim"}, "password": {c.victimPW}}.Encode()), formType)
	if r.status != http.StatusSeeOther {
		c.t.Fatalf("the victim signs back in: %s", r)
	}
	c.refreshCSRF(c.victim)
}

var (
	formAction = regexp.MustCompile(`(?s)<form\b[^>]*>`)
	attrRe     = regexp.MustCompile(`\b(method|action|formaction)="([^"]*)"`)
)

// formsOf lists the POST targets of a page's forms and buttons.
func formsOf(page []byte) []string {
	var out []string
	for _, tag := range formAction.FindAll(page, -1) {
		attrs := map[string]string{}
		for _, m := range attrRe.FindAllSubmatch(tag, -1) {
			attrs[string(m[1])] = string(m[2])
		}
		if strings.EqualFold(attrs["method"], "post") {
			out = append(out, attrs["action"])
		}
	}
	for _, m := range regexp.MustCompile(`formaction="([^"]*)"`).FindAllSubmatch(page, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// checkForms fails for a form posting to a route without a CSRF case.
func checkForms(t *testing.T, routes []server.Route, cases []routeCase, forms []string) {
	t.Helper()
	withCSRF := map[string]bool{}
	for _, rc := range cases {
		if rc.csrf != nil {
			for _, k := range rc.routes {
				withCSRF[k] = true
			}
		}
	}
	for _, action := range forms {
		p, _, _ := strings.Cut(action, "?")
		matched := ""
		for _, r := range routes {
			if slices.Contains(r.Methods, http.MethodPost) && templateMatches(r.Path, p) {
				matched = "POST " + r.Path
			}
		}
		if matched == "" {
			t.Errorf("a dashboard form posts to %s, which no POST route serves", action)
		} else if !withCSRF[matched] {
			t.Errorf("a dashboard form posts to %s (%s), which has no CSRF case in adversarialRoutes", action, matched)
		}
	}
	if len(forms) < 10 {
		t.Errorf("only %d forms found on the victim's pages: the form scan is not working", len(forms))
	}
}

func templateMatches(tmpl, p string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(p, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if !(strings.HasPrefix(ts[i], "{") && ps[i] != "") && ts[i] != ps[i] {
			return false
		}
	}
	return true
}

// --- the forms each dashboard POST route forges ---

func csrfSetup(c *csrfRun) csrfForm {
	return csrfForm{target: "/setup", anon: true, form: url.Values{"token": {c.setupToken}, "name": {"victim"},
		"password": {c.victimPW}, "password2": {c.victimPW}}}
}

func csrfLogin(c *csrfRun) csrfForm {
	// Login CSRF: the victim's browser signed in as the attacker.
	return csrfForm{target: "/login", anon: true, rank: 1, form: url.Values{"name": {"mallory"}, "password": {c.attacker.password}},
		after: func(c *csrfRun) { c.signBackIn() }}
}

func csrfLogout(c *csrfRun) csrfForm {
	return csrfForm{target: "/logout", rank: 1, after: func(c *csrfRun) { c.signBackIn() }}
}

func csrfSessionEval(c *csrfRun) csrfForm {
	return csrfForm{target: "/sessions/" + c.sids["s1"] + "/eval", form: url.Values{"action": {"ready"}}}
}

func csrfEvalsLabel(c *csrfRun) csrfForm {
	return csrfForm{target: "/evals/label", form: url.Values{"id": {c.sids["s2"]}, "status": {"incorrect"}, "notes": {"forged"}}}
}

func csrfEvalsExport(c *csrfRun) csrfForm {
	return csrfForm{target: "/evals/export", export: true, form: url.Values{"id": {c.sids["s2"]}, "format": {"deepeval"}}}
}

func csrfDeleteProject(c *csrfRun) csrfForm {
	return csrfForm{target: "/sessions/delete-project", form: url.Values{"project": {"projA"}, "confirm": {"yes"}}}
}

func csrfDeleteSession(c *csrfRun) csrfForm {
	return csrfForm{target: "/sessions/" + c.sids["s4"] + "/delete", form: url.Values{"confirm": {"yes"}}}
}

func csrfAllow(c *csrfRun) csrfForm {
	return csrfForm{target: "/sessions/deleted/allow", form: url.Values{"externalId": {"t1"}}}
}

func csrfDeleteAll(c *csrfRun) csrfForm {
	return csrfForm{target: "/settings/delete-all", rank: 2, form: url.Values{"confirm": {"delete all"}}}
}

func csrfCreateKey(c *csrfRun) csrfForm {
	return csrfForm{target: "/settings/keys", form: url.Values{"label": {"forged"}}}
}

func csrfRevoke(c *csrfRun) csrfForm {
	return csrfForm{target: "/settings/keys/revoke", form: url.Values{"prefix": {c.k2Prefix}}}
}

func csrfPassword(c *csrfRun) csrfForm {
	const newPW = "victim password 2"
	return csrfForm{target: "/settings/password", rank: 1, form: url.Values{"current": {c.victimPW}, "password": {newPW}, "password2": {newPW}},
		after: func(c *csrfRun) {
			c.victimPW = newPW
			c.refreshCSRF(c.victim)
		}}
}
