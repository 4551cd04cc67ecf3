package main

import (
	"cmp"
	"context"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/hindsight-dev/hindsight/admin"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/progress"
	"github.com/hindsight-dev/hindsight/redact"
	"github.com/hindsight-dev/hindsight/server"
)

// cmdRedact applies redaction to the records already stored: sessions
// synced before redaction was on, or before a rule was added. It works on
// the data directory when no server holds it, and through the running
// server's admin socket otherwise (with the server's rules). Changed
// sessions are re-indexed and re-embedded by the server's pipeline (at its
// next start when it was stopped). An interrupted run resumes.
func cmdRedact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	fs := cli.NewFlags("redact", "redact [--data DIR] [--dry-run] [--redact-rules FILE]", stderr)
	dry := fs.Bool("dry-run", false, "count what would be redacted, by kind, and change nothing")
	pos, err := loadFlags(fs, args, func(ld *config.Loader) {
		ld.Data(&cfg)
		ld.Records(&cfg)
		ld.Redact(&cfg)
	})
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usage("redact takes no arguments")
	}
	if err := dataDirOnly("redact", cfg.Records, "redacting records already stored in PostgreSQL is not supported yet (new syncs are redacted as they arrive, on every node)"); err != nil {
		return err
	}
	if cfg.Redact.Off {
		return cli.Usage("--redact=off (or HINDSIGHT_REDACT=off) leaves nothing to redact with")
	}
	red, err := server.NewRedactor(cfg.Redact)
	if err != nil {
		return err
	}
	var bar *progress.Bar
	res, via, err := admin.Redact(ctx, cfg.Data, red, *dry, func(done, total int) {
		if bar == nil {
			bar = progress.New(stderr, "redact", total)
		}
		bar.Set(done)
	})
	bar.Done()
	if err != nil {
		return fmt.Errorf("redact: %w", err)
	}
	what := "redacted"
	if *dry {
		what = "would redact"
	}
	resumed := ""
	if res.Resumed {
		resumed = ", going on from an interrupted run"
	}
	fmt.Fprintf(stdout, "%s: %d sessions, %d messages (%s%s)\n", what, res.Sessions, res.Messages, via, resumed)
	fmt.Fprintln(stdout, redactionSummary(res.Counts, true))
	if !*dry && res.Sessions > 0 {
		fmt.Fprintln(stdout, "The changed sessions are queued for re-indexing and re-embedding. To drop the old text from the index files at once, run hindsight reindex with the server stopped.")
	}
	return nil
}

// redactionSummary says what redaction removed, by kind, most first.
func redactionSummary(c redact.Counts, on bool) string {
	if !on {
		return "redaction: off (secrets are sent as they are)"
	}
	if c.Total() == 0 {
		return "redaction: no secrets found"
	}
	rules := slices.SortedFunc(maps.Keys(c), func(a, b string) int { return cmp.Or(cmp.Compare(c[b], c[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = fmt.Sprintf("%s %d", r, c[r])
	}
	return fmt.Sprintf("redaction: %d secrets replaced by [redacted:<kind>]: %s", c.Total(), strings.Join(parts, ", "))
}
