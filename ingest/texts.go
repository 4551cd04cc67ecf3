package ingest

import (
	"context"
	"errors"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/kv"
)

// Texts gives the full-text index the text of sessions from the records
// (index.TextSource), so the index need not store a copy: snippets are made
// from the same title, body and chunks IndexSession builds for indexing.
type Texts struct {
	Store *kv.Store
}

// errEnough stops reading a session's messages.
var errEnough = errors.New("enough text")

// SessionText loads the user's sessions among ids in one read transaction.
// Sessions that no longer exist are left out. With bodyBytes > 0 it reads a
// session's messages only until their text reaches bodyBytes: decoding
// messages is most of the cost, and a snippet of a long session reads only
// the start of its body. The body of the first messages is the start of
// the whole body (an exchange only grows by what follows it), so what is
// returned is a prefix of what IndexSession gives, at least bodyBytes long
// when the session has that much text; Chunks are left out then.
func (t Texts) SessionText(ctx context.Context, userID string, ids []string, bodyBytes int) (map[string]index.Session, error) {
	out := make(map[string]index.Session, len(ids))
	err := t.Store.View(ctx, func(tx *kv.Tx) error {
		for _, id := range ids {
			if bodyBytes <= 0 {
				d, err := LoadDoc(tx, userID, id)
				if err != nil {
					return err
				}
				if !d.Deleted {
					out[id] = IndexSession(d)
				}
				continue
			}
			s, err := tx.Session(userID, id)
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var msgs []kv.Message
			text := 0
			err = tx.Messages(userID, id, func(m kv.Message) error {
				msgs = append(msgs, m)
				if text += len(MessageText(m)); text >= bodyBytes {
					return errEnough
				}
				return nil
			})
			if err != nil && !errors.Is(err, errEnough) {
				return err
			}
			is := IndexSession(Doc{UserID: userID, SessionID: id, Session: s, Exchanges: Exchanges(msgs)})
			out[id] = index.Session{UserID: is.UserID, SessionID: is.SessionID, Title: is.Title, Body: is.Body}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachText implements index.MessageSource: the user's sessions among ids,
// in one read transaction, the title and then each message's searchable
// text, decoding a session's messages only until fn has seen enough.
func (t Texts) EachText(ctx context.Context, userID string, ids []string, fn func(id, text string) bool) error {
	return t.Store.View(ctx, func(tx *kv.Tx) error {
		for _, id := range ids {
			if err := ctx.Err(); err != nil {
				return err
			}
			s, err := tx.Session(userID, id)
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if !fn(id, s.Title) {
				continue
			}
			err = tx.Messages(userID, id, func(m kv.Message) error {
				if text := MessageText(m); text != "" && !fn(id, text) {
					return errEnough
				}
				return nil
			})
			if err != nil && !errors.Is(err, errEnough) {
				return err
			}
		}
		return nil
	})
}
