package accounts

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newWeb(t *testing.T) (*Web, *kv.Store, *fakeClock) {
	st := kvtest.Open(t)
	c := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	return NewWeb(st, WebOptions{BcryptCost: bcrypt.MinCost, SessionTTL: time.Hour, Now: c.now}), st, c
}

func TestValidPassword(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr string
	}{
		{"", "at least 8"},
		{"short", "at least 8"},
		{"12345678", ""},
		{strings.Repeat("x", 72), ""},
		{strings.Repeat("x", 73), "at most 72"},
		{"abcdefg\xff", "UTF-8"},
	} {
		err := ValidPassword(tc.in)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("ValidPassword(%q) = %v, want error containing %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestSignIn(t *testing.T) {
	ctx := context.Background()
	w, st, _ := newWeb(t)
	if _, err := w.CreateUserWithPassword(ctx, "alice", "correct horse"); err != nil {
		t.Fatal(err)
	}
	if _, err := New(st, nil).CreateUser(ctx, "keyonly"); err != nil {
		t.Fatal(err)
	}
	u, err := w.SignIn(ctx, "alice", "correct horse")
	if err != nil || u.Name != "alice" {
		t.Fatalf("SignIn: %v %+v", err, u)
	}
	if !strings.HasPrefix(u.PasswordHash, "$2") || strings.Contains(u.PasswordHash, "horse") {
		t.Errorf("stored password is not a bcrypt hash: %q", u.PasswordHash)
	}
	for _, tc := range []struct{ name, pw string }{
		{"alice", "wrong horse"}, {"alice", ""}, {"bob", "correct horse"},
		{"keyonly", ""}, {"keyonly", "anything at all"}, {"alice", strings.Repeat("x", 100)},
	} {
		if _, err := w.SignIn(ctx, tc.name, tc.pw); !errors.Is(err, ErrBadCredentials) {
			t.Errorf("SignIn(%q, %q) = %v, want ErrBadCredentials", tc.name, tc.pw, err)
		}
	}
	if err := w.SetPassword(ctx, "keyonly", "now it has one"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.SignIn(ctx, "keyonly", "now it has one"); err != nil {
		t.Errorf("after SetPassword: %v", err)
	}
	if err := w.SetPassword(ctx, "nobody", "whatever123"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("SetPassword for a missing user: %v", err)
	}
	if err := w.SetPassword(ctx, "alice", "short"); err == nil {
		t.Errorf("a short password was accepted")
	}
	if _, err := w.CreateUserWithPassword(ctx, "alice", "another password"); !errors.Is(err, kv.ErrExists) {
		t.Errorf("duplicate user: %v", err)
	}
}

func TestWebSessions(t *testing.T) {
	ctx := context.Background()
	w, st, clock := newWeb(t)
	u, err := w.CreateUserWithPassword(ctx, "alice", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	tok1, s1, err := w.StartSession(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	tok2, s2, err := w.StartSession(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tok1 == tok2 || s1.CSRF == s2.CSRF || len(tok1) < 40 || len(s1.CSRF) < 40 {
		t.Fatalf("tokens must be fresh and long: %q %q", tok1, tok2)
	}
	got, err := w.Session(ctx, tok1)
	if err != nil || got.UserID != u.ID || got.CSRF != s1.CSRF {
		t.Fatalf("Session: %v %+v", err, got)
	}
	// Only the hash is stored.
	st.View(ctx, func(tx *kv.Tx) error {
		if _, err := tx.WebSession(tok1); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("session stored under the raw token")
		}
		return nil
	})
	for _, bad := range []string{"", "nope", tok1 + "x", strings.Repeat("a", 200)} {
		if _, err := w.Session(ctx, bad); !errors.Is(err, ErrNoSession) {
			t.Errorf("Session(%q) = %v", bad, err)
		}
	}
	if err := w.EndSession(ctx, tok1); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Session(ctx, tok1); !errors.Is(err, ErrNoSession) {
		t.Errorf("ended session still valid: %v", err)
	}
	if _, err := w.Session(ctx, tok2); err != nil {
		t.Errorf("ending one session ended another: %v", err)
	}
	clock.add(time.Hour)
	if _, err := w.Session(ctx, tok2); !errors.Is(err, ErrNoSession) {
		t.Errorf("expired session still valid: %v", err)
	}
	// A password change signs every browser out.
	tok3, _, _ := w.StartSession(ctx, u.ID)
	if err := w.SetPassword(ctx, "alice", "battery staple"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Session(ctx, tok3); !errors.Is(err, ErrNoSession) {
		t.Errorf("session survived a password change: %v", err)
	}
	if _, _, err := w.StartSession(ctx, "nosuchuser000000"); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("session for a missing user: %v", err)
	}
	// Expired sessions are swept when a new one starts.
	if _, _, err := w.StartSession(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	st.View(ctx, func(tx *kv.Tx) error {
		if _, err := tx.WebSession(Hash(tok2)); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("expired session not swept: %v", err)
		}
		return nil
	})
}

func TestSetupToken(t *testing.T) {
	ctx := context.Background()
	w, st, _ := newWeb(t)
	tok, err := w.SetupToken(ctx)
	if err != nil || tok == "" {
		t.Fatalf("SetupToken with no users: %q %v", tok, err)
	}
	// A newer token replaces the older one.
	tok2, _ := w.SetupToken(ctx)
	if tok2 == tok || w.SetupPending(ctx, tok) || !w.SetupPending(ctx, tok2) {
		t.Fatalf("the newest setup token must be the only valid one")
	}
	if _, err := w.CompleteSetup(ctx, tok, "alice", "correct horse"); !errors.Is(err, ErrSetupUsed) {
		t.Errorf("stale token accepted: %v", err)
	}
	if _, err := w.CompleteSetup(ctx, tok2, "alice", "short"); err == nil || errors.Is(err, ErrSetupUsed) {
		t.Errorf("short password: %v", err)
	}
	if _, err := w.CompleteSetup(ctx, tok2, "bad name!", "correct horse"); err == nil {
		t.Errorf("bad user name accepted")
	}
	u, err := w.CompleteSetup(ctx, tok2, "alice", "correct horse")
	if err != nil || u.Name != "alice" {
		t.Fatalf("CompleteSetup: %v", err)
	}
	if _, err := w.SignIn(ctx, "alice", "correct horse"); err != nil {
		t.Errorf("sign in after setup: %v", err)
	}
	if _, err := w.CompleteSetup(ctx, tok2, "mallory", "correct horse"); !errors.Is(err, ErrSetupUsed) {
		t.Errorf("setup token worked twice: %v", err)
	}
	if w.SetupPending(ctx, tok2) {
		t.Errorf("used token still pending")
	}
	if tok, err := w.SetupToken(ctx); tok != "" || err != nil {
		t.Errorf("SetupToken with a user: %q %v", tok, err)
	}
	// A token left over from before a user was created some other way is removed.
	st.Commit(ctx, func(tx *kv.Tx) error { return tx.SetSetupTokenHash("stale") })
	w.SetupToken(ctx)
	st.View(ctx, func(tx *kv.Tx) error {
		if tx.SetupTokenHash() != "" {
			t.Errorf("stale setup token kept")
		}
		return nil
	})
}
