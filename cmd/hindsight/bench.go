package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// cmdBench runs the benchmarks, which live in a binary of their own
// (cmd/hindsight-bench) so that this one links none of their dependencies:
// hindsight-bench beside this executable, else on PATH, with the same
// arguments, standard streams and exit status. HINDSIGHT_BIN tells it which
// hindsight the import and watch benches run: this one.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	bin, err := benchBinary()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = os.Environ()
	if self, err := os.Executable(); err == nil {
		cmd.Env = append(cmd.Env, "HINDSIGHT_BIN="+self)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) } // let it write what it measured
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return &childExit{code: exit.ExitCode()}
	}
	if err != nil {
		return fmt.Errorf("bench: run %s: %w", bin, err)
	}
	return nil
}

// childExit is a bench that exited with a status of its own; it printed
// its error, so hindsight exits with the same status and says nothing.
type childExit struct{ code int }

func (e *childExit) Error() string {
	return fmt.Sprintf("hindsight-bench exited with status %d", e.code)
}

// benchBinary finds hindsight-bench: beside this executable, else on PATH.
func benchBinary() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "hindsight-bench")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("hindsight-bench"); err == nil {
		return p, nil
	}
	return "", cli.Usage("the benchmarks are a binary of their own, hindsight-bench, and none was found beside hindsight or on PATH: " +
		"build it with `go build ./cmd/hindsight-bench` (make build builds both) and put it beside hindsight, " +
		"or run a bench from a checkout with `go run ./cmd/hindsight-bench relevance|load|ingest|... [flags]`")
}
