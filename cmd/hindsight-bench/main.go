// Command hindsight-bench runs Hindsight's benchmarks (relevance, load,
// ingest, nodes, redact, import, watch, embed; see bench/README.md). It is
// a binary of its own so that the server, `hindsight`, links none of what
// only the benchmarks need (SQLite for the FTS5 peer, the charts, the
// Weaviate and PostgreSQL launchers). `hindsight bench ARGS` runs it, found beside `hindsight` or on
// PATH; `go run ./cmd/hindsight-bench ARGS` runs it from a checkout.
//
// The import and watch benches run `hindsight import` as a user would, and
// the nodes bench runs `hindsight serve` processes: the
// hindsight binary named by HINDSIGHT_BIN (which `hindsight bench` sets to
// itself), else the one beside this executable, else the one on PATH.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
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

// exitCode is the process's exit status for err: 2 for a mistake in the
// command line or the configuration, else 1.
func exitCode(err error) int {
	var ce *config.Error
	var fe *runner.FlagError
	if cli.IsUsage(err) || errors.As(err, &ce) || errors.As(err, &fe) {
		return 2
	}
	return 1
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
	return "", errors.New("this bench runs hindsight (`hindsight import`, or `hindsight serve` for bench nodes), and no hindsight binary was found (HINDSIGHT_BIN, beside hindsight-bench, or on PATH): " +
		"build it with `go build ./cmd/hindsight` (or `make build`), or run the bench as `hindsight bench ...`")
}
