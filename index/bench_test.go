package index

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Load benchmarks over a synthetic corpus of coding sessions: 20 messages
// each (user messages ~25 words, assistant messages ~90 words, about 6 KiB
// of text per session), Zipf-distributed words from a 60,000-word vocabulary,
// one in twelve words an identifier (camelCase, snake_case or a path) drawn,
// also Zipf-distributed, from 30,000 symbols of a code base, one chunk per
// user->assistant exchange. Environment:
//
//	HINDSIGHT_BENCH_SESSIONS  sessions in the searched index (default 20000)
//	HINDSIGHT_BENCH_USERS     users they are spread over (default 1: one
//	                          self-hosted user, the worst case for the user filter)
//	HINDSIGHT_BENCH_DIR       keep the built index here and reuse it
//
//	go test ./index/ -run XXX -bench . -benchtime 500x
//
// Times are reported, never asserted.

type synth struct {
	vocab  []string
	idents []string // a code base's symbols: sessions keep mentioning the same ones
	zipf   *rand.Zipf
	izipf  *rand.Zipf
	rng    *rand.Rand
}

func newSynth(seed uint64) *synth {
	rng := rand.New(rand.NewPCG(seed, 1))
	syll := []string{"ka", "to", "ri", "mon", "sel", "pra", "de", "lin", "vo", "sta", "ger", "qu", "ex", "an", "fi", "no",
		"tar", "bel", "cro", "um", "is", "ent", "ha", "pol", "ric", "ma", "zen", "dor", "li", "ver"}
	seen := map[string]bool{}
	var vocab []string
	for len(vocab) < 60000 {
		n := 1 + rng.IntN(3) + rng.IntN(2)
		var b strings.Builder
		for range n {
			b.WriteString(syll[rng.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	s := &synth{vocab: vocab, rng: rng, zipf: rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))}
	for range 30000 {
		s.idents = append(s.idents, s.newIdentifier())
	}
	s.izipf = rand.NewZipf(rng, 1.05, 2, uint64(len(s.idents)-1))
	return s
}

func (s *synth) word() string { return s.vocab[s.zipf.Uint64()] }

// identifier returns one of the code base's symbols.
func (s *synth) identifier() string { return s.idents[s.izipf.Uint64()] }

func (s *synth) newIdentifier() string {
	a, b, c := s.word(), s.word(), s.word()
	switch s.rng.IntN(3) {
	case 0:
		return a + strings.ToUpper(b[:1]) + b[1:] + strings.ToUpper(c[:1]) + c[1:]
	case 1:
		return a + "_" + b + "_" + c
	}
	return "src/" + a + "/" + b + "_" + c + ".go"
}

func (s *synth) message(meanWords int) string {
	n := max(3, int(float64(meanWords)*math.Exp(s.rng.NormFloat64()*0.5)))
	words := make([]string, n)
	for i := range words {
		if s.rng.IntN(12) == 0 {
			words[i] = s.identifier()
		} else {
			words[i] = s.word()
		}
	}
	return strings.Join(words, " ")
}

func (s *synth) session(user, id string) Session {
	msgs := make([]string, 20)
	ss := Session{UserID: user, SessionID: id, Title: s.message(6)}
	for i := range msgs {
		mean := 25
		if i%2 == 1 {
			mean = 90
		}
		msgs[i] = s.message(mean)
	}
	ss.Body = strings.Join(msgs, "\n\n")
	for i := 0; i < len(msgs); i += 2 {
		ss.Chunks = append(ss.Chunks, Chunk{Ordinal: i / 2, Text: msgs[i] + "\n\n" + msgs[i+1]})
	}
	return ss
}

// queries returns word queries: two to four mid-frequency words, one
// common plus one rare word, or an identifier.
func (s *synth) queries(n int) []string {
	out := make([]string, n)
	for i := range out {
		switch i % 4 {
		case 0, 1:
			k := 2 + s.rng.IntN(3)
			ws := make([]string, k)
			for j := range ws {
				ws[j] = s.pick(20, 3000)
			}
			out[i] = strings.Join(ws, " ")
		case 2:
			out[i] = s.pick(0, 20) + " " + s.pick(1000, 20000)
		default:
			out[i] = s.identifier()
		}
	}
	return out
}

// phraseQueries returns a quoted pair of common words plus two very common
// words: the expensive case, since a phrase must intersect long posting
// lists and read positions for every document in the intersection.
func (s *synth) phraseQueries(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = `"` + s.pick(0, 200) + " " + s.pick(0, 200) + `" ` + s.pick(0, 10) + " " + s.pick(0, 10)
	}
	return out
}

func (s *synth) pick(lo, hi int) string { return s.vocab[lo+s.rng.IntN(hi-lo)] }

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var benchIndex struct {
	once sync.Once
	ix   *Index
	err  error
}

// searchIndex builds (or reopens) the synthetic index once per process.
func searchIndex(b *testing.B) *Index {
	benchIndex.once.Do(func() {
		n, users := benchEnv("HINDSIGHT_BENCH_SESSIONS", 20000), benchEnv("HINDSIGHT_BENCH_USERS", 1)
		dir := os.Getenv("HINDSIGHT_BENCH_DIR")
		if dir == "" {
			d, err := os.MkdirTemp("", "hindsight-index-bench")
			if err != nil {
				benchIndex.err = err
				return
			}
			dir = d // left for the OS to clean: the benchmark process may reuse it
		}
		ix, err := Open(dir, Options{})
		if err != nil {
			benchIndex.err = err
			return
		}
		benchIndex.ix = ix
		if have, _, _ := ix.Count(context.Background()); have >= uint64(n) {
			return
		}
		s := newSynth(1)
		start := time.Now()
		for i := 0; i < n; i += 500 {
			var batch []Session
			for j := i; j < min(i+500, n); j++ {
				batch = append(batch, s.session("user"+strconv.Itoa(j%users), "s"+strconv.Itoa(j)))
			}
			if benchIndex.err = ix.Put(context.Background(), batch); benchIndex.err != nil {
				return
			}
		}
		fmt.Fprintf(os.Stderr, "built %d sessions (%d users) in %v: %.0f sessions/s, %s\n", n, users,
			time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds(), dir)
	})
	if benchIndex.err != nil {
		b.Fatal(benchIndex.err)
	}
	return benchIndex.ix
}

func BenchmarkSearch(b *testing.B) {
	ix := searchIndex(b)
	users := benchEnv("HINDSIGHT_BENCH_USERS", 1)
	qs := newSynth(2)
	corpus := newSynth(1)
	qs.vocab, qs.idents = corpus.vocab, corpus.idents // the corpus's words and symbols
	words, phrases := qs.queries(500), qs.phraseQueries(100)
	for _, tc := range []struct {
		name    string
		queries []string
		kind    Kind
		limit   int
		explain bool
	}{
		{"sessions/words/limit=20", words, Sessions, 20, false},
		{"sessions/words/limit=100", words, Sessions, 100, false},
		{"sessions/words/limit=20/explain", words, Sessions, 20, true},
		{"sessions/phrases/limit=20", phrases, Sessions, 20, false},
		{"chunks/words/limit=50", words, Chunks, 50, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			cpu0 := cpuTime()
			for i := 0; b.Loop(); i++ {
				q := Query{UserID: "user" + strconv.Itoa(i%users), Text: tc.queries[i%len(tc.queries)],
					Kind: tc.kind, Limit: tc.limit, Explain: tc.explain}
				t0 := time.Now()
				if _, err := ix.Search(ctx, q); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			// Mean CPU time per query: the latency one core would give
			// without contention (wall times on a shared machine are not).
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(len(lat)), "cpu-ms/op")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkPut measures rebuild throughput: batches of 500 synthetic
// sessions into one growing index.
func BenchmarkPut(b *testing.B) {
	ix, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	s := newSynth(3)
	const batch = 500
	var total, cpu time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		ss := make([]Session, batch)
		for j := range ss {
			ss[j] = s.session("u", "s"+strconv.Itoa(n))
			n++
		}
		b.StartTimer()
		t0, c0 := time.Now(), cpuTime()
		if err := ix.Put(context.Background(), ss); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		cpu += cpuTime() - c0
	}
	b.ReportMetric(float64(n)/total.Seconds(), "sessions/s")
	// CPU time of the whole process (background merges included) per
	// session: steadier than wall time on a shared machine.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(n), "cpu-ms/session")
}

// cpuTime returns the user+system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
