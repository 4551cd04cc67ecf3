package main

import (
	"context"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/progress"
	"github.com/hindsight-dev/hindsight/server"
)

// cmdReembed (re)builds every session's vectors with the configured embedder.
// When the store holds another model's vectors it empties it first. It is
// resumable: vectors already written for the current model are kept by their
// text hash, so an interrupted run picks up where it stopped.
func cmdReembed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	if pos, err := loadFlags(cli.NewFlags("reembed", "reembed [--data DIR] [--embedder openai|local]", stderr), args, func(ld *config.Loader) {
		ld.Data(&cfg)
		ld.Records(&cfg)
		ld.Semantic(&cfg)
		ld.Embedder(&cfg, "openai or local; default as for serve")
	}); err != nil {
		return err
	} else if len(pos) > 0 {
		return cli.Usage("reembed takes no arguments")
	}
	if err := dataDirOnly("reembed", cfg.Records, "re-embedding records kept in PostgreSQL is not supported yet"); err != nil {
		return err
	}
	st, err := server.OpenStore(cfg.Data)
	if err != nil {
		return fmt.Errorf("%w\nstop the server first", err)
	}
	defer st.Close()
	sem, err := server.OpenSemantic(ctx, cfg.Semantic, cfg.Data, true)
	if err != nil {
		return err
	}
	defer sem.Close()
	if sem.Stage == nil {
		return fmt.Errorf("no embedder configured: %s", sem.Describe)
	}
	fmt.Fprintf(stderr, "embedding with %s\n", sem.Describe)
	var refs [][2]string
	if err := st.View(ctx, func(tx *kv.Tx) error {
		users, err := tx.Users()
		for _, u := range users {
			tx.Sessions(u.ID, func(s kv.Session) error {
				refs = append(refs, [2]string{u.ID, s.ID})
				return nil
			})
		}
		return err
	}); err != nil {
		return err
	}
	bar := progress.New(stderr, "reembed", len(refs))
	const step = 64
	for i := 0; i < len(refs); i += step {
		var docs []ingest.Doc
		err := st.View(ctx, func(tx *kv.Tx) error {
			for _, r := range refs[i:min(i+step, len(refs))] {
				d, err := ingest.LoadDoc(tx, r[0], r[1])
				if err != nil {
					return err
				}
				docs = append(docs, d)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := sem.Stage.Process(ctx, docs); err != nil {
			return fmt.Errorf("reembed (run it again to resume): %w", err)
		}
		bar.Set(min(i+step, len(refs)))
	}
	bar.Done()
	embedded, kept := sem.Stage.Counts()
	u := sem.Usage.Snapshot()
	fmt.Fprintf(stdout, "reembedded %d sessions: %d texts embedded, %d unchanged kept, %d tokens, $%.4f\n", len(refs), embedded, kept, u.Tokens+u.EstimatedTokens, u.CostUSD)
	return nil
}
