package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/bench/runner"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
)

// TestBenchNodes runs a tiny bench nodes (a few dozen sessions; a hindsight
// built from this checkout as every node, hindsightBin) and checks the
// result's shape and what holds whatever the machine's speed: every run
// and query counted, the ratios those of the medians, and the killed
// node's claimed entries indexed by the others only after their lease ran
// out. It waits out one lease (30 s) doing nothing. Without PostgreSQL or
// the pinned weaviate-server it skips, or fails under
// HINDSIGHT_REQUIRE_POSTGRES / HINDSIGHT_REQUIRE_WEAVIATE.
func TestBenchNodes(t *testing.T) {
	if _, err := pgtest.Binaries(); err != nil {
		if os.Getenv(pgtest.EnvRequire) == "1" {
			t.Fatalf("%s=1 but: %v", pgtest.EnvRequire, err)
		}
		t.Skipf("SKIPPING: bench nodes needs PostgreSQL: %v", err)
	}
	if _, err := weaviatetest.Binary(); err != nil {
		if os.Getenv(weaviatetest.EnvRequire) != "" {
			t.Fatalf("%s set but: %v", weaviatetest.EnvRequire, err)
		}
		t.Skipf("SKIPPING: bench nodes needs the pinned weaviate-server (make weaviate): %v", err)
	}
	t.Parallel()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	c := runner.NodesConfig{
		Rounds: 1, Ingest: bench.IngestOptions{BatchMessages: 600, Singles: 60, Concurrency: 4, Seed: 3},
		CorpusMessages: 600, Queries: 30, SearchConcurrency: 2, SearchRounds: 1, BulkSessions: 2,
		Invocation: testRun(t, out),
	}
	if err := runner.Nodes(ctx, c, &stdout, &stderr); err != nil {
		t.Fatalf("bench nodes: %v\n%s", err, stderr.String())
	}
	var res runner.NodesResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("stdout is not one JSON result: %v\n%s", err, stdout.String())
	}
	positive := func(name string, v float64) {
		t.Helper()
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("%s = %v, want a positive number", name, v)
		}
	}

	in := res.Ingest
	if in == nil || len(in.Runs) != 2 || in.Runs[0].Store != "bbolt" || in.Runs[1].Store != "postgres" {
		t.Fatalf("ingest: %+v, want one bbolt run, then one PostgreSQL run", in)
	}
	// Every request is counted, accepted or failed (PostgreSQL refuses
	// some concurrent writes after its serialization retries: see
	// bench/results/nodes), and a run without failures accepted everything.
	for _, run := range in.Runs {
		bt, sg := run.Result.Batch, run.Result.Single
		if bt.Requests+bt.Failed != 2 || sg.Requests+sg.Failed != 60 || bt.Messages > 600 || (bt.Failed == 0) != (bt.Messages == 600) ||
			sg.Messages != sg.Requests || (run.Store == "bbolt" && bt.Failed+sg.Failed > 0) {
			t.Errorf("%s run: batch %d accepted (%d messages) + %d failed, singles %d + %d failed; want 2 batches of 600 messages, 60 singles",
				run.Store, bt.Requests, bt.Messages, bt.Failed, sg.Requests, sg.Failed)
		}
		if bt.Failed+sg.Failed > 0 {
			t.Logf("%s run: %d of 2 batches and %d of 60 singles refused; the node logged %q", run.Store, bt.Failed, sg.Failed, run.Errors)
		}
	}
	positive("postgres batch msgs/s", in.Postgres.BatchMsgsPS)
	positive("bbolt singles/s", in.Bbolt.SingleSyncPS)
	if in.Postgres.BatchMsgsPS != in.Runs[1].Result.Batch.MessagesPS || in.BatchRatio != in.Postgres.BatchMsgsPS/in.Bbolt.BatchMsgsPS ||
		in.SingleRatio != in.Postgres.SingleSyncPS/in.Bbolt.SingleSyncPS {
		t.Errorf("ingest figures %+v are not the runs' medians and their ratios", in)
	}

	s := res.Search
	if s == nil || len(s.Ways) != 3 || s.Ways[1].Nodes != 3 || s.Sessions == 0 {
		t.Fatalf("search: %+v, want three ways over a corpus", s)
	}
	for _, w := range s.Ways {
		if w.N != 30 || !(w.P50ms > 0) || w.P99ms < w.P50ms {
			t.Errorf("search way %+v: want 30 queries, 0 < p50 <= p99", w)
		}
	}
	positive("spread/one p99", s.P99Ratio)

	tk := res.Takeover
	if tk == nil {
		t.Fatal("no takeover result")
	}
	if tk.Claimed == 0 || tk.Sessions > tk.Claimed || tk.Attempts < 1 || tk.BulkBatches == 0 {
		t.Errorf("takeover %+v: want claims held at the kill", tk)
	}
	// Another node may take an entry only once its lease has run out, and
	// an entry indexed has had its claim dropped. A session may be found
	// sooner: the killed node may have written it to the shared index
	// before it died, with only its outbox entry left to clear.
	if tk.LeaseS != 30 || tk.LeaseLeftS > tk.LeaseS || tk.IndexedS < tk.LeaseLeftS || tk.TakenS > tk.IndexedS || tk.SearchableS <= 0 {
		t.Errorf("takeover %+v: want lease left <= lease, taken <= indexed, indexed only after the lease left, every session found", tk)
	}

	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Ingest: PostgreSQL against bbolt", "## Search: one node, and spread over three", "## Takeover", "- commit: "} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}
}

func TestBenchNodesFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--figures", "takeover", "--rounds", "5"}, true},
		{[]string{"--figures", "ingest,nope"}, false},
		{[]string{"--queries", "0"}, false},
		{[]string{"extra"}, false},
	} {
		c, err := parseBenchNodes(tc.args, &bytes.Buffer{})
		if (err == nil) != tc.ok {
			t.Errorf("bench nodes %q: %v", tc.args, err)
		}
		if err == nil && len(c.Figures) == 0 {
			t.Errorf("bench nodes %q: no figures", tc.args)
		}
	}
}
