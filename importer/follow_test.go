package importer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rebuildHomes lays the real transcripts of agent out as they were found:
// one home directory per repository, each file at its original path.
func rebuildHomes(t *testing.T, agent string) []string {
	t.Helper()
	src := needTranscripts(t, agent)
	base := t.TempDir()
	seen := map[string]bool{}
	var homes []string
	for _, row := range manifestRows(t, src, agent) {
		home := filepath.Join(base, strings.ReplaceAll(row.repo, "/", "__"))
		if !seen[home] {
			seen[home] = true
			homes = append(homes, home)
		}
		b, err := os.ReadFile(filepath.Join(src, row.file))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(home, filepath.FromSlash(row.path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return homes
}

// feedGrowing feeds a followed session's files to a new tail as a follower
// would see them grow: each file in random chunks (cut anywhere, mid-line
// included), the lines complete at each cut, announcing the file each time.
func feedGrowing(t *testing.T, spec *followSpec, rng *rand.Rand) (Session, []Problem) {
	t.Helper()
	tl := spec.tail()
	var probs []Problem
	for _, f := range spec.files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		off, line, cut := 0, 1, 0
		for off < len(data) {
			cut += 1 + rng.IntN(min(len(data)-cut, 8192)) // the writer has written up to cut
			if tl.file != nil {
				tl.file(f)
			}
			n, lines, err := eachLine(bytes.NewReader(data[off:cut]), line, cut == len(data), tl.line)
			if err != nil {
				t.Fatal(err)
			}
			off += int(n)
			line += lines
			if cut == len(data) && off < len(data) {
				t.Fatalf("%s: %d bytes left after the final read", f.path, len(data)-off)
			}
			probs = append(probs, tl.problems()...)
		}
	}
	return tl.finish(), probs
}

// Following a file that grows in arbitrary pieces reads the same session an
// import of the whole file reads (seeded, over the real transcripts of
// every assistant whose sessions are followed a line at a time).
func TestFollowMatchesImport(t *testing.T) {
	for _, name := range []string{"claude-code", "codex", "gemini", "qwen", "copilot"} {
		t.Run(name, func(t *testing.T) {
			a, _ := AgentNamed(name)
			rng := rand.New(rand.NewPCG(26, 3))
			followed := 0
			for _, home := range rebuildHomes(t, name) {
				root := ""
				for _, r := range a.Roots(home, "linux", func(string) string { return "" }) {
					if isDir(r) {
						root = r
						break
					}
				}
				if root == "" {
					continue
				}
				items, err := a.Read(root, ReadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range items {
					want, wantProbs, err := it.Read()
					if err != nil {
						t.Fatalf("%s: %v", it.Path, err)
					}
					if it.follow == nil {
						continue // a legacy JSON document
					}
					followed++
					got, gotProbs := feedGrowing(t, it.follow, rng)
					if name == "claude-code" {
						want.Messages = withoutOrphans(want.Messages, got.Messages, want.ExternalID)
					}
					if g, w := asJSONString(t, got), asJSONString(t, want); g != w {
						t.Errorf("%s: followed in pieces\n got %.2000s\nwant %.2000s", it.Path, g, w)
					}
					if len(gotProbs) != len(wantProbs) {
						t.Errorf("%s: %d problems followed, %d imported: %v / %v", it.Path, len(gotProbs), len(wantProbs), gotProbs, wantProbs)
					}
				}
			}
			if followed == 0 {
				t.Fatalf("no %s session is followed a line at a time", name)
			}
		})
	}
}

// withoutOrphans drops from an import's messages the externalised tool
// outputs no line claimed (a follower leaves them to the import: a line to
// come may still claim them).
func withoutOrphans(want, got []Message, sid string) []Message {
	have := map[string]bool{}
	for _, m := range got {
		have[m.ExternalID] = true
	}
	var out []Message
	for _, m := range want {
		if !have[m.ExternalID] && m.Role == "tool" && strings.HasPrefix(m.ExternalID, sid+"-result-") {
			continue
		}
		out = append(out, m)
	}
	return out
}

func asJSONString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
