package importer

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// readTwice lists and reads root twice and fails when the two reads differ,
// when two sessions share an id or a session repeats a message id: a re-run
// of an import must find exactly what the first sent, under the same ids.
// It returns the second read's sessions and problems by item path (a path
// read in error maps to no session).
func readTwice(t *testing.T, read func(string, ReadOptions) ([]Item, error), root string) (map[string][]Session, map[string][]Problem) {
	t.Helper()
	sessionsAt, probsAt := map[string][]Session{}, map[string][]Problem{}
	var runs [2][]string
	for run := range runs {
		items, err := read(root, ReadOptions{})
		if err != nil {
			t.Fatalf("read %s: %v", root, err)
		}
		sessions := map[string]bool{}
		for _, it := range items {
			s, probs, err := it.Read()
			if run == 1 {
				probsAt[it.Path] = append(probsAt[it.Path], probs...)
				if err == nil {
					sessionsAt[it.Path] = append(sessionsAt[it.Path], s)
				}
			}
			if err != nil {
				runs[run] = append(runs[run], "error: "+err.Error())
				continue
			}
			if sessions[s.ExternalID] {
				t.Errorf("%s: session id %s twice", it.Path, s.ExternalID)
			}
			sessions[s.ExternalID] = true
			ids := map[string]bool{}
			for _, m := range s.Messages {
				if ids[m.ExternalID] {
					t.Errorf("%s: message id %s twice in session %s", it.Path, m.ExternalID, s.ExternalID)
				}
				ids[m.ExternalID] = true
			}
			b, _ := json.Marshal(s)
			runs[run] = append(runs[run], string(b))
		}
	}
	if len(runs[0]) != len(runs[1]) {
		t.Fatalf("%s: %d sessions, then %d", root, len(runs[0]), len(runs[1]))
	}
	for i := range runs[0] {
		if runs[0][i] != runs[1][i] {
			t.Errorf("%s: session %d read differently the second time:\n%s\n%s", root, i, runs[0][i], runs[1][i])
		}
	}
	return sessionsAt, probsAt
}

// The default places of the readers added for issue 26, per system, with
// and without the variables that move them.
func TestImportRootsPerSystem(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	none := env()
	for _, tc := range []struct {
		name  string
		roots func(string, string, func(string) string) []string
		goos  string
		env   func(string) string
		want  string
	}{
		{"cursor", cursorRoots, "linux", none, "/h/.config/Cursor/User"},
		{"cursor", cursorRoots, "darwin", none, "/h/Library/Application Support/Cursor/User"},
		{"cursor", cursorRoots, "windows", env("APPDATA", "/h/AppData/Roaming"), "/h/AppData/Roaming/Cursor/User,/h/AppData/Roaming/Cursor/User"},
		{"cursor-agent", cursorAgentRoots, "windows", none, "/h/.cursor/projects"},
		{"vscode-copilot", vsCodeCopilotRoots, "linux", env("XDG_CONFIG_HOME", "/x"), "/x/Code/User,/h/.config/Code/User"},
		{"vscode-copilot", vsCodeCopilotRoots, "darwin", none, "/h/Library/Application Support/Code/User"},
		{"copilot", copilotRoots, "linux", none, "/h/.copilot/session-state"},
		{"copilot", copilotRoots, "windows", env("COPILOT_HOME", "/c"), "/c/session-state,/h/.copilot/session-state"},
		{"pi", piRoots, "darwin", none, "/h/.pi/agent/sessions"},
		{"pi", piRoots, "linux", env("PI_CODING_AGENT_DIR", "/p"), "/p/sessions,/h/.pi/agent/sessions"},
		{"aider", aiderRoots, "windows", none, "/h"},
		{"specstory", specStoryRoots, "linux", none, "/h"},
	} {
		var got []string
		for _, r := range tc.roots("/h", tc.goos, tc.env) {
			got = append(got, filepath.ToSlash(r))
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s on %s: %v, want %s", tc.name, tc.goos, got, tc.want)
		}
	}
	for _, name := range []string{"cursor", "cursor-agent", "aider", "specstory", "copilot", "vscode-copilot", "pi"} {
		if _, ok := AgentNamed(name); !ok {
			t.Errorf("agent %s is not registered", name)
		}
	}
}
