package datasetstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Skip and Fatal record what they were
// told instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Skip(args ...any)  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any) { r.failed = fmt.Sprint(args...) }

func TestPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "transcripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "transcripts", "manifest.tsv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, dir)
	for _, c := range []struct {
		name    string
		require string
		elem    []string
		skipped bool
		failed  bool
	}{
		{"there", "", []string{"transcripts", "manifest.tsv"}, false, false},
		{"there, required", "1", []string{"transcripts"}, false, false},
		{"missing", "", []string{"scifact-train"}, true, false},
		{"missing, required", "1", []string{"scifact-train", "queries.jsonl"}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvRequire, c.require)
			r := &recorder{TB: t}
			got := Path(r, c.elem...)
			if want := filepath.Join(append([]string{dir}, c.elem...)...); got != want {
				t.Errorf("Path = %q, want %q", got, want)
			}
			if (r.skipped != "") != c.skipped || (r.failed != "") != c.failed {
				t.Errorf("skipped %q, failed %q; want skipped %v, failed %v", r.skipped, r.failed, c.skipped, c.failed)
			}
			for _, msg := range []string{r.skipped, r.failed} {
				if msg != "" && !strings.Contains(msg, filepath.Join(c.elem...)) {
					t.Errorf("the message %q does not name what is missing", msg)
				}
			}
		})
	}
}

// TestDirBesideRepository: without EnvDir the datasets are looked for
// beside the repository root, found from a package's directory.
func TestDirBesideRepository(t *testing.T) {
	t.Setenv(EnvDir, "")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Dir(), filepath.Join(root, "..", "shared", "datasets"); got != want {
		t.Errorf("Dir = %q, want %q", got, want)
	}
}
