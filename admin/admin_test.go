package admin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
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
