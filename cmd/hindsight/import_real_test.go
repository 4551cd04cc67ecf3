package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/importer"
	"github.com/hindsight-dev/hindsight/internal/datasetstest"
	"github.com/hindsight-dev/hindsight/internal/racetest"

	_ "modernc.org/sqlite" // the opencode expectation counts rows with SQL
)

// The real-transcripts harness: every importer runs on the real files of
// ../shared/datasets/transcripts (HINDSIGHT_DATASETS/transcripts), in their
// original directory layout rebuilt under a temporary $HOME from
// manifest.tsv, against a real in-process server. For each agent it checks
//
//   - every session is found and stored, with the messages the files hold,
//     counted by role: the expectation is computed here from the raw files
//     (generic JSON, the format's documented rules), never by the reader;
//   - a second run stores nothing new (no duplicates);
//   - a malformed line inserted into one real file is reported as file:line
//     and skipped, the rest of that file imported;
//
// and then that `hindsight import` with no agent finds all of them.
//
// Adding an agent's real files is adding a row to realAgents: the importer's
// agent name, the dataset directory (manifest.tsv's first column), a
// function computing the expected sessions from the rebuilt files, and
// optionally a file to break and where each file goes under $HOME (default:
// its manifest path; give place: bench.RepoPlace when files of different
// repositories would collide, as Aider's .aider.chat.history.md at each
// repository's root do).
// The expectation gets the rebuilt files and returns, per session external
// id, the number of messages of each role.

// realFile is one manifest row and where the test put the file.
type realFile struct {
	bench.TranscriptFile
	Abs string // the rebuilt file under the test's $HOME
}

// roleCounts counts a session's messages by role.
type roleCounts map[string]int

type realAgent struct {
	name  string                            // hindsight import <name>
	dir   string                            // the dataset directory, manifest.tsv's agent column
	place func(bench.TranscriptFile) string // nil: the manifest path; bench.RepoPlace when paths collide
	// malformed names (manifest file column) a JSONL file into whose middle
	// the test inserts a line that is not JSON.
	malformed string
	expect    func(t *testing.T, files []realFile) map[string]roleCounts
}

var realAgents = []realAgent{
	{name: "claude-code", dir: "claude-code", expect: expectClaudeCode,
		malformed: "Xu-Wentao__dotfile__995e76d3-7760-49f1-a8b7-9a806038cd27.jsonl"},
	{name: "codex", dir: "codex", expect: expectCodex,
		malformed: "blubber__dotfiles__rollout-2026-02-07T09-32-13-019c373a-e799-76a0-839f-1d739e71eefa.jsonl"},
	{name: "gemini", dir: "gemini", expect: expectGemini,
		malformed: "wingorithm__Vibe-Coding-Comparison-Project__session-2026-04-25T08-46-c737eb36.jsonl"},
	{name: "qwen", dir: "qwen", expect: expectQwen,
		malformed: "haidonglethqb__CloudSchool__6676775b-e7b1-41b0-a6de-5f00e4adf771.jsonl"},
	{name: "copilot", dir: "copilot", expect: expectCopilot,
		malformed: "XEFF09__dotfiles__9a493a94-a307-489e-8bc7-d16f4afcd992__events.jsonl"},
	{name: "opencode", dir: "opencode", expect: expectOpenCodeDB},
}

// Aider and SpecStory are not rows: what their files hold per role depends
// on the readers' own segmentation of Markdown (aider's blocks of prompt,
// answer and output lines; SpecStory's turn headers and the assistant each
// file names), which an expectation here would only restate. Their real
// files are checked in package importer (TestImportRealAider: every run
// with prompts, its prompts; TestImportRealSpecStory: turns by role and the
// source); they are not imported through a server here.

// rebuildHome copies the agent's real files to their original paths under
// home and returns them. The malformed file gets a broken line inserted in
// its middle; its path and line number are returned.
func rebuildHome(t *testing.T, src, home string, a realAgent) (files []realFile, brokenPath string, brokenLine int) {
	t.Helper()
	all, err := bench.ReadTranscripts(src)
	if err != nil {
		t.Fatal(err)
	}
	var rows []bench.TranscriptFile
	for _, f := range all {
		if f.Agent == a.dir {
			rows = append(rows, f)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("manifest.tsv lists no %s files", a.dir)
	}
	paths, err := bench.RebuildTranscripts(src, home, rows, a.place)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range rows {
		files = append(files, realFile{TranscriptFile: f, Abs: paths[i]})
		if f.Name != a.malformed {
			continue
		}
		data, err := os.ReadFile(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		brokenLine = len(lines)/2 + 1
		broken := append([][]byte{}, lines[:brokenLine-1]...)
		broken = append(broken, []byte(`{"type":"user","message":{"content":"cut off by the test`+"\n"))
		if err := os.WriteFile(paths[i], bytes.Join(append(broken, lines[brokenLine-1:]...), nil), 0o644); err != nil {
			t.Fatal(err)
		}
		brokenPath = paths[i]
	}
	if a.malformed != "" && brokenPath == "" {
		t.Fatalf("manifest.tsv has no %s to break", a.malformed)
	}
	return files, brokenPath, brokenLine
}

// TestImportRealTranscripts imports every agent's real files at once (the
// run without an agent), then each agent's again by name: the first run
// stores every session and message, the per-agent runs find the same
// sessions and store nothing new. (Each session is uploaded once: the
// per-agent runs are the re-import.)
//
// Not under the race detector (racetest): what it checks, that every
// message of every real file is stored, the detector cannot change, and it
// costs ten times as much under it; the importer's and the server's
// concurrency run under it in the other import tests.
func TestImportRealTranscripts(t *testing.T) {
	racetest.SkipUnderRace(t)
	src := filepath.Dir(datasetstest.Path(t, "transcripts", "manifest.tsv"))
	agents := realAgents
	if testing.Short() {
		agents = realAgents[:1]
		t.Logf("-short: %s only", agents[0].name)
	}
	ta := newTestApp(t, t.TempDir())
	home := t.TempDir() // every agent's files
	type agentRun struct {
		realAgent
		expect                map[string]roleCounts
		sessions, empty, msgs int
		brokenPath            string
		brokenLine            int
	}
	want := map[string]roleCounts{}
	var runs []agentRun
	var sessions, empty, msgs int
	for _, a := range agents {
		r := agentRun{realAgent: a}
		var files []realFile
		files, r.brokenPath, r.brokenLine = rebuildHome(t, src, home, a)
		r.expect = a.expect(t, files)
		r.sessions = len(r.expect)
		for id, c := range r.expect {
			want[id] = c
			n := 0 // a session with no message is found, and skipped
			for _, k := range c {
				n += k
			}
			r.msgs += n
			if n == 0 {
				r.empty++
			}
		}
		sessions, empty, msgs = sessions+r.sessions, empty+r.empty, msgs+r.msgs
		runs = append(runs, r)
	}
	// Without an agent: every history under $HOME is found, listed, imported.
	t.Setenv("HOME", home)
	out, errOut, err := importRun(t, "import", "--dry-run")
	if err != nil {
		t.Fatalf("import --dry-run: %v\n%s\n%s", err, out, errOut)
	}
	for _, r := range runs {
		agent, _ := importer.AgentNamed(r.name)
		root := agent.Roots(home, runtime.GOOS, func(string) string { return "" })[0]
		row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(r.name) + `\s+` + strconv.Itoa(r.sessions) + `\s+` + regexp.QuoteMeta(root))
		if !row.MatchString(out) {
			t.Errorf("dry run lists no row for %s with %d sessions under %s:\n%s", r.name, r.sessions, home, out)
		}
	}
	importMustContain(t, "dry run", out, fmt.Sprintf("Found %d sessions of %d assistants; not uploading (--dry-run)", len(want), len(runs)))
	key := ta.key("real")
	out, errOut, err = importRun(t, "import", "--server", ta.srv.URL, "--key", key)
	if err != nil {
		t.Fatalf("import: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "import of everything", out,
		fmt.Sprintf("sessions: %d imported, 0 updated, 0 unchanged, %d skipped (nothing to import), 0 failed", sessions-empty, empty),
		fmt.Sprintf("messages: %d imported, 0 unchanged, 0 failed", msgs))
	for _, r := range runs {
		if r.brokenPath != "" {
			importMustContain(t, "import of everything", out, fmt.Sprintf("%s:%d: skipped", r.brokenPath, r.brokenLine))
		}
	}
	importMustContain(t, "progress", errOut, "sessions: 100%")
	checkStored(t, fetchSessions(t, ta.srv.URL, key), want)
	if t.Failed() {
		return
	}
	// Each agent by name: the same sessions found, nothing new stored.
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			out, errOut, err := importRun(t, "import", r.name, "--server", ta.srv.URL, "--key", key, "--quiet")
			if err != nil {
				t.Fatalf("re-import: %v\n%s\n%s", err, out, errOut)
			}
			importMustContain(t, "re-import", out, fmt.Sprintf("Found %d %s sessions", r.sessions, r.name),
				fmt.Sprintf("sessions: 0 imported, 0 updated, %d unchanged, %d skipped", r.sessions-r.empty, r.empty),
				fmt.Sprintf("messages: 0 imported, %d unchanged, 0 failed", r.msgs))
			if r.brokenPath != "" {
				importMustContain(t, "re-import", out, fmt.Sprintf("%s:%d: skipped", r.brokenPath, r.brokenLine))
			}
		})
	}
	checkStored(t, fetchSessions(t, ta.srv.URL, key), want)
}

// checkStored compares the stored sessions with the expectation: the same
// sessions, and in each the same number of messages of each role. A session
// with no message has nothing to store.
func checkStored(t *testing.T, got map[string]importedSession, want map[string]roleCounts) {
	t.Helper()
	var ids []string
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		s, ok := got[id]
		if len(want[id]) == 0 {
			if ok {
				t.Errorf("session %s has no message in its files but was stored: %v", id, s)
			}
			continue
		}
		if !ok {
			t.Errorf("session %s not stored", id)
			continue
		}
		roles := roleCounts{}
		for _, m := range s.Messages {
			roles[m.Role]++
		}
		if fmt.Sprint(roles) != fmt.Sprint(want[id]) || int(s.MessageCount) != len(s.Messages) {
			t.Errorf("session %s (%s): stored %v (messageCount %d), the files hold %v", id, s.Source, roles, s.MessageCount, want[id])
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("session %s stored, but the files hold no such session", id)
		}
	}
}

// jsonLines decodes each line of a file that is a JSON object; other lines
// are skipped, as the importers skip them.
func jsonLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// expectClaudeCode: a session is a <id>.jsonl with the sub-agents beside it
// (2.0: agent-*.jsonl naming it in sessionId; 2.1: <id>/subagents/), read
// session first; a line whose uuid came before is a copy. A user line is a
// user message when its content has text or an image (and it is not
// isMeta); a tool_result whose call came before completes that call, else
// it is a tool message; an assistant line is an assistant message when it
// has text or thinking, plus one per new tool_use. An output in
// tool-results/ that no result names is a tool message.
func expectClaudeCode(t *testing.T, files []realFile) map[string]roleCounts {
	type group struct{ main, agents, results []string }
	groups := map[string]*group{}
	get := func(id string) *group {
		if groups[id] == nil {
			groups[id] = &group{}
		}
		return groups[id]
	}
	for _, f := range files {
		base := filepath.Base(f.Abs)
		parent := filepath.Base(filepath.Dir(f.Abs))
		switch {
		case parent == "subagents" && strings.HasSuffix(base, ".jsonl"):
			g := get(filepath.Base(filepath.Dir(filepath.Dir(f.Abs))))
			g.agents = append(g.agents, f.Abs)
		case parent == "tool-results":
			g := get(filepath.Base(filepath.Dir(filepath.Dir(f.Abs))))
			g.results = append(g.results, f.Abs)
		case strings.HasPrefix(base, "agent-") && strings.HasSuffix(base, ".jsonl"):
			sid := ""
			for _, l := range jsonLines(t, f.Abs) {
				if sid = str(l["sessionId"]); sid != "" {
					break
				}
			}
			g := get(sid)
			g.agents = append(g.agents, f.Abs)
		case strings.HasSuffix(base, ".jsonl"):
			g := get(strings.TrimSuffix(base, ".jsonl"))
			g.main = append(g.main, f.Abs)
		}
	}
	out := map[string]roleCounts{}
	for id, g := range groups {
		c := roleCounts{}
		seen, calls, named := map[string]bool{}, map[string]bool{}, map[string]bool{}
		sort.Strings(g.agents)
		for _, p := range append(g.main, g.agents...) {
			for _, l := range jsonLines(t, p) {
				if u := str(l["uuid"]); u != "" {
					if seen[u] {
						continue
					}
					seen[u] = true
				}
				msg := obj(l["message"])
				if msg == nil {
					continue
				}
				content := msg["content"]
				switch str(l["type"]) {
				case "user":
					said := false
					if s, ok := content.(string); ok {
						said = !blank(s)
					}
					for _, b := range list(content) {
						b := obj(b)
						switch str(b["type"]) {
						case "text":
							said = said || !blank(str(b["text"]))
						case "image":
							said = true
						case "tool_result":
							named[str(b["tool_use_id"])] = true
							if !calls[str(b["tool_use_id"])] {
								c["tool"]++
							}
						}
					}
					if said && l["isMeta"] != true {
						c["user"]++
					}
				case "assistant":
					said := false
					if s, ok := content.(string); ok {
						said = !blank(s)
					}
					for _, b := range list(content) {
						b := obj(b)
						switch str(b["type"]) {
						case "text":
							said = said || !blank(str(b["text"]))
						case "thinking":
							said = said || !blank(str(b["thinking"]))
						case "tool_use":
							if !calls[str(b["id"])] {
								calls[str(b["id"])] = true
								c["assistant"]++
							}
						}
					}
					if said {
						c["assistant"]++
					}
				}
			}
		}
		for _, r := range g.results {
			if !named[strings.TrimSuffix(filepath.Base(r), filepath.Ext(r))] {
				c["tool"]++
			}
		}
		out[id] = c
	}
	return out
}

// expectCodex: a rollout is one session, named by its first session_meta.
// Messages come from response_item records only: a user message with text
// that is not context Codex injects (environment, instructions, the abort
// note), unless it repeats the last prompt after an aborted turn; an
// assistant message with text; a reasoning item with a summary; a tool call
// per call_id; an output whose call is not there is a tool message.
// Developer messages are Codex's instructions.
func expectCodex(t *testing.T, files []realFile) map[string]roleCounts {
	out := map[string]roleCounts{}
	for _, f := range files {
		c := roleCounts{}
		id := ""
		calls := map[string]bool{}
		last, aborted := "", false
		for _, l := range jsonLines(t, f.Abs) {
			p := obj(l["payload"])
			switch str(l["type"]) {
			case "session_meta":
				if id == "" {
					id = str(p["id"])
				}
			case "event_msg":
				if str(p["type"]) == "turn_aborted" {
					aborted = true
				}
			case "response_item":
				switch str(p["type"]) {
				case "message":
					var texts []string
					for _, b := range list(p["content"]) {
						s := str(obj(b)["text"])
						trimmed := strings.TrimSpace(s)
						injected := false
						for _, pre := range []string{"<environment_context>", "<user_instructions>", "<INSTRUCTIONS>", "# AGENTS.md instructions for ", "<turn_aborted>", "<permissions instructions>"} {
							injected = injected || strings.HasPrefix(trimmed, pre)
						}
						if !blank(s) && !(str(p["role"]) == "user" && injected) {
							texts = append(texts, s)
						}
					}
					if len(texts) == 0 {
						continue
					}
					text := strings.Join(texts, "\n\n")
					switch str(p["role"]) {
					case "user":
						if aborted && text == last {
							continue
						}
						last, aborted = text, false
						c["user"]++
					case "assistant":
						c["assistant"]++
					}
				case "reasoning":
					for _, s := range list(p["summary"]) {
						if !blank(str(obj(s)["text"])) {
							c["assistant"]++
							break
						}
					}
				case "function_call", "custom_tool_call", "local_shell_call":
					if !calls[str(p["call_id"])] {
						calls[str(p["call_id"])] = true
						c["assistant"]++
					}
				case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
					if !calls[str(p["call_id"])] {
						c["tool"]++
					}
				}
			}
		}
		out[id] = c
	}
	return out
}

// expectGemini: files are one session per sessionId (a resumed session's
// two files, and copies, together), messages by id (a later record with an
// id replaces the earlier, $rewindTo drops one and what follows). user is
// user, gemini assistant, info, warning and error system; a message with no
// text, no thought and no tool call is nothing.
func expectGemini(t *testing.T, files []realFile) map[string]roleCounts {
	type session struct {
		order []string
		byID  map[string]map[string]any
	}
	sessions := map[string]*session{}
	sort.Slice(files, func(i, j int) bool { return filepath.Base(files[i].Abs) < filepath.Base(files[j].Abs) })
	for _, f := range files {
		var records []map[string]any
		id := ""
		if strings.HasSuffix(f.Abs, ".jsonl") {
			lines := jsonLines(t, f.Abs)
			if len(lines) > 0 {
				id = str(lines[0]["sessionId"])
			}
			records = lines
		} else {
			b, err := os.ReadFile(f.Abs)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%s: %v", f.Abs, err)
			}
			id = str(doc["sessionId"])
			for _, m := range list(doc["messages"]) {
				records = append(records, obj(m))
			}
		}
		s := sessions[id]
		if s == nil {
			s = &session{byID: map[string]map[string]any{}}
			sessions[id] = s
		}
		for _, r := range records {
			if to, ok := r["$rewindTo"].(string); ok {
				for i, mid := range s.order {
					if mid == to {
						for _, gone := range s.order[i:] {
							delete(s.byID, gone)
						}
						s.order = s.order[:i]
						break
					}
				}
				continue
			}
			if str(r["type"]) == "" || str(r["id"]) == "" {
				continue
			}
			if _, ok := s.byID[str(r["id"])]; !ok {
				s.order = append(s.order, str(r["id"]))
			}
			s.byID[str(r["id"])] = r
		}
	}
	out := map[string]roleCounts{}
	for id, s := range sessions {
		c := roleCounts{}
		for _, mid := range s.order {
			r := s.byID[mid]
			has := len(list(r["toolCalls"])) > 0
			if t, ok := r["content"].(string); ok && !blank(t) {
				has = true
			}
			for _, p := range list(r["content"]) {
				has = has || !blank(str(obj(p)["text"]))
			}
			for _, th := range list(r["thoughts"]) {
				has = has || !blank(str(obj(th)["subject"])+str(obj(th)["description"]))
			}
			if !has {
				continue
			}
			switch str(r["type"]) {
			case "user":
				c["user"]++
			case "gemini":
				c["assistant"]++
			case "info", "warning", "error":
				c["system"]++
			}
		}
		out[id] = c
	}
	return out
}

// expectQwen: one file a session; a user record with text is a user
// message, an assistant record with text or a function call an assistant
// message, a tool_result record with a function response a tool message;
// system records (telemetry, slash commands) are not messages.
func expectQwen(t *testing.T, files []realFile) map[string]roleCounts {
	out := map[string]roleCounts{}
	for _, f := range files {
		c := roleCounts{}
		id := ""
		for _, l := range jsonLines(t, f.Abs) {
			if id == "" {
				id = str(l["sessionId"])
			}
			parts := list(obj(l["message"])["parts"])
			count := func(ok func(p map[string]any) bool) bool {
				for _, p := range parts {
					if ok(obj(p)) {
						return true
					}
				}
				return false
			}
			switch str(l["type"]) {
			case "user":
				if count(func(p map[string]any) bool { return !blank(str(p["text"])) && p["thought"] != true }) {
					c["user"]++
				}
			case "assistant":
				if count(func(p map[string]any) bool { return p["functionCall"] != nil || !blank(str(p["text"])) }) {
					c["assistant"]++
				}
			case "tool_result":
				if count(func(p map[string]any) bool { return p["functionResponse"] != nil }) {
					c["tool"]++
				}
			}
		}
		if id == "" {
			id = strings.TrimSuffix(filepath.Base(f.Abs), ".jsonl")
		}
		out[id] = c
	}
	return out
}

// expectCopilot: a session is a log, <id>.jsonl or <id>/events.jsonl, named
// by its session.start's sessionId (else the file). A user message is a
// user.message the user typed (no source, or "user"; not a runtime
// <system_notification>; not empty once the time the older logs append is
// cut); an assistant message is an assistant.message with text or
// reasoning, plus one per new tool request; a tool.execution_complete whose
// request is not in the log is a tool message (a result completing its
// request is part of it).
func expectCopilot(t *testing.T, files []realFile) map[string]roleCounts {
	datetime := regexp.MustCompile(`\s*<current_datetime>[^<]*</current_datetime>\s*$`)
	out := map[string]roleCounts{}
	for _, f := range files {
		if !strings.HasSuffix(f.Abs, ".jsonl") {
			continue
		}
		id := strings.TrimSuffix(filepath.Base(f.Abs), ".jsonl")
		if id == "events" {
			id = filepath.Base(filepath.Dir(f.Abs))
		}
		c := roleCounts{}
		calls := map[string]bool{}
		for _, ev := range jsonLines(t, f.Abs) {
			d := obj(ev["data"])
			switch str(ev["type"]) {
			case "session.start":
				if sid := str(d["sessionId"]); sid != "" {
					id = sid
				}
			case "user.message":
				text := strings.TrimSpace(datetime.ReplaceAllString(str(d["content"]), ""))
				if src := str(d["source"]); (src == "" || src == "user") && text != "" && !strings.HasPrefix(text, "<system_notification>") {
					c["user"]++
				}
			case "assistant.message":
				if !blank(str(d["content"])) || !blank(str(d["reasoningText"])) {
					c["assistant"]++
				}
				for _, r := range list(d["toolRequests"]) {
					if call := str(obj(r)["toolCallId"]); !calls[call] {
						calls[call] = true
						c["assistant"]++
					}
				}
			case "tool.execution_complete":
				if !calls[str(d["toolCallId"])] {
					c["tool"]++
				}
			}
		}
		out[id] = c
	}
	return out
}

// expectOpenCodeDB: the sessions of opencode.db (read with its WAL by the
// SQLite driver), and per session the messages with a non-empty text or
// reasoning part (not ignored) or a tool part, by role, counted with SQL.
func expectOpenCodeDB(t *testing.T, files []realFile) map[string]roleCounts {
	var db string
	for _, f := range files {
		if filepath.Base(f.Abs) == "opencode.db" {
			db = f.Abs
		}
	}
	if db == "" {
		t.Fatal("no opencode.db among the opencode files")
	}
	// A copy: opening the rebuilt file would leave SQLite's companions
	// beside it changed before the import reads them.
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(db + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "opencode.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "opencode.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	out := map[string]roleCounts{}
	ids, err := raw.Query(`SELECT id FROM session`)
	if err != nil {
		t.Fatal(err)
	}
	for ids.Next() {
		var id string
		ids.Scan(&id)
		out[id] = roleCounts{}
	}
	ids.Close()
	rows, err := raw.Query(`SELECT m.session_id, json_extract(m.data, '$.role'), count(*) FROM message m
		WHERE EXISTS (SELECT 1 FROM part p WHERE p.message_id = m.id AND (
			(json_extract(p.data, '$.type') IN ('text', 'reasoning') AND trim(json_extract(p.data, '$.text')) <> '' AND coalesce(json_extract(p.data, '$.ignored'), 0) = 0)
			OR json_extract(p.data, '$.type') = 'tool'))
		GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var sid, role string
		var n int
		if err := rows.Scan(&sid, &role, &n); err != nil {
			t.Fatal(err)
		}
		out[sid][role] = n
	}
	return out
}
