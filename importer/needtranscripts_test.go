package importer

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// needTranscripts returns the directory of the shared real transcripts of
// one agent (transcripts/<agent> under HINDSIGHT_DATASETS, else
// ../shared/datasets beside the repository). A missing directory skips the
// test loudly, and fails it when HINDSIGHT_REQUIRE_DATASETS is set, as make
// test does.
func needTranscripts(t *testing.T, agent string) string {
	t.Helper()
	root := cmp.Or(os.Getenv("HINDSIGHT_DATASETS"), filepath.Join("..", "..", "shared", "datasets"))
	dir := filepath.Join(root, "transcripts", agent)
	if _, err := os.Stat(dir); err != nil {
		msg := fmt.Sprintf("SKIPPING: real %s transcripts not available (%v); set HINDSIGHT_DATASETS to the directory holding transcripts/", agent, err)
		if os.Getenv("HINDSIGHT_REQUIRE_DATASETS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}
