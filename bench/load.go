package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hindsight-dev/hindsight/progress"
)

// LoadTarget is the system under test, provided by the caller (cmd wires a
// real Hindsight behind it).
type LoadTarget struct {
	Clients []*Client // one per user: traffic is spread over several users
	// WaitIdle returns when everything synced is indexed.
	WaitIdle func(ctx context.Context) error
	// Pending, when set, counts the sessions still waiting to be indexed
	// (the outbox depth), for a progress bar while WaitIdle runs.
	Pending func() int
	// Lags returns (and forgets) write-to-searchable delays seen by the indexer.
	Lags func() []time.Duration
	// Search runs one query in-process for user i (the API's code path
	// minus HTTP): the number of results, and whether the answer said it
	// was partial (a search budget ran out).
	Search func(ctx context.Context, user int, mode, q string, k int) (hits int, partial bool, err error)
	// Rebuild re-indexes everything from the records and returns how many sessions.
	Rebuild func(ctx context.Context) (int, error)
	// RawBleve, when set, indexes the documents Rebuild writes, already
	// read and built in memory, with Bleve's plain batch API into fresh
	// indexes with the same mappings, and reports the indexing (not the
	// reading): the ceiling Bleve itself sets on Rebuild. Timed right after
	// Rebuild, in the same run.
	RawBleve func(ctx context.Context) (RawRun, error)
	// Disk reports what the data set takes on disk.
	Disk func() DiskUse
	// TextBytes returns the size of every session's searchable text: the
	// title and message text the index scores, counted once.
	TextBytes func(ctx context.Context) (int64, error)
	Modes     []string
}

// RawRun is what LoadTarget.RawBleve measured.
type RawRun struct {
	Sessions  int
	Took, CPU time.Duration // wall and process CPU time of the indexing
}

// DiskUse is the size on disk of each part of a data set.
type DiskUse struct {
	Records int64 // the records file (bbolt)
	Index   int64 // the full-text index
	Vectors int64 // vectors kept in the data directory (0 when none, or kept by a Weaviate server)
}

// StepOptions configures RunLoad.
type StepOptions struct {
	Sessions    int // sessions to reach (cumulative with earlier steps)
	Messages    int // mean messages per session
	Concurrency int // concurrent sync clients
	Queries     int // queries per mode and path
	Seed        uint64
	Progress    io.Writer
	SkipRebuild bool
}

// LoadStep is the outcome at one size.
type LoadStep struct {
	Sessions      int     `json:"sessions"`
	Messages      int     `json:"messages"`
	IngestMsgsPS  float64 `json:"ingest_messages_per_s"`
	IngestElapsed float64 `json:"ingest_s"`
	// SearchableMsgsPS is the messages of the ingest over the time from
	// its first write until every session is indexed (DrainS after the
	// last write): the speed of an import as a whole, whether the server
	// takes writes faster than it indexes them or holds bulk writes
	// while the indexer catches up.
	SearchableMsgsPS float64 `json:"searchable_messages_per_s,omitempty"`
	DrainS           float64 `json:"index_drain_s,omitempty"`
	LagP50ms         float64 `json:"index_lag_p50_ms"`
	LagP99ms         float64 `json:"index_lag_p99_ms"`
	// Live is the live-sync probe run during the step's ingest.
	Live  *LiveProbe         `json:"live_probe,omitempty"`
	Query map[string]Latency `json:"query"` // "<mode>/<inprocess|http>"
	// Phrase is the quoted-phrase queries (PhraseQuery), full-text, in
	// process, by kind (PhraseKinds): their first pass, which meets the
	// blocks of words and the positions of pairs no query read before;
	// PhraseSteady the same queries again.
	Phrase       map[string]PhraseLatency `json:"phrase,omitempty"`
	PhraseSteady map[string]PhraseLatency `json:"phrase_steady,omitempty"`
	RebuildPS    float64                  `json:"rebuild_sessions_per_s,omitempty"`
	// RawBlevePS is LoadTarget.RawBleve's speed, RebuildToRaw the rebuild's
	// fraction of it.
	RawBlevePS   float64 `json:"raw_bleve_sessions_per_s,omitempty"`
	RebuildToRaw float64 `json:"rebuild_to_raw_bleve,omitempty"`
	// CPU milliseconds per session (the whole process's CPU time: steadier
	// than wall time on a shared machine) of the rebuild and of raw Bleve.
	RebuildCPUms    float64 `json:"rebuild_cpu_ms_per_session,omitempty"`
	RawBleveCPUms   float64 `json:"raw_bleve_cpu_ms_per_session,omitempty"`
	HeapBytes       uint64  `json:"heap_bytes"`
	RSSBytes        uint64  `json:"rss_bytes,omitempty"` // resident set of the process (Linux; 0 elsewhere)
	RecordsBytes    int64   `json:"records_bytes"`
	IndexBytes      int64   `json:"index_bytes"`
	BytesPerSession float64 `json:"disk_bytes_per_session"` // records and index
	HeapPerSession  float64 `json:"heap_bytes_per_session"`
	RSSPerSession   float64 `json:"rss_bytes_per_session,omitempty"`

	// What the data is, against what it takes. Raw is the JSON bodies the
	// sync API received; text is the searchable text (title and message
	// text, once); records, index and vectors what they take on disk.
	RawBytes    int64         `json:"raw_payload_bytes,omitempty"`
	TextBytes   int64         `json:"searchable_text_bytes,omitempty"`
	VectorBytes int64         `json:"vectors_bytes,omitempty"`
	PerSession  *SessionBytes `json:"bytes_per_session,omitempty"`
}

// SessionBytes is a step's bytes per session, and the two ratios the
// storage goals are set in: records to the raw payload, index to the
// searchable text.
type SessionBytes struct {
	Raw          float64 `json:"raw_payload"`
	Text         float64 `json:"searchable_text"`
	Records      float64 `json:"records"`
	Index        float64 `json:"index"`
	Vectors      float64 `json:"vectors"`
	Total        float64 `json:"total"` // records, index and vectors
	RecordsToRaw float64 `json:"records_to_raw"`
	IndexToText  float64 `json:"index_to_text"`
}

func sessionBytes(sessions int, raw, text int64, d DiskUse) *SessionBytes {
	n := float64(sessions)
	b := &SessionBytes{Raw: float64(raw) / n, Text: float64(text) / n, Records: float64(d.Records) / n,
		Index: float64(d.Index) / n, Vectors: float64(d.Vectors) / n, Total: float64(d.Records+d.Index+d.Vectors) / n}
	if raw > 0 {
		b.RecordsToRaw = float64(d.Records) / float64(raw)
	}
	if text > 0 {
		b.IndexToText = float64(d.Index) / float64(text)
	}
	return b
}

// Latency is a p50/p99 pair in milliseconds and, for a query pass, the
// process's CPU milliseconds per query over the pass (whatever else the
// process did meanwhile included: after the ingest drained, little).
type Latency struct {
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	CPUms float64 `json:"cpu_ms_per_query,omitempty"`
}

// PhraseLatency is the latency of the phrase queries of one kind, how
// many there were, how many found a session, and how many answers said
// they were partial.
type PhraseLatency struct {
	Latency
	Queries int `json:"queries"`
	Found   int `json:"found"`
	Partial int `json:"partial"`
}

// Loader grows a data set step by step; the generator state carries over so
// each step adds new sessions.
type Loader struct {
	t     LoadTarget
	gen   *Generator
	done  int
	msgs  int
	raw   int64 // bytes of the request bodies synced so far
	rng   *rand.Rand
	terms []string
	// texts are message texts of the first sessions and the user each
	// session went to, for phrases; prng draws the phrases (apart from
	// rng, so the plain mix stays as it was).
	texts []PhraseSample
	prng  *rand.Rand
}

// NewLoader returns a Loader for t, generating with seed.
func NewLoader(t LoadTarget, seed uint64) *Loader {
	return &Loader{t: t, gen: NewGenerator(seed), rng: rand.New(rand.NewPCG(seed, 7)), prng: rand.New(rand.NewPCG(seed, 27))}
}

// Step ingests sessions until the total reaches o.Sessions, then measures.
func (l *Loader) Step(ctx context.Context, o StepOptions) (LoadStep, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Queries <= 0 {
		o.Queries = 300
	}
	add := o.Sessions - l.done
	st := LoadStep{}
	if add > 0 {
		// Pre-generate so generation is not measured; bodies hold up to ~500 messages.
		type body struct {
			user int
			b    []byte
			msgs int
		}
		var bodies []body
		var batch []GenSession
		var sampled []string // message texts of batch's sessions, for l.texts
		n := 0
		flush := func() {
			if len(batch) == 0 {
				return
			}
			for _, t := range sampled {
				l.texts = append(l.texts, PhraseSample{User: len(bodies) % len(l.t.Clients), Text: t})
			}
			sampled = nil
			var msgs []GenMessage
			for _, s := range batch {
				msgs = append(msgs, s.Messages...)
			}
			b, _ := json.Marshal(map[string]any{"sessions": batch, "messages": msgs})
			bodies = append(bodies, body{user: len(bodies) % len(l.t.Clients), b: b, msgs: len(msgs)})
			batch, n = nil, 0
		}
		for range add {
			s := l.gen.Session(o.Messages)
			if len(l.terms) < 2000 {
				l.terms = append(l.terms, s.Title)
			}
			if len(l.texts)+len(sampled) < 2000 {
				if t := messageText(l.prng, s); t != "" {
					sampled = append(sampled, t)
				}
			}
			batch = append(batch, s)
			n += len(s.Messages)
			if n >= 500 {
				flush()
			}
		}
		flush()
		for _, b := range bodies {
			l.raw += int64(len(b.b))
		}
		l.t.Lags() // forget lags of earlier phases
		var next, msgs atomic.Int64
		var wg sync.WaitGroup
		var firstErr error
		var once sync.Once
		bar := progress.New(o.Progress, fmt.Sprintf("ingest to %d", o.Sessions), len(bodies))
		// Meanwhile one plugin syncs live, a message a second.
		stopProbe := StartProbe(ctx, l.t.Clients[0], fmt.Sprintf("bench-live-probe-%d", o.Sessions))
		start := time.Now()
		for range o.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= len(bodies) || ctx.Err() != nil {
						return
					}
					b := bodies[i]
					if err := l.t.Clients[b.user].Post(ctx, "/sync/batch", b.b); err != nil {
						once.Do(func() { firstErr = err })
						return
					}
					msgs.Add(int64(b.msgs))
					bar.Add(1)
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		live, perr := stopProbe()
		bar.Done()
		if firstErr != nil {
			return st, firstErr
		}
		if perr != nil {
			return st, fmt.Errorf("live probe: %w", perr)
		}
		st.Live = &live
		drain := time.Now()
		if err := WaitIdle(ctx, fmt.Sprintf("indexing to %d", o.Sessions), l.t.WaitIdle, l.t.Pending, o.Progress); err != nil {
			return st, err
		}
		st.DrainS = time.Since(drain).Seconds()
		st.SearchableMsgsPS = float64(msgs.Load()) / time.Since(start).Seconds()
		l.done = o.Sessions
		l.msgs += int(msgs.Load())
		st.IngestElapsed = elapsed.Seconds()
		st.IngestMsgsPS = float64(msgs.Load()) / elapsed.Seconds()
		lags := l.t.Lags()
		st.LagP50ms, st.LagP99ms = millis(Percentile(lags, 50)), millis(Percentile(lags, 99))
	}
	st.Sessions, st.Messages = l.done, l.msgs
	st.Query = map[string]Latency{}
	queries := l.queries(o.Queries)
	for _, mode := range l.t.Modes {
		// The first pass meets cold caches (the evaluator's block maxima
		// of segments just written, the page cache): it is reported on its
		// own ("<mode>/first"), and the in-process and HTTP passes after it
		// are the steady state a user sees.
		for _, path := range []string{"first", "inprocess", "http"} {
			lat := make([]time.Duration, 0, len(queries))
			bar := progress.New(o.Progress, fmt.Sprintf("queries %s/%s at %d", mode, path, l.done), len(queries))
			cpu := ProcessCPU()
			for i, q := range queries {
				user := i % len(l.t.Clients)
				start := time.Now()
				var err error
				if path != "http" {
					_, _, err = l.t.Search(ctx, user, mode, q, 20)
				} else {
					err = l.t.Clients[user].search(ctx, mode, q, 20)
				}
				if err != nil {
					return st, fmt.Errorf("%s query over %s: %w", mode, path, err)
				}
				lat = append(lat, time.Since(start))
				bar.Set(i + 1)
			}
			bar.Done()
			st.Query[mode+"/"+path] = Latency{P50ms: millis(Percentile(lat, 50)), P99ms: millis(Percentile(lat, 99)),
				CPUms: millis(ProcessCPU()-cpu) / float64(max(len(queries), 1))}
		}
	}
	if slices.Contains(l.t.Modes, "fulltext") {
		var err error
		if st.Phrase, st.PhraseSteady, err = l.phrases(ctx, o); err != nil {
			return st, err
		}
	}
	// Return freed memory to the OS first, so the resident size is what
	// the data set holds, not garbage of the ingest phase.
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.HeapBytes = ms.HeapInuse
	st.RSSBytes = residentBytes()
	disk := l.t.Disk()
	st.RecordsBytes, st.IndexBytes, st.VectorBytes = disk.Records, disk.Index, disk.Vectors
	st.RawBytes = l.raw
	if l.t.TextBytes != nil {
		var err error
		if st.TextBytes, err = l.t.TextBytes(ctx); err != nil {
			return st, fmt.Errorf("searchable text: %w", err)
		}
	}
	if l.done > 0 {
		st.BytesPerSession = float64(st.RecordsBytes+st.IndexBytes) / float64(l.done)
		st.HeapPerSession = float64(st.HeapBytes) / float64(l.done)
		st.RSSPerSession = float64(st.RSSBytes) / float64(l.done)
		st.PerSession = sessionBytes(l.done, st.RawBytes, st.TextBytes, disk)
	}
	if !o.SkipRebuild {
		start, cpu := time.Now(), ProcessCPU()
		n, err := l.t.Rebuild(ctx)
		if err != nil {
			return st, fmt.Errorf("rebuild: %w", err)
		}
		st.RebuildPS = float64(n) / time.Since(start).Seconds()
		st.RebuildCPUms = perSessionMs(ProcessCPU()-cpu, n)
		if l.t.RawBleve != nil {
			r, err := l.t.RawBleve(ctx)
			if err != nil {
				return st, fmt.Errorf("raw bleve: %w", err)
			}
			if r.Sessions > 0 {
				st.RawBlevePS = float64(r.Sessions) / r.Took.Seconds()
				st.RebuildToRaw = st.RebuildPS / st.RawBlevePS
				st.RawBleveCPUms = perSessionMs(r.CPU, r.Sessions)
			}
		}
	}
	return st, nil
}

func perSessionMs(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000 / float64(n)
}

// phrases times the phrase queries (full-text, in process, after the
// plain ones: their caches are warm), by kind (PhraseQuery), twice: first
// and steady are the two passes. Each counts the queries of each kind
// that found something and those that said they were partial.
func (l *Loader) phrases(ctx context.Context, o StepOptions) (first, steady map[string]PhraseLatency, err error) {
	type phraseQuery struct {
		kind, text string
		user       int
	}
	qs := make([]phraseQuery, o.Queries)
	for i := range qs {
		kind, user, q := PhraseQuery(l.prng, i, l.texts)
		if user < 0 {
			user = i % len(l.t.Clients)
		}
		qs[i] = phraseQuery{kind, q, user}
	}
	pass := func(name string) (map[string]PhraseLatency, error) {
		lat := map[string][]time.Duration{}
		partial, found := map[string]int{}, map[string]int{}
		bar := progress.New(o.Progress, fmt.Sprintf("phrase queries (%s) at %d", name, l.done), len(qs))
		for i, q := range qs {
			start := time.Now()
			hits, part, err := l.t.Search(ctx, q.user, "fulltext", q.text, 20)
			if err != nil {
				return nil, fmt.Errorf("phrase query: %w", err)
			}
			lat[q.kind] = append(lat[q.kind], time.Since(start))
			if hits > 0 {
				found[q.kind]++
			}
			if part {
				partial[q.kind]++
			}
			bar.Set(i + 1)
		}
		bar.Done()
		out := map[string]PhraseLatency{}
		for k, ds := range lat {
			out[k] = PhraseLatency{Latency: Latency{P50ms: millis(Percentile(ds, 50)), P99ms: millis(Percentile(ds, 99))},
				Queries: len(ds), Found: found[k], Partial: partial[k]}
		}
		return out, nil
	}
	if first, err = pass("first"); err != nil {
		return nil, nil, err
	}
	if steady, err = pass("steady"); err != nil {
		return nil, nil, err
	}
	return first, steady, nil
}

// messageText returns the text of one of s's messages with text, drawn
// with rng ("" when it has none).
func messageText(rng *rand.Rand, s GenSession) string {
	var texts []string
	for _, m := range s.Messages {
		if m.TextContent != "" {
			texts = append(texts, m.TextContent)
		}
		for _, p := range m.Parts {
			if p["type"] == "text" {
				if c, ok := p["content"].(string); ok {
					texts = append(texts, c)
				}
			}
		}
	}
	if len(texts) == 0 {
		return ""
	}
	return texts[rng.IntN(len(texts))]
}

// PhraseSample is a message text of the data set and the user (client)
// whose session holds it.
type PhraseSample struct {
	User int
	Text string
}

// PhraseKinds are PhraseQuery's kinds, in report order.
var PhraseKinds = []string{"match", "none", "run", "decoy"}

// PhraseQuery draws the i-th quoted phrase of the load bench with rng: its
// kind, the user to ask (-1: any) and the text. In turn:
//
//   - "match": what a user quotes and the generator writes in many
//     sessions of every user: an error message ("context deadline
//     exceeded") or a topic with its article ("the database connection
//     pool");
//   - "none": the words of two topics joined ("connection pool stale
//     entries"), which no session holds together, nor their word pairs;
//   - "run": 2 to 4 consecutive words of one of texts, asked of the user
//     whose session holds them. The generator's sentences draw from 45
//     words, so most runs are word salad whose word pairs thousands of
//     sessions hold and few hold the phrase: the index reads the pairs'
//     positions of every session holding all of them;
//   - "decoy": a topic and two sentence words ("the auth login redirect
//     value should"), whose pairs many sessions of the topic hold in some
//     message but few in one: decided on the positions the same way.
//
// "match" and "none" are every third query each, "run" and "decoy" every
// sixth.
func PhraseQuery(rng *rand.Rand, i int, texts []PhraseSample) (kind string, user int, text string) {
	quote := func(s string) string { return `"` + s + `"` }
	switch i % 6 {
	case 0:
		return "match", -1, quote(genErrors[rng.IntN(len(genErrors))])
	case 2:
		t := genTopics[rng.IntN(len(genTopics))]
		return "match", -1, quote("the " + t.area + " " + t.thing)
	case 4:
		if len(texts) > 0 {
			s := texts[rng.IntN(len(texts))]
			words := strings.Fields(s.Text)
			words = slices.DeleteFunc(words, func(w string) bool { return strings.ContainsAny(w, "\"“”") })
			if len(words) >= 2 {
				k := min(2+rng.IntN(3), len(words))
				at := rng.IntN(len(words) - k + 1)
				return "run", s.User, quote(strings.Join(words[at:at+k], " "))
			}
		}
		return "run", -1, quote("fix the flaky test")
	case 5:
		t := genTopics[rng.IntN(len(genTopics))]
		return "decoy", -1, quote("the " + t.area + " " + t.thing + " " + genWords[rng.IntN(len(genWords))] + " " + genWords[rng.IntN(len(genWords))])
	}
	a := rng.IntN(len(genTopics))
	b := (a + 1 + rng.IntN(len(genTopics)-1)) % len(genTopics)
	return "none", -1, quote(genTopics[a].area + " " + genTopics[a].thing + " " + genTopics[b].thing)
}

// queries draws realistic query texts: titles' words, identifiers, phrases.
func (l *Loader) queries(n int) []string {
	out := make([]string, n)
	for i := range out {
		_, out[i] = LoadQuery(l.rng, i, l.terms)
	}
	return out
}

// LoadQuery draws the i-th query of the load bench's mix with rng: in turn
// an identifier, a topic ("area thing"), an error message and one of
// titles (the generator's session titles). kind names which ("ident",
// "topic", "error", "title"), for reports per kind.
func LoadQuery(rng *rand.Rand, i int, titles []string) (kind, text string) {
	switch i % 4 {
	case 0:
		return "ident", genIdents[rng.IntN(len(genIdents))]
	case 1:
		t := genTopics[rng.IntN(len(genTopics))]
		return "topic", t.area + " " + t.thing
	case 2:
		return "error", genErrors[rng.IntN(len(genErrors))]
	}
	if len(titles) == 0 {
		return "title", "fix the flaky test"
	}
	return "title", titles[rng.IntN(len(titles))]
}

func (c *Client) search(ctx context.Context, mode, q string, k int) error {
	u := fmt.Sprintf("%s/api/search?type=%s&limit=%d&q=%s", c.URL, mode, k, url.QueryEscape(q))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
		return fmt.Errorf("search: status %d", resp.StatusCode)
	}
	return nil
}

// PrintLoad writes one row per step.
func PrintLoad(w io.Writer, steps []LoadStep, modes []string) {
	fmt.Fprintf(w, "%9s %9s %10s %10s %9s %9s %15s", "sessions", "messages", "ingest m/s", "search m/s", "lag p50", "lag p99", "live p50/p99")
	for _, m := range modes {
		fmt.Fprintf(w, " %19s %19s %19s", m+" first p50/p99", m+" in-proc p50/p99", m+" http p50/p99")
	}
	fmt.Fprintf(w, " %11s %11s %5s %17s %10s %10s %10s\n", "rebuild s/s", "rawBleve/s", "ratio", "cpu ms/s reb/raw",
		"heap B/s", "RSS B/s", "disk B/s")
	for _, s := range steps {
		fmt.Fprintf(w, "%9d %9d %10.0f %10.0f %7.0fms %7.0fms %15s", s.Sessions, s.Messages, s.IngestMsgsPS, s.SearchableMsgsPS,
			s.LagP50ms, s.LagP99ms, liveCell(s.Live, "ms"))
		for _, m := range modes {
			f, a, b := s.Query[m+"/first"], s.Query[m+"/inprocess"], s.Query[m+"/http"]
			fmt.Fprintf(w, " %8.2f/%8.2fms %8.2f/%8.2fms %8.2f/%8.2fms", f.P50ms, f.P99ms, a.P50ms, a.P99ms, b.P50ms, b.P99ms)
		}
		fmt.Fprintf(w, " %11.0f %11.0f %5.2f %8.2f/%8.2f %10.0f %10.0f %10.0f\n", s.RebuildPS, s.RawBlevePS, s.RebuildToRaw,
			s.RebuildCPUms, s.RawBleveCPUms,
			s.HeapPerSession, s.RSSPerSession, s.BytesPerSession)
	}
}

// PrintLoadPhrases writes, per step, the phrase queries' figures by kind
// beside the plain full-text ones.
func PrintLoadPhrases(w io.Writer, steps []LoadStep) {
	for _, s := range steps {
		plain := s.Query["fulltext/inprocess"]
		for _, k := range PhraseKinds {
			if p, ok := s.Phrase[k]; ok {
				st := s.PhraseSteady[k]
				fmt.Fprintf(w, "%9d phrase %-5s %4d queries, %4d found, %3d partial: p50/p99 %8.2f/%8.2fms, again %8.2f/%8.2fms (plain %.2f/%.2fms)\n",
					s.Sessions, k, p.Queries, p.Found, p.Partial, p.P50ms, p.P99ms, st.P50ms, st.P99ms, plain.P50ms, plain.P99ms)
			}
		}
	}
}

// PrintLoadBytes writes, per step, the bytes per session of the data
// (raw payload, searchable text) and of what keeps it (records, index,
// vectors), with the records/raw and index/text ratios.
func PrintLoadBytes(w io.Writer, steps []LoadStep) {
	fmt.Fprintf(w, "%9s %12s %12s %19s %19s %12s %12s   (bytes per session)\n",
		"sessions", "raw payload", "text", "records (x raw)", "index (x text)", "vectors", "total")
	for _, s := range steps {
		if b := s.PerSession; b != nil {
			fmt.Fprintf(w, "%9d %12.0f %12.0f %11.0f (%4.2fx) %11.0f (%4.2fx) %12.0f %12.0f\n",
				s.Sessions, b.Raw, b.Text, b.Records, b.RecordsToRaw, b.Index, b.IndexToText, b.Vectors, b.Total)
		}
	}
}

// liveCell is a step's live probe as "p50/p99" followed by unit, or "–".
func liveCell(l *LiveProbe, unit string) string {
	if l == nil || l.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f/%.0f%s", l.P50ms, l.P99ms, unit)
}
