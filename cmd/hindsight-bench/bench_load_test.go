package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchLoadGrow grows a small generated data set in two steps through
// the API and checks the measurements, the growth exponents and the report.
// It asserts shapes and bounds, never timings.
func TestBenchLoadGrow(t *testing.T) {
	t.Parallel()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"load", "--grow", "60,120", "--messages", "6", "--users", "3", "--queries", "20",
		"--concurrency", "4", "--out", out, "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench load: %v\n%s", err, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("--json should be quiet, stderr has:\n%s", stderr.String())
	}
	var r struct {
		Modes []string `json:"modes"`
		Steps []struct {
			Sessions     int     `json:"sessions"`
			Messages     int     `json:"messages"`
			IngestMsgsPS float64 `json:"ingest_messages_per_s"`
			LagP50ms     float64 `json:"index_lag_p50_ms"`
			LagP99ms     float64 `json:"index_lag_p99_ms"`
			Query        map[string]struct {
				P50ms float64 `json:"p50_ms"`
				P99ms float64 `json:"p99_ms"`
				CPUms float64 `json:"cpu_ms_per_query"`
			} `json:"query"`
			RebuildPS       float64 `json:"rebuild_sessions_per_s"`
			RawBlevePS      float64 `json:"raw_bleve_sessions_per_s"`
			RebuildToRaw    float64 `json:"rebuild_to_raw_bleve"`
			HeapBytes       uint64  `json:"heap_bytes"`
			BytesPerSession float64 `json:"disk_bytes_per_session"`
			PerSession      struct {
				Raw          float64 `json:"raw_payload"`
				Text         float64 `json:"searchable_text"`
				Records      float64 `json:"records"`
				RecordsToRaw float64 `json:"records_to_raw"`
				IndexToText  float64 `json:"index_to_text"`
			} `json:"bytes_per_session"`
		} `json:"steps"`
		Growth map[string]float64 `json:"growth_exponents"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	if len(r.Steps) != 2 || r.Steps[0].Sessions != 60 || r.Steps[1].Sessions != 120 {
		t.Fatalf("steps = %+v, want 60 then 120 sessions", r.Steps)
	}
	for _, s := range r.Steps {
		if s.Messages < 2*s.Sessions || s.IngestMsgsPS <= 0 || s.LagP99ms < s.LagP50ms || s.RebuildPS <= 0 || s.HeapBytes == 0 || s.BytesPerSession <= 0 {
			t.Errorf("step %d: implausible %+v", s.Sessions, s)
		}
		// The ceiling is measured next to the rebuild, and the ratio is theirs.
		if s.RawBlevePS <= 0 || math.Abs(s.RebuildToRaw-s.RebuildPS/s.RawBlevePS) > 1e-9 {
			t.Errorf("step %d: raw bleve %.0f sessions/s, ratio %.3f, rebuild %.0f", s.Sessions, s.RawBlevePS, s.RebuildToRaw, s.RebuildPS)
		}
		// The searchable text is part of what was synced; the ratios are
		// the per-session sizes' quotients.
		if b := s.PerSession; b.Text <= 0 || b.Raw <= b.Text || b.RecordsToRaw <= 0 || b.IndexToText <= 0 ||
			math.Abs(b.RecordsToRaw-b.Records/b.Raw) > 1e-9 {
			t.Errorf("step %d: bytes per session %+v", s.Sessions, b)
		}
		for _, path := range []string{"fulltext/first", "fulltext/inprocess", "fulltext/http"} {
			if q, ok := s.Query[path]; !ok || q.P50ms <= 0 || q.P99ms < q.P50ms || q.CPUms <= 0 {
				t.Errorf("step %d: query %s = %+v", s.Sessions, path, q)
			}
		}
	}
	if r.Steps[1].Messages <= r.Steps[0].Messages {
		t.Errorf("messages did not grow: %d then %d", r.Steps[0].Messages, r.Steps[1].Messages)
	}
	if _, ok := r.Growth["fulltext query p50"]; !ok {
		t.Errorf("growth exponents = %v, want one for fulltext query p50", r.Growth)
	}
	checkFiles(t, out, "report.md", "result.json", "growth_latency.svg", "growth_memory.svg", "growth_ingest.svg")
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "| 120 |") || !strings.Contains(string(md), "cost ∝ sessions^b") || !strings.Contains(string(md), "raw Bleve sessions/s") {
		t.Errorf("report.md lacks the steps or the growth table:\n%s", md)
	}

	// Same seed, same traffic: a second run ingests the same number of
	// messages.
	stdout.Reset()
	if err := run(ctx, []string{"load", "--sessions", "60", "--messages", "6", "--users", "3", "--queries", "5",
		"--skip-rebuild", "--json"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), `"messages":`+itoa(r.Steps[0].Messages)+",") {
		t.Errorf("second run of seed 1 ingested another number of messages than %d:\n%s", r.Steps[0].Messages, stdout.String())
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestBenchIngestReportsIndexLag runs a small ingest bench and checks that
// each phase reports throughput, its raw ceiling and the index lag of its
// writes, which only the indexer can produce. Shapes, never timings.
func TestBenchIngestReportsIndexLag(t *testing.T) {
	t.Parallel()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"ingest", "--batch-messages", "1200", "--batch-size", "200", "--singles", "300",
		"--concurrency", "4", "--dir", t.TempDir(), "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench ingest: %v\n%s", err, stderr.String())
	}
	var r map[string]struct {
		Messages     int     `json:"messages"`
		MessagesPS   float64 `json:"messages_per_s"`
		CeilingPS    float64 `json:"raw_bbolt_ceiling_per_s"`
		LagP50ms     float64 `json:"index_lag_p50_ms"`
		LagP99ms     float64 `json:"index_lag_p99_ms"`
		LagMaxms     float64 `json:"index_lag_max_ms"`
		IndexedAfter float64 `json:"indexed_s_after_phase"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout.String())
	}
	for _, phase := range []string{"batch", "single"} {
		p, ok := r[phase]
		if !ok {
			t.Fatalf("no %q phase in %s", phase, stdout.String())
		}
		if p.Messages == 0 || p.MessagesPS <= 0 || p.CeilingPS <= 0 {
			t.Errorf("%s: implausible throughput %+v", phase, p)
		}
		// Indexing takes time, so a zero lag would mean it was not measured.
		if p.LagP50ms <= 0 || p.LagP99ms < p.LagP50ms || p.LagMaxms < p.LagP99ms || p.IndexedAfter <= 0 {
			t.Errorf("%s: implausible index lag %+v", phase, p)
		}
	}
}
