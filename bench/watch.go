package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Bench watch: how long a message an assistant appends to its transcript
// takes to become searchable when `hindsight import --watch` follows the
// transcripts. Writers append lines the way Claude Code and Codex do, to
// several sessions at a random pace; a poller searches for a word only the
// new message holds. The peer, in the same run, is the plugins' way: the
// live probe (StartProbe) posts a message straight to /sync/message and
// polls the same search.

// WatchResult is what bench watch measured.
type WatchResult struct {
	Command    string            `json:"command"`
	Settings   map[string]string `json:"settings"`
	Sessions   map[string]int    `json:"sessions"` // per agent
	Messages   int               `json:"messages"`
	Missed     int               `json:"missed,omitempty"` // not found within probeTimeout (counted at that delay)
	IntervalMs [2]int            `json:"interval_ms"`      // appends are this far apart, uniformly
	P50ms      float64           `json:"p50_ms"`
	P90ms      float64           `json:"p90_ms"`
	P99ms      float64           `json:"p99_ms"`
	Maxms      float64           `json:"max_ms"`
	PerAgent   map[string]Delay  `json:"per_agent"`
	// Plugin is the peer: a message posted straight to /sync/message.
	Plugin LiveProbe `json:"plugin_probe"`
	// Goal is the issue's: p99 under 2 s.
	GoalMs float64 `json:"goal_p99_ms"`
}

// Delay is a distribution of delays.
type Delay struct {
	N     int     `json:"n"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
}

// WatchGoal is the goal for the append-to-searchable delay, at p99.
const WatchGoal = 2 * time.Second

// WatchSession is one transcript a writer appends to.
type WatchSession struct {
	Agent string
	Path  string
	id    string
	n     int
}

// WriteWatchSessions writes perAgent sessions of Claude Code and of Codex
// under home, in their own layouts, each with a first message holding the
// word Start(i), and returns them.
func WriteWatchSessions(home string, perAgent int, start time.Time) ([]*WatchSession, error) {
	var out []*WatchSession
	for i := range perAgent {
		id := fmt.Sprintf("7a7a0000-0000-4000-8000-%012d", i)
		s := &WatchSession{Agent: "claude-code", id: id,
			Path: filepath.Join(home, ".claude", "projects", fmt.Sprintf("-home-bench-p%d", i%3), id+".jsonl")}
		out = append(out, s)
		id = fmt.Sprintf("019e0000-0000-7000-8000-%012d", i)
		x := &WatchSession{Agent: "codex", id: id,
			Path: filepath.Join(home, ".codex", "sessions", start.Format("2006/01/02"), "rollout-"+start.Format("2006-01-02T15-04-05")+"-"+id+".jsonl")}
		out = append(out, x)
	}
	for i, s := range out {
		if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
			return nil, err
		}
		if s.Agent == "codex" {
			meta, _ := json.Marshal(map[string]any{"timestamp": stamp(start), "type": "session_meta",
				"payload": map[string]any{"id": s.id, "timestamp": stamp(start), "cwd": "/home/bench/api"}})
			if err := os.WriteFile(s.Path, append(meta, '\n'), 0o644); err != nil {
				return nil, err
			}
		}
		if err := s.Append(start, StartWord(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// StartWord is the word of session i's first message.
func StartWord(i int) string { return "wstart" + letters(i) + "q" }

// watchWord is the word of the i-th appended message.
func watchWord(i int) string { return "wtch" + letters(i) + "q" }

func letters(i int) string {
	var b []byte
	for {
		b = append(b, byte('a'+i%26))
		i /= 26
		if i == 0 {
			return string(b)
		}
	}
}

// Append appends one message holding word, as the assistant writes it: one
// complete line, user and assistant turns alternating.
func (s *WatchSession) Append(at time.Time, word string) error {
	s.n++
	role := "user"
	if s.n%2 == 0 {
		role = "assistant"
	}
	text := "please look at the " + word + " handler and the retry logic around it"
	var line any
	switch s.Agent {
	case "claude-code":
		msg := map[string]any{"role": role, "content": text}
		if role == "assistant" {
			msg = map[string]any{"role": role, "model": "claude-sonnet-4-20250514",
				"content": []any{map[string]any{"type": "text", "text": text}}, "usage": map[string]any{"input_tokens": 900, "output_tokens": 40}}
		}
		line = map[string]any{"type": role, "uuid": fmt.Sprintf("%s-%d", s.id, s.n), "sessionId": s.id, "cwd": "/home/bench/app",
			"timestamp": stamp(at), "message": msg}
	default:
		kind := "input_text"
		if role == "assistant" {
			kind = "output_text"
		}
		line = map[string]any{"timestamp": stamp(at), "type": "response_item",
			"payload": map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": text}}}}
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.Path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// WaitFound polls search until every word is found (or ctx ends).
func WaitFound(ctx context.Context, c *Client, words []string) error {
	for _, w := range words {
		for {
			ok, err := c.FullTextFinds(ctx, w)
			if err != nil {
				return err
			}
			if ok {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// WatchLoad appends n messages to random sessions, one every lo..hi
// (uniformly, seeded), and measures for each the delay from its append
// until a search finds it. It returns the delays per agent and how many
// were not found within probeTimeout.
func WatchLoad(ctx context.Context, c *Client, sessions []*WatchSession, n int, lo, hi time.Duration, seed uint64, progressOut io.Writer) (map[string][]time.Duration, int, error) {
	rng := rand.New(rand.NewPCG(seed, 7))
	type pending struct {
		word  string
		agent string
		at    time.Time
	}
	var (
		mu      sync.Mutex
		waiting []pending
		delays  = map[string][]time.Duration{}
		missed  int
		pollErr error
		wg      sync.WaitGroup
	)
	c = &Client{URL: c.URL, Key: c.Key, HTTP: c.HTTP}
	done := make(chan struct{})
	wg.Add(1)
	go func() { // the poller: every probePoll, a search per message not found yet
		defer wg.Done()
		for {
			mu.Lock()
			todo := append([]pending(nil), waiting...)
			mu.Unlock()
			var found []string
			for _, p := range todo {
				ok, err := c.FullTextFinds(ctx, p.word)
				if err != nil {
					mu.Lock()
					pollErr = err
					mu.Unlock()
					return
				}
				now := time.Now()
				if ok || now.Sub(p.at) >= probeTimeout {
					mu.Lock()
					delays[p.agent] = append(delays[p.agent], now.Sub(p.at))
					if !ok {
						missed++
					}
					mu.Unlock()
					found = append(found, p.word)
				}
			}
			mu.Lock()
			kept := waiting[:0]
			for _, p := range waiting {
				if !contains(found, p.word) {
					kept = append(kept, p)
				}
			}
			waiting = kept
			left := len(waiting)
			mu.Unlock()
			select {
			case <-done:
				if left == 0 {
					return
				}
			case <-ctx.Done():
				return
			default:
			}
			time.Sleep(probePoll)
		}
	}()
	start := time.Now()
	for i := range n {
		s := sessions[rng.IntN(len(sessions))]
		word := watchWord(i)
		at := time.Now()
		if err := s.Append(at, word); err != nil {
			close(done)
			wg.Wait()
			return nil, 0, err
		}
		mu.Lock()
		waiting = append(waiting, pending{word, s.Agent, at})
		mu.Unlock()
		if progressOut != nil && (i+1)%100 == 0 {
			fmt.Fprintf(progressOut, "appended %d of %d messages (%s)\n", i+1, n, time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
		case <-time.After(lo + time.Duration(rng.Int64N(int64(hi-lo)+1))):
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(done)
	wg.Wait()
	if pollErr != nil {
		return nil, 0, pollErr
	}
	return delays, missed, ctx.Err()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Summarise fills the result's distributions from the delays per agent.
func (r *WatchResult) Summarise(delays map[string][]time.Duration) {
	var all []time.Duration
	r.PerAgent = map[string]Delay{}
	for agent, ds := range delays {
		all = append(all, ds...)
		r.PerAgent[agent] = Delay{N: len(ds), P50ms: millis(Percentile(ds, 50)), P99ms: millis(Percentile(ds, 99))}
	}
	r.Messages = len(all)
	r.P50ms, r.P90ms, r.P99ms, r.Maxms = millis(Percentile(all, 50)), millis(Percentile(all, 90)), millis(Percentile(all, 99)), millis(Percentile(all, 100))
	r.GoalMs = millis(WatchGoal)
}

// WatchTable is the result as a Markdown table.
func WatchTable(r *WatchResult) string {
	var b strings.Builder
	ratio := func(a, of float64) string {
		if of <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", a/of)
	}
	b.WriteString("| path to search | messages | p50 ms | p90 ms | p99 ms | max ms | p50 × plugin | p99 × plugin |\n|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| `import --watch` (append to the transcript) | %d | %.0f | %.0f | %.0f | %.0f | %s | %s |\n",
		r.Messages, r.P50ms, r.P90ms, r.P99ms, r.Maxms, ratio(r.P50ms, r.Plugin.P50ms), ratio(r.P99ms, r.Plugin.P99ms))
	agents := make([]string, 0, len(r.PerAgent))
	for a := range r.PerAgent {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	for _, a := range agents {
		d := r.PerAgent[a]
		fmt.Fprintf(&b, "| of it, %s | %d | %.0f | | %.0f | | %s | %s |\n", a, d.N, d.P50ms, d.P99ms, ratio(d.P50ms, r.Plugin.P50ms), ratio(d.P99ms, r.Plugin.P99ms))
	}
	fmt.Fprintf(&b, "| plugin (POST /sync/message), same run | %d | %.0f | | %.0f | %.0f | 1× | 1× |\n", r.Plugin.N, r.Plugin.P50ms, r.Plugin.P99ms, r.Plugin.Maxms)
	verdict := "meets"
	if r.P99ms > r.GoalMs || r.Missed > 0 {
		verdict = "misses"
	}
	fmt.Fprintf(&b, "\np99 %.0f ms %s the goal (%.0f ms at p99)", r.P99ms, verdict, r.GoalMs)
	if r.Missed > 0 {
		fmt.Fprintf(&b, "; %d messages were not found within %s", r.Missed, probeTimeout)
	}
	b.WriteString(".\n")
	return b.String()
}

// WriteWatchReport writes result.json and report.md into dir.
func WriteWatchReport(dir string, r *WatchResult) error {
	var b strings.Builder
	b.WriteString("# Watch: from an assistant's append to a search hit\n\nProduced by\n\n```\n" + r.Command + "\n```\n\n")
	agents := make([]string, 0, len(r.Sessions))
	for a, n := range r.Sessions {
		agents = append(agents, fmt.Sprintf("%d %s", n, a))
	}
	sort.Strings(agents)
	fmt.Fprintf(&b, `A server runs in the bench process (full-text indexing, no embedder) and `+"`hindsight import --watch`"+`
in a process of its own follows a temporary $HOME holding %s sessions. A writer appends one
message at a time, as the assistant writes it (one JSONL line: a Claude Code transcript line, a
Codex response item), to a random session, every %d to %d ms (uniformly); a poller searches
(`+"`GET /api/search?type=fulltext`"+`, every 20 ms) for a word only that message holds. Delay = from the
append's write returning until the first search that finds it: the file-system event, the
watcher's read of the appended line, its sync request, the server's write, indexing and search.
The peer, in the same run and on the same server, is the plugins' way: the live probe posts one
message a second straight to `+"`/sync/message`"+` and polls the same search (its delay has no
file and no watcher in it). Ratios are against it.

`, strings.Join(agents, " and "), r.IntervalMs[0], r.IntervalMs[1])
	b.WriteString(WatchTable(r))
	b.WriteString("\nSettings:\n\n")
	WriteSettings(&b, r.Settings)
	return WriteRun(dir, r, b.String())
}
