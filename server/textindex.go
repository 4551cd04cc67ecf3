package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/index/weaviatetext"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// TextIndex is the full-text index the server runs on: *index.Index (Bleve,
// under the data directory) or *weaviatetext.Index (config TextIndex
// "weaviate"). The pipeline writes it, ranking searches it.
type TextIndex interface {
	ingest.TextIndex
	Search(ctx context.Context, q index.Query) ([]index.Hit, error)
	Count(ctx context.Context) (sessions, chunks uint64, err error)
	Close() error
}

// Text index kinds (config.Config.TextIndex).
const (
	TextBleve    = "bleve"
	TextWeaviate = "weaviate"
)

// stateKey is the kv meta key recording whether the index of a kind holds
// every session ("ready"). Bleve keeps the key it always had. While one
// kind runs, the other stops receiving writes, so opening one marks the
// other "stale": switching back rebuilds it from the records.
func stateKey(kind string) string {
	if kind == TextWeaviate {
		return indexStateKey + ".weaviate"
	}
	return indexStateKey
}

func otherKind(kind string) string {
	if kind == TextWeaviate {
		return TextBleve
	}
	return TextWeaviate
}

// openTextIndex opens the configured index. rebuild says whether it must
// be rebuilt from the records (new, incomplete or stale); for Weaviate the
// rebuild starts by dropping the collections (see rebuildText).
func openTextIndex(ctx context.Context, cfg config.Config, st *kv.Store, log zerolog.Logger) (TextIndex, bool, error) {
	kind := textKind(cfg)
	var state, other string
	if err := st.View(ctx, func(tx *kv.Tx) error {
		state, other = string(tx.Meta(stateKey(kind))), string(tx.Meta(stateKey(otherKind(kind))))
		return nil
	}); err != nil {
		return nil, false, err
	}
	if other == "ready" {
		if err := setState(ctx, st, otherKind(kind), "stale"); err != nil {
			return nil, false, err
		}
	}
	if kind == TextWeaviate {
		ix, err := openWeaviateText(cfg, st, log)
		if err != nil {
			return nil, false, err
		}
		return ix, state != "ready", nil
	}
	if state == "stale" {
		// Sessions deleted while Weaviate held the index still have
		// documents here; start over rather than serve them.
		if err := os.RemoveAll(filepath.Join(cfg.Data, "index")); err != nil {
			return nil, false, fmt.Errorf("remove stale index: %w", err)
		}
	}
	return openIndex(ctx, cfg.Data, st, log)
}

func textKind(cfg config.Config) string {
	if cfg.TextIndex == TextWeaviate {
		return TextWeaviate
	}
	return TextBleve
}

func openWeaviateText(cfg config.Config, st *kv.Store, log zerolog.Logger) (*weaviatetext.Index, error) {
	return weaviatetext.Open(weaviatetext.Config{
		URL: cfg.Semantic.WeaviateURL, APIKey: cfg.Semantic.WeaviateKey,
		Replication: cfg.WeaviateReplication, Prefix: cfg.WeaviateTextPrefix, Logger: log,
	}, recordsText{st})
}

// Restore installs the backup file src as the records of the empty
// directory dir (kv.Restore) and marks both kinds of text index stale. The
// backup carries the index states of the node it was taken on, but not a
// Bleve index, and a Weaviate index that outlived the node holds what was
// written after the backup (and misses nothing the backup has only because
// it was deleted since): either way the restored node must rebuild the
// configured index from these records at its first start.
func Restore(ctx context.Context, src, dir string) error {
	if err := kv.Restore(src, dir); err != nil {
		return err
	}
	st, err := OpenStore(dir)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	for _, kind := range []string{TextBleve, TextWeaviate} {
		if err == nil {
			err = setState(ctx, st, kind, "stale")
		}
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: mark the text indexes for a rebuild: %w", err)
	}
	return nil
}

func setState(ctx context.Context, st *kv.Store, kind, state string) error {
	return st.Commit(ctx, func(tx *kv.Tx) error { return tx.SetMeta(stateKey(kind), []byte(state)) })
}

// recordsText gives the Weaviate text index the sessions' text from the
// records (for snippets and phrase checks), as the pipeline indexes it.
type recordsText struct{ st *kv.Store }

func (r recordsText) Texts(ctx context.Context, userID string, ids []string) (map[string]index.Session, error) {
	out := make(map[string]index.Session, len(ids))
	err := r.st.View(ctx, func(tx *kv.Tx) error {
		for _, id := range ids {
			if _, ok := out[id]; ok {
				continue
			}
			d, err := ingest.LoadDoc(tx, userID, id)
			if err != nil {
				return err
			}
			if !d.Deleted {
				out[id] = ingest.IndexSession(d)
			}
		}
		return nil
	})
	return out, err
}

// rebuildText rebuilds the index of kind from every session, marking it
// "rebuilding" first and "ready" at the end. A Weaviate index is dropped
// first, so documents of sessions deleted meanwhile do not survive.
func rebuildText(ctx context.Context, st *kv.Store, kind string, ix TextIndex, p *ingest.Pipeline, onProgress func(done, total int)) error {
	if err := setState(ctx, st, kind, "rebuilding"); err != nil {
		return err
	}
	if w, ok := ix.(*weaviatetext.Index); ok {
		if err := w.Reset(ctx); err != nil {
			return fmt.Errorf("rebuild index: %w", err)
		}
	}
	if err := p.Rebuild(ctx, onProgress); err != nil {
		return fmt.Errorf("rebuild index: %w", err)
	}
	if w, ok := ix.(*weaviatetext.Index); ok {
		if err := w.Settle(ctx); err != nil {
			return fmt.Errorf("rebuild index: %w", err)
		}
	}
	return setState(ctx, st, kind, "ready")
}

// rebuildInBackground is Background's rebuild: an unavailable Weaviate is
// waited for (the records keep accepting syncs meanwhile), any other
// failure is left for the next start or hindsight reindex.
func (s *Server) rebuildInBackground(ctx context.Context) {
	kind := textKind(s.cfg)
	s.log.Info().Str("text_index", kind).Msg("building the full-text index from the records")
	wait := time.Second
	for {
		err := rebuildText(ctx, s.Store, kind, s.Index, s.Pipeline, LogProgress(s.log, "indexing sessions"))
		switch {
		case err == nil:
			s.rebuilding.Store(false)
			return
		case ctx.Err() != nil:
			return
		case errors.Is(err, index.ErrUnavailable):
			s.log.Warn().Err(err).Dur("retry_in", wait).Msg("full-text index unavailable; rebuild retried")
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			wait = min(2*wait, 30*time.Second)
			continue
		}
		s.log.Error().Err(err).Msg("index rebuild failed; it is retried at the next start (or run hindsight reindex)")
		s.rebuildFailed.Store(true)
		s.rebuilding.Store(false)
		return
	}
}

// textReadiness is the text index's reason not to be ready: a Weaviate
// that does not answer.
func (s *Server) textReadiness(ctx context.Context) []string {
	w, ok := s.Index.(*weaviatetext.Index)
	if !ok {
		return nil
	}
	if err := w.Ping(ctx); err != nil {
		return []string{"full-text index unavailable: weaviate at " + w.Where() + " does not answer"}
	}
	return nil
}

// Reindex rebuilds the configured full-text index of the records in
// cfg.Data (the Bleve directory, or the Weaviate collections) from every
// session; the server must be stopped (it holds the records). Then it
// empties the outbox, whose work the rebuild did. It returns the sessions
// and chunks indexed; onProgress sees (done, total).
//
// It is resumable: after each batch it records the last session indexed,
// and a reindex of the same kind that finds the index still incomplete
// ("rebuilding") with such a mark carries on after it instead of starting
// over. Sessions are taken in (user id, session id) order, so the mark
// stays meaningful; a session written by a server started in between is
// on the outbox, which the end of the reindex drains.
func Reindex(ctx context.Context, cfg config.Config, onProgress func(done, total int)) (sessions, chunks uint64, err error) {
	st, err := OpenRecords(ctx, cfg, zerolog.Nop())
	if err != nil {
		return 0, 0, fmt.Errorf("%w\nstop the server first (it also rebuilds a missing index at start)", err)
	}
	defer st.Close()
	kind := textKind(cfg)
	var state string
	var mark []byte
	if err := st.View(ctx, func(tx *kv.Tx) error {
		state, mark = string(tx.Meta(stateKey(kind))), tx.Meta(markKey(kind))
		return nil
	}); err != nil {
		return 0, 0, err
	}
	resume := state == "rebuilding" && len(mark) > 0
	if !resume {
		mark = nil
	}
	if err := setState(ctx, st, kind, "rebuilding"); err != nil {
		return 0, 0, err
	}
	if err := setState(ctx, st, otherKind(kind), "stale"); err != nil {
		return 0, 0, err
	}
	var ix TextIndex
	if kind == TextWeaviate {
		w, err := openWeaviateText(cfg, st, zerolog.Nop())
		if err != nil {
			return 0, 0, err
		}
		if !resume {
			if err := w.Reset(ctx); err != nil {
				w.Close()
				return 0, 0, err
			}
		}
		ix = w
	} else {
		dir := filepath.Join(cfg.Data, "index")
		if !resume {
			if err := os.RemoveAll(dir); err != nil {
				return 0, 0, fmt.Errorf("remove old index: %w", err)
			}
		}
		// Like the server's, the rebuilt index stores no text (snippets read the records).
		if ix, err = index.Open(dir, index.Options{Text: ingest.Texts{Store: st}}); err != nil {
			return 0, 0, err
		}
	}
	defer ix.Close()
	if err := reindexFrom(ctx, st, kind, ix, string(mark), onProgress); err != nil {
		return 0, 0, err
	}
	if w, ok := ix.(*weaviatetext.Index); ok {
		if err := w.Settle(ctx); err != nil {
			return 0, 0, err
		}
	}
	if err := st.Commit(ctx, func(tx *kv.Tx) error {
		if err := tx.SetMeta(markKey(kind), nil); err != nil {
			return err
		}
		return tx.SetMeta(stateKey(kind), []byte("ready"))
	}); err != nil {
		return 0, 0, err
	}
	p := ingest.NewPipeline(st, ix, ingest.PipelineOptions{Logger: zerolog.Nop()})
	for {
		n, err := p.DrainOnce(ctx)
		if err != nil {
			return 0, 0, err
		}
		if n == 0 {
			break
		}
	}
	return ix.Count(ctx)
}

// markKey is the kv meta key of a reindex's last indexed session.
func markKey(kind string) string { return stateKey(kind) + ".mark" }

// reindexFrom indexes every session after mark ("" = all) in (user,
// session) order, recording the mark after each batch.
func reindexFrom(ctx context.Context, st *kv.Store, kind string, ix TextIndex, mark string, onProgress func(done, total int)) error {
	p := ingest.NewPipeline(st, ix, ingest.PipelineOptions{Logger: zerolog.Nop()})
	return p.RebuildFrom(ctx, ingest.RebuildOptions{After: mark, Progress: onProgress,
		Written: func(ctx context.Context, last string) error {
			return st.Commit(ctx, func(tx *kv.Tx) error { return tx.SetMeta(markKey(kind), []byte(last)) })
		}})
}
