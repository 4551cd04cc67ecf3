package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/bench/runner"
)

// TestBenchLongSession runs a small bench longsession against a hindsight
// built from this checkout, as a process of its own. It asserts the
// plumbing and the shape of the result (the session grown, every append
// made, live messages found, a resident set read), never a delay or a
// size of memory.
func TestBenchLongSession(t *testing.T) {
	t.Parallel()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	c := runner.LongSessionConfig{LongSessionOptions: bench.LongSessionOptions{Size: 2 << 20, Appends: 3 * time.Second,
		Settle: time.Second, MinBytes: 2048, MaxBytes: 8192, Seed: 3},
		Invocation: testRun(t, out)}
	if err := runner.LongSession(ctx, c, &stdout, &stderr); err != nil {
		t.Fatalf("bench longsession: %v\n%s", err, stderr.String())
	}
	var res bench.LongSessionResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not one JSON result: %v\n%s", err, stdout.String())
	}
	if res.SizeBytes < 2<<20 || res.Appended < 2 || res.EndBytes <= res.SizeBytes || res.Live.N < 1 || res.Live.Missed != 0 {
		t.Errorf("result %+v: want the session grown to 2 MiB, appends made, live messages found", res)
	}
	if _, err := os.Stat("/proc/self/status"); err == nil && (res.PeakRSS <= 0 || res.GrowPeakRSS <= 0 || res.StartRSS <= 0) {
		t.Errorf("result %+v: no resident set read on Linux", res)
	}
	if _, err := os.Stat(filepath.Join(out, "result.json")); err != nil {
		t.Errorf("result.json: %v", err)
	}
}

func TestBenchLongSessionFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--size", "20MB", "--appends", "30s", "--message", "1KB-4KB"}, true},
		{[]string{"--size", "lots"}, false},
		{[]string{"--message", "4KB-1KB"}, false},
		{[]string{"--message", "1KB-1GB"}, false},
		{[]string{"--appends", "10ms"}, false},
		{[]string{"extra"}, false},
	} {
		if _, err := parseBenchLongSession(tc.args, &bytes.Buffer{}); (err == nil) != tc.ok {
			t.Errorf("bench longsession %q: %v", tc.args, err)
		}
	}
}
