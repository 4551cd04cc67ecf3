package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/internal/localpostgres"
	"github.com/hindsight-dev/hindsight/internal/localweaviate"
	"github.com/hindsight-dev/hindsight/kv"
)

// The figures bench nodes can measure (--figures).
const (
	FigureIngest   = "ingest"
	FigureSearch   = "search"
	FigureTakeover = "takeover"
)

// NodesFigures lists them in the order a run measures them.
var NodesFigures = []string{FigureIngest, FigureSearch, FigureTakeover}

// NodesConfig is what bench nodes measures.
type NodesConfig struct {
	Figures []string // of NodesFigures; nil = all
	// Ingest is bench ingest's workload (Progress and Indexer are set by
	// the run); Rounds is how many times it runs against each store,
	// alternated.
	Ingest bench.IngestOptions
	Rounds int
	// The search figures: CorpusMessages generated messages (bench
	// ingest's batch workload, seed Ingest.Seed+1), Queries queries of the
	// load bench's mix sent SearchRounds times through each way from
	// SearchConcurrency clients.
	CorpusMessages    int
	Queries           int
	SearchConcurrency int
	SearchRounds      int
	// Takeover: the sessions of each /sync/batch of the bulk the node is
	// killed under.
	BulkSessions int
	Invocation
}

// NodesResult is a run of bench nodes.
type NodesResult struct {
	Command  string            `json:"command"`
	Settings map[string]string `json:"settings"`
	Ingest   *StoreIngest      `json:"ingest,omitempty"`
	Search   *NodesSearch      `json:"search,omitempty"`
	Takeover *Takeover         `json:"takeover,omitempty"`
}

// StoreIngest is bench ingest against a node keeping its records in bbolt
// and one keeping them in PostgreSQL, alternated.
type StoreIngest struct {
	Runs     []StoreRun   `json:"runs"`
	Bbolt    StoreFigures `json:"bbolt"`    // medians over the rounds
	Postgres StoreFigures `json:"postgres"` // medians over the rounds
	// PostgreSQL over bbolt, of the medians.
	BatchRatio     float64 `json:"batch_msgs_ratio"`
	SingleRatio    float64 `json:"single_syncs_ratio"`
	BatchP99Ratio  float64 `json:"batch_p99_ratio"`
	SingleP99Ratio float64 `json:"single_p99_ratio"`
}

// StoreRun is one run of bench ingest against one store.
type StoreRun struct {
	Round  int                `json:"round"`
	Store  string             `json:"store"` // bbolt or postgres
	Result bench.IngestResult `json:"result"`
	// Errors are the distinct errors the node logged last (up to ten
	// lines), when it failed requests.
	Errors []string `json:"node_errors,omitempty"`
}

// StoreFigures are one store's figures.
type StoreFigures struct {
	BatchMsgsPS  float64 `json:"batch_msgs_per_s"`
	BatchP99ms   float64 `json:"batch_p99_ms"`
	SingleSyncPS float64 `json:"single_syncs_per_s"`
	SingleP99ms  float64 `json:"single_p99_ms"`
	// Requests answered with a 5xx status, over every round, and sent.
	BatchFailed  int `json:"batch_failed_requests"`
	BatchSent    int `json:"batch_requests"`
	SingleFailed int `json:"single_failed_requests"`
	SingleSent   int `json:"single_requests"`
}

// NodesSearch is the same queries through one node and spread over three,
// and through a bbolt node with its embedded index.
type NodesSearch struct {
	Sessions    int         `json:"sessions"`
	Messages    int         `json:"messages"`
	Queries     int         `json:"queries"`
	Concurrency int         `json:"concurrency"`
	Rounds      int         `json:"rounds"`
	Ways        []SearchWay `json:"ways"`
	// Spread over one node, and one node over the bbolt node.
	P50Ratio      float64 `json:"spread_over_one_p50"`
	P99Ratio      float64 `json:"spread_over_one_p99"`
	BboltP99Ratio float64 `json:"one_over_bbolt_p99"`
}

// SearchWay is one way of sending the queries.
type SearchWay struct {
	Name     string  `json:"name"`
	Nodes    int     `json:"nodes"`
	N        int     `json:"n"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	PerS     float64 `json:"queries_per_s"`               // over the timed rounds' wall time
	IndexedS float64 `json:"corpus_synced_and_indexed_s"` // from the corpus's first batch (one client) until the outbox was empty
}

// Takeover is how long a killed node's claimed outbox entries take to be
// indexed by the others.
type Takeover struct {
	LeaseS      float64 `json:"lease_s"`
	Attempts    int     `json:"attempts"`     // kills until one caught the node holding claims
	BulkBatches int64   `json:"bulk_batches"` // acknowledged by the node before it was killed
	Claimed     int     `json:"claimed"`      // outbox entries the node held claims on at the kill
	Sessions    int     `json:"sessions"`     // of them, sessions waiting for full-text indexing
	Backlog     int     `json:"backlog"`      // the whole outbox at the kill
	// From the kill: the latest lease of the node's claims ran out; every
	// claim had passed to another node; every entry was indexed (gone from
	// its queue); every session was found by a full-text search on a
	// surviving node (which may come first: the killed node may have
	// written a session to the shared index before it died, leaving only
	// its outbox entry to clear).
	LeaseLeftS  float64 `json:"lease_left_s"`
	TakenS      float64 `json:"taken_s"`
	IndexedS    float64 `json:"indexed_s"`
	SearchableS float64 `json:"searchable_s"`
	// After the lease ran out: IndexedS - LeaseLeftS.
	AfterLeaseS float64 `json:"indexed_after_lease_s"`
}

func (c *NodesConfig) defaults() {
	if len(c.Figures) == 0 {
		c.Figures = NodesFigures
	}
	c.Rounds = max(c.Rounds, 1)
	c.CorpusMessages = max(c.CorpusMessages, 1)
	c.Queries = max(c.Queries, 1)
	c.SearchConcurrency = max(c.SearchConcurrency, 1)
	c.SearchRounds = max(c.SearchRounds, 1)
	c.BulkSessions = max(c.BulkSessions, 1)
}

// Nodes measures Hindsight with its records in PostgreSQL, every node a
// `hindsight serve` process of its own on this machine: batch ingest and
// single syncs against bbolt in the same run, search through one node and
// spread over three, and the time a killed node's claimed work takes to
// be picked up. It launches its own PostgreSQL (fsync on) and, for the
// search and takeover figures, its own weaviate-server (the text index of
// several nodes).
func Nodes(ctx context.Context, c NodesConfig, stdout, stderr io.Writer) error {
	c.defaults()
	work, progressOut, err := c.start("nodes", stderr)
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	say := func(format string, args ...any) { fmt.Fprintf(progressOut, format+"\n", args...) }

	pgBin, err := localpostgres.Binaries()
	if err != nil {
		return fmt.Errorf("bench nodes: %w", err)
	}
	say("starting PostgreSQL (%s, fsync on)", pgBin)
	pg, err := localpostgres.LaunchWith(ctx, localpostgres.Options{Durable: true})
	if err != nil {
		return fmt.Errorf("bench nodes: %w", err)
	}
	defer pg.Remove()

	res := &NodesResult{Command: c.Command, Settings: runSettings(map[string]string{
		"seed":       strconv.FormatUint(c.Ingest.Seed, 10),
		"nodes":      "hindsight serve, a process of its own each (" + strings.Join(c.Self, " ") + "), --embedder none --rate-limit 0, on this machine",
		"postgresql": pgBin + ", launched by the bench in a temporary directory, on this machine; fsync and full-page writes on, the rest at its defaults",
		"lease":      kv.DefaultLease.String() + " (kv.DefaultLease; not configurable)",
	})}
	if l := loadAverage(); l != "" {
		res.Settings["load average at start"] = l
	}
	if slices.Contains(c.Figures, FigureIngest) {
		if res.Ingest, err = storeIngest(ctx, c, pg, work, say, progressOut); err != nil {
			return fmt.Errorf("bench nodes, ingest: %w", err)
		}
	}
	if slices.Contains(c.Figures, FigureSearch) || slices.Contains(c.Figures, FigureTakeover) {
		bin, err := localweaviate.Binary()
		if err != nil {
			return fmt.Errorf("bench nodes: the search and takeover figures need a Weaviate: %w", err)
		}
		say("starting weaviate-server (%s)", bin)
		wv, err := localweaviate.Launch(ctx, bin, filepath.Join(work, "weaviate"))
		if err != nil {
			return fmt.Errorf("bench nodes: %w", err)
		}
		defer wv.Stop()
		res.Settings["weaviate"] = bin + ", launched by the bench, on this machine; the nodes' text index (--text-index weaviate)"
		if err := multiNode(ctx, c, pg, wv, work, res, say, progressOut); err != nil {
			return fmt.Errorf("bench nodes: %w", err)
		}
	}
	if l := loadAverage(); l != "" {
		res.Settings["load average at end"] = l
	}
	report := nodesReport(res)
	if c.Out != "" {
		if err := bench.WriteRun(c.Out, res, report); err != nil {
			return err
		}
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprint(stdout, report)
	return nil
}

// storeIngest runs bench ingest against a fresh bbolt node and a fresh
// PostgreSQL node, c.Rounds times each, alternating which goes first.
func storeIngest(ctx context.Context, c NodesConfig, pg *localpostgres.Server, work string, say func(string, ...any), progressOut io.Writer) (*StoreIngest, error) {
	r := &StoreIngest{}
	var figs [2][4][]float64 // by store (bbolt, postgres): batch msgs/s, batch p99, singles/s, single p99
	for round := 1; round <= c.Rounds; round++ {
		order := []string{"bbolt", "postgres"}
		if round%2 == 0 {
			slices.Reverse(order)
		}
		for _, store := range order {
			say("ingest round %d of %d: records in %s", round, c.Rounds, store)
			ir, logged, err := ingestRun(ctx, c, store, pg, work, progressOut)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", store, round, err)
			}
			r.Runs = append(r.Runs, StoreRun{Round: round, Store: store, Result: ir, Errors: logged})
			s := 0
			if store == "postgres" {
				s = 1
			}
			for i, v := range []float64{ir.Batch.MessagesPS, ir.Batch.P99ms, ir.Single.RequestsPS, ir.Single.P99ms} {
				figs[s][i] = append(figs[s][i], v)
			}
		}
	}
	med := func(s int) StoreFigures {
		return StoreFigures{BatchMsgsPS: median(figs[s][0]), BatchP99ms: median(figs[s][1]), SingleSyncPS: median(figs[s][2]), SingleP99ms: median(figs[s][3])}
	}
	r.Bbolt, r.Postgres = med(0), med(1)
	for _, run := range r.Runs {
		f := &r.Bbolt
		if run.Store == "postgres" {
			f = &r.Postgres
		}
		x := run.Result
		f.BatchFailed += x.Batch.Failed
		f.BatchSent += x.Batch.Failed + x.Batch.Requests
		f.SingleFailed += x.Single.Failed
		f.SingleSent += x.Single.Failed + x.Single.Requests
	}
	r.BatchRatio = r.Postgres.BatchMsgsPS / r.Bbolt.BatchMsgsPS
	r.SingleRatio = r.Postgres.SingleSyncPS / r.Bbolt.SingleSyncPS
	r.BatchP99Ratio = r.Postgres.BatchP99ms / r.Bbolt.BatchP99ms
	r.SingleP99Ratio = r.Postgres.SingleP99ms / r.Bbolt.SingleP99ms
	return r, nil
}

// ingestRun is one bench ingest against a fresh node with its records in
// store; both keep the text index in Bleve in their data directory. It
// also returns the errors the node logged when it failed requests.
func ingestRun(ctx context.Context, c NodesConfig, store string, pg *localpostgres.Server, work string, progressOut io.Writer) (bench.IngestResult, []string, error) {
	dir, err := os.MkdirTemp(work, "ingest-"+store+"-")
	if err != nil {
		return bench.IngestResult{}, nil, err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	args := []string{"--data", data, "--embedder", "none", "--rate-limit", "0", "--text-index", "bleve"}
	records := ""
	if store == "postgres" {
		if records, err = pg.CreateDatabase(ctx); err != nil {
			return bench.IngestResult{}, nil, err
		}
		args = append(args, "--records", records)
	}
	key, err := benchKey(ctx, records, data)
	if err != nil {
		return bench.IngestResult{}, nil, err
	}
	n, err := startNode(ctx, "node on "+store, c.Self, nodeEnv(c.Env...), key, args...)
	if err != nil {
		return bench.IngestResult{}, nil, err
	}
	defer n.stop()
	o := c.Ingest
	o.Progress, o.Indexer, o.CountFailures = progressOut, nodeIndexer(n.client), true
	r, err := bench.RunIngest(ctx, n.client, dir, o)
	if err != nil {
		return r, nil, n.failed(err)
	}
	var logged []string
	if r.Batch.Failed+r.Single.Failed > 0 || r.Batch.ProbeFailure != "" {
		logged = n.loggedErrors()
	}
	return r, logged, nil
}

// multiNode starts three nodes over one PostgreSQL database and wv, and
// measures search through them and a kill under load.
func multiNode(ctx context.Context, c NodesConfig, pg *localpostgres.Server, wv *localweaviate.Server, work string, res *NodesResult, say func(string, ...any), progressOut io.Writer) error {
	dsn, err := pg.CreateDatabase(ctx)
	if err != nil {
		return err
	}
	key, err := benchKey(ctx, dsn, "")
	if err != nil {
		return err
	}
	env := append(nodeEnv(c.Env...), "WEAVIATE_URL="+wv.URL)
	nodeArgs := func(i int) []string {
		return []string{"--data", filepath.Join(work, fmt.Sprintf("node%d", i)), "--records", dsn, "--text-index", "weaviate",
			"--embedder", "none", "--rate-limit", "0"}
	}
	var nodes []*serveNode
	defer func() {
		for _, n := range nodes {
			n.stop()
		}
	}()
	for i := 1; i <= 3; i++ {
		say("starting node %d of 3 (records in PostgreSQL, text index in Weaviate)", i)
		n, err := startNode(ctx, fmt.Sprintf("node %d", i), c.Self, env, key, nodeArgs(i)...)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	if slices.Contains(c.Figures, FigureSearch) {
		if res.Search, err = spreadSearch(ctx, c, nodes, work, say, progressOut); err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	if slices.Contains(c.Figures, FigureTakeover) {
		st, err := kv.OpenPostgres(ctx, dsn, kv.PostgresOptions{})
		if err != nil {
			return err
		}
		defer st.Close()
		victim := nodes[2]
		restart := func() (*serveNode, error) {
			n, err := startNode(ctx, "node 3", c.Self, env, key, nodeArgs(3)...)
			if err == nil {
				nodes[2] = n
			}
			return n, err
		}
		if res.Takeover, err = takeover(ctx, c, st, victim, nodes[0], restart, say); err != nil {
			return fmt.Errorf("takeover: %w", err)
		}
		nodes = nodes[:2] // the victim is dead
	}
	return nil
}

// spreadSearch ingests the corpus into the nodes (through the first) and
// into a bbolt node with its embedded index, then times the same queries
// through the first node, round robin over all, and through the bbolt
// node, in turn, c.SearchRounds times.
func spreadSearch(ctx context.Context, c NodesConfig, nodes []*serveNode, work string, say func(string, ...any), progressOut io.Writer) (*NodesSearch, error) {
	data := filepath.Join(work, "bbolt-search")
	key, err := benchKey(ctx, "", data)
	if err != nil {
		return nil, err
	}
	say("starting a node on bbolt with its embedded index (the peer)")
	bolt, err := startNode(ctx, "bbolt node", c.Self, nodeEnv(c.Env...), key, "--data", data, "--embedder", "none", "--rate-limit", "0", "--text-index", "bleve")
	if err != nil {
		return nil, err
	}
	defer bolt.stop()

	batches, titles := bench.Corpus(c.Ingest.Seed+1, c.CorpusMessages, 500)
	r := &NodesSearch{Sessions: len(titles), Messages: c.CorpusMessages, Queries: c.Queries, Concurrency: c.SearchConcurrency, Rounds: c.SearchRounds}
	ways := []struct {
		name    string
		targets []*bench.Client
		indexed float64
	}{
		{name: "one node (PostgreSQL, Weaviate)", targets: []*bench.Client{nodes[0].client}},
		{name: "three nodes, round robin", targets: []*bench.Client{nodes[0].client, nodes[1].client, nodes[2].client}},
		{name: "one node (bbolt, embedded index)", targets: []*bench.Client{bolt.client}},
	}
	for _, w := range []int{0, 2} {
		target := ways[w].targets[0]
		say("corpus: %d messages in %d sessions into %s", c.CorpusMessages, len(titles), ways[w].name)
		// One client: concurrent batches into PostgreSQL may fail (see the
		// ingest figures), and the corpus is not what is measured.
		start := time.Now()
		if _, err := bench.PostBatches(ctx, target, batches, 1, progressOut, "corpus"); err != nil {
			return nil, err
		}
		ix := nodeIndexer(target)
		if err := bench.WaitIdle(ctx, "indexing", ix.WaitIdle, ix.Pending, progressOut); err != nil {
			return nil, err
		}
		ways[w].indexed = time.Since(start).Seconds()
	}
	ways[1].indexed = ways[0].indexed

	queries := bench.SearchQueries(c.Ingest.Seed, c.Queries, titles)
	warm := queries[:min(len(queries), 50)]
	for _, n := range append(slices.Clone(nodes), bolt) {
		if _, _, err := bench.TimeSearches(ctx, []*bench.Client{n.client}, warm, c.SearchConcurrency, io.Discard, "warm-up"); err != nil {
			return nil, fmt.Errorf("warm-up on %s: %w", n.name, err)
		}
	}
	lat := make([][]time.Duration, len(ways))
	wall := make([]time.Duration, len(ways))
	for round := range c.SearchRounds {
		for k := range ways {
			w := (round + k) % len(ways) // each round starts with another way
			say("search round %d of %d: %s", round+1, c.SearchRounds, ways[w].name)
			l, el, err := bench.TimeSearches(ctx, ways[w].targets, queries, c.SearchConcurrency, progressOut, "search")
			if err != nil {
				return nil, err
			}
			lat[w] = append(lat[w], l...)
			wall[w] += el
		}
	}
	for w, way := range ways {
		r.Ways = append(r.Ways, SearchWay{Name: way.name, Nodes: len(way.targets), N: len(lat[w]),
			P50ms: millis(bench.Percentile(lat[w], 50)), P99ms: millis(bench.Percentile(lat[w], 99)),
			PerS: float64(len(lat[w])) / wall[w].Seconds(), IndexedS: way.indexed})
	}
	r.P50Ratio = r.Ways[1].P50ms / r.Ways[0].P50ms
	r.P99Ratio = r.Ways[1].P99ms / r.Ways[0].P99ms
	r.BboltP99Ratio = r.Ways[0].P99ms / r.Ways[2].P99ms
	return r, nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// takeover syncs a bulk to victim from two clients until its indexer holds
// claims, kills it (SIGKILL), and measures how long the entries it had
// claimed take to be taken, indexed and found by a search on survivor. A
// kill that finds the node between two steps, holding nothing, is
// repeated (restart brings the node back), up to three times.
func takeover(ctx context.Context, c NodesConfig, st *kv.Store, victim, survivor *serveNode, restart func() (*serveNode, error), say func(string, ...any)) (*Takeover, error) {
	r := &Takeover{LeaseS: kv.DefaultLease.Seconds()}
	var next atomic.Int64 // the bulk's next batch, across attempts
	var held []kv.Claimed
	var killed time.Time
	for r.Attempts = 1; ; r.Attempts++ {
		id := victim.nodeID()
		if id == "" {
			return nil, fmt.Errorf("%s logged no node id: %s", victim.name, victim.output())
		}
		say("takeover, attempt %d: a bulk into %s until its indexer holds claims", r.Attempts, victim.name)
		wctx, stopWriters := context.WithCancel(ctx)
		var acked atomic.Int64
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for wctx.Err() == nil {
					body := bench.MarkedBatch(c.Ingest.Seed, int(next.Add(1)-1), c.BulkSessions)
					err := victim.client.Post(wctx, "/sync/batch", body)
					if bench.ServerFailure(err) {
						continue // see the ingest figures; not what is measured here
					}
					if err != nil {
						return // killed, or stopped
					}
					acked.Add(1)
				}
			}()
		}
		var err error
		held, err = waitClaims(ctx, st, id, &acked, victim)
		if err != nil {
			stopWriters()
			wg.Wait()
			return nil, err
		}
		if err := victim.kill(); err != nil {
			stopWriters()
			wg.Wait()
			return nil, err
		}
		killed = time.Now()
		stopWriters()
		wg.Wait()
		r.BulkBatches += acked.Load()
		if held, err = claimsOf(ctx, st, id); err != nil {
			return nil, err
		}
		if len(held) > 0 || r.Attempts == 3 {
			break
		}
		say("takeover: %s held no claim at the kill; again", victim.name)
		if victim, err = restart(); err != nil {
			return nil, err
		}
	}
	if len(held) == 0 {
		return nil, fmt.Errorf("three kills found %s holding no claim", victim.name)
	}
	r.Claimed = len(held)
	var words []string
	var latest time.Time
	err := st.View(ctx, func(tx *kv.Tx) error {
		r.Backlog = tx.OutboxLen()
		for _, cl := range held {
			if cl.Expiry.After(latest) {
				latest = cl.Expiry
			}
			if cl.Queue != kv.SearchQueue {
				continue
			}
			s, err := tx.Session(cl.UserID, cl.SessionID)
			if err != nil {
				return fmt.Errorf("claimed session %s: %w", cl.SessionID, err)
			}
			f := strings.Fields(s.Title)
			words = append(words, f[len(f)-1])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.Sessions = len(words)
	r.LeaseLeftS = max(0, latest.Sub(killed).Seconds())
	say("takeover: %s killed holding %d claims (%d sessions to index for search), lease left %.1f s; waiting for the others",
		victim.name, len(held), len(words), r.LeaseLeftS)

	deadline := killed.Add(kv.DefaultLease + 10*time.Minute)
	found := make([]bool, len(words))
	for r.TakenS == 0 || r.IndexedS == 0 || r.SearchableS == 0 {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the %d entries %s had claimed were not all indexed %s after the kill", len(held), victim.name, time.Since(killed).Round(time.Second))
		}
		var stillHeld, waiting int
		err := st.View(ctx, func(tx *kv.Tx) error {
			owner := map[claimKey]string{}
			for _, cl := range tx.Claims() {
				owner[claimID(cl)] = cl.Node
			}
			for _, cl := range held {
				if owner[claimID(cl)] == cl.Node {
					stillHeld++
				}
				if tx.Waiting(cl.Queue, cl.UserID, cl.SessionID) {
					waiting++
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		now := time.Since(killed).Seconds()
		if stillHeld == 0 && r.TakenS == 0 {
			r.TakenS = now
		}
		if waiting == 0 && r.IndexedS == 0 {
			r.IndexedS = now
		}
		all := true
		for i, w := range words {
			if !found[i] {
				if found[i], err = survivor.client.FullTextFinds(ctx, w); err != nil {
					return nil, err
				}
				all = all && found[i]
			}
		}
		if all && r.SearchableS == 0 {
			r.SearchableS = time.Since(killed).Seconds()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	r.AfterLeaseS = r.IndexedS - r.LeaseLeftS
	return r, nil
}

// claimID names the outbox entry a claim is on.
type claimKey struct {
	q        kv.Queue
	uid, sid string
}

func claimID(c kv.Claimed) claimKey { return claimKey{c.Queue, c.UserID, c.SessionID} }

// waitClaims waits until node id holds a claim, once the victim has
// acknowledged a few batches (a backlog for its indexer), and returns its
// claims.
func waitClaims(ctx context.Context, st *kv.Store, id string, acked *atomic.Int64, victim *serveNode) ([]kv.Claimed, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if acked.Load() >= 4 {
			held, err := claimsOf(ctx, st, id)
			if err != nil || len(held) > 0 {
				return held, err
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s held no claim within 5 minutes of bulk syncs (%d batches acknowledged)", victim.name, acked.Load())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-victim.done:
			return nil, fmt.Errorf("%s exited: %s", victim.name, victim.output())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// claimsOf returns the claims node id holds.
func claimsOf(ctx context.Context, st *kv.Store, id string) ([]kv.Claimed, error) {
	var held []kv.Claimed
	err := st.View(ctx, func(tx *kv.Tx) error {
		for _, cl := range tx.Claims() {
			if cl.Node == id {
				held = append(held, cl)
			}
		}
		return nil
	})
	return held, err
}
