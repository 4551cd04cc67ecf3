package importer

import (
	"path/filepath"
)

// Agent is one coding assistant whose local history the importer reads.
type Agent struct {
	// Name is the command-line name: hindsight import <Name>.
	Name string
	// Source is the sync API's source of the sessions it reads (what the
	// assistant's own plugin reports, so live sync and import agree).
	Source string
	// Roots returns where the assistant keeps its history on the operating
	// system goos ("linux", "darwin", "windows"), under the home directory
	// home; getenv reads the environment (XDG_DATA_HOME, CODEX_HOME, APPDATA,
	// ...). The first root that exists is read; none existing means the
	// assistant is not on this machine.
	Roots func(home, goos string, getenv func(string) string) []string
	// Read lists the sessions under root (a root of Roots, or a directory or
	// file the user names).
	Read func(root string, opts ReadOptions) ([]Item, error)
	// WatchTree: the root holds only the assistant's history, and new
	// sessions appear in new directories under it (projects, dates), so
	// the Watcher watches every directory under it. Otherwise it watches
	// the directories its sessions were found in, and finds new ones by
	// listing again.
	WatchTree bool
	// InProjects: the histories live inside projects found under the home
	// directory (walkProjects); a change is listed from its file alone.
	InProjects bool
}

// Agents returns every assistant the importer reads, in the order
// hindsight import lists them.
func Agents() []Agent {
	return []Agent{
		{Name: "claude-code", Source: SourceClaudeCode, Roots: claudeCodeRoots, Read: ClaudeCode, WatchTree: true},
		{Name: "codex", Source: SourceCodex, Roots: codexRoots, Read: Codex, WatchTree: true},
		{Name: "gemini", Source: SourceGemini, Roots: homeDir(".gemini"), Read: Gemini, WatchTree: true},
		{Name: "qwen", Source: SourceQwen, Roots: homeDir(".qwen"), Read: Qwen, WatchTree: true},
		{Name: "opencode", Source: SourceOpenCode, Roots: openCodeRoots, Read: OpenCode},
		{Name: "cursor", Source: SourceCursor, Roots: cursorRoots, Read: Cursor},
		{Name: "cursor-agent", Source: SourceCursor, Roots: cursorAgentRoots, Read: CursorAgent},
		{Name: "aider", Source: SourceAider, Roots: aiderRoots, Read: Aider, InProjects: true},
		{Name: "specstory", Source: SourceSpecStory, Roots: specStoryRoots, Read: SpecStory, InProjects: true},
		{Name: "copilot", Source: SourceCopilot, Roots: copilotRoots, Read: Copilot, WatchTree: true},
		{Name: "vscode-copilot", Source: SourceVSCodeCopilot, Roots: vsCodeCopilotRoots, Read: VSCodeCopilot},
		{Name: "pi", Source: SourcePi, Roots: piRoots, Read: Pi, WatchTree: true},
	}
}

// AgentNamed returns the agent called name.
func AgentNamed(name string) (Agent, bool) {
	for _, a := range Agents() {
		if a.Name == name {
			return a, true
		}
	}
	return Agent{}, false
}

// claudeCodeRoots: Claude Code keeps ~/.claude/projects on every system
// (%USERPROFILE%\.claude\projects on Windows), or projects/ in
// $CLAUDE_CONFIG_DIR when that is set.
func claudeCodeRoots(home, _ string, getenv func(string) string) []string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return []string{filepath.Join(d, "projects"), filepath.Join(home, ".claude", "projects")}
	}
	return []string{filepath.Join(home, ".claude", "projects")}
}

// openCodeRoots: opencode follows the XDG base directories on every system,
// $XDG_DATA_HOME/opencode, ~/.local/share/opencode by default.
func openCodeRoots(home, _ string, getenv func(string) string) []string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return []string{filepath.Join(d, "opencode"), filepath.Join(home, ".local", "share", "opencode")}
	}
	return []string{filepath.Join(home, ".local", "share", "opencode")}
}

// codexRoots: Codex CLI keeps $CODEX_HOME, ~/.codex by default, on every
// system (%USERPROFILE%\.codex on Windows).
func codexRoots(home, _ string, getenv func(string) string) []string {
	if d := getenv("CODEX_HOME"); d != "" {
		return []string{d}
	}
	return []string{filepath.Join(home, ".codex")}
}

// homeDir is the roots of an assistant that keeps its history in one
// directory under the home directory on every system (Gemini CLI's ~/.gemini,
// Qwen Code's ~/.qwen; %USERPROFILE%\.gemini on Windows).
func homeDir(name string) func(home, goos string, getenv func(string) string) []string {
	return func(home, _ string, _ func(string) string) []string {
		return []string{filepath.Join(home, name)}
	}
}
