package importer

import (
	"os"
	"path/filepath"
	"strings"
)

// Following a session as it is written.
//
// Most assistants write a session as JSONL and only ever append to it. Their
// readers are state machines fed one line at a time whose finish returns the
// session read so far and lets them go on, so a follower (the Watcher) keeps
// one reader per session and feeds it only the lines appended since the last
// read. An Item of such a session carries a followSpec: the session's files,
// in the order an import reads them, and a constructor of its tail.

// tailFile is one JSONL file of a followed session.
type tailFile struct {
	path  string
	agent *SubAgent // the sub-agent whose transcript it is; nil for the session's own
}

// followSpec says how to follow an Item's session.
type followSpec struct {
	files []tailFile
	tail  func() *tail
}

// tail is a session's reader fed a line at a time.
type tail struct {
	// file announces that the next lines are of f (another file of the
	// session, or one fed before that has grown); nil for one-file sessions.
	file func(f tailFile)
	// line takes line n (1-based) of the current file.
	line func(n int, raw []byte)
	// finish returns the session read so far; the tail can go on.
	finish func() Session
	// problems returns the malformed input met since its last call.
	problems func() []Problem
}

// takeProblems returns *p and empties it.
func takeProblems(p *[]Problem) []Problem {
	out := *p
	*p = nil
	return out
}

// oneFile is the followSpec of a session kept in one JSONL file.
func oneFile(path string, tail func() *tail) *followSpec {
	return &followSpec{files: []tailFile{{path: path}}, tail: tail}
}

// ccFollow follows a Claude Code session: its transcript and its
// sub-agents' transcripts. Tool outputs Claude Code externalises are read
// when a line refers to them: the tail looks for new ones each time a file
// has grown, since they are written before the line that names them.
func ccFollow(g *ccGroup, maxPart int) *followSpec {
	var files []tailFile
	if g.main != "" {
		files = append(files, tailFile{path: g.main})
	}
	for _, p := range g.agents {
		files = append(files, tailFile{path: p, agent: subAgentOf(p)})
	}
	return &followSpec{files: files, tail: func() *tail {
		r := newCCReader(g.id, maxPart)
		r.follow = true
		return &tail{
			file: func(f tailFile) {
				es, _ := os.ReadDir(filepath.Join(g.dir, "tool-results"))
				for _, e := range es {
					if e.Type().IsRegular() {
						p := filepath.Join(g.dir, "tool-results", e.Name())
						r.results[strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))] = p
					}
				}
				r.file(f.path, f.agent)
			},
			line: r.line, finish: r.finish,
			problems: func() []Problem { return takeProblems(&r.probs) },
		}
	}}
}

// gmFollow follows a Gemini CLI session kept in JSONL files: its own
// (a resumed session may have two) and its sub-agents'.
func gmFollow(g *gmGroup, maxPart int) *followSpec {
	var files []tailFile
	for _, p := range g.files {
		if !strings.HasSuffix(p, ".jsonl") {
			return nil // a legacy JSON document is re-read whole
		}
		files = append(files, tailFile{path: p})
	}
	for _, p := range g.agents {
		files = append(files, tailFile{path: p, agent: gmAgent(p)})
	}
	return &followSpec{files: files, tail: func() *tail {
		r := newGMReader(g.id, maxPart)
		base := gmBase(g)
		return &tail{
			file: func(f tailFile) { r.begin(f.path, f.agent) },
			line: r.line, finish: func() Session { return r.session(base) },
			problems: func() []Problem { return takeProblems(&r.probs) },
		}
	}}
}

// codexFollow follows a Codex rollout (JSONL; the legacy JSON is re-read).
func codexFollow(path string, maxPart int) *followSpec {
	if !strings.HasSuffix(path, ".jsonl") {
		return nil
	}
	return oneFile(path, func() *tail {
		r := newCodexReader(path, maxPart)
		return &tail{line: r.line, finish: r.finish, problems: func() []Problem { return takeProblems(&r.probs) }}
	})
}

func qwenFollow(path string, maxPart int) *followSpec {
	return oneFile(path, func() *tail {
		r := newQwenReader(path, maxPart)
		return &tail{line: r.line, finish: r.finish, problems: func() []Problem { return takeProblems(&r.probs) }}
	})
}

func copilotFollow(path string, maxPart int) *followSpec {
	return oneFile(path, func() *tail {
		r := newCPReader(path, maxPart)
		return &tail{line: r.line, finish: r.result, problems: func() []Problem { return takeProblems(&r.probs) }}
	})
}

func piFollow(path string, maxPart int) *followSpec {
	return oneFile(path, func() *tail {
		r := newPiReader(path, maxPart)
		return &tail{line: r.line, finish: r.finish, problems: func() []Problem { return takeProblems(&r.probs) }}
	})
}
