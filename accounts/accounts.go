// Package accounts manages users and API keys: creating and revoking keys,
// and authenticating a presented key. Keys are stored only as SHA-256 hashes;
// the key itself is shown once, at creation.
package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// KeyPrefix starts every API key.
const KeyPrefix = "osk_"

const keyBody = 32 // characters after the prefix

// shownPrefix is how much of a key listings show (osk_ + 6 characters): enough
// to tell keys apart, far too little to guess the rest (26 unknown characters).
const shownPrefix = len(KeyPrefix) + 6

// ErrUnauthorized: the key is missing, malformed, unknown or revoked.
var ErrUnauthorized = errors.New("invalid API key")

// ErrBadPrefix: a prefix given to Revoke names no single key (too short,
// or shared by several active keys); the caller must give a longer one.
var ErrBadPrefix = errors.New("give the key prefix shown in the key list")

// Accounts is safe for concurrent use.
type Accounts struct {
	store *kv.Store
	now   func() time.Time

	mu       sync.Mutex
	cache    map[string]kv.APIKey // hash -> key, only active keys
	lastUsed map[string]int64     // hash -> ms, not yet written
	// gen counts revocations: a lookup that raced with one must not put the
	// key it read before the revocation back into the cache.
	gen uint64
}

// New returns an Accounts over store. now may be nil.
func New(store *kv.Store, now func() time.Time) *Accounts {
	if now == nil {
		now = time.Now
	}
	return &Accounts{store: store, now: now, cache: map[string]kv.APIKey{}, lastUsed: map[string]int64{}}
}

// ValidUserName reports whether name can name a user: 1 to 64 characters of
// letters, digits, '.', '_', '-' and '@'.
func ValidUserName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("user name must be 1 to 64 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@", r)) {
			return fmt.Errorf("user name %q: use letters, digits, '.', '_', '-' or '@'", name)
		}
	}
	return nil
}

// CreateUser adds a user; kv.ErrExists when the name is taken.
func (a *Accounts) CreateUser(ctx context.Context, name string) (kv.User, error) {
	if err := ValidUserName(name); err != nil {
		return kv.User{}, err
	}
	var u kv.User
	err := a.store.Commit(ctx, func(tx *kv.Tx) error {
		var err error
		u, err = tx.CreateUser(name, a.now().UnixMilli())
		return err
	})
	return u, err
}

// Users lists all users.
func (a *Accounts) Users(ctx context.Context) ([]kv.User, error) {
	var us []kv.User
	err := a.store.View(ctx, func(tx *kv.Tx) error {
		var err error
		us, err = tx.Users()
		return err
	})
	return us, err
}

// User returns a user by name.
func (a *Accounts) User(ctx context.Context, name string) (kv.User, error) {
	var u kv.User
	err := a.store.View(ctx, func(tx *kv.Tx) error {
		var err error
		u, err = tx.UserByName(name)
		return err
	})
	return u, err
}

// NewKey returns a fresh key: osk_ + 32 characters of [A-Za-z0-9] from crypto/rand.
func NewKey() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 0, keyBody)
	var buf [64]byte
	for len(b) < keyBody {
		if _, err := rand.Read(buf[:]); err != nil {
			panic("accounts: crypto/rand failed: " + err.Error())
		}
		for _, c := range buf {
			// 248 = 4*62: reject the tail so every character is equally likely.
			if c < 248 && len(b) < keyBody {
				b = append(b, alphabet[c%62])
			}
		}
	}
	return KeyPrefix + string(b)
}

// Hash is the stored form of a key: hex SHA-256.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// CreateKey issues a key for the user named userName and returns it with its
// record. The key is not stored and cannot be shown again.
func (a *Accounts) CreateKey(ctx context.Context, userName, label string) (string, kv.APIKey, error) {
	if len(label) > 200 {
		return "", kv.APIKey{}, fmt.Errorf("label is %d characters; the limit is 200", len(label))
	}
	key := NewKey()
	rec := kv.APIKey{Hash: Hash(key), Prefix: key[:shownPrefix], Label: label, CreatedAt: a.now().UnixMilli()}
	err := a.store.Commit(ctx, func(tx *kv.Tx) error {
		u, err := tx.UserByName(userName)
		if err != nil {
			return err
		}
		rec.UserID = u.ID
		return tx.PutKey(rec)
	})
	if err != nil {
		return "", kv.APIKey{}, fmt.Errorf("create key for %s: %w", userName, err)
	}
	return key, rec, nil
}

// CreateKeyForUser is CreateKey by user id (the dashboard knows the id).
func (a *Accounts) CreateKeyForUser(ctx context.Context, userID, label string) (string, kv.APIKey, error) {
	var name string
	err := a.store.View(ctx, func(tx *kv.Tx) error {
		u, err := tx.User(userID)
		name = u.Name
		return err
	})
	if err != nil {
		return "", kv.APIKey{}, err
	}
	return a.CreateKey(ctx, name, label)
}

// Keys lists a user's keys (active and revoked), with last-used times that
// may not have been written yet.
func (a *Accounts) Keys(ctx context.Context, userID string) ([]kv.APIKey, error) {
	var ks []kv.APIKey
	err := a.store.View(ctx, func(tx *kv.Tx) error {
		var err error
		ks, err = tx.Keys(userID)
		return err
	})
	a.mu.Lock()
	for i := range ks {
		if t, ok := a.lastUsed[ks[i].Hash]; ok && t > ks[i].LastUsed {
			ks[i].LastUsed = t
		}
	}
	a.mu.Unlock()
	return ks, err
}

// Revoke revokes the active keys whose shown prefix starts with prefix. When
// userID is not empty only that user's keys are considered. It fails unless
// exactly one active key matches, so an ambiguous prefix revokes nothing.
func (a *Accounts) Revoke(ctx context.Context, userID, prefix string) (kv.APIKey, error) {
	if len(prefix) < len(KeyPrefix)+2 {
		return kv.APIKey{}, fmt.Errorf("prefix %q is too short (%w, `hindsight keys list`)", prefix, ErrBadPrefix)
	}
	var rec kv.APIKey
	err := a.store.Commit(ctx, func(tx *kv.Tx) error {
		ks, err := tx.Keys(userID)
		if err != nil {
			return err
		}
		var match []kv.APIKey
		for _, k := range ks {
			if k.Revoked == 0 && (strings.HasPrefix(k.Prefix, prefix) || strings.HasPrefix(prefix, k.Prefix) && Hash(prefix) == k.Hash) {
				match = append(match, k)
			}
		}
		switch len(match) {
		case 0:
			return fmt.Errorf("no active key with prefix %q: %w", prefix, kv.ErrNotFound)
		case 1:
		default:
			return fmt.Errorf("%d active keys start with %q: give a longer prefix (%w)", len(match), prefix, ErrBadPrefix)
		}
		rec = match[0]
		rec.Revoked = a.now().UnixMilli()
		return tx.PutKey(rec)
	})
	if err != nil {
		return kv.APIKey{}, err
	}
	a.mu.Lock()
	delete(a.cache, rec.Hash)
	a.gen++
	a.mu.Unlock()
	return rec, nil
}

// Authenticate returns the user id owning key, or ErrUnauthorized. Active keys
// are cached after the first lookup; last-used times are recorded in memory and
// written by Flush, so authentication never costs a disk write.
func (a *Accounts) Authenticate(ctx context.Context, key string) (string, error) {
	if !wellFormed(key) {
		return "", ErrUnauthorized
	}
	hash := Hash(key)
	a.mu.Lock()
	rec, ok := a.cache[hash]
	gen := a.gen
	a.mu.Unlock()
	if !ok {
		err := a.store.View(ctx, func(tx *kv.Tx) error {
			var err error
			rec, err = tx.Key(hash)
			return err
		})
		if errors.Is(err, kv.ErrNotFound) {
			return "", ErrUnauthorized
		}
		if err != nil {
			return "", fmt.Errorf("look up key: %w", err)
		}
		if rec.Revoked != 0 {
			return "", ErrUnauthorized
		}
	}
	// The lookup was by hash; compare the full hash in constant time anyway so
	// no code path decides on a partial, timing-dependent comparison.
	if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hash)) != 1 {
		return "", ErrUnauthorized
	}
	a.mu.Lock()
	if a.gen == gen {
		a.cache[hash] = rec
	}
	a.lastUsed[hash] = a.now().UnixMilli()
	a.mu.Unlock()
	return rec.UserID, nil
}

func wellFormed(key string) bool {
	if len(key) != len(KeyPrefix)+keyBody || !strings.HasPrefix(key, KeyPrefix) {
		return false
	}
	for _, c := range key[len(KeyPrefix):] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Flush writes the recorded last-used times. The server calls it periodically
// and at shutdown.
func (a *Accounts) Flush(ctx context.Context) error {
	a.mu.Lock()
	pending := a.lastUsed
	a.lastUsed = map[string]int64{}
	a.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	err := a.store.Commit(ctx, func(tx *kv.Tx) error {
		for hash, t := range pending {
			k, err := tx.Key(hash)
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if t > k.LastUsed {
				k.LastUsed = t
				if err := tx.PutKey(k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		a.mu.Lock()
		for h, t := range pending {
			a.lastUsed[h] = max(a.lastUsed[h], t)
		}
		a.mu.Unlock()
	}
	return err
}
