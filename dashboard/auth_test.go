package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSignedOutRedirects(t *testing.T) {
	f := newFixture(t, Config{})
	b := f.browser()
	for _, path := range []string{"/sessions", "/sessions/abcdefghijklmnop", "/evals", "/settings", "/usage", "/sessions?q=x"} {
		p := b.get(path).want(t, http.StatusSeeOther)
		if want := "/login?next=" + url.QueryEscape(path); p.location() != want {
			t.Errorf("GET %s: Location %q, want %q", path, p.location(), want)
		}
	}
	if p := b.get("/"); p.location() != "/login" {
		t.Errorf("GET /: %d %s", p.status, p.location())
	}
	// No account yet: the sign-in page says how to create one.
	p := b.get("/login").want(t, http.StatusOK)
	if got := texts(t, p.doc, "p.hint"); len(got) == 0 || !strings.Contains(got[0], "setup link") {
		t.Errorf("sign-in page without users should point at the setup link: %q", got)
	}
	if len(findAll(t, p.doc, "nav[aria-label=Main]")) != 0 {
		t.Errorf("signed-out page shows the navigation")
	}
	// A POST while signed out goes to sign-in, and changes nothing.
	b.post("/settings/keys", url.Values{"label": {"x"}}).want(t, http.StatusSeeOther)
}

func TestFirstRunSetup(t *testing.T) {
	f := newFixture(t, Config{})
	link, err := f.dash.SetupLink(bg)
	if err != nil || !strings.HasPrefix(link, "/setup?token=") {
		t.Fatalf("SetupLink: %q %v", link, err)
	}
	b := f.browser()
	b.get("/setup?token=wrong").want(t, http.StatusNotFound)
	b.get("/setup").want(t, http.StatusNotFound)
	p := b.get(link).want(t, http.StatusOK)
	one(t, p.doc, "form[action=/setup] input[name=token]")
	token := strings.TrimPrefix(link, "/setup?token=")
	form := func(name, pw, pw2 string) url.Values {
		return url.Values{"token": {token}, "name": {name}, "password": {pw}, "password2": {pw2}}
	}
	// Validation errors keep the form.
	for _, tc := range []struct{ name, pw, pw2, want string }{
		{"alice", "short", "short", "at least 8"},
		{"alice", "long enough 1", "long enough 2", "differ"},
		{"bad name!", "long enough", "long enough", "User name"},
	} {
		p := b.post("/setup", form(tc.name, tc.pw, tc.pw2)).want(t, http.StatusBadRequest)
		if got := textOf(one(t, p.doc, "p.alert")); !strings.Contains(got, tc.want) {
			t.Errorf("setup %+v: message %q, want %q", tc, got, tc.want)
		}
	}
	// Without the form's CSRF token: refused.
	b.post("/setup", func() url.Values { v := form("alice", "long enough", "long enough"); v.Set("csrf", ""); return v }()).
		want(t, http.StatusForbidden)
	// A browser without the CSRF cookie (a cross-site form post): refused.
	other := f.browser()
	other.post("/setup", func() url.Values { v := form("mallory", "long enough", "long enough"); v.Set("csrf", b.csrf); return v }()).
		want(t, http.StatusForbidden)

	p = b.post("/setup", form("alice", "long enough", "long enough")).want(t, http.StatusSeeOther)
	if p.location() != "/settings?welcome=1" || b.cookie(sessionCookie) == "" {
		t.Fatalf("after setup: %s, cookie %q", p.location(), b.cookie(sessionCookie))
	}
	setCookie := p.header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Lax", "Path=/"} {
		if !strings.Contains(setCookie, want) {
			t.Errorf("session cookie %q lacks %s", setCookie, want)
		}
	}
	if strings.Contains(setCookie, "Secure") {
		t.Errorf("plain-HTTP session cookie marked Secure: %q", setCookie)
	}
	p = b.get("/settings?welcome=1").want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, ".who")); got != "alice" {
		t.Errorf("signed in as %q", got)
	}
	// The link works once.
	f.browser().get(link).want(t, http.StatusNotFound)
	again := f.browser()
	again.get("/login")
	again.post("/setup", form("mallory", "long enough", "long enough")).want(t, http.StatusNotFound)
	if link, _ := f.dash.SetupLink(bg); link != "" {
		t.Errorf("setup link offered with a user present: %q", link)
	}
}

func TestSecureCookieOverTLSProxy(t *testing.T) {
	f := newFixture(t, Config{})
	f.user("alice")
	b := f.browser()
	b.get("/login")
	p := b.post("/login", url.Values{"name": {"alice"}, "password": {"alice-password"}}, "X-Forwarded-Proto", "https")
	if !strings.Contains(p.header.Get("Set-Cookie"), "Secure") {
		t.Errorf("cookie for an HTTPS request is not Secure: %q", p.header.Get("Set-Cookie"))
	}
}

func TestSignInAndOut(t *testing.T) {
	f := newFixture(t, Config{})
	f.user("alice")
	b := f.browser()
	b.get("/login")
	p := b.post("/login", url.Values{"name": {"alice"}, "password": {"wrong password"}}).want(t, http.StatusUnauthorized)
	if got := textOf(one(t, p.doc, "p.alert")); got != "Wrong user name or password." {
		t.Errorf("message %q", got)
	}
	if v, _ := attr(one(t, p.doc, "input#name"), "value"); v != "alice" {
		t.Errorf("user name not kept: %q", v)
	}
	b.post("/login", url.Values{"name": {"nobody"}, "password": {"whatever1"}}).want(t, http.StatusUnauthorized)
	// next= brings the user back, but only within the site.
	p = b.post("/login", url.Values{"name": {"alice"}, "password": {"alice-password"}, "next": {"/evals?status=golden"}}).want(t, http.StatusSeeOther)
	if p.location() != "/evals?status=golden" {
		t.Errorf("next ignored: %q", p.location())
	}
	b.get("/sessions").want(t, http.StatusOK)
	if p := b.get("/login"); p.location() != "/sessions" {
		t.Errorf("signed-in /login: %d %s", p.status, p.location())
	}
	token := b.cookie(sessionCookie)
	// Sign out needs the CSRF token too.
	b.post("/logout", url.Values{"csrf": {""}}).want(t, http.StatusForbidden)
	p = b.post("/logout", nil).want(t, http.StatusSeeOther)
	if p.location() != "/login?out=1" || b.cookie(sessionCookie) != "" {
		t.Errorf("logout: %s, cookie %q", p.location(), b.cookie(sessionCookie))
	}
	// The old token is dead on the server, not just forgotten by the browser.
	b.setCookie(sessionCookie, token)
	b.get("/sessions").want(t, http.StatusSeeOther)

	evil := f.browser()
	evil.get("/login")
	p = evil.post("/login", url.Values{"name": {"alice"}, "password": {"alice-password"}, "next": {"//evil.example/x"}})
	if p.location() != "/sessions" {
		t.Errorf("open redirect: %q", p.location())
	}
}

func TestSessionFixation(t *testing.T) {
	f := newFixture(t, Config{})
	f.user("alice")
	f.user("mallory")
	// Mallory signs in and plants her own valid session token, and then an
	// invented one, in Alice's browser.
	m := f.browser()
	m.signIn("mallory")
	planted := m.cookie(sessionCookie)
	for _, plant := range []string{planted, "attacker-chosen-session-id-0123456789abcdef"} {
		a := f.browser()
		a.get("/login")
		a.setCookie(sessionCookie, plant)
		a.post("/login", url.Values{"name": {"alice"}, "password": {"alice-password"}}).want(t, http.StatusSeeOther)
		got := a.cookie(sessionCookie)
		if got == "" || got == plant {
			t.Fatalf("session id not renewed at sign-in: %q", got)
		}
		p := a.get("/sessions").want(t, http.StatusOK)
		if who := textOf(one(t, p.doc, ".who")); who != "alice" {
			t.Errorf("signed in as %q", who)
		}
		// The planted token no longer signs anybody in.
		x := f.browser()
		x.setCookie(sessionCookie, plant)
		x.get("/sessions").want(t, http.StatusSeeOther)
	}
}

func TestCSRFRejected(t *testing.T) {
	f := newFixture(t, Config{})
	alice := f.user("alice")
	f.sync(alice, `{"sessions":[{"externalId":"s1","title":"t"}]}`)
	sid := f.sessionID(alice, "s1")
	b := f.browser()
	b.signIn("alice")
	good := b.csrf
	m := f.browser()
	f.user("mallory")
	m.signIn("mallory")
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/settings/keys", url.Values{"label": {"x"}}},
		{"/settings/keys/revoke", url.Values{"prefix": {"osk_abc"}}},
		{"/settings/password", url.Values{"current": {"alice-password"}, "password": {"new password 1"}, "password2": {"new password 1"}}},
		{"/sessions/" + sid + "/eval", url.Values{"action": {"ready"}}},
		{"/evals/label", url.Values{"id": {sid}, "status": {"golden"}}},
		{"/evals/export", url.Values{"id": {sid}, "format": {"deepeval"}}},
		{"/sessions/" + sid + "/delete", url.Values{"confirm": {"yes"}}},
		{"/settings/delete-all", url.Values{"confirm": {"delete all"}}},
		{"/sessions/delete-project", url.Values{"project": {"p"}, "confirm": {"yes"}}},
		{"/sessions/deleted/allow", url.Values{"externalId": {"s1"}}},
		{"/logout", nil},
	} {
		// The wrong token differs from the good one in its first character
		// whatever that is (a fixed "x" equalled it when the token began so).
		wrong := "x" + good[1:]
		if good[0] == 'x' {
			wrong = "y" + good[1:]
		}
		for name, csrf := range map[string]string{"missing": "", "wrong": wrong, "another session's": m.csrf} {
			form := url.Values{}
			for k, v := range tc.form {
				form[k] = v
			}
			form.Set("csrf", csrf)
			p := b.post(tc.path, form)
			if p.status != http.StatusForbidden {
				t.Errorf("POST %s with %s CSRF token: %d, want 403", tc.path, name, p.status)
			} else if got := textOf(one(t, p.doc, "p.error-text")); !strings.Contains(got, "expired or was sent from another site") {
				t.Errorf("403 page says %q", got)
			}
		}
		// The right token from another origin is refused as well.
		form := url.Values{"csrf": {good}}
		for k, v := range tc.form {
			form[k] = v
		}
		if p := b.post(tc.path, form, "Sec-Fetch-Site", "cross-site"); p.status != http.StatusForbidden {
			t.Errorf("cross-site POST %s: %d, want 403", tc.path, p.status)
		}
		if p := b.post(tc.path, form, "Origin", "https://evil.example"); p.status != http.StatusForbidden {
			t.Errorf("cross-origin POST %s: %d, want 403", tc.path, p.status)
		}
	}
	// Nothing happened.
	if ks, _ := f.acct.Keys(bg, alice); len(ks) != 0 {
		t.Errorf("a key was created: %+v", ks)
	}
	if s := f.stored(alice, sid); s.Ready || s.Status != "" {
		t.Errorf("eval changed: %+v", s.Eval)
	}
	b.get("/sessions").want(t, http.StatusOK)
	// With the token it works.
	b.csrf = good
	b.post("/sessions/"+sid+"/eval", url.Values{"action": {"ready"}}).want(t, http.StatusSeeOther)
	if s := f.stored(alice, sid); !s.Ready {
		t.Errorf("eval-ready not set with a valid token")
	}
	// Sign-in form: the double-submit cookie must match.
	c := f.browser()
	c.get("/login")
	c.post("/login", url.Values{"name": {"alice"}, "password": {"alice-password"}, "csrf": {"nope"}}).want(t, http.StatusForbidden)
	fresh := f.browser()
	fresh.post("/login", url.Values{"name": {"alice"}, "password": {"alice-password"}, "csrf": {good}}).want(t, http.StatusForbidden)
}

func TestSignInRateLimit(t *testing.T) {
	f := newFixture(t, Config{LoginFailures: 3})
	f.user("alice")
	b := f.browser()
	b.get("/login")
	for range 3 {
		b.post("/login", url.Values{"name": {"alice"}, "password": {"guess guess"}}).want(t, http.StatusUnauthorized)
	}
	// The client that failed is refused even the right password, with a
	// clear message.
	p := b.post("/login", url.Values{"name": {"alice"}, "password": {"alice-password"}}).want(t, http.StatusTooManyRequests)
	if ra := p.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
	if got := textOf(one(t, p.doc, "p.alert")); !strings.Contains(got, "Too many failed sign-in attempts") {
		t.Errorf("429 message %q", got)
	}
	if b.cookie(sessionCookie) != "" {
		t.Errorf("signed in while rate limited")
	}
	// Other names from the same client are not limited by alice's count.
	f.user("bob")
	b.post("/login", url.Values{"name": {"bob"}, "password": {"bob-password"}}).want(t, http.StatusSeeOther)
	f.clock.Add(time.Minute)
	b.post("/login", url.Values{"name": {"alice"}, "password": {"alice-password"}}).want(t, http.StatusSeeOther)
}

// TestSignInLockoutIsPerClient: failures from one client, or from many,
// do not lock the real user, signing in from elsewhere, out of their
// account; the clients that fail are throttled.
func TestSignInLockoutIsPerClient(t *testing.T) {
	f := newFixture(t, Config{LoginFailures: 5})
	f.user("alice")
	// Fresh forms each time: post fills in the browser's CSRF token.
	wrong := func() url.Values { return url.Values{"name": {"alice"}, "password": {"guess guess"}} }
	right := func() url.Values { return url.Values{"name": {"alice"}, "password": {"alice-password"}} }

	// Client A guesses many times: after five failures it is refused
	// without a password check, for alice and (past its own limit) for any name.
	a := f.browser()
	a.addr = "203.0.113.7:40000"
	a.get("/login")
	failed, limited := 0, 0
	for range 50 {
		switch st := a.post("/login", wrong()).status; st {
		case http.StatusUnauthorized:
			failed++
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("attacker's guess: status %d", st)
		}
	}
	if failed != 5 || limited != 45 {
		t.Errorf("client A: %d guesses checked, %d refused; want 5 and 45", failed, limited)
	}
	a.post("/login", right()).want(t, http.StatusTooManyRequests)

	// The real user, from client B, signs in at once.
	b := f.browser()
	b.addr = "198.51.100.9:51000"
	b.get("/login")
	if p := b.post("/login", right()); p.status != http.StatusSeeOther || p.location() != "/sessions" {
		t.Fatalf("real user from another client: %d %s\n%s", p.status, p.location(), p.body)
	}

	// Many attacking clients (a botnet): each is throttled on alice once
	// the name is under attack, and the real user still gets in.
	for i := range 40 {
		bot := f.browser()
		bot.addr = "192.0.2." + strconv.Itoa(i+1) + ":1"
		bot.get("/login")
		for range 5 {
			if st := bot.post("/login", wrong()).status; st != http.StatusUnauthorized && st != http.StatusTooManyRequests {
				t.Fatalf("bot guess: %d", st)
			}
		}
		if bot.post("/login", right()).status != http.StatusTooManyRequests {
			t.Errorf("bot %d may still try alice after failing", i)
		}
	}
	c := f.browser()
	c.addr = "[2001:db8:1::5]:443"
	c.get("/login")
	if p := c.post("/login", right()); p.status != http.StatusSeeOther {
		t.Fatalf("real user during a distributed attack: %d", p.status)
	}
}
