package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/progress"
)

// cmdReindex rebuilds the full-text index from the records: it deletes the
// index directory and indexes every session again, with a progress bar. The
// server must be stopped (it holds the data file); it rebuilds a missing index
// by itself at start anyway.
func cmdReindex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("reindex", "reindex [--data DIR]", stderr)
	data := dataFlag(fs)
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return &usageError{"reindex takes no arguments"}
	}
	st, err := openStore(*data)
	if err != nil {
		return fmt.Errorf("%w\nstop the server first (it also rebuilds a missing index at start)", err)
	}
	defer st.Close()
	dir := filepath.Join(*data, "index")
	if err := setIndexState(ctx, st, "rebuilding"); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove old index: %w", err)
	}
	idx, err := index.Open(dir, index.Options{})
	if err != nil {
		return err
	}
	defer idx.Close()
	p := ingest.NewPipeline(st, idx, ingest.PipelineOptions{Logger: zerolog.Nop()})
	var bar *progress.Bar
	err = rebuildIndex(ctx, st, p, func(done, total int) {
		if bar == nil {
			bar = progress.New(stderr, "reindex", total)
		}
		bar.Set(done)
	})
	bar.Done()
	if err != nil {
		return err
	}
	// Whatever was queued is now indexed: the outbox can be emptied.
	for {
		n, err := p.DrainOnce(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	s, c, err := idx.Count(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reindexed: %d sessions, %d chunks\n", s, c)
	return nil
}
