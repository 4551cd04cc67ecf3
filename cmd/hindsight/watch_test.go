package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The watch tests run `hindsight import --watch` in-process against a
// wired app, append to transcripts the way the assistants do, and poll the
// server until what was appended is searchable. They assert what arrives
// and what is sent, never how fast: every wait is a generous deadline.

// lockedBuffer is a buffer the watcher writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// watching is a running hindsight import --watch.
type watching struct {
	cancel   context.CancelFunc
	done     chan error
	out, err *lockedBuffer
}

func startWatch(t *testing.T, args ...string) *watching {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{cancel: cancel, done: make(chan error, 1), out: &lockedBuffer{}, err: &lockedBuffer{}}
	go func() { w.done <- run(ctx, append([]string{"import"}, args...), w.out, w.err) }()
	t.Cleanup(func() { w.stop(t) })
	return w
}

// stop ends the watcher as a signal does and waits for it.
func (w *watching) stop(t *testing.T) {
	t.Helper()
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.cancel = nil
	select {
	case err := <-w.done:
		if err != nil {
			t.Errorf("watch ended with %v\nstdout:\n%s\nstderr:\n%s", err, w.out, w.err)
		}
	case <-time.After(2 * time.Minute):
		t.Errorf("watch did not stop\nstderr:\n%s", w.err)
	}
}

// eventually polls cond until it holds, failing after a generous deadline.
func eventually(t *testing.T, w *watching, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			stderr := ""
			if w != nil {
				stderr = w.err.String()
			}
			t.Fatalf("%s: not by the test's deadline\nwatcher's log:\n%s", what, stderr)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// finds reports whether a full-text search for word finds a session.
func (ta *testApp) finds(key, word string) bool {
	code, rs := ta.searchStatus(key, word, "&type=fulltext")
	return code == http.StatusOK && len(rs) > 0
}

// ccTurn is a Claude Code transcript line: a user prompt or an assistant
// answer holding text.
func ccTurn(sid, uuid, role, text string, at time.Time) string {
	msg := map[string]any{"role": role, "content": text}
	if role == "assistant" {
		msg = map[string]any{"role": role, "model": "claude-sonnet-4-20250514",
			"content": []any{map[string]any{"type": "text", "text": text}}, "usage": map[string]any{"input_tokens": 3, "output_tokens": 2}}
	}
	b, _ := json.Marshal(map[string]any{"type": role, "uuid": uuid, "sessionId": sid, "cwd": "/home/w/app",
		"timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"), "message": msg})
	return string(b)
}

// cxTurn is a Codex rollout line holding a message.
func cxTurn(role, text string, at time.Time) string {
	kind := "input_text"
	if role == "assistant" {
		kind = "output_text"
	}
	b, _ := json.Marshal(map[string]any{"timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"), "type": "response_item",
		"payload": map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": text}}}})
	return string(b)
}

func cxMeta(id string, at time.Time) string {
	b, _ := json.Marshal(map[string]any{"timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"), "type": "session_meta",
		"payload": map[string]any{"id": id, "timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"), "cwd": "/home/w/api"}})
	return string(b)
}

// watchHome makes a home directory holding one Claude Code session and one
// Codex rollout, and points the environment at it.
func watchHome(t *testing.T) (home, cc, cx string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "XDG_STATE_HOME", "HINDSIGHT_API_KEY", "COPILOT_HOME", "PI_CODING_AGENT_DIR"} {
		t.Setenv(k, "")
	}
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	cc = filepath.Join(home, ".claude", "projects", "-home-w-app", ccSID+".jsonl")
	writeLines(t, cc, ccTurn(ccSID, "u0", "user", "start the okapiwatch task", at), ccTurn(ccSID, "a0", "assistant", "starting", at.Add(time.Second)))
	cx = filepath.Join(home, ".codex", "sessions", "2026", "03", "01", "rollout-2026-03-01T09-00-00-"+cxSID+".jsonl")
	writeLines(t, cx, cxMeta(cxSID, at), cxTurn("user", "begin the gerbilwatch task", at.Add(time.Second)))
	return home, cc, cx
}

const (
	ccSID = "6e6e6e6e-0000-4000-8000-000000000001"
	cxSID = "019d0000-0000-7000-8000-00000000c0de"
)

// messageCount is how many messages the server holds for a session.
func (ta *testApp) messageCount(key, externalID string) int {
	return len(ta.importedSessions(key)[externalID].Messages)
}

// An assistant appends; each appended message becomes searchable. New
// project and date directories are watched as they appear, and a malformed
// line is reported as file:line and skipped while following goes on.
func TestWatchFollowsAppends(t *testing.T) {
	home, cc, cx := watchHome(t)
	ta := newTestApp(t, t.TempDir())
	key := ta.key("wanda")
	w := startWatch(t, "--watch", "--server", ta.srv.URL, "--key", key, "--retry-max", "200ms")
	eventually(t, w, "the first pass", func() bool { return ta.finds(key, "okapiwatch") && ta.finds(key, "gerbilwatch") })
	if out := w.out.String(); !strings.Contains(out, "Watching claude-code, codex") {
		t.Errorf("stdout: %s", out)
	}

	at := time.Date(2026, 3, 1, 9, 1, 0, 0, time.UTC)
	for i := range 5 {
		word := fmt.Sprintf("ccappend%c", 'a'+i)
		appendLines(t, cc, ccTurn(ccSID, fmt.Sprintf("u%d", i+1), "user", "now "+word, at), ccTurn(ccSID, fmt.Sprintf("a%d", i+1), "assistant", "done with "+word+"reply", at.Add(time.Second)))
		cword := fmt.Sprintf("cxappend%c", 'a'+i)
		appendLines(t, cx, cxTurn("assistant", "answer "+cword, at))
		eventually(t, w, word, func() bool { return ta.finds(key, word) && ta.finds(key, word+"reply") && ta.finds(key, cword) })
		at = at.Add(time.Minute)
	}

	// A line cut in two by the writer: nothing of it is read until it ends.
	half := ccTurn(ccSID, "u-half", "user", "the halfwrittenword prompt", at)
	f, err := os.OpenFile(cc, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(half[:len(half)/2])
	f.Close()
	// A malformed line, then a good one: reported, skipped, and followed on.
	appendLines(t, cx, `{"timestamp": not json`, cxTurn("user", "after the broken line comes marmotline", at))
	eventually(t, w, "the line after a malformed one", func() bool { return ta.finds(key, "marmotline") })
	eventually(t, w, "the malformed line reported as file:line", func() bool { return strings.Contains(w.err.String(), filepath.Base(cx)+":8") })
	if ta.finds(key, "halfwrittenword") {
		t.Errorf("half a line was read")
	}
	appendLines(t, cc, half[len(half)/2:])
	eventually(t, w, "the line once finished", func() bool { return ta.finds(key, "halfwrittenword") })

	// A project directory and a Codex date directory that appear later.
	const newSID = "6e6e6e6e-0000-4000-8000-000000000002"
	writeLines(t, filepath.Join(home, ".claude", "projects", "-home-w-new", newSID+".jsonl"), ccTurn(newSID, "n0", "user", "a brand new tapirproject", at))
	const newRollout = "019d0000-0000-7000-8000-00000000beef"
	writeLines(t, filepath.Join(home, ".codex", "sessions", "2026", "03", "02", "rollout-2026-03-02T09-00-00-"+newRollout+".jsonl"),
		cxMeta(newRollout, at), cxTurn("user", "the next day brings quaggaday", at))
	eventually(t, w, "sessions in new directories", func() bool { return ta.finds(key, "tapirproject") && ta.finds(key, "quaggaday") })
	appendLines(t, filepath.Join(home, ".claude", "projects", "-home-w-new", newSID+".jsonl"), ccTurn(newSID, "n1", "assistant", "followed in the new dir zorillaagain", at))
	eventually(t, w, "an append in the new directory", func() bool { return ta.finds(key, "zorillaagain") })

	ss := ta.importedSessions(key)
	if n := len(ss[ccSID].Messages); n != 2+10+1 {
		t.Errorf("claude code session has %d messages, want 13 (no duplicates, none lost)", n)
	}
	if n := len(ss[cxSID].Messages); n != 1+5+1 {
		t.Errorf("codex session has %d messages, want 7", n)
	}
	if got := ss[ccSID].Messages[2].CreatedAt; got != time.Date(2026, 3, 1, 9, 1, 0, 0, time.UTC).UnixMilli() {
		t.Errorf("an appended message's date is %d, want the transcript's", got)
	}
}

// countingProxy forwards to the app, counting the messages sent (by
// external id) and, while down, answering 503 or dropping connections.
type countingProxy struct {
	next http.Handler
	mu   sync.Mutex
	sent map[string]int // message external id -> times sent
	down atomic.Int32   // 0 up, 1 answers 503, 2 drops connections
	hits atomic.Int32   // requests refused while down
}

func newCountingProxy(next http.Handler) *countingProxy {
	return &countingProxy{next: next, sent: map[string]int{}}
}

func (p *countingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p.down.Load() {
	case 1:
		p.hits.Add(1)
		http.Error(w, `{"error":"Service Unavailable"}`, http.StatusServiceUnavailable)
		return
	case 2:
		p.hits.Add(1)
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		http.Error(w, "", http.StatusBadGateway)
		return
	}
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/sync/") {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var one struct {
			ExternalID        string
			SessionExternalID string
			Messages          []struct{ ExternalID string }
		}
		json.Unmarshal(b, &one)
		p.mu.Lock()
		if r.URL.Path == "/sync/message" {
			p.sent[one.ExternalID]++
		}
		for _, m := range one.Messages {
			p.sent[m.ExternalID]++
		}
		p.mu.Unlock()
	}
	p.next.ServeHTTP(w, r)
}

// counts returns and resets what was sent.
func (p *countingProxy) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.sent
	p.sent = map[string]int{}
	return out
}

// A restarted watcher sends what was appended while it was stopped, and
// nothing from before: its offsets are in the state file.
func TestWatchRestartResumesFromState(t *testing.T) {
	_, cc, cx := watchHome(t)
	ta := newTestApp(t, t.TempDir())
	key := ta.key("rita")
	proxy := newCountingProxy(ta.app.Handler())
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"--watch", "--server", srv.URL, "--key", key, "--state", state, "--retry-max", "200ms"}

	w := startWatch(t, args...)
	eventually(t, w, "the first pass", func() bool { return ta.finds(key, "okapiwatch") && ta.finds(key, "gerbilwatch") })
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	appendLines(t, cc, ccTurn(ccSID, "r1", "assistant", "before the restart lemurone", at))
	eventually(t, w, "an append", func() bool { return ta.finds(key, "lemurone") })
	w.stop(t)
	var st struct {
		Files map[string]struct {
			Agent  string
			Offset int64
			Line   int
		}
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatalf("no state file after the watcher stopped: %v", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(cc); st.Files[cc].Agent != "claude-code" || st.Files[cc].Offset != fi.Size() || st.Files[cc].Line != 4 {
		t.Errorf("state of %s = %+v, want offset %d, line 4\n%s", cc, st.Files[cc], fi.Size(), b)
	}
	before := proxy.counts()
	if before["r1"] != 1 {
		t.Errorf("the append was sent %d times, want once: %v", before["r1"], before)
	}

	// While stopped, the assistants go on.
	appendLines(t, cc, ccTurn(ccSID, "r2", "user", "while stopped gnuquestion", at.Add(time.Minute)), ccTurn(ccSID, "r3", "assistant", "gnuanswer", at.Add(2*time.Minute)))
	appendLines(t, cx, cxTurn("assistant", "while stopped ibexanswer", at))
	w = startWatch(t, args...)
	eventually(t, w, "what was appended while stopped", func() bool {
		return ta.finds(key, "gnuquestion") && ta.finds(key, "gnuanswer") && ta.finds(key, "ibexanswer")
	})
	appendLines(t, cc, ccTurn(ccSID, "r4", "assistant", "after the restart yakfollow", at.Add(3*time.Minute)))
	eventually(t, w, "an append after the restart", func() bool { return ta.finds(key, "yakfollow") })
	after := proxy.counts()
	want := map[string]int{ccSID + "-user-r2": 1, "r3": 1, "r4": 1, cxSID + "-L3": 1}
	if asJSON(after) != asJSON(want) {
		t.Errorf("after the restart the watcher sent %v, want only the new messages %v", after, want)
	}
	if n := ta.messageCount(key, ccSID); n != 6 {
		t.Errorf("claude code session has %d messages, want 6", n)
	}
}

// While the server is down (503s, then dropped connections) the assistants
// go on writing; once it is back everything arrives, once.
func TestWatchSurvivesOutage(t *testing.T) {
	_, cc, cx := watchHome(t)
	ta := newTestApp(t, t.TempDir())
	key := ta.key("olga")
	proxy := newCountingProxy(ta.app.Handler())
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	w := startWatch(t, "--watch", "--server", srv.URL, "--key", key, "--state", filepath.Join(t.TempDir(), "s.json"), "--retry-max", "200ms")
	eventually(t, w, "the first pass", func() bool { return ta.finds(key, "okapiwatch") && ta.finds(key, "gerbilwatch") })
	proxy.counts()

	at := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	var words []string
	for mode := int32(1); mode <= 2; mode++ {
		proxy.down.Store(mode)
		refused := proxy.hits.Load()
		for i := range 3 {
			word := fmt.Sprintf("outage%c%c", 'a'+mode, 'a'+i)
			words = append(words, word)
			appendLines(t, cc, ccTurn(ccSID, fmt.Sprintf("o%d-%d", mode, i), "assistant", "during the outage "+word, at))
			appendLines(t, cx, cxTurn("user", "codex too "+word+"x", at))
			at = at.Add(time.Second)
			time.Sleep(50 * time.Millisecond) // appends spread over the outage, not one burst
		}
		eventually(t, w, "the watcher trying while the server is down", func() bool { return proxy.hits.Load() > refused+2 })
	}
	proxy.down.Store(0)
	for _, word := range words {
		eventually(t, w, word+" after the outage", func() bool { return ta.finds(key, word) && ta.finds(key, word+"x") })
	}
	for id, n := range proxy.counts() {
		if n != 1 {
			t.Errorf("message %s sent %d times after the outage, want once", id, n)
		}
	}
	if n := ta.messageCount(key, ccSID); n != 2+6 {
		t.Errorf("claude code session has %d messages, want 8", n)
	}
	if n := ta.messageCount(key, cxSID); n != 1+6 {
		t.Errorf("codex session has %d messages, want 7", n)
	}
}

// A transcript truncated and rewritten, and one renamed away (rotated) with
// a new file in its place: what was appended to the old file before the
// rename and what the new file holds all arrive.
func TestWatchTruncateAndRotate(t *testing.T) {
	_, cc, cx := watchHome(t)
	ta := newTestApp(t, t.TempDir())
	key := ta.key("tom")
	w := startWatch(t, "--watch", "--server", ta.srv.URL, "--key", key, "--state", filepath.Join(t.TempDir(), "s.json"), "--retry-max", "200ms")
	eventually(t, w, "the first pass", func() bool { return ta.finds(key, "okapiwatch") && ta.finds(key, "gerbilwatch") })
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	// Truncated in place and written anew (shorter than what was read).
	if err := os.WriteFile(cc, []byte(ccTurn(ccSID, "t1", "user", "rewritten vicunatrunc", at)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, w, "the rewritten file", func() bool { return ta.finds(key, "vicunatrunc") })
	appendLines(t, cc, ccTurn(ccSID, "t2", "assistant", "and followed on from there wapititrunc", at.Add(time.Second)))
	eventually(t, w, "an append to the rewritten file", func() bool { return ta.finds(key, "wapititrunc") })

	// Rotated: an append and the rename in one go, then a new file under
	// the name. (Claude Code names messages by uuid; assistants whose ids
	// are line numbers, like Codex, never rewrite a rollout.)
	appendLines(t, cc, ccTurn(ccSID, "k1", "assistant", "last words of the old file kudurotate", at.Add(2*time.Second)))
	if err := os.Rename(cc, cc+".1"); err != nil {
		t.Fatal(err)
	}
	writeLines(t, cc, ccTurn(ccSID, "n1", "user", "first words of the new file nilgairotate", at.Add(time.Hour)),
		ccTurn(ccSID, "n2", "assistant", "and an answer elandrotate", at.Add(time.Hour+time.Second)))
	eventually(t, w, "the rotated file's last line and the new file", func() bool {
		return ta.finds(key, "kudurotate") && ta.finds(key, "nilgairotate") && ta.finds(key, "elandrotate")
	})
	appendLines(t, cc, ccTurn(ccSID, "n3", "assistant", "the new file followed on oryxrotate", at.Add(time.Hour+2*time.Second)))
	eventually(t, w, "an append to the new file", func() bool { return ta.finds(key, "oryxrotate") })
	_ = cx
	if n := ta.messageCount(key, ccSID); n != 2+2+1+3 {
		t.Errorf("claude code session has %d messages, want 8 (what was sent stays on the server)", n)
	}
}

// A history that is not JSONL (aider's Markdown, kept in each project) is
// re-read when it changes; what it gained arrives, nothing twice.
func TestWatchRereadsWholeFiles(t *testing.T) {
	home, _, _ := watchHome(t)
	hist := filepath.Join(home, "code", "shop", ".aider.chat.history.md")
	writeLines(t, hist, "", "# aider chat started at 2026-03-01 09:00:00", "", "#### add a llamacart endpoint", "", "Adding it now.", "")
	ta := newTestApp(t, t.TempDir())
	key := ta.key("ada")
	w := startWatch(t, "--watch", "--server", ta.srv.URL, "--key", key, "--state", filepath.Join(t.TempDir(), "s.json"), "--retry-max", "200ms")
	eventually(t, w, "the first pass", func() bool { return ta.finds(key, "llamacart") && ta.finds(key, "okapiwatch") })
	if !strings.Contains(w.out.String(), "aider") {
		t.Errorf("aider not watched: %s", w.out.String())
	}
	appendLines(t, hist, "#### and test the alpacacheckout", "", "Tests added.", "",
		"# aider chat started at 2026-03-02 10:00:00", "", "#### a new run about the vicunaorder", "", "On it.", "")
	eventually(t, w, "what the history gained", func() bool { return ta.finds(key, "alpacacheckout") && ta.finds(key, "vicunaorder") })
	n := 0
	for _, s := range ta.importedSessions(key) {
		if s.Source == "aider" {
			n += len(s.Messages)
		}
	}
	if n != 6 {
		t.Errorf("aider sessions hold %d messages, want 6", n)
	}
}
