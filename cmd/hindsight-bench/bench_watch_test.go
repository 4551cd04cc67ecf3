package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/bench/runner"
)

// TestBenchWatch runs a small bench watch with a hindsight built from this
// checkout as the hindsight whose import --watch it runs (hindsightBin).
// It asserts that every appended message was found and the shape of the
// result, never a delay.
func TestBenchWatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	c := runner.WatchConfig{Messages: 24, PerAgent: 2, MinInterval: 10 * time.Millisecond, MaxInterval: 60 * time.Millisecond, Seed: 5,
		Invocation: testRun(t, out)}
	if err := runner.Watch(ctx, c, &stdout, &stderr); err != nil {
		t.Fatalf("bench watch: %v\n%s", err, stderr.String())
	}
	var res bench.WatchResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not one JSON result: %v\n%s", err, stdout.String())
	}
	if res.Messages != 24 || res.Missed != 0 || res.PerAgent["claude-code"].N+res.PerAgent["codex"].N != 24 || res.P50ms <= 0 || res.P99ms < res.P50ms {
		t.Errorf("result %+v: want 24 messages, all found", res)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(report), "`import --watch`") || !strings.Contains(string(report), "commit: ") {
		t.Errorf("report.md: %v\n%s", err, report)
	}
}

func TestBenchWatchFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--messages", "500", "--interval", "50ms-1s"}, true},
		{[]string{"--interval", "fast"}, false},
		{[]string{"--interval", "2s-1s"}, false},
		{[]string{"--messages", "0"}, false},
		{[]string{"extra"}, false},
	} {
		if _, err := parseBenchWatch(tc.args, &bytes.Buffer{}); (err == nil) != tc.ok {
			t.Errorf("bench watch %q: %v", tc.args, err)
		}
	}
}
