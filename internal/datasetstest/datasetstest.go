// Package datasetstest finds the shared datasets for tests (SciFact, CoSQA,
// the coding sessions, the real transcripts): under HINDSIGHT_DATASETS,
// else ../shared/datasets beside the repository. A missing one skips the
// test loudly, or fails it under HINDSIGHT_REQUIRE_DATASETS, as make test
// runs.
package datasetstest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The variables the package reads.
const (
	EnvDir     = "HINDSIGHT_DATASETS"
	EnvRequire = "HINDSIGHT_REQUIRE_DATASETS"
)

// Dir is the datasets' directory: EnvDir, else ../shared/datasets beside
// the repository root (the nearest directory with a go.mod at or above
// the working directory); "" when there is neither.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for root := wd; ; root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return filepath.Join(root, "..", "shared", "datasets")
		}
		if filepath.Dir(root) == root {
			return ""
		}
	}
}

// Path returns the path of elem (a dataset, or a file in one) under Dir.
// When nothing is there it skips t, saying so, or fails t when EnvRequire
// is set.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	dir := Dir()
	p := filepath.Join(append([]string{dir}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		msg := fmt.Sprintf("SKIPPING: no %s under %q (%v); set %s to the directory holding it", filepath.Join(elem...), dir, err, EnvDir)
		if os.Getenv(EnvRequire) != "" {
			t.Fatal(msg)
		} else {
			t.Skip(msg)
		}
	}
	return p
}
