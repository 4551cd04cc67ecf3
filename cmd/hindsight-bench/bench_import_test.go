package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/bench/runner"
	"github.com/hindsight-dev/hindsight/internal/datasetstest"
)

// TestBenchImport runs bench import on a small generated history of every
// format and on real transcripts of every assistant (transcriptsSample: that
// every real transcript imports whole is TestImportRealTranscripts' part, in
// cmd/hindsight), with a hindsight built from this checkout as the hindsight
// it runs (hindsightBin). It asserts the shape of the result and that every
// generated message arrived, never a timing.
func TestBenchImport(t *testing.T) {
	t.Parallel()
	src := transcriptsSample(t, filepath.Dir(datasetstest.Path(t, "transcripts", "manifest.tsv")))
	ctx, cancel := untilDeadline(t)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	c := runner.ImportConfig{Size: 512 << 10, Seed: 3, Transcripts: src, Invocation: testRun(t, out)}
	if err := runner.Import(ctx, c, &stdout, &stderr); err != nil {
		t.Fatalf("bench import: %v\n%s", err, stderr.String())
	}
	var res bench.ImportResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not one JSON result: %v\n%s", err, stdout.String())
	}
	kinds := map[string]bool{}
	for _, r := range res.Runs {
		kinds[r.Kind+" "+r.Agent] = true
		if r.Note != "" && r.Kind == "generated" {
			t.Errorf("%s %s: %s", r.Kind, r.Agent, r.Note)
		}
		if r.Note != "" {
			continue // a real agent without an importer in this build
		}
		if r.Sessions == 0 || r.Messages == 0 || r.Bytes == 0 || r.ParseMBps <= 0 || r.ImportMBps <= 0 || r.ImportSeconds <= 0 {
			t.Errorf("run %+v lacks a measurement", r)
		}
		if runtime.GOOS == "linux" && (r.PeakRSSBytes <= 0 || r.PeakRSSBytes > 4<<30) { // read from /proc
			t.Errorf("%s %s: peak RSS %d bytes is not a measurement", r.Kind, r.Agent, r.PeakRSSBytes)
		}
	}
	for _, want := range []string{"generated claude-code", "generated codex", "real claude-code", "real codex", "real gemini", "real qwen"} {
		if !kinds[want] {
			t.Errorf("no %s run in %v", want, kinds)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(report), "| generated codex |") || !strings.Contains(string(report), "commit: ") {
		t.Errorf("report.md: %v\n%s", err, report)
	}
}

func TestBenchImportFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--size", "200MB", "--transcripts", "none"}, true},
		{[]string{"--size", "1.5GB", "--formats", "codex", "--transcripts", "none"}, true},
		{[]string{"--size", "lots"}, false},
		{[]string{"--formats", "notepad"}, false},
		{[]string{"--transcripts", t.TempDir()}, false},
		{[]string{"extra"}, false},
	} {
		c, err := parseBenchImport(tc.args, &bytes.Buffer{})
		if (err == nil) != tc.ok {
			t.Errorf("bench import %q: %v", tc.args, err)
		}
		if tc.ok && c.Transcripts != "" {
			t.Errorf("bench import %q: transcripts %q, want none", tc.args, c.Transcripts)
		}
	}
	if n, err := parseBytes("1.5GB"); err != nil || n != 3<<29 {
		t.Errorf("parseBytes(1.5GB) = %d, %v", n, err)
	}
}
