package bench

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"time"
)

// The measuring parts of bench nodes (several Hindsight nodes over one
// PostgreSQL and one Weaviate; bench/runner/nodes.go runs them): the corpus
// and queries of the search figures, the search driver, and the bulk a node
// is killed under.

// Corpus returns the batch phase of bench ingest's workload for seed as
// /sync/batch bodies of batchSize messages (the same generator, so the
// same sessions), and the titles of its sessions, which LoadQuery draws
// queries from.
func Corpus(seed uint64, messages, batchSize int) (batches [][]byte, titles []string) {
	w := buildWorkload(IngestOptions{BatchMessages: messages, BatchSize: batchSize, Seed: seed})
	return w.batches, w.titles
}

// SearchQueries draws n queries of the load bench's mix (identifiers,
// topics, error messages, titles) with seed.
func SearchQueries(seed uint64, n int, titles []string) []string {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	out := make([]string, n)
	for i := range out {
		_, out[i] = LoadQuery(rng, i, titles)
	}
	return out
}

// TimeSearches sends every query as a full-text search of 10 results from
// concurrency clients at once, query i to targets[i%len(targets)], and
// returns each query's latency and the wall time of the whole.
func TimeSearches(ctx context.Context, targets []*Client, queries []string, concurrency int, progressOut io.Writer, label string) ([]time.Duration, time.Duration, error) {
	return drive(ctx, len(queries), concurrency, progressOut, label, func(i int) error {
		return targets[i%len(targets)].search(ctx, "fulltext", queries[i], 10)
	})
}

// PostBatches sends bodies to /sync/batch from workers clients at once and
// returns the wall time (the progress bar is labelled label).
func PostBatches(ctx context.Context, c *Client, bodies [][]byte, workers int, progressOut io.Writer, label string) (time.Duration, error) {
	_, elapsed, err := drive(ctx, len(bodies), workers, progressOut, label, func(i int) error {
		return c.Post(ctx, "/sync/batch", bodies[i])
	})
	return elapsed, err
}

// MarkedBatch is the i-th /sync/batch body of the bulk bench nodes kills a
// node under: sessions generated sessions of 40 messages (seed and i pick
// them), each titled with a word only it holds (MarkedWord), so a search
// tells whether a node has indexed it.
func MarkedBatch(seed uint64, i, sessions int) []byte {
	g := NewGenerator(seed ^ uint64(i+1)*0x9e3779b97f4a7c15)
	var ss []GenSession
	var ms []GenMessage
	for j := range sessions {
		s := g.Session(40)
		s.Title += " " + MarkedWord(i*sessions+j)
		ms = append(ms, s.Messages...)
		ss = append(ss, s)
	}
	b, _ := json.Marshal(map[string]any{"sessions": ss, "messages": ms})
	return b
}

// MarkedWord is the word in the title of the n-th session of the marked
// bulk, which no generated text holds ("mrk", n in letters, "q": digits
// would be split off by the analyzer).
func MarkedWord(n int) string { return "mrk" + letters(n) + "q" }
