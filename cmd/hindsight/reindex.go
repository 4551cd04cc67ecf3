package main

import (
	"context"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/progress"
	"github.com/hindsight-dev/hindsight/server"
)

// cmdReindex rebuilds the configured full-text index (Bleve, or Weaviate
// with --text-index weaviate) from the records, with a progress bar. The
// server must be stopped (it holds the data file); it rebuilds a missing
// index by itself at start anyway.
func cmdReindex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	if pos, err := loadFlags(cli.NewFlags("reindex", "reindex [--data DIR] [--records URL] [--text-index bleve|weaviate]", stderr), args, func(ld *config.Loader) {
		ld.Data(&cfg)
		ld.Records(&cfg)
		ld.Semantic(&cfg) // WEAVIATE_URL, WEAVIATE_API_KEY
		ld.TextIndex(&cfg)
	}); err != nil {
		return err
	} else if len(pos) > 0 {
		return cli.Usage("reindex takes no arguments")
	}
	var bar *progress.Bar
	s, c, err := server.Reindex(ctx, cfg, func(done, total int) {
		if bar == nil {
			bar = progress.New(stderr, "reindex", total)
		}
		bar.Set(done)
	})
	bar.Done()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reindexed: %d sessions, %d chunks (%s index)\n", s, c, cfg.TextIndex)
	return nil
}
