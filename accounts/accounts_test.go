package accounts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

var ctx = context.Background()

// clock is a settable fake time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func newAccounts(t *testing.T) (*accounts.Accounts, *kv.Store, *clock) {
	st := kvtest.Open(t)
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	return accounts.New(st, c.Now), st, c
}

func mustUser(t *testing.T, a *accounts.Accounts, name string) kv.User {
	t.Helper()
	u, err := a.CreateUser(ctx, name)
	if err != nil {
		t.Fatalf("CreateUser(%q): %v", name, err)
	}
	return u
}

func mustKey(t *testing.T, a *accounts.Accounts, user, label string) (string, kv.APIKey) {
	t.Helper()
	key, rec, err := a.CreateKey(ctx, user, label)
	if err != nil {
		t.Fatalf("CreateKey(%q): %v", user, err)
	}
	return key, rec
}

func TestNewKeyFormat(t *testing.T) {
	seen := map[string]bool{}
	chars := map[rune]bool{}
	for range 2000 {
		k := accounts.NewKey()
		body, ok := strings.CutPrefix(k, accounts.KeyPrefix)
		if !ok || len(body) != 32 {
			t.Fatalf("NewKey() = %q: want osk_ + 32 characters", k)
		}
		for _, c := range body {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				t.Fatalf("NewKey() = %q: character %q outside [A-Za-z0-9]", k, c)
			}
			chars[c] = true
		}
		if seen[k] {
			t.Fatalf("NewKey() repeated %q", k)
		}
		seen[k] = true
	}
	if len(chars) != 62 {
		t.Errorf("2000 keys used %d distinct characters, want all 62", len(chars))
	}
}

func TestHashIsHexSHA256(t *testing.T) {
	const key = "osk_abcdefghijklmnopqrstuvwxyz012345"
	sum := sha256.Sum256([]byte(key))
	if got := accounts.Hash(key); got != hex.EncodeToString(sum[:]) {
		t.Errorf("Hash = %s, want hex SHA-256", got)
	}
}

func TestValidUserName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"ann", true},
		{"ann.lee_2-x@example.com", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"has space", false},
		{"slash/", false},
		{"ünïcode", false},
	}
	for _, tc := range tests {
		if err := accounts.ValidUserName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidUserName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestCreateUser(t *testing.T) {
	a, _, _ := newAccounts(t)
	u := mustUser(t, a, "ann")
	if len(u.ID) != kv.IDLen || u.Name != "ann" {
		t.Errorf("CreateUser = %+v", u)
	}
	if _, err := a.CreateUser(ctx, "ann"); !errors.Is(err, kv.ErrExists) {
		t.Errorf("duplicate name: %v, want ErrExists", err)
	}
	if _, err := a.CreateUser(ctx, "bad name"); err == nil {
		t.Errorf("invalid name accepted")
	}
	got, err := a.User(ctx, "ann")
	if err != nil || got.ID != u.ID {
		t.Errorf("User(ann) = %+v, %v", got, err)
	}
	us, err := a.Users(ctx)
	if err != nil || len(us) != 1 {
		t.Errorf("Users() = %+v, %v", us, err)
	}
}

// TestKeysStoredOnlyAsHash: neither the key nor its secret part appears
// anywhere in the data file; the record holds the SHA-256 and a short prefix.
func TestKeysStoredOnlyAsHash(t *testing.T) {
	a, st, _ := newAccounts(t)
	u := mustUser(t, a, "ann")
	key, rec := mustKey(t, a, "ann", "laptop")
	if rec.Hash != accounts.Hash(key) || rec.UserID != u.ID || rec.Label != "laptop" || rec.Revoked != 0 {
		t.Errorf("record = %+v", rec)
	}
	if !strings.HasPrefix(key, rec.Prefix) || len(rec.Prefix) != len(accounts.KeyPrefix)+6 {
		t.Errorf("prefix %q of key %q: want osk_ + 6 characters of the key", rec.Prefix, key)
	}
	// Use the key so a last-used time is written too.
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	secret := key[len(rec.Prefix):] // the 26 characters never shown again
	raw, err := os.ReadFile(st.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{key, secret} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the data file contains %q", s)
		}
	}
	if !bytes.Contains(raw, []byte(accounts.Hash(key))) {
		t.Errorf("the data file does not contain the key's hash; is the file read correctly?")
	}
	// And through the API: every stored record, serialised.
	err = st.View(ctx, func(tx *kv.Tx) error {
		ks, err := tx.Keys("")
		if err != nil {
			return err
		}
		b, _ := json.Marshal(ks)
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("a key record contains the key: %s", b)
		}
		if len(ks) != 1 || ks[0].LastUsed == 0 {
			t.Errorf("records = %s, want one with lastUsed set after Flush", b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCreateKeyErrors(t *testing.T) {
	a, _, _ := newAccounts(t)
	if _, _, err := a.CreateKey(ctx, "nobody", ""); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("CreateKey for an unknown user: %v, want ErrNotFound", err)
	}
	mustUser(t, a, "ann")
	if _, _, err := a.CreateKey(ctx, "ann", strings.Repeat("l", 201)); err == nil {
		t.Errorf("a 201-character label was accepted")
	}
	u, _ := a.User(ctx, "ann")
	key, rec, err := a.CreateKeyForUser(ctx, u.ID, "by id")
	if err != nil || rec.UserID != u.ID || !strings.HasPrefix(key, "osk_") {
		t.Errorf("CreateKeyForUser = %q %+v %v", key, rec, err)
	}
}

func TestAuthenticate(t *testing.T) {
	a, _, _ := newAccounts(t)
	ann := mustUser(t, a, "ann")
	key, _ := mustKey(t, a, "ann", "")
	tests := []struct {
		name string
		key  string
		want string // user id; "" = ErrUnauthorized
	}{
		{"valid", key, ann.ID},
		{"valid again (cached)", key, ann.ID},
		{"empty", "", ""},
		{"no prefix", key[4:], ""},
		{"wrong prefix", "osx_" + key[4:], ""},
		{"too short", key[:len(key)-1], ""},
		{"too long", key + "a", ""},
		{"bad character", key[:len(key)-1] + "-", ""},
		{"surrounding space", " " + key, ""},
		{"well-formed but unknown", "osk_" + strings.Repeat("A", 32), ""},
		{"other case", strings.ToUpper(key[:4]) + key[4:], ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := a.Authenticate(ctx, tc.key)
			if tc.want == "" {
				if err != accounts.ErrUnauthorized || got != "" {
					t.Errorf("Authenticate(%q) = %q, %v; want ErrUnauthorized", tc.key, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Authenticate = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	a, _, c := newAccounts(t)
	ann := mustUser(t, a, "ann")
	bob := mustUser(t, a, "bob")
	k1, r1 := mustKey(t, a, "ann", "one")
	k2, _ := mustKey(t, a, "ann", "two")
	kb, rb := mustKey(t, a, "bob", "")
	for _, k := range []string{k1, k2, kb} {
		if _, err := a.Authenticate(ctx, k); err != nil { // now cached
			t.Fatal(err)
		}
	}
	if _, err := a.Revoke(ctx, ann.ID, "osk_"); err == nil {
		t.Errorf("a too-short prefix was accepted")
	}
	if _, err := a.Revoke(ctx, ann.ID, rb.Prefix); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("revoking bob's key as ann: %v, want ErrNotFound", err)
	}
	c.Set(c.Now().Add(time.Hour))
	rec, err := a.Revoke(ctx, ann.ID, r1.Prefix)
	if err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	if rec.Hash != r1.Hash || rec.Revoked != c.Now().UnixMilli() {
		t.Errorf("revoked record = %+v", rec)
	}
	if _, err := a.Authenticate(ctx, k1); err != accounts.ErrUnauthorized {
		t.Errorf("revoked (and previously cached) key: %v, want ErrUnauthorized", err)
	}
	if _, err := a.Revoke(ctx, ann.ID, r1.Prefix); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("revoking twice: %v, want ErrNotFound (no active key)", err)
	}
	// The other keys keep working; the full key also works as a "prefix".
	if id, err := a.Authenticate(ctx, k2); err != nil || id != ann.ID {
		t.Errorf("ann's other key: %q %v", id, err)
	}
	if _, err := a.Revoke(ctx, "", kb); err != nil {
		t.Errorf("revoke by full key: %v", err)
	}
	if _, err := a.Authenticate(ctx, kb); err != accounts.ErrUnauthorized {
		t.Errorf("bob's revoked key: %v", err)
	}
	// Flushing last-used times must not resurrect a revoked key.
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, k1); err != accounts.ErrUnauthorized {
		t.Errorf("revoked key after Flush: %v", err)
	}
	ks, err := a.Keys(ctx, bob.ID)
	if err != nil || len(ks) != 1 || ks[0].Revoked == 0 {
		t.Errorf("bob's keys = %+v, %v", ks, err)
	}
}

func TestRevokeAmbiguousPrefixRevokesNothing(t *testing.T) {
	a, _, _ := newAccounts(t)
	ann := mustUser(t, a, "ann")
	// Issue keys until two share the shortest accepted prefix (osk_ + 2
	// characters, 3844 values: a collision comes after about 80 keys).
	byPrefix := map[string]string{}
	var shared string
	var keys []string
	for i := 0; shared == "" && i < 1000; i++ {
		k, _ := mustKey(t, a, "ann", "")
		keys = append(keys, k)
		p := k[:len(accounts.KeyPrefix)+2]
		if _, dup := byPrefix[p]; dup {
			shared = p
		}
		byPrefix[p] = k
	}
	if shared == "" {
		t.Fatal("1000 keys without two sharing a 2-character prefix: keys are not random")
	}
	_, err := a.Revoke(ctx, ann.ID, shared)
	if err == nil || !strings.Contains(err.Error(), "give a longer prefix") || !errors.Is(err, accounts.ErrBadPrefix) {
		t.Fatalf("ambiguous prefix %q: %v, want ErrBadPrefix asking for a longer prefix", shared, err)
	}
	if _, err := a.Revoke(ctx, ann.ID, "osk_"); !errors.Is(err, accounts.ErrBadPrefix) {
		t.Errorf("a prefix too short to name a key: %v, want ErrBadPrefix", err)
	}
	for _, k := range keys {
		if _, err := a.Authenticate(ctx, k); err != nil {
			t.Fatalf("key %s stopped working after a failed revoke: %v", k[:8], err)
		}
	}
}

func TestFlushRecordsLastUsed(t *testing.T) {
	a, st, c := newAccounts(t)
	ann := mustUser(t, a, "ann")
	key, _ := mustKey(t, a, "ann", "")
	if err := a.Flush(ctx); err != nil { // nothing pending
		t.Fatal(err)
	}
	c.Set(c.Now().Add(time.Minute))
	used := c.Now().UnixMilli()
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Fatal(err)
	}
	// Before Flush, Keys reports the in-memory time.
	ks, _ := a.Keys(ctx, ann.ID)
	if len(ks) != 1 || ks[0].LastUsed != used {
		t.Fatalf("Keys before Flush: %+v, want lastUsed %d", ks, used)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// A fresh Accounts (a restart) reads it from the store.
	fresh := accounts.New(st, nil)
	ks, _ = fresh.Keys(ctx, ann.ID)
	if len(ks) != 1 || ks[0].LastUsed != used {
		t.Fatalf("Keys after Flush and restart: %+v, want lastUsed %d", ks, used)
	}
}

// TestRevokeWhileKeyInUse revokes a key while other requests are
// authenticating with it. Once Revoke has returned, the key must stop
// working: an Authenticate that read the cache before the revocation must
// not put the key back.
func TestRevokeWhileKeyInUse(t *testing.T) {
	a, _, _ := newAccounts(t)
	ann := mustUser(t, a, "ann")
	for trial := range 30 {
		key, rec := mustKey(t, a, "ann", "")
		if _, err := a.Authenticate(ctx, key); err != nil { // cached
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
						_, _ = a.Authenticate(ctx, key)
					}
				}
			}()
		}
		time.Sleep(time.Millisecond)
		if _, err := a.Revoke(ctx, ann.ID, rec.Prefix); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		if id, err := a.Authenticate(ctx, key); err != accounts.ErrUnauthorized {
			t.Fatalf("trial %d: the key revoked while in use still authenticates (user %q, err %v): a concurrent Authenticate re-cached it", trial, id, err)
		}
	}
}
