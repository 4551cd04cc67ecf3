package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/kv"
)

// syncBuffer is a bytes.Buffer safe to write from a server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loggedServe is `hindsight serve` run in-process with every log line (debug
// level) kept, so a test can check what the server wrote. It serves
// full-text only (--embedder none): passwords do not depend on the embedder,
// and the offline model make test's HINDSIGHT_MODEL_DIR would load costs
// seconds of CPU per start (a test restarts it for every command) under -race.
type loggedServe struct {
	base string
	logs *syncBuffer
	stop func() // stops the server and waits for it; later calls do nothing
}

func startLoggedServe(t *testing.T, dir string, logs *syncBuffer) *loggedServe {
	t.Helper()
	out := newLines()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir, "--log-level", "debug", "--log-format", "json", "--embedder", "none"}, out.w, logs)
		out.w.Close()
	}()
	var once sync.Once
	s := &loggedServe{logs: logs, stop: func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("serve: %v", err)
			}
			for range out.ch { // let the line reader finish
			}
		})
	}}
	t.Cleanup(s.stop)
	s.base = out.waitFor(t, listenLine)[1]
	// Drain the rest of stdout so serve never blocks on the pipe.
	go func() {
		for range out.ch {
		}
	}()
	return s
}

// signInStatus posts the dashboard's sign-in form and returns the status and
// a client holding the session cookie (if one was set).
func signInStatus(t *testing.T, base, name, password string) (int, *http.Client) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := noRedirects(jar)
	resp, err := c.Get(base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field on /login:\n%s", body)
	}
	resp, err = c.PostForm(base+"/login", url.Values{"csrf": {string(m[1])}, "name": {name}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther && resp.Header.Get("Location") != "/sessions" {
		t.Fatalf("sign in redirected to %q", resp.Header.Get("Location"))
	}
	return resp.StatusCode, c
}

// settingsStatus is the status of GET /settings: 200 signed in, 303 (to
// /login) signed out.
func settingsStatus(t *testing.T, c *http.Client, base string) int {
	t.Helper()
	resp, err := c.Get(base + "/settings")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusSeeOther && !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("GET /settings redirected to %q", resp.Header.Get("Location"))
	}
	return resp.StatusCode
}

// `users create --password-stdin` and `users password` work the same with the
// server stopped (on the data file) and while it runs (through its admin
// socket): the dashboard takes the new password, refuses the old one, the
// user's signed-in browsers are signed out, and errors read the same. The
// password never reaches the server's log or the command's output.
func TestUsersPasswordCommands(t *testing.T) {
	oldIn, oldCost := passwordInput, passwordCost
	passwordCost = bcrypt.MinCost // before any server starts: its admin socket reads it then
	t.Cleanup(func() { passwordInput, passwordCost = oldIn, oldCost })

	const (
		first  = "alice's first password"
		second = "alice's second password"
		bobPW  = "bob's own password"
	)
	secrets := []string{first, second, bobPW, "whatever password", "short"}

	for _, mode := range []string{"server running", "server stopped"} {
		t.Run(mode, func(t *testing.T) {
			running := mode == "server running"
			dir := t.TempDir()
			logs := &syncBuffer{}
			srv := startLoggedServe(t, dir, logs)

			// users runs a users command with stdin holding in. With the
			// server stopped, it stops the server first and starts it again
			// on the same directory afterwards.
			users := func(in string, args ...string) (string, error) {
				t.Helper()
				passwordInput = func() (io.Reader, bool) { return strings.NewReader(in), false }
				if !running {
					srv.stop()
				}
				var stdout, stderr bytes.Buffer
				ctx, cancel := untilDeadline(t)
				defer cancel()
				err := run(ctx, append(append([]string{"users"}, args...), "--data", dir), &stdout, &stderr)
				for _, s := range secrets {
					msg := ""
					if err != nil {
						msg = err.Error()
					}
					if strings.Contains(stdout.String()+stderr.String()+msg, s) {
						t.Errorf("hindsight users %q wrote the password %q: stdout %q stderr %q err %v", args, s, stdout.String(), stderr.String(), err)
					}
				}
				if !running {
					srv = startLoggedServe(t, dir, logs)
				}
				return stdout.String(), err
			}

			out, err := users(first+"\n", "create", "alice", "--password-stdin")
			if err != nil || !strings.HasPrefix(out, "created user alice (id ") || !strings.Contains(out, ") with a dashboard password\nnext: hindsight keys create --user alice") {
				t.Fatalf("users create --password-stdin: %q, %v", out, err)
			}
			status, alice1 := signInStatus(t, srv.base, "alice", first)
			if status != http.StatusSeeOther {
				t.Fatalf("sign in with the password from users create: status %d", status)
			}
			if code := settingsStatus(t, alice1, srv.base); code != http.StatusOK {
				t.Fatalf("settings after sign-in: status %d", code)
			}

			// Refusals: nothing is changed, and the message is the one the
			// accounts and kv packages give.
			for _, tc := range []struct {
				name    string
				stdin   string
				args    []string
				want    string // the whole error message
				wantErr error
			}{
				{"unknown user", "whatever password\n", []string{"password", "nobody", "--password-stdin"},
					`set password: user "nobody": not found`, kv.ErrNotFound},
				{"existing user", "whatever password\n", []string{"create", "alice", "--password-stdin"},
					`create user: user "alice": already exists`, kv.ErrExists},
				{"short password", "short\n", []string{"password", "alice", "--password-stdin"},
					accounts.ValidPassword("short").Error(), nil},
				{"short password, new user", "short\n", []string{"create", "bob", "--password-stdin"},
					accounts.ValidPassword("short").Error(), nil},
				{"empty stdin", "", []string{"password", "alice", "--password-stdin"},
					"--password-stdin: stdin held no password", nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					out, err := users(tc.stdin, tc.args...)
					if err == nil || err.Error() != tc.want {
						t.Fatalf("users %q: err = %v, want %q", tc.args, err, tc.want)
					}
					if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
						t.Errorf("users %q: err = %v, not %v", tc.args, err, tc.wantErr)
					}
					if out != "" {
						t.Errorf("users %q printed %q", tc.args, out)
					}
				})
			}
			if out, err := users("", "list"); err != nil || strings.Contains(out, "bob") || strings.Contains(out, "nobody") {
				t.Errorf("after refused commands, users list = %q, %v", out, err)
			}
			// The refusals signed no one out (and, with the server stopped,
			// the cookie outlives a restart, so the check below means something).
			if code := settingsStatus(t, alice1, srv.base); code != http.StatusOK {
				t.Fatalf("alice signed out by a refused command: status %d", code)
			}

			out, err = users(second+"\n", "password", "alice", "--password-stdin")
			if want := "set the dashboard password of alice (its dashboard sessions were signed out)\n"; err != nil || out != want {
				t.Fatalf("users password: %q, %v; want %q", out, err, want)
			}
			if code := settingsStatus(t, alice1, srv.base); code != http.StatusSeeOther {
				t.Errorf("a session from before users password still works: status %d", code)
			}
			if status, _ := signInStatus(t, srv.base, "alice", first); status != http.StatusUnauthorized {
				t.Errorf("sign in with the old password: status %d, want 401", status)
			}
			status, alice2 := signInStatus(t, srv.base, "alice", second)
			if status != http.StatusSeeOther || settingsStatus(t, alice2, srv.base) != http.StatusOK {
				t.Errorf("sign in with the new password: status %d", status)
			}

			// A second user with a password, and users password on a user
			// made without one.
			if _, err := users(bobPW+"\n", "create", "bob", "--password-stdin"); err != nil {
				t.Fatal(err)
			}
			if _, err := users("", "create", "carol"); err != nil {
				t.Fatal(err)
			}
			if _, err := users("carol's password\n", "password", "carol", "--password-stdin"); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ name, pw string }{{"bob", bobPW}, {"carol", "carol's password"}} {
				if status, _ := signInStatus(t, srv.base, c.name, c.pw); status != http.StatusSeeOther {
					t.Errorf("sign in as %s: status %d", c.name, status)
				}
			}
			// Changing alice's password did not sign bob out, and the one
			// after it did not sign alice out again.
			if code := settingsStatus(t, alice2, srv.base); code != http.StatusOK {
				t.Errorf("alice's new session after other users' changes: status %d", code)
			}

			srv.stop()
			for _, s := range append(secrets, "carol's password") {
				if strings.Contains(logs.String(), s) {
					t.Errorf("the server logged the password %q:\n%s", s, logs.String())
				}
			}
			if !strings.Contains(logs.String(), "hindsight serving") {
				t.Errorf("no server log captured, so the check above proves nothing:\n%s", logs.String())
			}
		})
	}
}
