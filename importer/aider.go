package importer

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SourceAider is the source of sessions read from aider's chat histories.
const SourceAider = "aider"

const (
	aiderHistory   = ".aider.chat.history.md"
	aiderRunHeader = "# aider chat started at "
)

// Aider lists the runs in aider's chat histories: aider appends every run to
// .aider.chat.history.md in the repository it runs in (~/.aider.chat.history.md
// when run from home). root is such a file, or a directory searched for them
// with walkProjects (the home directory by default).
//
// Each run, from a "# aider chat started at YYYY-MM-DD HH:MM:SS" line to the
// next, is one session; runs with no prompt (aider started and quit) are left
// out. In a run, consecutive "#### " lines are one prompt (aider prefixes every
// line of a prompt), "> " lines are aider's own output (tool results,
// warnings, confirmations, token and cost reports) and the rest is the
// model's answer. The file has no per-message times: every message takes the
// run's start, read in the local time zone as aider wrote it.
func Aider(root string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("aider history: %w", err)
	}
	var files []string
	if !fi.IsDir() {
		files = []string{root}
	} else {
		walkProjects(root, func(dir string) bool {
			if p := filepath.Join(dir, aiderHistory); isFile(p) {
				files = append(files, p)
			}
			return false
		})
	}
	sort.Strings(files)
	var items []Item
	for _, f := range files {
		runs, probs, err := aiderRuns(f)
		if err != nil {
			items = append(items, Item{Path: f, read: func() (Session, []Problem, error) { return Session{}, nil, err }})
			continue
		}
		for i, r := range runs {
			pre := probs // text before the first run is reported with the first
			if i > 0 {
				pre = nil
			}
			items = append(items, Item{Path: f, read: func() (Session, []Problem, error) {
				s, pp, err := readAiderRun(f, r, opts.maxPart())
				return s, append(pre, pp...), err
			}})
		}
	}
	return items, nil
}

// aiderRun locates one run in a history file.
type aiderRun struct {
	id         string
	header     string // the run's first line
	line       int    // its line number
	start, end int64  // byte range; end < 0: to the end of the file
}

// aiderRuns scans a history for its runs with at least one prompt.
func aiderRuns(path string) ([]aiderRun, []Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var runs []aiderRun
	var probs []Problem
	var cur *aiderRun
	var firstPrompt string
	seen := map[string]int{}
	keep := func(end int64) {
		if cur == nil || firstPrompt == "" {
			return
		}
		sum := sha256.Sum256([]byte(cur.header + "\n" + firstPrompt))
		id := "aider-" + hex.EncodeToString(sum[:12])
		if seen[id]++; seen[id] > 1 {
			id += "-" + strconv.Itoa(seen[id]) // the same start and prompt twice in one file
		}
		cur.id, cur.end = id, end
		runs = append(runs, *cur)
	}
	br := bufio.NewReaderSize(f, 1<<16)
	var off int64
	for n := 1; ; n++ {
		raw, err := br.ReadString('\n')
		line := strings.TrimRight(raw, "\r\n")
		switch {
		case strings.HasPrefix(line, aiderRunHeader):
			keep(off)
			cur, firstPrompt = &aiderRun{header: strings.TrimSpace(line), line: n, start: off, end: -1}, ""
		case cur == nil && strings.TrimSpace(line) != "":
			probs = append(probs, Problem{Path: path, Line: n, Err: "skipped: text before the first \"# aider chat started at\" line"})
		case cur != nil && firstPrompt == "" && isAiderPrompt(line):
			firstPrompt = aiderPromptText(line)
		}
		off += int64(len(raw))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	keep(-1)
	return runs, probs, nil
}

func isAiderPrompt(line string) bool {
	return strings.HasPrefix(line, "#### ") || strings.TrimRight(line, " \t") == "####"
}

// aiderPromptText strips a prompt line's "#### " and the two spaces of a
// Markdown hard break aider ends its lines with.
func aiderPromptText(line string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(line, "####"), " "), "  ")
}

func isAiderOutput(line string) bool {
	return strings.HasPrefix(line, "> ") || strings.TrimRight(line, " \t") == ">"
}

var (
	aiderModel  = regexp.MustCompile(`^(?:Main model|Model): (\S+)`)
	aiderTokens = regexp.MustCompile(`^Tokens: ([\d.]+[kM]?) sent.*?, ([\d.]+[kM]?) received\.(?: Cost: \$([\d.]+) message, \$([\d.]+) session\.)?`)
)

// aiderCount parses aider's rounded counts: 91, 2.4k, 1.2M.
func aiderCount(s string) int64 {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return round(v * mult)
}

// aiderReader accumulates one run.
type aiderReader struct {
	path    string
	maxPart int
	s       Session
	kind    byte // the block being read: 'u' prompt, 'a' answer, 'o' aider's output, 0 none
	lines   []string
	started bool // a prompt was seen: aider's output is part of the conversation
	model   string
	cost    float64
}

func readAiderRun(path string, run aiderRun, maxPart int) (Session, []Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return Session{}, nil, err
	}
	defer f.Close()
	if _, err := f.Seek(run.start, io.SeekStart); err != nil {
		return Session{}, nil, err
	}
	var body io.Reader = f
	if run.end >= 0 {
		body = io.LimitReader(f, run.end-run.start)
	}
	dir := filepath.Dir(path)
	r := &aiderReader{path: path, maxPart: maxPart}
	r.s = Session{ExternalID: run.id, Source: SourceAider, ProjectPath: dir, ProjectName: projectName(dir)}
	var probs []Problem
	br := bufio.NewReaderSize(body, 1<<16)
	for n := run.line; ; n++ {
		raw, err := br.ReadString('\n')
		line := strings.TrimRight(raw, "\r\n")
		if n == run.line {
			if strings.TrimSpace(line) != run.header {
				return Session{}, nil, fmt.Errorf("%s changed since it was listed: line %d is no longer %q", path, n, run.header)
			}
			at, perr := time.ParseInLocation("2006-01-02 15:04:05", strings.TrimPrefix(run.header, aiderRunHeader), time.Local)
			if perr != nil {
				probs = append(probs, Problem{Path: path, Line: n, Err: "the run's start is not a time; its messages have no date"})
			}
			r.s.CreatedAt = at
		} else if raw != "" || err == nil {
			r.line(line)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Session{}, probs, err
		}
	}
	r.flush()
	return r.finish(), probs, nil
}

func (r *aiderReader) line(line string) {
	var kind byte
	switch {
	case isAiderPrompt(line):
		kind, line = 'u', aiderPromptText(line)
	case isAiderOutput(line):
		kind, line = 'o', strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(line, ">"), " "), "  ")
	case strings.TrimSpace(line) == "" && r.kind != 'a':
		r.flush() // a blank line ends a prompt or a block of aider's output
		return
	default:
		kind = 'a'
	}
	if kind != r.kind {
		r.flush()
		r.kind = kind
	}
	r.lines = append(r.lines, line)
}

// flush ends the block being read.
func (r *aiderReader) flush() {
	kind, lines := r.kind, r.lines
	r.kind, r.lines = 0, nil
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	if text == "" {
		return
	}
	switch kind {
	case 'u':
		r.started = true
		r.add("user", Part{Type: PartText, Content: truncate(text, r.maxPart)})
	case 'a':
		if r.started {
			r.add("assistant", Part{Type: PartText, Content: truncate(text, r.maxPart)})
		}
	case 'o':
		for _, l := range lines {
			r.output(l)
		}
		if r.started {
			r.add("tool", Part{Type: PartToolResult, ToolName: "aider", Content: truncate(text, r.maxPart)})
		}
	}
}

// output reads what aider reports about the run: the model at start, tokens
// and cost after each answer.
func (r *aiderReader) output(l string) {
	if m := aiderModel.FindStringSubmatch(l); m != nil && r.model == "" {
		r.model = m[1]
	}
	m := aiderTokens.FindStringSubmatch(l)
	if m == nil {
		return
	}
	in, out := aiderCount(m[1]), aiderCount(m[2])
	r.s.PromptTokens += in
	r.s.CompletionTokens += out
	if m[4] != "" {
		r.cost, _ = strconv.ParseFloat(m[4], 64) // the run's total so far
	}
	for i := len(r.s.Messages) - 1; i >= 0; i-- {
		if msg := &r.s.Messages[i]; msg.Role == "assistant" {
			if msg.PromptTokens == nil {
				msg.PromptTokens, msg.CompletionTokens = ptr(in), ptr(out)
			}
			break
		}
	}
}

func (r *aiderReader) add(role string, p Part) {
	r.s.Messages = append(r.s.Messages, Message{
		ExternalID: r.s.ExternalID + "-" + strconv.Itoa(len(r.s.Messages)+1),
		Role:       role,
		Parts:      []Part{p},
		CreatedAt:  r.s.CreatedAt,
	})
}

func (r *aiderReader) finish() Session {
	s := r.s
	s.Model, s.Cost = r.model, r.cost
	if i := strings.Index(s.Model, "/"); i > 0 {
		s.Provider = s.Model[:i]
	}
	var first string
	for i := range s.Messages {
		m := &s.Messages[i]
		if m.Role == "assistant" {
			m.Model = s.Model
		}
		if m.Role == "user" && first == "" && !strings.HasPrefix(m.Text(), "/") {
			first = m.Text()
		}
	}
	if first == "" {
		for _, m := range s.Messages {
			if m.Role == "user" {
				first = m.Text()
				break
			}
		}
	}
	s.Title = Title(first)
	return s
}

// aiderRoots: aider keeps each repository's history in the repository, and
// ~/.aider.chat.history.md for runs from home: the home directory is searched.
func aiderRoots(home, _ string, _ func(string) string) []string {
	return []string{home}
}
