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
	removed := false
	if err != nil && statErr == nil {
		// An index of an older format (index.ErrIncompatible) lands here
		// too: an upgrade rebuilds the index on its own.
		log.Warn().Err(err).Str("dir", dir).Msg("full-text index cannot be opened; rebuilding it from the records")
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			return nil, false, fmt.Errorf("remove unreadable index %s: %w", dir, rmErr)
		}
		removed = true
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
	return idx, removed || statErr != nil || state != "ready", nil
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
