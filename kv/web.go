package kv

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// bucketWebSessions holds the dashboard's signed-in sessions: the SHA-256
// (hex) of the cookie token -> WebSession. The token itself is never stored,
// so a copy of the file does not sign anybody in.
var bucketWebSessions = []byte("websessions")

// metaSetupToken is the meta key of the first-run setup token's hash.
const metaSetupToken = "dashboard/setup-token"

// WebSession is one signed-in dashboard session.
type WebSession struct {
	UserID string `json:"userId"`
	// CSRF is the token every form of this session must send back.
	CSRF      string `json:"csrf"`
	CreatedAt int64  `json:"createdAt"`
	ExpiresAt int64  `json:"expiresAt"`
}

// PutWebSession stores a web session under the hash of its token.
func (tx *Tx) PutWebSession(hash string, s WebSession) error {
	if len(s.UserID) != IDLen || hash == "" {
		return fmt.Errorf("put web session: malformed user id %q or empty hash", s.UserID)
	}
	return put(tx.bucket(bucketWebSessions), []byte(hash), s)
}

// WebSession returns the web session stored under hash; ErrNotFound when
// there is none. It does not check expiry: the caller knows the time.
func (tx *Tx) WebSession(hash string) (WebSession, error) {
	b := tx.bucket(bucketWebSessions)
	if b == nil { // a read-only open of a file written before this bucket existed
		return WebSession{}, ErrNotFound
	}
	return get[WebSession](b, []byte(hash))
}

// DeleteWebSession removes a web session; deleting a missing one is no error.
func (tx *Tx) DeleteWebSession(hash string) error {
	return tx.bucket(bucketWebSessions).Delete([]byte(hash))
}

// DeleteWebSessions removes the web sessions for which drop returns true
// (expired ones, or all of one user's) and reports how many went.
func (tx *Tx) DeleteWebSessions(drop func(WebSession) bool) (int, error) {
	b := tx.bucket(bucketWebSessions)
	var doomed [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var s WebSession
		if err := json.Unmarshal(v, &s); err != nil || drop(s) {
			doomed = append(doomed, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(doomed), nil
}

// SetupTokenHash returns the hash of the pending first-run setup token, ""
// when there is none.
func (tx *Tx) SetupTokenHash() string { return string(tx.Meta(metaSetupToken)) }

// SetSetupTokenHash replaces the pending setup token's hash; "" removes it.
func (tx *Tx) SetSetupTokenHash(hash string) error {
	if hash == "" {
		return tx.bucket(bucketMeta).Delete([]byte(metaSetupToken))
	}
	return tx.SetMeta(metaSetupToken, []byte(hash))
}

// HasUsers reports whether any user exists.
func (tx *Tx) HasUsers() bool {
	k, _ := tx.bucket(bucketUsers).Cursor().First()
	return k != nil
}
