package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/bench/runner"
)

// TestMain removes the hindsight binary the import and watch benches
// built (hindsightBin).
func TestMain(m *testing.M) {
	code := m.Run()
	if bin := hindsightBuild.bin; bin != "" {
		os.RemoveAll(filepath.Dir(bin))
	}
	os.Exit(code)
}

// hindsightBuild builds cmd/hindsight once per test binary, for the
// benches that run `hindsight import` as a user does. It is built without
// the race detector even when this test runs under it: these tests check
// the benches' plumbing and results, and the importer they run is the one
// cmd/hindsight's import and watch tests run under the detector, in
// process; under it, the child's import of real transcripts cost ten times
// the CPU.
var hindsightBuild = &onceBuild{}

type onceBuild struct {
	once sync.Once
	bin  string
	err  error
}

// hindsightBin returns the path of a hindsight binary built from this
// checkout, failing the test when it cannot be built.
func hindsightBin(t *testing.T) string {
	t.Helper()
	b := hindsightBuild
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "hindsight-bench-test-")
		if err != nil {
			b.err = err
			return
		}
		bin := filepath.Join(dir, "hindsight")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/hindsight-dev/hindsight/cmd/hindsight").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build ./cmd/hindsight: %v\n%s", err, out)
			os.RemoveAll(dir)
			return
		}
		b.bin = bin
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// testRun is how the tests run a bench that runs hindsight as processes
// of its own: hindsightBin's hindsight, a scratch directory of t's, the
// report and result.json into out, only the JSON result on stdout.
func testRun(t *testing.T, out string) runner.Invocation {
	t.Helper()
	return runner.Invocation{Self: []string{hindsightBin(t)}, Dir: t.TempDir(), Out: out, JSON: true, Command: "test"}
}

// untilDeadline returns a context that ends a minute before the test's
// deadline (go test -timeout), or never without one: a guard against a
// hang, not a speed check. The benches take what a loaded machine needs (the
// relevance slice's two runs and sweeps under -race took more than 2
// minutes on 2 cores at load average 15, the semantic one more than 5 beside
// the other benches); a hang still fails, naming the bench, before the
// binary's timeout panics.
func untilDeadline(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	if d, ok := t.Deadline(); ok {
		return context.WithDeadline(context.Background(), d.Add(-time.Minute))
	}
	return context.WithCancel(context.Background())
}

// transcriptsSample returns a transcripts directory holding, of every
// assistant in src, the files of its smallest repository with at least
// 16 KB of history (a smaller one may hold no message): the bench's real
// runs, each assistant's importer on real files, at a fraction of the whole
// set's cost. Its manifest lists those files; its assistant directories
// are src's, linked.
func transcriptsSample(t *testing.T, src string) string {
	t.Helper()
	files, err := bench.ReadTranscripts(src)
	if err != nil {
		t.Fatal(err)
	}
	type repo struct{ agent, name string }
	size := map[repo]int64{}
	for _, f := range files {
		size[repo{f.Agent, f.Repo}] += f.Bytes
	}
	pick := map[string]repo{}
	for r, n := range size {
		if p, ok := pick[r.agent]; n >= 16<<10 && (!ok || n < size[p] || n == size[p] && r.name < p.name) {
			pick[r.agent] = r
		}
	}
	dir := t.TempDir()
	var manifest strings.Builder
	for _, f := range files {
		if pick[f.Agent] != (repo{f.Agent, f.Repo}) {
			continue
		}
		fmt.Fprintf(&manifest, "%s\t%s\t%s\t%s\t\t%d\n", f.Agent, f.Name, f.Repo, f.Path, f.Bytes)
		if _, err := os.Lstat(filepath.Join(dir, f.Agent)); err != nil {
			if err := os.Symlink(filepath.Join(src, f.Agent), filepath.Join(dir, f.Agent)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for agent := range size {
		if _, ok := pick[agent.agent]; !ok {
			t.Fatalf("transcripts: %s has no repository with 16 KB of history", agent.agent)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.tsv"), []byte(manifest.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
