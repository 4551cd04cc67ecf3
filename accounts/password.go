package accounts

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/kv"
)

// Password limits. bcrypt reads at most 72 bytes; a longer password would be
// silently cut, so it is refused instead.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 72
)

// Errors of dashboard sign-in.
var (
	// ErrBadCredentials: unknown user, no password set, or wrong password.
	// Sign-in never says which.
	ErrBadCredentials = errors.New("wrong user name or password")
	// ErrNoSession: the web session token is unknown or expired.
	ErrNoSession = errors.New("not signed in")
	// ErrSetupUsed: the setup token is wrong, was used, or an account exists.
	ErrSetupUsed = errors.New("this setup link is not valid: it was already used, or the server printed a newer one")
)

// WebOptions configure dashboard sign-in. Zero values take the defaults.
type WebOptions struct {
	// BcryptCost is the bcrypt work factor; 0 means bcrypt.DefaultCost.
	// Tests use bcrypt.MinCost.
	BcryptCost int
	// SessionTTL is how long a sign-in lasts; 0 means 14 days.
	SessionTTL time.Duration
	Now        func() time.Time
}

// Web is dashboard sign-in: bcrypt passwords, server-side web sessions kept
// in kv (only the SHA-256 of a session token is stored), and the one-time
// first-run setup token. It is safe for concurrent use.
type Web struct {
	store *kv.Store
	opts  WebOptions
	// dummy is a hash compared against when the user does not exist, so a
	// sign-in takes as long for an unknown name as for a wrong password.
	// Made on first use: hashing costs as much as a sign-in.
	dummyOnce sync.Once
	dummy     []byte
}

// NewWeb returns a Web over store.
func NewWeb(store *kv.Store, opts WebOptions) *Web {
	opts.BcryptCost = cmp.Or(opts.BcryptCost, bcrypt.DefaultCost)
	opts.SessionTTL = cmp.Or(opts.SessionTTL, 14*24*time.Hour)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Web{store: store, opts: opts}
}

func (w *Web) dummyHash() []byte {
	w.dummyOnce.Do(func() {
		w.dummy, _ = bcrypt.GenerateFromPassword([]byte("hindsight-no-such-user"), w.opts.BcryptCost)
	})
	return w.dummy
}

// ValidPassword reports whether p is acceptable: 8 to 72 bytes of UTF-8.
func ValidPassword(p string) error {
	switch {
	case len(p) < MinPasswordLen:
		return fmt.Errorf("the password must be at least %d characters", MinPasswordLen)
	case len(p) > MaxPasswordLen:
		return fmt.Errorf("the password must be at most %d bytes (bcrypt ignores the rest)", MaxPasswordLen)
	case !utf8.ValidString(p):
		return fmt.Errorf("the password is not valid UTF-8")
	}
	return nil
}

func (w *Web) hash(password string) (string, error) {
	if err := ValidPassword(password); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), w.opts.BcryptCost)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// SetPassword sets the password of the user named userName and ends every
// dashboard session that user has, so a changed password signs out other
// browsers.
func (w *Web) SetPassword(ctx context.Context, userName, password string) error {
	h, err := w.hash(password)
	if err != nil {
		return err
	}
	return w.store.Commit(ctx, func(tx *kv.Tx) error {
		u, err := tx.UserByName(userName)
		if err != nil {
			return err
		}
		u.PasswordHash = h
		if err := tx.PutUser(u); err != nil {
			return err
		}
		_, err = tx.DeleteWebSessions(func(s kv.WebSession) bool { return s.UserID == u.ID })
		return err
	})
}

// CreateUserWithPassword adds a user with a password in one transaction.
func (w *Web) CreateUserWithPassword(ctx context.Context, name, password string) (kv.User, error) {
	if err := ValidUserName(name); err != nil {
		return kv.User{}, err
	}
	h, err := w.hash(password)
	if err != nil {
		return kv.User{}, err
	}
	var u kv.User
	err = w.store.Commit(ctx, func(tx *kv.Tx) error {
		var err error
		if u, err = tx.CreateUser(name, w.opts.Now().UnixMilli()); err != nil {
			return err
		}
		u.PasswordHash = h
		return tx.PutUser(u)
	})
	return u, err
}

// SignIn checks a user name and password. Every failure is
// ErrBadCredentials, and takes about as long whether or not the user exists.
func (w *Web) SignIn(ctx context.Context, name, password string) (kv.User, error) {
	var u kv.User
	err := w.store.View(ctx, func(tx *kv.Tx) error {
		var err error
		u, err = tx.UserByName(name)
		return err
	})
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return kv.User{}, err
	}
	if err != nil || u.PasswordHash == "" || len(password) > MaxPasswordLen {
		_ = bcrypt.CompareHashAndPassword(w.dummyHash(), []byte(password))
		return kv.User{}, ErrBadCredentials
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return kv.User{}, ErrBadCredentials
	}
	return u, nil
}

// RandomToken returns 32 bytes from crypto/rand, base64url without padding.
func RandomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("accounts: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// StartSession signs userID in: it returns a new random session token (for
// the cookie) and the stored session with its CSRF token. Every call makes a
// new token, so a token planted before sign-in is never the one after it.
// Expired sessions are swept on the way.
func (w *Web) StartSession(ctx context.Context, userID string) (string, kv.WebSession, error) {
	token := RandomToken()
	now := w.opts.Now()
	s := kv.WebSession{UserID: userID, CSRF: RandomToken(), CreatedAt: now.UnixMilli(),
		ExpiresAt: now.Add(w.opts.SessionTTL).UnixMilli()}
	err := w.store.Commit(ctx, func(tx *kv.Tx) error {
		if _, err := tx.User(userID); err != nil {
			return err
		}
		if _, err := tx.DeleteWebSessions(func(o kv.WebSession) bool { return o.ExpiresAt <= now.UnixMilli() }); err != nil {
			return err
		}
		return tx.PutWebSession(Hash(token), s)
	})
	if err != nil {
		return "", kv.WebSession{}, fmt.Errorf("start web session: %w", err)
	}
	return token, s, nil
}

// Session returns the live session of token, or ErrNoSession.
func (w *Web) Session(ctx context.Context, token string) (kv.WebSession, error) {
	if token == "" || len(token) > 100 {
		return kv.WebSession{}, ErrNoSession
	}
	var s kv.WebSession
	err := w.store.View(ctx, func(tx *kv.Tx) error {
		var err error
		s, err = tx.WebSession(Hash(token))
		return err
	})
	if errors.Is(err, kv.ErrNotFound) || err == nil && s.ExpiresAt <= w.opts.Now().UnixMilli() {
		return kv.WebSession{}, ErrNoSession
	}
	return s, err
}

// EndSession signs a session out; an unknown token is no error.
func (w *Web) EndSession(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	return w.store.Commit(ctx, func(tx *kv.Tx) error { return tx.DeleteWebSession(Hash(token)) })
}

// SetupToken prepares first-run setup. While no user exists it issues a new
// one-time token (replacing any earlier one, whose link stops working) and
// returns it; the token stays valid until CompleteSetup uses it. Once a user
// exists it removes any stale token and returns "".
func (w *Web) SetupToken(ctx context.Context) (string, error) {
	token := RandomToken()
	issued := false
	err := w.store.Commit(ctx, func(tx *kv.Tx) error {
		issued = false
		if tx.HasUsers() {
			if tx.SetupTokenHash() != "" {
				return tx.SetSetupTokenHash("")
			}
			return nil
		}
		issued = true
		return tx.SetSetupTokenHash(Hash(token))
	})
	if err != nil || !issued {
		return "", err
	}
	return token, nil
}

// SetupPending reports whether token is the pending setup token.
func (w *Web) SetupPending(ctx context.Context, token string) bool {
	ok := false
	_ = w.store.View(ctx, func(tx *kv.Tx) error {
		ok = setupMatches(tx, token)
		return nil
	})
	return ok
}

func setupMatches(tx *kv.Tx, token string) bool {
	want := tx.SetupTokenHash()
	return token != "" && want != "" && !tx.HasUsers() &&
		subtle.ConstantTimeCompare([]byte(want), []byte(Hash(token))) == 1
}

// CompleteSetup uses the setup token to create the first account, with a
// password, and removes the token in the same transaction: a token works
// once. ErrSetupUsed when the token does not match or a user already exists.
func (w *Web) CompleteSetup(ctx context.Context, token, name, password string) (kv.User, error) {
	if err := ValidUserName(name); err != nil {
		return kv.User{}, err
	}
	h, err := w.hash(password)
	if err != nil {
		return kv.User{}, err
	}
	var u kv.User
	err = w.store.Commit(ctx, func(tx *kv.Tx) error {
		if !setupMatches(tx, token) {
			return ErrSetupUsed
		}
		var err error
		if u, err = tx.CreateUser(name, w.opts.Now().UnixMilli()); err != nil {
			return err
		}
		u.PasswordHash = h
		if err := tx.PutUser(u); err != nil {
			return err
		}
		return tx.SetSetupTokenHash("")
	})
	return u, err
}
