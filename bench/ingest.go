package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hindsight-dev/hindsight/progress"
)

// IngestOptions configures the ingest benchmark.
type IngestOptions struct {
	BatchMessages int    // messages in the batch phase (sent as /sync/batch of BatchSize); 0 = 50,000
	BatchSize     int    // messages per /sync/batch; 0 = 500
	Singles       int    // single-message POSTs in the single phase; 0 = 20,000
	Concurrency   int    // clients posting singles at once; 0 = 32
	Seed          uint64 // generator seed
	Progress      io.Writer
	// Indexer, when set, is the server's indexing pipeline: after each phase
	// the run waits until everything is indexed and reports the index lag.
	Indexer *Indexer
	// CountFailures: a request the server answers with a 5xx status is
	// counted (Phase.Failed, Phase.FirstFailure) instead of ending the run,
	// and the rates count only what it accepted; a live probe that fails so
	// stops and says why (Phase.ProbeFailure). bench nodes sets it: a store
	// that gives up on some writes under load is a result, not a crash of
	// the bench.
	CountFailures bool
}

// Indexer is what the ingest benchmark needs of the server's indexing
// pipeline.
type Indexer struct {
	// Lags returns (and forgets) each indexed session's write-to-searchable
	// delay: from its oldest write not yet indexed until the index took it.
	Lags func() []time.Duration
	// WaitIdle returns once nothing is left to index.
	WaitIdle func(context.Context) error
	// Pending, optional, is the number of sessions waiting, for the progress bar.
	Pending func() int
}

func (o IngestOptions) withDefaults() IngestOptions {
	if o.BatchMessages <= 0 {
		o.BatchMessages = 50_000
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.Singles <= 0 {
		o.Singles = 20_000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// Phase is one measured phase.
type Phase struct {
	Name        string        `json:"name"`
	Messages    int           `json:"messages"`
	Requests    int           `json:"requests"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	MessagesPS  float64       `json:"messages_per_s"`
	RequestsPS  float64       `json:"requests_per_s"`
	P50, P99    time.Duration `json:"-"`
	P50ms       float64       `json:"p50_ms"`
	P99ms       float64       `json:"p99_ms"`
	CeilingPS   float64       `json:"raw_bbolt_ceiling_per_s"`
	CeilingNote string        `json:"raw_bbolt_ceiling"`
	// Index lag of the phase's writes (with IngestOptions.Indexer), and how
	// long indexing went on after the last write of the phase.
	LagP50ms     float64 `json:"index_lag_p50_ms,omitempty"`
	LagP99ms     float64 `json:"index_lag_p99_ms,omitempty"`
	LagMaxms     float64 `json:"index_lag_max_ms,omitempty"`
	IndexedAfter float64 `json:"indexed_s_after_phase,omitempty"`
	// Live is the live-sync probe run during the phase (the batch phase).
	Live *LiveProbe `json:"live_probe,omitempty"`
	// With IngestOptions.CountFailures: requests answered with a 5xx
	// status (their messages are not in Messages), the first one's error,
	// and the error that stopped the live probe early.
	Failed       int    `json:"failed_requests,omitempty"`
	FirstFailure string `json:"first_failure,omitempty"`
	ProbeFailure string `json:"probe_failure,omitempty"`
}

// indexed waits for the indexer to catch up with the phase and records
// its lag.
func (p *Phase) indexed(ctx context.Context, ix *Indexer, progressOut io.Writer) error {
	if ix == nil {
		return nil
	}
	start := time.Now()
	if err := WaitIdle(ctx, "indexing", ix.WaitIdle, ix.Pending, progressOut); err != nil {
		return err
	}
	p.IndexedAfter = time.Since(start).Seconds()
	lags := ix.Lags()
	p.LagP50ms, p.LagP99ms, p.LagMaxms = millis(Percentile(lags, 50)), millis(Percentile(lags, 99)), millis(Percentile(lags, 100))
	return nil
}

func (p *Phase) finish(lat []time.Duration) {
	p.MessagesPS = float64(p.Messages) / p.Elapsed.Seconds()
	p.RequestsPS = float64(p.Requests) / p.Elapsed.Seconds()
	p.P50, p.P99 = Percentile(lat, 50), Percentile(lat, 99)
	p.P50ms, p.P99ms = millis(p.P50), millis(p.P99)
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// IngestResult holds both phases.
type IngestResult struct {
	Batch  Phase `json:"batch"`
	Single Phase `json:"single"`
}

// Client posts to a Hindsight server with one API key.
type Client struct {
	URL  string
	Key  string
	HTTP *http.Client
}

// Post sends body to path and fails on a non-200 or on entry errors.
func (c *Client) Post(ctx context.Context, path string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Path: path, Code: resp.StatusCode, Body: string(bytes.TrimSpace(b))}
	}
	var res struct{ Errors []string }
	if json.Unmarshal(b, &res) == nil && len(res.Errors) > 0 {
		return fmt.Errorf("POST %s: %d entry errors, first: %s", path, len(res.Errors), res.Errors[0])
	}
	return nil
}

// StatusError is a request the server answered with a status other than
// 200.
type StatusError struct {
	Path string
	Code int
	Body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("POST %s: %d %s", e.Path, e.Code, e.Body) }

// ServerFailure reports whether err is a 5xx answer (a StatusError).
func ServerFailure(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code >= 500
}

// failures counts the requests of a phase the server failed, for
// IngestOptions.CountFailures.
type failures struct {
	mu       sync.Mutex
	n, msgs  int
	first    string
	counting bool
}

// post sends body to path, counting a 5xx answer as a failure of msgs
// messages when counting.
func (f *failures) post(ctx context.Context, c *Client, path string, body []byte, msgs int) error {
	err := c.Post(ctx, path, body)
	if err == nil || !f.counting || !ServerFailure(err) {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.first = err.Error()
	}
	f.n++
	f.msgs += msgs
	return nil
}

// into records the failures in p and takes their messages and requests
// out of the accepted counts.
func (f *failures) into(p *Phase) {
	p.Failed, p.FirstFailure = f.n, f.first
	p.Messages -= f.msgs
	p.Requests -= f.n
}

// workload pre-generates the traffic so generation is not measured.
type workload struct {
	batches [][]byte // /sync/batch bodies
	sizes   []int    // messages in each batch
	singles [][]byte // /sync/message bodies
	records [][]byte // the batch phase's messages as JSON, for the raw ceiling
	titles  []string // the batch phase's session titles
}

func buildWorkload(o IngestOptions) workload {
	g := NewGenerator(o.Seed)
	var w workload
	var pending []GenMessage
	var sessions []GenSession
	flush := func() {
		if len(pending) == 0 {
			return
		}
		b, _ := json.Marshal(map[string]any{"sessions": sessions, "messages": pending})
		w.batches = append(w.batches, b)
		w.sizes = append(w.sizes, len(pending))
		pending, sessions = nil, nil
	}
	for n := 0; n < o.BatchMessages; {
		s := g.Session(40)
		sessions = append(sessions, s)
		w.titles = append(w.titles, s.Title)
		for _, m := range s.Messages {
			if n == o.BatchMessages {
				break
			}
			pending = append(pending, m)
			rec, _ := json.Marshal(m)
			w.records = append(w.records, rec)
			n++
			if len(pending) == o.BatchSize {
				flush()
			}
		}
	}
	flush()
	// Singles: many sessions in parallel, one message per request, the way
	// the Claude Code and opencode plugins sync.
	for n := 0; n < o.Singles; {
		s := g.Session(20)
		for _, m := range s.Messages {
			if n == o.Singles {
				break
			}
			b, _ := json.Marshal(m)
			w.singles = append(w.singles, b)
			n++
		}
	}
	return w
}

// RunIngest replays realistic plugin traffic against c: batches of
// BatchSize messages from one client, then single-message POSTs from
// Concurrency clients. Each phase is followed by the raw bbolt ceiling for the
// same records on the same disk, measured in dir.
func RunIngest(ctx context.Context, c *Client, dir string, o IngestOptions) (IngestResult, error) {
	o = o.withDefaults()
	fmt.Fprintf(o.Progress, "generating %d batch messages and %d single messages (seed %d)...\n", o.BatchMessages, o.Singles, o.Seed)
	w := buildWorkload(o)
	var res IngestResult

	if o.Indexer != nil {
		o.Indexer.Lags() // only this run's writes count
	}
	// Batch phase: a few plugins uploading history at once.
	// Meanwhile one plugin syncs live, a message a second.
	res.Batch = Phase{Name: fmt.Sprintf("batches of %d messages", o.BatchSize), Messages: o.BatchMessages, Requests: len(w.batches)}
	stopProbe := StartProbe(ctx, c, "bench-live-probe")
	failed := &failures{counting: o.CountFailures}
	lat, elapsed, err := drive(ctx, len(w.batches), 2, o.Progress, "batch", func(i int) error {
		return failed.post(ctx, c, "/sync/batch", w.batches[i], w.sizes[i])
	})
	live, perr := stopProbe()
	if err != nil {
		return res, err
	}
	if perr != nil && o.CountFailures && ServerFailure(perr) {
		res.Batch.ProbeFailure, perr = perr.Error(), nil
	}
	if perr != nil {
		return res, fmt.Errorf("live probe: %w", perr)
	}
	res.Batch.Live = &live
	res.Batch.Elapsed = elapsed
	failed.into(&res.Batch)
	res.Batch.finish(lat)
	if err := res.Batch.indexed(ctx, o.Indexer, o.Progress); err != nil {
		return res, err
	}
	ceil, err := rawBatchCeiling(dir, w.records, o.BatchSize)
	if err != nil {
		return res, err
	}
	res.Batch.CeilingPS, res.Batch.CeilingNote = ceil, "bbolt Update per batch of the same JSON records, fsync on"

	// Single phase.
	res.Single = Phase{Name: fmt.Sprintf("single-message POSTs, %d clients", o.Concurrency), Messages: o.Singles, Requests: o.Singles}
	failed = &failures{counting: o.CountFailures}
	lat, elapsed, err = drive(ctx, len(w.singles), o.Concurrency, o.Progress, "single", func(i int) error {
		return failed.post(ctx, c, "/sync/message", w.singles[i], 1)
	})
	if err != nil {
		return res, err
	}
	res.Single.Elapsed = elapsed
	failed.into(&res.Single)
	res.Single.finish(lat)
	if err := res.Single.indexed(ctx, o.Indexer, o.Progress); err != nil {
		return res, err
	}
	ceil, err = rawSingleCeiling(dir, w.singles, o.Concurrency)
	if err != nil {
		return res, err
	}
	res.Single.CeilingPS, res.Single.CeilingNote = ceil, fmt.Sprintf("bbolt Batch, one record per call, %d goroutines, fsync on", o.Concurrency)
	return res, nil
}

// drive runs n requests from workers goroutines and returns per-request latency.
func drive(ctx context.Context, n, workers int, out io.Writer, label string, do func(i int) error) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	bar := progress.New(out, label, n)
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t := time.Now()
				if err := do(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				lat[i] = time.Since(t)
				bar.Set(int(done.Add(1)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	bar.Done()
	if firstErr != nil {
		return nil, 0, firstErr
	}
	return lat, elapsed, ctx.Err()
}

// openRaw opens a scratch bbolt file with the options kv uses.
func openRaw(dir, name string) (*bolt.DB, func(), error) {
	path := filepath.Join(dir, name)
	db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, NoFreelistSync: true})
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { db.Close(); os.Remove(path) }
	return db, cleanup, db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("m"))
		return err
	})
}

// rawBatchCeiling writes the records straight into bbolt, one transaction per
// batch: what the disk and bbolt allow with no HTTP, decoding or indexing.
func rawBatchCeiling(dir string, records [][]byte, size int) (float64, error) {
	db, cleanup, err := openRaw(dir, "ceiling-batch.db")
	if err != nil {
		return 0, err
	}
	defer cleanup()
	start := time.Now()
	for i := 0; i < len(records); i += size {
		end := min(i+size, len(records))
		err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("m"))
			for j := i; j < end; j++ {
				if err := b.Put(fmt.Appendf(nil, "%012d", j), records[j]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return float64(len(records)) / time.Since(start).Seconds(), nil
}

// rawSingleCeiling writes one record per call from concurrent goroutines with
// bbolt's own Batch coalescing.
func rawSingleCeiling(dir string, records [][]byte, workers int) (float64, error) {
	db, cleanup, err := openRaw(dir, "ceiling-single.db")
	if err != nil {
		return 0, err
	}
	defer cleanup()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(records) {
					return
				}
				_ = db.Batch(func(tx *bolt.Tx) error {
					return tx.Bucket([]byte("m")).Put(fmt.Appendf(nil, "%012d", i), records[i])
				})
			}
		}()
	}
	wg.Wait()
	return float64(len(records)) / time.Since(start).Seconds(), nil
}

// PrintIngest writes the human-readable table.
func PrintIngest(w io.Writer, r IngestResult) {
	fmt.Fprintf(w, "%-36s %10s %10s %9s %9s %14s %8s\n", "phase", "msgs/s", "reqs/s", "p50 ms", "p99 ms", "raw bbolt/s", "ratio")
	for _, p := range []Phase{r.Batch, r.Single} {
		fmt.Fprintf(w, "%-36s %10.0f %10.0f %9.2f %9.2f %14.0f %8.2f\n", p.Name, p.MessagesPS, p.RequestsPS, p.P50ms, p.P99ms, p.CeilingPS, p.MessagesPS/p.CeilingPS)
	}
	fmt.Fprintln(w, "ratio = Hindsight messages/s over the raw bbolt ceiling for the same records in the same run.")
	if r.Batch.LagP99ms > 0 || r.Single.LagP99ms > 0 {
		fmt.Fprintf(w, "\n%-36s %12s %12s %12s %16s\n", "phase", "lag p50 ms", "lag p99 ms", "lag max ms", "indexed after s")
		for _, p := range []Phase{r.Batch, r.Single} {
			fmt.Fprintf(w, "%-36s %12.0f %12.0f %12.0f %16.2f\n", p.Name, p.LagP50ms, p.LagP99ms, p.LagMaxms, p.IndexedAfter)
		}
		fmt.Fprintln(w, "lag = from a session's oldest write not yet indexed until the index took it, over the sessions the phase wrote;")
		fmt.Fprintln(w, "indexed after = how long indexing went on after the phase's last response.")
	}
	if l := r.Batch.Live; l != nil {
		fmt.Fprintf(w, "\n%-36s %12s %12s %12s %9s %16s\n", "live probe during", "p50 ms", "p99 ms", "max ms", "messages", "of it write p50/p99")
		fmt.Fprintf(w, "%-36s %12.0f %12.0f %12.0f %9d %16s\n", r.Batch.Name, l.P50ms, l.P99ms, l.Maxms, l.N, fmt.Sprintf("%.0f/%.0f", l.WriteP50ms, l.WriteP99ms))
		fmt.Fprintln(w, "live probe = one /sync/message a second from another client during the phase, from sending it until")
		fmt.Fprintln(w, "full-text search over HTTP finds it; write = until the POST's 200 (committed).")
		if l.Missed > 0 {
			fmt.Fprintf(w, "%d live messages were not found within %s.\n", l.Missed, probeTimeout)
		}
	}
}
