package index

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/blevesearch/bleve/v2"
)

// Plain writes the same session and chunk documents as an Index, into two
// Bleve indexes with the same mappings, through Bleve's plain API: each
// document a Go value that Bleve maps and analyses itself (with this
// package's analyzer), written with bleve.Index.Batch. It is what Bleve
// alone costs for the documents of a rebuild, without reading records or
// any of Index's own work: the load bench times it as the ceiling of a
// rebuild's speed. Its index is not for searching: it has no length field
// (BM25 lengths, see scoring.go) and no metadata.
type Plain struct {
	sessions, chunks bleve.Index
	repeat           int
	stored           bool // title and body are stored, as Index stores them without a TextSource
}

// OpenPlain creates a Plain index in dir, which must not hold one. The
// caller must Close it (and remove dir).
func OpenPlain(dir string, opts Options) (*Plain, error) {
	repeat, err := opts.titleRepeat()
	if err != nil {
		return nil, err
	}
	sessionStored, chunkStored := []string{fieldTitle, fieldBody}, []string{fieldBody}
	if opts.Text != nil {
		sessionStored, chunkStored = nil, nil
	}
	p := &Plain{repeat: repeat, stored: opts.Text == nil}
	if p.sessions, err = bleve.New(filepath.Join(dir, "sessions.bleve"), newMapping([]string{fieldUser, fieldLength}, sessionStored)); err != nil {
		return nil, fmt.Errorf("index: plain: %w", err)
	}
	if p.chunks, err = bleve.New(filepath.Join(dir, "chunks.bleve"), newMapping([]string{fieldUser, fieldSession, fieldLength}, chunkStored)); err != nil {
		_ = p.sessions.Close()
		return nil, fmt.Errorf("index: plain: %w", err)
	}
	return p, nil
}

// Put writes the sessions' documents: one batch per index, the two batches
// applied at once (each builds its segment on its own goroutine, as Index
// does). The sessions must be new to the index.
func (p *Plain) Put(ctx context.Context, sessions []Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sb, cb := p.sessions.NewBatch(), p.chunks.NewBatch()
	for _, s := range sessions {
		k := docKey(s.UserID, s.SessionID)
		sd := map[string]any{fieldUser: s.UserID, fieldText: sessionText(s, p.repeat)}
		if p.stored {
			sd[fieldTitle], sd[fieldBody] = s.Title, s.Body
		}
		if err := sb.Index(k, sd); err != nil {
			return fmt.Errorf("index: plain: %w", err)
		}
		for _, c := range s.Chunks {
			cd := map[string]any{fieldUser: s.UserID, fieldSession: k, fieldText: c.Text}
			if p.stored {
				cd[fieldBody] = c.Text
			}
			if err := cb.Index(chunkID(k, c.Ordinal), cd); err != nil {
				return fmt.Errorf("index: plain: %w", err)
			}
		}
	}
	var wg sync.WaitGroup
	var cerr error
	wg.Go(func() { cerr = p.chunks.Batch(cb) })
	serr := p.sessions.Batch(sb)
	wg.Wait()
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("index: plain: %w", err)
	}
	return nil
}

// Count returns the number of session and chunk documents.
func (p *Plain) Count() (sessions, chunks uint64, err error) {
	if sessions, err = p.sessions.DocCount(); err != nil {
		return 0, 0, err
	}
	chunks, err = p.chunks.DocCount()
	return sessions, chunks, err
}

// Close closes both indexes.
func (p *Plain) Close() error {
	return errors.Join(p.sessions.Close(), p.chunks.Close())
}
