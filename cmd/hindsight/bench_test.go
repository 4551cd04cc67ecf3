package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hindsight bench runs hindsight-bench with its arguments and streams,
// tells it which hindsight it is (HINDSIGHT_BIN), and exits with its
// status.
func TestBenchRunsHindsightBench(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"args: $*\"\necho \"bin: $HINDSIGHT_BIN\"\necho oops >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "hindsight-bench"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "load", "--sessions", "5"}, &stdout, &stderr)
	if err == nil || exitCode(err) != 3 {
		t.Fatalf("err = %v (exit %d), want hindsight-bench's status 3", err, exitCode(err))
	}
	self, _ := os.Executable()
	if got := stdout.String(); !strings.Contains(got, "args: load --sessions 5\n") || !strings.Contains(got, "bin: "+self+"\n") {
		t.Errorf("stdout %q: want the arguments and HINDSIGHT_BIN=%s", got, self)
	}
	if stderr.String() != "oops\n" {
		t.Errorf("stderr %q, want hindsight-bench's", stderr.String())
	}
}

// Without hindsight-bench, hindsight bench is a usage error that says how
// to build it.
func TestBenchWithoutHindsightBench(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := run(context.Background(), []string{"bench", "relevance"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "go build ./cmd/hindsight-bench") ||
		!strings.Contains(err.Error(), "go run ./cmd/hindsight-bench") {
		t.Fatalf("err = %v, want a usage error saying how to build hindsight-bench", err)
	}
}
