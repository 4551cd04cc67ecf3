package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
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
// benches that run `hindsight import` as a user does (with the race
// detector when this test runs under it; the packages come from the
// build cache this test's own build filled).
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
		args := []string{"build", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/hindsight-dev/hindsight/cmd/hindsight")...).CombinedOutput()
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

// transcriptsDir finds the real transcripts, skipping loudly when they are
// missing (failing under HINDSIGHT_REQUIRE_DATASETS).
func transcriptsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HINDSIGHT_DATASETS")
	if dir == "" {
		wd, _ := os.Getwd()
		for root := wd; filepath.Dir(root) != root; root = filepath.Dir(root) {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				dir = filepath.Join(root, "..", "shared", "datasets")
				break
			}
		}
	}
	dir = filepath.Join(dir, "transcripts")
	if _, err := os.Stat(filepath.Join(dir, "manifest.tsv")); err != nil {
		msg := "SKIPPING: no transcripts/manifest.tsv under " + filepath.Dir(dir) + " (set HINDSIGHT_DATASETS to the directory holding it)"
		if os.Getenv("HINDSIGHT_REQUIRE_DATASETS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}
