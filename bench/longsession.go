package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// Bench longsession: what one long session costs the server while it
// grows. One user's session is grown to Size through /sync/batch, then
// receives one message every second through /sync/message, the way a
// plugin syncs an agent that keeps working; meanwhile another user's live
// messages are probed for the time until full-text search finds them
// (StartProbe). The server runs as a process of its own, so that its
// resident set is its own (the runner measures it).

// LongSessionOptions is what the workload does.
type LongSessionOptions struct {
	Size    int64         // bytes of message text the long session is grown to before the appends
	Appends time.Duration // how long the appends (one a second) and the probe run
	// Settle is how long the server is left alone between the grow and
	// the appends: the memory of the grow's bulk writes (GrowBatch
	// into one session) is returned to the system over some seconds, and
	// the index merges what they wrote.
	Settle   time.Duration
	MinBytes int // an appended message holds MinBytes..MaxBytes of text
	MaxBytes int
	Seed     uint64
	Progress io.Writer
}

// LongSessionResult is what bench longsession measured.
type LongSessionResult struct {
	Command  string            `json:"command"`
	Settings map[string]string `json:"settings"`
	// SizeBytes is the text the long session held when the appends began,
	// EndBytes when they ended.
	SizeBytes int64 `json:"size_bytes"`
	EndBytes  int64 `json:"end_bytes"`
	// GrowSeconds is how long growing it took, until its last batch was
	// searchable; GrowPeakRSS the server's peak resident set meanwhile.
	GrowSeconds float64 `json:"grow_seconds"`
	GrowPeakRSS int64   `json:"grow_peak_rss_bytes"`
	// Appended is the number of messages appended; AppendWrite the time
	// each POST took (until its 200).
	Appended    int   `json:"appended"`
	AppendWrite Delay `json:"append_write"`
	// AppendFound is the time until the long session's last appended
	// message was found by full-text search, checked at the end of the
	// run (the appender's own time-to-searchable, once).
	AppendFoundMs float64 `json:"last_append_found_ms"`
	// StartRSS is the server's resident set when the appends began (after
	// Settle); PeakRSS its peak during the appends (its high-water mark
	// reset when they began, where Linux allows it).
	StartRSS int64 `json:"start_rss_bytes"`
	PeakRSS  int64 `json:"peak_rss_bytes"`
	// Live is another user's live messages, time to searchable.
	Live LiveProbe `json:"live"`
	// The goals.
	GoalRSS    int64   `json:"goal_rss_bytes"`
	GoalLiveMs float64 `json:"goal_live_p99_ms"`
}

// GrowBatch is the text of one /sync/batch that grows the long session:
// an agent's session synced as it grows, a megabyte at a time. (A bulk
// import of a long session sends larger batches: one step then analyses
// all their volumes at once, which is the grow's peak.)
const GrowBatch = 1 << 20

// Goals of issue 29 item 6.
const (
	LongSessionGoalRSS  = 500 << 20
	LongSessionGoalLive = 2 * time.Second
)

// LongSessionServer is the server under test, as the runner started it.
type LongSessionServer struct {
	Long, Live *Client // the long session's user, the live user
	// ResetPeak resets the server's resident-set high-water mark (false:
	// it could not), Peak reads it and RSS reads the resident set now;
	// each may be nil.
	ResetPeak func() bool
	Peak      func() int64
	RSS       func() int64
}

// longSessionID is the long session's external id.
const longSessionID = "long-session"

// RunLongSession runs the workload against srv.
func RunLongSession(ctx context.Context, srv LongSessionServer, o LongSessionOptions) (LongSessionResult, error) {
	res := LongSessionResult{GoalRSS: LongSessionGoalRSS, GoalLiveMs: millis(LongSessionGoalLive)}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	g := NewGenerator(o.Seed)
	long := srv.Long
	if err := long.Post(ctx, "/sync/session", fmt.Appendf(nil, `{"externalId":%q,"source":"claude-code","title":"a long agent session","projectPath":"/home/bench/app"}`, longSessionID)); err != nil {
		return res, err
	}

	// Grow: batches of about GrowBatch bytes of text, the last message of
	// the last one holding a word of its own, searched for after it.
	start := time.Now()
	seq := 0
	var last string
	for res.SizeBytes < o.Size {
		var msgs []GenMessage
		var n int64
		for n < GrowBatch && res.SizeBytes+n < o.Size {
			text := g.longText(rng, o.MinBytes, o.MaxBytes)
			msgs = append(msgs, longMessage(seq, text))
			n += int64(len(text))
			seq++
		}
		last = fmt.Sprintf("growmark%sz", letters(seq))
		msgs[len(msgs)-1].TextContent += " " + last
		b, _ := json.Marshal(map[string]any{"messages": msgs})
		if err := long.Post(ctx, "/sync/batch", b); err != nil {
			return res, fmt.Errorf("grow the long session: %w", err)
		}
		res.SizeBytes += n
		fmt.Fprintf(o.Progress, "\rgrowing the long session: %d MiB of %d", res.SizeBytes>>20, o.Size>>20)
	}
	fmt.Fprintln(o.Progress)
	if err := waitFound(ctx, long, last, 30*time.Minute); err != nil {
		return res, fmt.Errorf("the grown session never became searchable: %w", err)
	}
	res.GrowSeconds = time.Since(start).Seconds()
	if srv.Peak != nil {
		res.GrowPeakRSS = srv.Peak()
	}
	fmt.Fprintf(o.Progress, "letting the server settle for %s...\n", o.Settle)
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if srv.RSS != nil {
		res.StartRSS = srv.RSS()
	}
	reset := srv.ResetPeak != nil && srv.ResetPeak()
	if res.Settings == nil {
		res.Settings = map[string]string{}
	}
	res.Settings["peak rss during appends"] = map[bool]string{true: "high-water mark reset when the appends began (/proc/PID/clear_refs)",
		false: "high-water mark since the server started (it could not be reset)"}[reset]

	// Append one message a second while the other user's probe runs.
	fmt.Fprintf(o.Progress, "appending one message a second to the long session for %s, probing another user's live messages...\n", o.Appends)
	res.EndBytes = res.SizeBytes
	stopProbe := StartProbe(ctx, srv.Live, "longsession-live-probe")
	var writes []time.Duration
	tick := time.NewTicker(time.Second)
	end := time.Now().Add(o.Appends)
	var appendErr error
	var lastAt time.Time
	for time.Now().Before(end) && ctx.Err() == nil {
		text := g.longText(rng, o.MinBytes, o.MaxBytes)
		last = fmt.Sprintf("appendmark%sz", letters(seq))
		m := longMessage(seq, text+" "+last)
		seq++
		b, _ := json.Marshal(m)
		t0 := time.Now()
		if appendErr = long.Post(ctx, "/sync/message", b); appendErr != nil {
			break
		}
		lastAt = t0
		writes = append(writes, time.Since(t0))
		res.Appended++
		res.EndBytes += int64(len(m.TextContent))
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
	}
	tick.Stop()
	if err := waitFound(ctx, long, last, 10*time.Minute); err != nil && appendErr == nil {
		appendErr = fmt.Errorf("the last appended message never became searchable: %w", err)
	}
	res.AppendFoundMs = millis(time.Since(lastAt))
	probe, perr := stopProbe()
	if appendErr != nil {
		return res, fmt.Errorf("append: %w", appendErr)
	}
	if perr != nil {
		return res, fmt.Errorf("live probe: %w", perr)
	}
	res.Live = probe
	res.AppendWrite = Delay{N: len(writes), P50ms: millis(Percentile(writes, 50)), P99ms: millis(Percentile(writes, 99))}
	if srv.Peak != nil {
		res.PeakRSS = srv.Peak()
	}
	return res, nil
}

// longMessage is the i-th message of the long session: user and
// assistant turns alternating, as an agent's session goes.
func longMessage(i int, text string) GenMessage {
	role := "user"
	if i%2 == 1 {
		role = "assistant"
	}
	return GenMessage{ExternalID: fmt.Sprintf("long-%d", i), SessionExt: longSessionID, Role: role, TextContent: text}
}

// longText is a message of minBytes..maxBytes of the generator's prose,
// code and traces, as an agent's turns read.
func (g *Generator) longText(rng *rand.Rand, minBytes, maxBytes int) string {
	want := minBytes + rng.IntN(max(1, maxBytes-minBytes+1))
	var b strings.Builder
	for b.Len() < want {
		switch rng.IntN(6) {
		case 0:
			b.WriteString(g.code())
		case 1:
			b.WriteString(g.trace())
		default:
			b.WriteString(g.sentence(8, 30))
		}
		b.WriteString("\n\n")
	}
	return strings.TrimSpace(b.String())
}

// waitFound polls full-text search for word until it is found or within
// passes.
func waitFound(ctx context.Context, c *Client, word string, within time.Duration) error {
	c = &Client{URL: c.URL, Key: c.Key, HTTP: &http.Client{Timeout: probeTimeout}}
	deadline := time.Now().Add(within)
	for {
		found, err := c.FullTextFinds(ctx, word)
		if err != nil {
			return err
		}
		if found {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%q not found within %s", word, within)
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// PrintLongSession writes the result as a table.
func PrintLongSession(w io.Writer, r LongSessionResult) {
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	fmt.Fprintf(w, "long session: %s when the appends began, %s at the end; grown in %.1f s (server peak RSS %s meanwhile)\n",
		mib(r.SizeBytes), mib(r.EndBytes), r.GrowSeconds, mib(r.GrowPeakRSS))
	fmt.Fprintf(w, "appends: %d, one a second; POST p50 %.1f ms, p99 %.1f ms; the last one searchable after %.0f ms\n",
		r.Appended, r.AppendWrite.P50ms, r.AppendWrite.P99ms, r.AppendFoundMs)
	fmt.Fprintf(w, "server RSS when the appends began: %s; peak during the appends: %s (goal < %s)\n", mib(r.StartRSS), mib(r.PeakRSS), mib(r.GoalRSS))
	fmt.Fprintf(w, "another user's live messages: n %d, p50 %.0f ms, p99 %.0f ms, max %.0f ms, missed %d (goal p99 <= %.0f ms)\n",
		r.Live.N, r.Live.P50ms, r.Live.P99ms, r.Live.Maxms, r.Live.Missed, r.GoalLiveMs)
}
