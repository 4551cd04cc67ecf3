package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/api"
)

// The state file round-trips, is replaced whole (no temporary file left),
// and one this version cannot read stops the watcher rather than starting
// over (which would send every session again).
func TestWatchStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "import-state.json")
	st, err := loadWatchState(path)
	if err != nil || len(st.Files) != 0 {
		t.Fatalf("a missing state: %v %+v", err, st)
	}
	at := time.Date(2026, 5, 2, 10, 0, 1, 500, time.UTC)
	st.Files["/h/a.jsonl"] = &fileState{Agent: "claude-code", Dev: 2049, Inode: 7, Offset: 120, Line: 4, Size: 130, MTime: at}
	st.Snapshots["/h/opencode.db"] = &snapshotState{Agent: "opencode", Stamp: "1@2", Sessions: map[string]string{"ses_1": "ab"}}
	for range 2 {
		if err := st.save(path); err != nil {
			t.Fatal(err)
		}
	}
	got, err := loadWatchState(path)
	if err != nil {
		t.Fatal(err)
	}
	if f := got.Files["/h/a.jsonl"]; f == nil || *f != *st.Files["/h/a.jsonl"] || got.Snapshots["/h/opencode.db"].Sessions["ses_1"] != "ab" {
		t.Errorf("round trip: %+v %+v", got.Files, got.Snapshots)
	}
	es, _ := os.ReadDir(filepath.Dir(path))
	if len(es) != 1 {
		t.Errorf("the state's directory holds %d files, want only the state", len(es))
	}
	for _, bad := range []string{`{"version": 1, "files": `, `{"version": 99}`} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, err := loadWatchState(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("state %q: %v, want an error naming the file", bad, err)
		}
	}
	if p := DefaultWatchState("/home/u", func(string) string { return "" }); p != "/home/u/.local/state/hindsight/import-state.json" {
		t.Errorf("default state = %s", p)
	}
}

// A message stored while it was being written (Gemini rewrites a message
// under its id as it streams) is sent again once its text has grown; an
// equal or unrelated stored text is left alone.
func TestMissingResendsGrownText(t *testing.T) {
	stored := func(id, text string) api.Message {
		return api.Message{ExternalID: id, Role: "assistant", Parts: api.Parts{[]byte(`{"type":"text","content":"` + text + `"}`)}}
	}
	local := func(id, text string) Message {
		return Message{ExternalID: id, Role: "assistant", Parts: []Part{{Type: PartText, Content: text}}}
	}
	got := missing(
		[]Message{local("a", "The answer is"), local("b", "The answer is 42."), local("c", "[REDACTED] key"), local("d", "")},
		[]api.Message{stored("a", "The answer is"), stored("b", "The answer is"), stored("c", "sk-123 key"), stored("d", "")})
	if len(got) != 1 || got[0].ExternalID != "b" {
		t.Errorf("missing = %v, want only b (its text grew)", got)
	}
}

// Digests tell every field the server stores apart, and only those.
func TestDigests(t *testing.T) {
	base := Message{ExternalID: "m", Role: "assistant", Parts: []Part{{Type: PartText, Content: "x"}}, CreatedAt: time.UnixMilli(5)}
	d := messageDigest(&base)
	for name, change := range map[string]func(m *Message){
		"text":     func(m *Message) { m.Parts = []Part{{Type: PartText, Content: "y"}} },
		"result":   func(m *Message) { m.Parts = append(m.Parts, Part{Type: PartToolResult, Content: "x"}) },
		"tokens":   func(m *Message) { m.PromptTokens = ptr(int64(3)) },
		"subagent": func(m *Message) { m.SubAgent = &SubAgent{ID: "a"} },
		"split":    func(m *Message) { m.Parts = []Part{{Type: PartText, Content: ""}, {Type: PartText, Content: "x"}} },
	} {
		m := base
		m.Parts = append([]Part(nil), base.Parts...)
		change(&m)
		if messageDigest(&m) == d {
			t.Errorf("a change of %s keeps the digest", name)
		}
	}
	again := base
	if messageDigest(&again) != d {
		t.Error("the same message digests differently")
	}
}
