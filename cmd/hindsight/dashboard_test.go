package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/kv"
)

// newDashboardApp is newTestApp with cheap password hashing (bcrypt's
// default cost takes seconds under the race detector).
func newDashboardApp(t *testing.T) *testApp {
	t.Helper()
	return newTestAppConfig(t, config.Config{Data: t.TempDir(), BcryptCost: bcrypt.MinCost})
}

func noRedirects(jar http.CookieJar) *http.Client {
	// No timeout: a hang is caught by go test's -timeout; a slow machine is not a failure.
	return &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// webSignIn signs a cookie client in through the sign-in form.
func webSignIn(t *testing.T, base, name, password string) *http.Client {
	t.Helper()
	status, c := signInStatus(t, base, name, password)
	if status != http.StatusSeeOther {
		t.Fatalf("sign in as %s: status %d, want 303 to /sessions", name, status)
	}
	return c
}

// The REST API and the dashboard share one router and one middleware chain,
// but neither's authentication reaches the other's routes.
func TestDashboardRoutesBesideTheAPI(t *testing.T) {
	ta := newDashboardApp(t)
	key := ta.key("alice")
	web := accounts.NewWeb(ta.app.Store, accounts.WebOptions{BcryptCost: bcrypt.MinCost})
	if err := web.SetPassword(context.Background(), "alice", "alice password"); err != nil {
		t.Fatal(err)
	}
	anon := noRedirects(nil)
	get := func(c *http.Client, path string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ta.srv.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// Dashboard pages ask for a sign-in, not for an API key, and an API key
	// does not open them.
	for _, path := range []string{"/sessions", "/evals", "/settings", "/usage"} {
		for _, hdr := range [][]string{nil, {"Authorization", "Bearer " + key}} {
			resp := get(anon, path, hdr...)
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
				t.Errorf("GET %s (%v): %d %s, want a redirect to /login", path, hdr, resp.StatusCode, resp.Header.Get("Location"))
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Errorf("GET %s: no X-Request-Id from the shared middleware", path)
			}
		}
	}
	for path, want := range map[string]int{"/login": 200, "/health": 200, "/static/style.css": 200, "/": 303} {
		if resp := get(anon, path); resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	// A dashboard sign-in does not open the API: it takes keys only.
	c := webSignIn(t, ta.srv.URL, "alice", "alice password")
	if resp := get(c, "/sessions"); resp.StatusCode != http.StatusOK {
		t.Fatalf("signed-in /sessions: %d", resp.StatusCode)
	}
	for _, path := range []string{"/api/sessions", "/api/stats", "/sync/sessions/list"} {
		if resp := get(c, path); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a dashboard cookie: %d, want 401", path, resp.StatusCode)
		}
		if resp := get(c, path, "Authorization", "Bearer "+key); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the key: %d", path, resp.StatusCode)
		}
	}
	// CORS is the API's, not the dashboard's: OPTIONS is a preflight (204)
	// on the API only, and the dashboard's pages carry no CORS headers.
	for path, want := range map[string]int{"/api/sessions": http.StatusNoContent, "/sessions": http.StatusMethodNotAllowed} {
		req, _ := http.NewRequest(http.MethodOptions, ta.srv.URL+path, nil)
		resp, err := anon.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || (resp.Header.Get("Access-Control-Allow-Origin") != "") == (path == "/sessions") {
			t.Errorf("OPTIONS %s: %d, Access-Control-Allow-Origin %q", path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	// A session labelled in the dashboard shows its labels in the API.
	ta.batch(key, map[string]any{"sessions": []any{map[string]any{"externalId": "s1", "title": "labelled"}}})
	var sid string
	ta.app.Store.View(context.Background(), func(tx *kv.Tx) error {
		u, _ := tx.UserByName("alice")
		sid, _ = tx.SessionIDByExternal(u.ID, "s1")
		return nil
	})
	resp, err := c.Get(ta.srv.URL + "/sessions/" + sid)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(body)
	resp, err = c.PostForm(ta.srv.URL+"/sessions/"+sid+"/eval", url.Values{"csrf": {string(m[1])}, "action": {"ready"}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("mark eval-ready: %v %v", resp, err)
	}
	resp.Body.Close()
	code, b := ta.do(http.MethodGet, key, "/api/evals", nil)
	if code != http.StatusOK || !strings.Contains(string(b), `"evalStatus":"needs_review"`) {
		t.Errorf("/api/evals after marking in the dashboard: %d %s", code, b)
	}
}

// lines collects a writer's lines for a test to wait on.
type lines struct {
	w  *io.PipeWriter
	ch chan string
}

func newLines() *lines {
	r, w := io.Pipe()
	l := &lines{w: w, ch: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.ch <- sc.Text()
		}
		close(l.ch)
	}()
	return l
}

func (l *lines) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	timeout := ctx.Done()
	for {
		select {
		case s, ok := <-l.ch:
			if !ok {
				t.Fatalf("output ended before a line matching %s", re)
			}
			if m := re.FindStringSubmatch(s); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line matching %s", re)
		}
	}
}

// serveInProcess runs the serve command until the test ends and returns its
// stdout lines. It serves full-text only (--embedder none): the setup link
// does not depend on the embedder, and the offline model make test's
// HINDSIGHT_MODEL_DIR would load costs seconds of CPU per start under -race.
func serveInProcess(t *testing.T, dir string) *lines {
	t.Helper()
	out := newLines()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir, "--log-level", "error", "--embedder", "none"}, out.w, io.Discard)
		out.w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	return out
}

var (
	listenLine = regexp.MustCompile(`listening on (http://\S+)`)
	setupLine  = regexp.MustCompile(`(http://\S+/setup\?token=(\S+))$`)
)

// serve prints a one-time setup link while no user exists; each start
// replaces the previous link; once a user exists there is none.
func TestDashboardSetupLinkPrinted(t *testing.T) {
	dir := t.TempDir()
	var first string
	t.Run("first start", func(t *testing.T) {
		out := serveInProcess(t, dir)
		base := out.waitFor(t, listenLine)[1]
		link := out.waitFor(t, setupLine)
		if !strings.HasPrefix(link[1], base+"/setup?token=") || len(link[2]) < 40 {
			t.Fatalf("setup link %q (server %s)", link[1], base)
		}
		first = link[2]
		resp, err := http.Get(link[1])
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET setup link: %v %v", resp, err)
		}
		resp.Body.Close()
	})
	t.Run("second start", func(t *testing.T) {
		out := serveInProcess(t, dir)
		base := out.waitFor(t, listenLine)[1]
		link := out.waitFor(t, setupLine)
		if link[2] == first {
			t.Errorf("a restart printed the same token")
		}
		resp, err := http.Get(base + "/setup?token=" + first)
		if err != nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("the previous link still works: %v %v", resp, err)
		}
		resp.Body.Close()
	})
	// A user created on the command line (with a password, from stdin).
	withStdin(t, "alice password\n")
	if _, err := runCmd(t, "users", "create", "alice", "--password-stdin", "--data", dir); err != nil {
		t.Fatal(err)
	}
	t.Run("with a user", func(t *testing.T) {
		out := serveInProcess(t, dir)
		base := out.waitFor(t, listenLine)[1]
		// Serve prints the setup line right after the listening line, or nothing.
		c := webSignIn(t, base, "alice", "alice password")
		select {
		case s := <-out.ch:
			if setupLine.MatchString(s) {
				t.Errorf("setup link printed with a user present: %q", s)
			}
		default:
		}
		resp, err := c.Get(base + "/settings")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("settings: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

// withStdin makes readPassword read s, as if piped to the command, and
// makes passwords cheap to hash.
func withStdin(t *testing.T, s string) {
	oldIn, oldCost := passwordInput, passwordCost
	passwordInput = func() (io.Reader, bool) { return strings.NewReader(s), false }
	passwordCost = bcrypt.MinCost
	t.Cleanup(func() { passwordInput, passwordCost = oldIn, oldCost })
}

func TestDashboardUsersPassword(t *testing.T) {
	dir := t.TempDir()
	// signIn checks a password against the stored hash (no dummy hashing for
	// a user without a password: bcrypt is slow under the race detector).
	signIn := func(name, pw string) error {
		st, err := kv.Open(dir, kv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var u kv.User
		st.View(context.Background(), func(tx *kv.Tx) error {
			u, err = tx.UserByName(name)
			return err
		})
		if err != nil || u.PasswordHash == "" {
			return accounts.ErrBadCredentials
		}
		_, err = accounts.NewWeb(st, accounts.WebOptions{}).SignIn(context.Background(), name, pw)
		return err
	}
	withStdin(t, "first password\r\n")
	out, err := runCmd(t, "users", "create", "alice", "--password-stdin", "--data", dir)
	if err != nil || !strings.Contains(out, "with a dashboard password") {
		t.Fatalf("users create --password-stdin: %q %v", out, err)
	}
	if err := signIn("alice", "first password"); err != nil {
		t.Errorf("sign in with the piped password: %v", err)
	}
	// Bad passwords are refused before the user is created.
	for _, in := range []string{"", "\n", "short\n", strings.Repeat("x", 80) + "\n"} {
		withStdin(t, in)
		if _, err := runCmd(t, "users", "create", "bob", "--password-stdin", "--data", dir); err == nil {
			t.Errorf("users create with password %q succeeded", in)
		}
	}
	if out, _ := runCmd(t, "users", "list", "--data", dir); strings.Contains(out, "bob") {
		t.Errorf("a user was created despite a bad password")
	}
	// Without --password-stdin and without a terminal, no password is asked.
	withStdin(t, "ignored password\n")
	if _, err := runCmd(t, "users", "create", "carol", "--data", dir); err != nil {
		t.Fatal(err)
	}
	if err := signIn("carol", "ignored password"); err == nil {
		t.Errorf("carol got a password she did not ask for")
	}
	// users password sets one later; it needs a password source.
	withStdin(t, "")
	if _, err := runCmd(t, "users", "password", "carol", "--data", dir); err == nil || exitCode(err) != 2 {
		t.Errorf("users password without a source: %v", err)
	}
	withStdin(t, "carol's password\n")
	if _, err := runCmd(t, "users", "password", "carol", "--password-stdin", "--data", dir); err != nil {
		t.Fatal(err)
	}
	if err := signIn("carol", "carol's password"); err != nil {
		t.Errorf("sign in after users password: %v", err)
	}
	withStdin(t, "whatever123\n")
	if _, err := runCmd(t, "users", "password", "nobody", "--password-stdin", "--data", dir); err == nil {
		t.Errorf("users password for a missing user succeeded")
	}
	// While a server holds the file, the command goes through its admin
	// socket (admin_password_test.go covers that path in depth).
	startServe(t, dir)
	withStdin(t, "another password\n")
	if _, err = runCmd(t, "users", "create", "dave", "--password-stdin", "--data", dir); err != nil {
		t.Errorf("users create --password-stdin against a running server: %v", err)
	}
}
