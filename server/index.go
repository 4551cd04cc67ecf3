package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// The index is derived data: kv records whether it is complete, so a missing,
// unreadable or half-rebuilt index is rebuilt from the records at start.
const indexStateKey = "index.state"

// openIndex opens the full-text index under dataDir, starting over when the
// directory is unreadable. rebuild says whether it must be rebuilt from kv.
func openIndex(ctx context.Context, dataDir string, st *kv.Store, log zerolog.Logger) (*index.Index, bool, error) {
	dir := filepath.Join(dataDir, "index")
	_, statErr := os.Stat(dir)
	// The index stores no text: snippets read it from the records.
	opts := index.Options{Logger: log, Text: ingest.Texts{Store: st}}
	idx, err := index.Open(dir, opts)
	if err != nil && statErr == nil {
		log.Warn().Err(err).Str("dir", dir).Msg("full-text index cannot be opened; rebuilding it from the records")
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			return nil, false, fmt.Errorf("remove unreadable index %s: %w", dir, rmErr)
		}
		idx, err = index.Open(dir, opts)
	}
	if err != nil {
		return nil, false, fmt.Errorf("open index %s: %w", dir, err)
	}
	var state string
	if err := st.View(ctx, func(tx *kv.Tx) error {
		state = string(tx.Meta(indexStateKey))
		return nil
	}); err != nil {
		idx.Close()
		return nil, false, err
	}
	return idx, statErr != nil || state != "ready", nil
}

func setIndexState(ctx context.Context, st *kv.Store, state string) error {
	return st.Commit(ctx, func(tx *kv.Tx) error { return tx.SetMeta(indexStateKey, []byte(state)) })
}

// rebuildIndex re-indexes every session; onProgress sees (done, total).
func rebuildIndex(ctx context.Context, st *kv.Store, p *ingest.Pipeline, onProgress func(done, total int)) error {
	if err := setIndexState(ctx, st, "rebuilding"); err != nil {
		return err
	}
	if err := p.Rebuild(ctx, onProgress); err != nil {
		return fmt.Errorf("rebuild index: %w", err)
	}
	return setIndexState(ctx, st, "ready")
}

// Reindex deletes the full-text index of the records in dataDir and builds
// it again from every session (the server must be stopped: it holds the
// records), then empties the outbox, whose work the rebuild did. It returns
// the sessions and chunks indexed; onProgress sees (done, total).
func Reindex(ctx context.Context, dataDir string, onProgress func(done, total int)) (sessions, chunks uint64, err error) {
	st, err := OpenStore(dataDir)
	if err != nil {
		return 0, 0, fmt.Errorf("%w\nstop the server first (it also rebuilds a missing index at start)", err)
	}
	defer st.Close()
	dir := filepath.Join(dataDir, "index")
	if err := setIndexState(ctx, st, "rebuilding"); err != nil {
		return 0, 0, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return 0, 0, fmt.Errorf("remove old index: %w", err)
	}
	idx, err := index.Open(dir, index.Options{Text: ingest.Texts{Store: st}})
	if err != nil {
		return 0, 0, err
	}
	defer idx.Close()
	p := ingest.NewPipeline(st, idx, ingest.PipelineOptions{Logger: zerolog.Nop()})
	if err := rebuildIndex(ctx, st, p, onProgress); err != nil {
		return 0, 0, err
	}
	for {
		n, err := p.DrainOnce(ctx)
		if err != nil {
			return 0, 0, err
		}
		if n == 0 {
			break
		}
	}
	return idx.Count(ctx)
}

// LogProgress returns a progress callback that logs at most every 2 seconds.
func LogProgress(log zerolog.Logger, what string) func(done, total int) {
	start, last := time.Now(), time.Time{}
	return func(done, total int) {
		if done == total || time.Since(last) > 2*time.Second {
			last = time.Now()
			log.Info().Int("done", done).Int("total", total).Dur("elapsed", time.Since(start)).Msg(what)
		}
	}
}
