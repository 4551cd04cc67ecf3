package kv

import (
	"bytes"
)

// PutSessionEval replaces the eval metadata of the user's session and returns
// the session as stored. Only the session record is rewritten: eval labels are
// not session content, so UpdatedAt, the most-recently-updated order and the
// outbox are left alone (labelling a session neither moves it up the session
// list nor re-indexes it). ErrNotFound when the session does not exist or
// belongs to somebody else.
func (tx *Tx) PutSessionEval(userID, id string, e Eval) (Session, error) {
	s, err := tx.Session(userID, id)
	if err != nil {
		return Session{}, err
	}
	s.Eval = e
	if err := tx.putSessionRecord(&s); err != nil {
		return Session{}, err
	}
	return s, nil
}

// MessagesFrom calls fn for each message of a session whose sequence number
// is at least from, in order, until fn returns an error, which it returns.
// Readers that must not hold a transaction for long (exports streaming to a
// slow client) read a session in chunks with it, one short transaction each.
func (tx *Tx) MessagesFrom(userID, sessionID string, from uint64, fn func(Message) error) error {
	prefix, err := tx.msgPrefix(userID, sessionID, false)
	if err != nil {
		return nil
	}
	c := tx.bucket(bucketMessages).Cursor()
	for k, v := c.Seek(msgKey(prefix, from)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		m, err := tx.decodeMessage(userID, sessionID, k, v)
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}
