package admin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/kv"
)

// The admin socket's password routes check passwords on the server too, and
// a route the server lacks (an older server) gives a clear message rather than
// a bare status or "not found".
func TestAdminSocketPasswordRoutes(t *testing.T) {
	dir := t.TempDir()
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stop, err := Serve(dir, st, accounts.New(st, nil), bcrypt.MinCost, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	rc := newRemote(filepath.Join(dir, Socket))
	ctx := context.Background()

	if _, err := rc.CreateUserWithPassword(ctx, "alice", "alice's password"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want string
		is   error
	}{
		{"short password", func() error { return rc.SetPassword(ctx, "alice", "short") },
			accounts.ValidPassword("short").Error(), nil},
		{"long password", func() error { return rc.SetPassword(ctx, "alice", strings.Repeat("x", 73)) },
			accounts.ValidPassword(strings.Repeat("x", 73)).Error(), nil},
		{"unknown user", func() error { return rc.SetPassword(ctx, "nobody", "long enough") },
			`user "nobody": not found`, kv.ErrNotFound},
		{"bad user name", func() error { _, err := rc.CreateUserWithPassword(ctx, "bad name!", "long enough"); return err },
			accounts.ValidUserName("bad name!").Error(), nil},
		{"duplicate user", func() error { _, err := rc.CreateUserWithPassword(ctx, "alice", "long enough"); return err },
			`user "alice": already exists`, kv.ErrExists},
		{"short password, new user", func() error { _, err := rc.CreateUserWithPassword(ctx, "bob", "short"); return err },
			accounts.ValidPassword("short").Error(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, not %v", err, tc.is)
			}
		})
	}
	// A malformed body is refused without quoting any of it (a JSON syntax
	// error names the character it stopped at).
	resp, err := rc.c.Post("http://admin/users/password", "application/json",
		strings.NewReader(`{"name":"alice","password":Qwerty-password}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || bytes.Contains(body, []byte("Q")) || bytes.Contains(body, []byte("werty")) {
		t.Errorf("malformed body: %d %s", resp.StatusCode, body)
	}
	web := accounts.NewWeb(st, accounts.WebOptions{BcryptCost: bcrypt.MinCost})
	if _, err := web.SignIn(ctx, "alice", "alice's password"); err != nil {
		t.Errorf("alice's password changed by a refused request: %v", err)
	}
	err = rc.do(ctx, "POST", "/no-such-route", map[string]string{"password": "secret password"}, nil)
	if err == nil || !strings.Contains(err.Error(), "older hindsight") || strings.Contains(err.Error(), "secret password") ||
		errors.Is(err, kv.ErrNotFound) {
		t.Errorf("a route the server lacks: %v", err)
	}
}

// TestAdminSocketPrivateFromTheStart: nobody but the owner can reach the
// admin socket at any moment, even in a data directory others may enter
// and under a umask of 0: when it is bound it is already 0600, or it lies in
// a directory only the owner may enter. It ends up 0600 at its usual path,
// with nothing else left behind.
func TestAdminSocketPrivateFromTheStart(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var bound string
	listen := func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		// What another user could reach now: the socket is private, or some
		// directory between it and the data directory is.
		private := false
		for p := addr; !private && strings.HasPrefix(p, dir); p = filepath.Dir(p) {
			fi, err := os.Stat(p)
			if err != nil {
				t.Errorf("stat %s: %v", p, err)
				break
			}
			private = fi.Mode().Perm()&0o077 == 0
		}
		if !private {
			fi, _ := os.Stat(addr)
			t.Errorf("the admin socket %s is bound with mode %v where other users can reach it", addr, fi.Mode())
		}
		bound = addr
		return ln, nil
	}
	stop, err := serve(dir, st, accounts.New(st, nil), bcrypt.MinCost, nil, zerolog.Nop(), listen)
	if err != nil {
		t.Fatal(err)
	}
	if bound == "" {
		t.Fatal("listen was not called")
	}
	path := filepath.Join(dir, Socket)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket %s: %v %v, want a socket with mode 0600", path, fi.Mode(), err)
	}
	if _, err := newRemote(path).Users(context.Background()); err != nil {
		t.Fatalf("the socket does not answer: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != kv.FileName && e.Name() != Socket {
			t.Errorf("left in the data directory: %s", e.Name())
		}
	}
	stop(context.Background())
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket still there after stop: %v", err)
	}
}
