package ingest

import (
	"context"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/kv"
)

// Texts gives the full-text index the text of sessions from the records
// (index.TextSource), so the index need not store a copy: snippets are made
// from the same title, body and chunks IndexSession builds for indexing.
type Texts struct {
	Store *kv.Store
}

// SessionText loads the user's sessions among ids in one read transaction.
// Sessions that no longer exist are left out.
func (t Texts) SessionText(ctx context.Context, userID string, ids []string) (map[string]index.Session, error) {
	out := make(map[string]index.Session, len(ids))
	err := t.Store.View(ctx, func(tx *kv.Tx) error {
		for _, id := range ids {
			d, err := LoadDoc(tx, userID, id)
			if err != nil {
				return err
			}
			if !d.Deleted {
				out[id] = IndexSession(d)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
