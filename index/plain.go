package index

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/blevesearch/bleve/v2"
)

// Plain writes the same session documents as an Index, into a Bleve index
// with the same mapping, through Bleve's plain API: each document a Go value
// that Bleve maps and analyses itself (with this package's analyzer),
// written with bleve.Index.Batch. It is what Bleve alone costs for the
// documents of a rebuild, without reading records or any of Index's own
// work: the load bench times it as the ceiling of a rebuild's speed. Its
// index is not for searching: it has no number fields (BM25 lengths, see
// scoring.go) and no metadata.
type Plain struct {
	sessions bleve.Index
	repeat   int
	stored   bool // title and body are stored, as Index stores them without a TextSource
}

// OpenPlain creates a Plain index in dir, which must not hold one. The
// caller must Close it (and remove dir).
func OpenPlain(dir string, opts Options) (*Plain, error) {
	repeat, err := opts.titleRepeat()
	if err != nil {
		return nil, err
	}
	var stored []string
	if opts.Text == nil {
		stored = []string{fieldTitle, fieldBody}
	}
	p := &Plain{repeat: repeat, stored: opts.Text == nil}
	if p.sessions, err = bleve.New(filepath.Join(dir, "sessions.bleve"), newMapping(stored)); err != nil {
		return nil, fmt.Errorf("index: plain: %w", err)
	}
	return p, nil
}

// Put writes the sessions' documents in one batch. The sessions must be new
// to the index.
func (p *Plain) Put(ctx context.Context, sessions []Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := p.sessions.NewBatch()
	for _, s := range sessions {
		d := map[string]any{fieldUser: s.UserID, fieldText: sessionText(s, p.repeat)}
		if p.stored {
			d[fieldTitle], d[fieldBody] = s.Title, s.Body
		}
		if err := b.Index(docKey(s.UserID, s.SessionID), d); err != nil {
			return fmt.Errorf("index: plain: %w", err)
		}
	}
	if err := p.sessions.Batch(b); err != nil {
		return fmt.Errorf("index: plain: %w", err)
	}
	return nil
}

// Close closes the index.
func (p *Plain) Close() error {
	return p.sessions.Close()
}
