package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/index/weaviatetext"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/server"
)

// timedRestore measures what an operator waits for when a node is lost:
// a hot backup of the records of the running server (st), `hindsight
// restore` of that file into an empty directory, and a server started on it
// until /ready answers 200, which is when the configured full-text index has
// been rebuilt from the records. In Weaviate mode the restored server builds
// collections of its own (a scratch prefix), dropped afterwards.
func timedRestore(ctx context.Context, st *kv.Store, base config.Config, vec Vectors, work string, progressOut io.Writer) (*bench.RestoreTiming, error) {
	dir, err := os.MkdirTemp(work, "restore-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "backup.db")
	var rt bench.RestoreTiming

	fmt.Fprintln(progressOut, "restore: hot backup of the records")
	start := time.Now()
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	n, err := st.Backup(ctx, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	rt.BackupBytes, rt.BackupS = n, time.Since(start).Seconds()

	fmt.Fprintln(progressOut, "restore: restore into an empty directory")
	data := filepath.Join(dir, "data")
	start = time.Now()
	if err := server.Restore(ctx, file, data); err != nil {
		return nil, err
	}
	rt.RestoreS = time.Since(start).Seconds()
	os.Remove(file) // the disk is the restored copy's from here on

	cfg := base
	if cfg.TextIndex == "weaviate" {
		cfg.WeaviateTextPrefix = scratchPrefix("HindsightRestore")
	}
	start = time.Now()
	a, stop, err := startApp(ctx, data, zerolog.Nop(), cfg, vec)
	if err != nil {
		return nil, fmt.Errorf("start on the restored records: %w", err)
	}
	defer func() {
		stop()
		if cfg.TextIndex == "weaviate" {
			dropCollections(cfg)
		}
	}()
	total, err := countSessions(ctx, a.Store)
	if err != nil {
		return nil, err
	}
	rt.Sessions = total
	// The rebuild's own progress is the outbox of the restored server: it
	// is empty during a rebuild, so the wait shows elapsed time only.
	fmt.Fprintf(progressOut, "restore: waiting for /ready (%s index rebuilt from %d sessions)\n", cmpText(cfg.TextIndex), total)
	if err := waitReady(ctx, a.Handler()); err != nil {
		return nil, err
	}
	rt.ReadyS = time.Since(start).Seconds()
	rt.TotalS = rt.BackupS + rt.RestoreS + rt.ReadyS
	fmt.Fprintf(progressOut, "restore: backup %.1f s, restore %.1f s, ready after %.1f s\n", rt.BackupS, rt.RestoreS, rt.ReadyS)
	return &rt, nil
}

func cmpText(ti string) string {
	if ti == "" {
		return "bleve"
	}
	return ti
}

// waitReady polls /ready until it answers 200.
func waitReady(ctx context.Context, h http.Handler) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/ready", nil))
		if rec.Code == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restored server not ready: %s: %w", rec.Body.String(), ctx.Err())
		case <-t.C:
		}
	}
}

// dropCollections removes the Weaviate text collections of cfg's prefix.
func dropCollections(cfg config.Config) {
	ix, err := weaviatetext.Open(weaviatetext.Config{URL: cfg.Semantic.WeaviateURL, APIKey: cfg.Semantic.WeaviateKey,
		Prefix: cfg.WeaviateTextPrefix}, &docTexts{m: map[string]index.Session{}})
	if err != nil {
		return
	}
	ix.Drop(context.Background())
	ix.Close()
}
