package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/server"
)

// IngestConfig is what bench ingest measures.
type IngestConfig struct {
	bench.IngestOptions
	Dir  string // scratch directory on the disk to measure; "" = a temp dir
	JSON bool   // print one JSON object instead of the table and progress
}

// Ingest measures write throughput through the sync API: batches, then
// single messages from concurrent clients, with the index lag.
func Ingest(ctx context.Context, c IngestConfig, stdout, stderr io.Writer) error {
	o := c.IngestOptions
	dir := c.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "hindsight-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if !c.JSON {
		o.Progress = stderr
	}
	// The write path and full-text indexing: no embedder.
	client, a, stop, err := startServer(ctx, dir+"/data", zerolog.Nop(), config.Config{}, Vectors{Embedder: "none", Store: "embedded"})
	if err != nil {
		return err
	}
	defer stop()
	o.Indexer = &bench.Indexer{Lags: a.Pipeline.Lags, WaitIdle: a.Pipeline.WaitIdle, Pending: server.OutboxDepth(a.Store)}
	res, err := bench.RunIngest(ctx, client, dir, o)
	if err != nil {
		return fmt.Errorf("bench ingest: %w", err)
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	bench.PrintIngest(stdout, res)
	return nil
}
