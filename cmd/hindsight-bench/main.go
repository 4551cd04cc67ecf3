// Command hindsight-bench runs Hindsight's benchmarks (relevance, load,
// ingest, redact, import, watch, embed; see bench/README.md). It is a binary
// of its own so that the server, `hindsight`, links none of what only the
// benchmarks need (SQLite for the FTS5 peer, the charts, the Weaviate
// launcher). `hindsight bench ARGS` runs it, found beside `hindsight` or on
// PATH; `go run ./cmd/hindsight-bench ARGS` runs it from a checkout.
//
// The import and watch benches run `hindsight import` as a user would: the
// hindsight binary named by HINDSIGHT_BIN (which `hindsight bench` sets to
// itself), else the one beside this executable, else the one on PATH.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/hindsight-dev/hindsight/bench/runner"
	"github.com/hindsight-dev/hindsight/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hindsight bench:", err)
		os.Exit(exitCode(err))
	}
}

// run executes one bench; stdout gets results, stderr progress.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "--help":
			fmt.Fprintln(stdout, "Usage: hindsight "+benchUsage)
			return nil
		}
	}
	err := cmdBench(ctx, args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the flag set printed its help
	}
	return err
}

// usageError marks a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// exitCode is the process's exit status for err: 2 for a mistake in the
// command line or the configuration, else 1.
func exitCode(err error) int {
	var ue *usageError
	var ce *config.Error
	var fe *runner.FlagError
	if errors.As(err, &ue) || errors.As(err, &ce) || errors.As(err, &fe) {
		return 2
	}
	return 1
}

// newFlags returns a flag set that reports errors as usage errors and prints
// its help to stderr.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: hindsight %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags, allowing them before and after positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// hindsightBinary finds the hindsight whose import the import and watch
// benches run: $HINDSIGHT_BIN, else hindsight beside this executable, else
// hindsight on PATH.
func hindsightBinary() (string, error) {
	if p := os.Getenv("HINDSIGHT_BIN"); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "hindsight")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("hindsight"); err == nil {
		return p, nil
	}
	return "", errors.New("this bench runs `hindsight import`, and no hindsight binary was found (HINDSIGHT_BIN, beside hindsight-bench, or on PATH): " +
		"build it with `go build ./cmd/hindsight` (or `make build`), or run the bench as `hindsight bench ...`")
}
