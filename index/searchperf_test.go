package index

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
)

// TestSearchPerf times Search (Kind Sessions, limit 20, no Explain) on the
// corpus and query mix of `hindsight bench load`, per query type, next to
// It is a measurement tool,
// skipped unless HINDSIGHT_SEARCHPERF_DIR is set, and asserts nothing about
// time. It reports wall-clock percentiles and the process CPU time per
// query (steadier on a shared machine), and the queries with the highest
// median time. Environment:
//
//	HINDSIGHT_SEARCHPERF_DIR          keep the index here and reuse it (required)
//	HINDSIGHT_SEARCHPERF_SESSIONS     sessions (default 100000)
//	HINDSIGHT_SEARCHPERF_ROUNDS       passes over the queries (default 5)
//	HINDSIGHT_SEARCHPERF_QUERIES      queries per pass (default 300, like the load bench)
//	HINDSIGHT_SEARCHPERF_CPUPROFILE   write a CPU profile of the timed passes here
//
//	HINDSIGHT_SEARCHPERF_DIR=/tmp/sp go test ./index/ -run SearchPerf -v -timeout 2h
//
// The corpus is bench.NewGenerator(1)'s sessions, turned into Sessions the
// way the ingest pipeline does (user text and assistant text parts, grouped
// in exchanges; tool calls and results left out) and spread over 4 users in
// the load bench's batches of about 500 messages. Only session documents
// are written (with their chunk statistics).
func TestSearchPerf(t *testing.T) {
	dir := os.Getenv("HINDSIGHT_SEARCHPERF_DIR")
	if dir == "" {
		t.Skip("search latency measurement: set HINDSIGHT_SEARCHPERF_DIR to run")
	}
	c := searchperfCorpus(t, dir)
	defer c.ix.Close()
	queries := searchperfQueries(c.titles, benchEnv("HINDSIGHT_SEARCHPERF_QUERIES", 300))
	rounds := benchEnv("HINDSIGHT_SEARCHPERF_ROUNDS", 5)
	ctx := context.Background()

	// Warm up: the first pass pages the index in and fills the block cache
	// (blockmax.go); its times are those of queries on a cold cache.
	var cold []time.Duration
	c0 := cpuTime()
	for i, q := range queries {
		t0 := time.Now()
		if _, err := c.ix.Search(ctx, Query{UserID: c.users[i%len(c.users)], Text: q.text, Limit: 20}); err != nil {
			t.Fatalf("%q: %v", q.text, err)
		}
		cold = append(cold, time.Since(t0))
	}
	coldCPU := cpuTime() - c0
	slices.Sort(cold)
	t.Logf("warm-up (cold cache) n=%5d  p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  cpu %6.2f ms/query", len(cold),
		float64(cold[len(cold)/2].Microseconds())/1000, float64(cold[len(cold)*99/100].Microseconds())/1000,
		float64(cold[len(cold)-1].Microseconds())/1000, float64(coldCPU.Microseconds())/1000/float64(len(cold)))
	if p := os.Getenv("HINDSIGHT_SEARCHPERF_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	type stats struct {
		lat []time.Duration
		cpu time.Duration
	}
	paths := []string{"search"}
	perText := map[string][]time.Duration{} // query text -> Search times
	byKind := map[string]*stats{}
	for r := 0; r < rounds; r++ {
		for i, q := range queries {
			sq := Query{UserID: c.users[i%len(c.users)], Text: q.text, Limit: 20}
			t0, c0 := time.Now(), cpuTime()
			if _, err := c.ix.Search(ctx, sq); err != nil {
				t.Fatalf("%q: %v", q.text, err)
			}
			wall, cpu := time.Since(t0), cpuTime()-c0
			perText[q.text] = append(perText[q.text], wall)
			for _, key := range []string{"search/" + q.kind, "search/all"} {
				s := byKind[key]
				if s == nil {
					s = &stats{}
					byKind[key] = s
				}
				s.lat = append(s.lat, wall)
				s.cpu += cpu
			}
		}
	}
	report := func(name string, s *stats) {
		slices.Sort(s.lat)
		pct := func(p int) float64 {
			return float64(s.lat[min(len(s.lat)-1, len(s.lat)*p/100)].Microseconds()) / 1000
		}
		t.Logf("%-13s n=%5d  p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %6.2f ms  cpu %6.2f ms/query", name, len(s.lat),
			pct(50), pct(90), pct(99), float64(s.lat[len(s.lat)-1].Microseconds())/1000,
			float64(s.cpu.Microseconds())/1000/float64(len(s.lat)))
	}
	// The queries whose median time is highest: what the tail is made of.
	median := func(text string) time.Duration {
		d := slices.Clone(perText[text])
		slices.Sort(d)
		return d[len(d)/2]
	}
	texts := slices.Collect(maps.Keys(perText))
	slices.SortFunc(texts, func(a, b string) int { return cmp.Compare(median(b), median(a)) })
	for _, text := range texts[:min(len(texts), 12)] {
		pq, _ := parseQuery(c.ix.analyzer, text)
		t.Logf("median Search %6.2f ms  %q %v", float64(median(text).Microseconds())/1000, text, pq.Terms)
	}
	entries, bytes, postings := c.ix.sessionLengths.blocks.stats()
	t.Logf("block cache: %d entries, %.1f MiB, %d postings (%.2f bytes per posting)", entries,
		float64(bytes)/(1<<20), postings, float64(bytes)/float64(max(postings, 1)))
	for _, path := range paths {
		for _, k := range []string{"ident", "topic", "error", "title", "all"} {
			if s := byKind[path+"/"+k]; s != nil {
				report(path+"/"+k, s)
			}
		}
	}
}

// searchperfQuery is one query of the load bench's mix.
type searchperfQuery struct {
	kind string // ident, topic, error or title
	text string
}

// searchperfQueries draws n queries the way the load bench's Loader does
// for seed 1: identifiers, topic pairs, error messages and session titles
// (of the first 2000 sessions) in turn.
func searchperfQueries(titles []string, n int) []searchperfQuery {
	rng := rand.New(rand.NewPCG(1, 7))
	out := make([]searchperfQuery, n)
	for i := range out {
		out[i].kind, out[i].text = bench.LoadQuery(rng, i, titles)
	}
	return out
}

type searchperfData struct {
	ix     *Index
	users  []string
	titles []string
}

type searchperfMeta struct {
	Sessions int      `json:"sessions"`
	Users    []string `json:"users"`
	Titles   []string `json:"titles"`
}

// searchperfCorpus opens the index in dir, building it first when dir does
// not hold a complete one.
func searchperfCorpus(t *testing.T, dir string) searchperfData {
	n := benchEnv("HINDSIGHT_SEARCHPERF_SESSIONS", 100000)
	metaPath := filepath.Join(dir, "searchperf.json")
	if b, err := os.ReadFile(metaPath); err == nil {
		var m searchperfMeta
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Sessions != n {
			t.Fatalf("%s holds %d sessions, want %d: use another directory", dir, m.Sessions, n)
		}
		ix, err := Open(filepath.Join(dir, "index"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return searchperfData{ix: ix, users: m.Users, titles: m.Titles}
	}
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(filepath.Join(dir, "index"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := searchperfMeta{Sessions: n}
	m.Users, m.Titles = putGenCorpus(t, ix, n)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(metaPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return searchperfData{ix: ix, users: m.Users, titles: m.Titles}
}

// putGenCorpus writes n sessions of bench.NewGenerator(1) into ix, over
// 4 users in the load bench's batches, and returns the users and the
// first 2000 titles (what bench.LoadQuery draws title queries from).
func putGenCorpus(t testing.TB, ix *Index, n int) (users, titles []string) {
	idRng := rand.New(rand.NewPCG(1, 2))
	newID := func() string { // like kv.NewID: 16 characters of [a-z0-9]
		const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, 16)
		for i := range b {
			b[i] = alphabet[idRng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 4 {
		users = append(users, newID())
	}
	gen := bench.NewGenerator(1)
	ctx := context.Background()
	start := time.Now()
	var pending []Session
	batchMsgs, batches := 0, 0 // the load bench's POST batches: >= 500 messages, round-robin over users
	for i := 0; i < n; i++ {
		gs := gen.Session(20)
		if len(titles) < 2000 {
			titles = append(titles, gs.Title)
		}
		pending = append(pending, Session{UserID: users[batches%len(users)], SessionID: newID(),
			Title: gs.Title, Body: searchperfBody(gs)})
		if batchMsgs += len(gs.Messages); batchMsgs >= 500 {
			batchMsgs, batches = 0, batches+1
		}
		if len(pending) == 256 || i == n-1 { // the ingest pipeline's batch size
			if err := ix.Put(ctx, pending); err != nil {
				t.Fatal(err)
			}
			pending = pending[:0]
		}
		if (i+1)%10000 == 0 {
			t.Logf("built %d sessions in %v", i+1, time.Since(start).Round(time.Second))
		}
	}
	return users, titles
}

// searchperfBody is the session body the ingest pipeline would index:
// exchanges of a user message and the assistant text answering it.
func searchperfBody(s bench.GenSession) string {
	var exchanges []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			exchanges = append(exchanges, cur.String())
			cur.Reset()
		}
	}
	for _, m := range s.Messages {
		var text string
		switch m.Role {
		case "user":
			text = strings.TrimSpace(m.TextContent)
		case "assistant":
			var parts []string
			for _, p := range m.Parts {
				if p["type"] == "text" {
					if c, _ := p["content"].(string); strings.TrimSpace(c) != "" {
						parts = append(parts, strings.TrimSpace(c))
					}
				}
			}
			text = strings.Join(parts, "\n\n")
		}
		if text == "" {
			continue
		}
		if m.Role == "user" {
			flush()
		} else if cur.Len() > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(text)
	}
	flush()
	return strings.Join(exchanges, "\n\n")
}
