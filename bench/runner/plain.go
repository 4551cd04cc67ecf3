package runner

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/blevesearch/bleve/v2"

	"github.com/hindsight-dev/hindsight/index"
)

// plainIndex writes the same session documents as an index.Index, into a
// Bleve index with the same mapping, through Bleve's plain API (see
// index.PlainDoc): the ceiling timedRawBleve sets on a rebuild's speed,
// without reading records or any of the index's own work.
type plainIndex struct {
	opts     index.Options
	sessions bleve.Index
}

// openPlain creates a plain index in dir, which must not hold one. The
// caller must close it (and remove dir).
func openPlain(dir string, opts index.Options) (*plainIndex, error) {
	b, err := bleve.New(filepath.Join(dir, "sessions.bleve"), index.PlainMapping(opts))
	if err != nil {
		return nil, fmt.Errorf("plain bleve index: %w", err)
	}
	return &plainIndex{opts: opts, sessions: b}, nil
}

// put writes the sessions' documents in one batch. The sessions must be
// new to the index.
func (p *plainIndex) put(ctx context.Context, sessions []index.Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := p.sessions.NewBatch()
	for _, s := range sessions {
		id, doc, err := index.PlainDoc(p.opts, s)
		if err != nil {
			return err
		}
		if err := b.Index(id, doc); err != nil {
			return fmt.Errorf("plain bleve index: %w", err)
		}
	}
	if err := p.sessions.Batch(b); err != nil {
		return fmt.Errorf("plain bleve index: %w", err)
	}
	return nil
}

func (p *plainIndex) close() error { return p.sessions.Close() }
