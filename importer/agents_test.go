package importer

import (
	"path/filepath"
	"strings"
	"testing"
)

// Each agent's default places, on every system and with the variables that
// move them.
func TestImportAgentRoots(t *testing.T) {
	home := filepath.Join("/", "home", "u")
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
	j := filepath.Join
	for _, tc := range []struct {
		agent, goos string
		getenv      func(string) string
		want        []string
	}{
		{"claude-code", "linux", env(), []string{j(home, ".claude", "projects")}},
		{"claude-code", "windows", env(), []string{j(home, ".claude", "projects")}},
		{"claude-code", "darwin", env("CLAUDE_CONFIG_DIR", "/cfg"), []string{j("/cfg", "projects"), j(home, ".claude", "projects")}},
		{"codex", "darwin", env(), []string{j(home, ".codex")}},
		{"codex", "linux", env("CODEX_HOME", "/srv/codex"), []string{"/srv/codex"}},
		{"gemini", "windows", env(), []string{j(home, ".gemini")}},
		{"qwen", "linux", env(), []string{j(home, ".qwen")}},
	} {
		a, ok := AgentNamed(tc.agent)
		if !ok {
			t.Fatalf("no agent %s", tc.agent)
		}
		if got := a.Roots(home, tc.goos, tc.getenv); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s on %s: roots %q, want %q", tc.agent, tc.goos, got, tc.want)
		}
	}
	seen := map[string]bool{}
	for _, a := range Agents() {
		if a.Name == "" || a.Source == "" || a.Roots == nil || a.Read == nil || seen[a.Name] {
			t.Errorf("agent %+v is incomplete or repeated", a.Name)
		}
		seen[a.Name] = true
	}
}
