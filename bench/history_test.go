package bench

import (
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// treeHash hashes every file under dir, names and contents.
func treeHash(t *testing.T, dir string) [32]byte {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		h.Write([]byte(rel))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// The same seed writes the same history, byte for byte, of about the size
// asked for.
func TestHistoryFormatsDeterministic(t *testing.T) {
	for _, f := range HistoryFormats() {
		a, b := t.TempDir(), t.TempDir()
		sa, err := f.Write(a, 300<<10, 7)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := f.Write(b, 300<<10, 7)
		if err != nil {
			t.Fatal(err)
		}
		if sa != sb || treeHash(t, a) != treeHash(t, b) {
			t.Errorf("%s: two histories of seed 7 differ: %+v, %+v", f.Agent, sa, sb)
		}
		if sa.Bytes < 300<<10 || sa.Sessions == 0 || sa.Messages < sa.Sessions {
			t.Errorf("%s: wrote %+v for 300 KB", f.Agent, sa)
		}
	}
}
