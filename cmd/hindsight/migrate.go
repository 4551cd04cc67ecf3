package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/progress"
	"github.com/hindsight-dev/hindsight/server"
)

const migrateHelp = `Usage: hindsight migrate --from SRC --to DST [--force]

Copies every record (users, API keys, sessions, messages, eval labels,
tombstones, dashboard sessions, the indexing outbox, metadata) from one
store to another. SRC and DST are each a data directory (its hindsight.db)
or a PostgreSQL address, postgres://user:password@host:5432/db: bbolt to
PostgreSQL, PostgreSQL to bbolt, or between two of a kind.

Stop the servers on both first. A running server holds its bbolt file, so
migrate refuses one; nothing stops a server on PostgreSQL, and records it
writes during the copy make the final check fail.

The copy goes bucket by bucket in key order, a batch per transaction,
recording its progress in DST: run an interrupted migrate again, with the
same SRC, and it continues where it stopped. At the end both stores are
read again and each bucket's number of keys and SHA-256 of its keys and
records are printed; migrate exits 1 when they differ. Run against a DST
that already holds SRC's records, it checks them and writes nothing.

A DST that holds other records (or an unfinished copy from another
source) is refused; --force deletes its records first. The derived data
(the full-text index, the vectors) is not copied: a server started on a
new data directory rebuilds its index from the records. migrate is not a
backup: back up a data directory with hindsight backup, and records in
PostgreSQL with pg_dump (README, "Records in PostgreSQL").

Flags:
`

// cmdMigrate copies the records between a data directory and PostgreSQL
// (kv.Copy), either way, printing the checksums it verified.
func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlags("migrate", "", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, migrateHelp)
		fs.PrintDefaults()
	}
	from := fs.String("from", "", "the records to copy: a data directory, or postgres://user:password@host:port/db (required)")
	to := fs.String("to", "", "where to copy them: a data directory, or postgres://... (required)")
	force := fs.Bool("force", false, "delete the records DST holds before copying, instead of refusing a DST that holds other records")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *from == "" || *to == "" {
		return cli.Usage("usage: hindsight migrate --from SRC --to DST [--force] (see hindsight migrate --help)")
	}
	src, err := newEndpoint(*from)
	if err != nil {
		return cli.Usagef("migrate --from: %v", err)
	}
	dst, err := newEndpoint(*to)
	if err != nil {
		return cli.Usagef("migrate --to: %v", err)
	}
	if src.id == dst.id {
		return cli.Usagef("migrate: --from and --to are the same store (%s)", src)
	}

	from2, err := src.open(ctx, true, stderr)
	if err != nil {
		return fmt.Errorf("migrate: open the source: %w", err)
	}
	defer from2.Close()
	to2, err := dst.open(ctx, false, stderr)
	if err != nil {
		return fmt.Errorf("migrate: open the destination: %w", err)
	}
	defer to2.Close()

	fmt.Fprintf(stderr, "migrate: %s -> %s\n", src, dst)
	var bar *progress.Bar
	var current string
	rep, err := kv.Copy(ctx, from2, to2, kv.CopyOptions{
		From:  src.String(),
		Force: *force,
		Progress: func(bucket string, done, total int) {
			if bucket != current {
				bar.Done()
				bar, current = nil, bucket
				if total > 0 {
					bar = progress.New(stderr, "migrate "+bucket, total)
				}
			}
			bar.Set(done)
		},
	})
	bar.Done()
	switch {
	case rep.Resumed:
		fmt.Fprintln(stdout, "resumed an unfinished copy from", src)
	case rep.AlreadyCopied:
		fmt.Fprintln(stdout, "the destination already holds these records; nothing was written")
	case rep.Emptied:
		fmt.Fprintln(stdout, "--force: the destination's records were deleted first")
	}
	if len(rep.Source) > 0 {
		printSums(stdout, rep)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("migrate: interrupted (%w): run the same command again to continue where it stopped", err)
		}
		if errors.Is(err, kv.ErrCopyMismatch) {
			return fmt.Errorf("migrate: %w: did a server write to the source or the destination meanwhile? Stop it and run migrate again with --force", err)
		}
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintf(stdout, "verified: %s holds the records of %s\n", dst, src)
	if dst.pg {
		fmt.Fprintln(stdout, "start the server with: hindsight serve --records "+dst.String()+" (the password as before)")
	} else {
		fmt.Fprintln(stdout, "start the server with: hindsight serve --data "+dst.String())
	}
	return nil
}

// printSums prints the source's and the destination's sums side by side.
func printSums(w io.Writer, rep kv.CopyReport) {
	fmt.Fprintf(w, "%-20s %10s %10s  %-16s %s\n", "bucket", "source", "dest", "sha256", "")
	for i, s := range rep.Source {
		d := kv.BucketSum{Bucket: s.Bucket}
		if i < len(rep.Destination) {
			d = rep.Destination[i]
		}
		mark := "ok"
		if d != s {
			mark = fmt.Sprintf("DIFFERS (dest sha256 %x)", d.Sum[:8])
		}
		fmt.Fprintf(w, "%-20s %10d %10d  %x %s\n", s.Bucket, s.Keys, d.Keys, s.Sum[:8], mark)
	}
}

// endpoint is one side of a migrate: a data directory or a PostgreSQL
// database.
type endpoint struct {
	pg   bool
	addr string // the directory (absolute) or the PostgreSQL address
	id   string // what names the store, for comparing the two sides
}

func newEndpoint(arg string) (endpoint, error) {
	if strings.Contains(arg, "://") {
		if pg, err := kv.RecordsInPostgres(arg); err != nil || !pg {
			return endpoint{}, errors.New("want a data directory or a PostgreSQL address, postgres://user:password@host:5432/db")
		}
		return endpoint{pg: true, addr: arg, id: arg}, nil
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return endpoint{}, err
	}
	return endpoint{addr: abs, id: abs}, nil
}

// String names the store without its password.
func (e endpoint) String() string {
	if e.pg {
		return config.Config{Records: e.addr}.Redacted().Records
	}
	return e.addr
}

// open opens the store: a source's bbolt file read-only (it must exist),
// a destination's created if needed; either fails at once when a running
// server holds it.
func (e endpoint) open(ctx context.Context, source bool, stderr io.Writer) (*kv.Store, error) {
	if e.pg {
		return kv.OpenPostgres(ctx, e.addr, kv.PostgresOptions{
			Logf: func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) },
		})
	}
	if !source {
		return server.OpenStore(e.addr)
	}
	if _, err := os.Stat(filepath.Join(e.addr, kv.FileName)); err != nil {
		return nil, fmt.Errorf("%s holds no records (no %s): %w", e.addr, kv.FileName, err)
	}
	st, err := kv.Open(e.addr, kv.Options{ReadOnly: true})
	if errors.Is(err, kv.ErrLocked) {
		return nil, fmt.Errorf("data directory %s is in use by another hindsight process (is `hindsight serve` running on it? stop it first): %w", e.addr, err)
	}
	return st, err
}
