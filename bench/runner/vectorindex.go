package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/internal/embedgen"
	"github.com/hindsight-dev/hindsight/vectors"
)

// VectorIndexConfig is what bench vectors measures.
type VectorIndexConfig struct {
	Vectors int // vectors of the one user searched
	Dims    int
	Queries int
	K       int
	Seed    uint64
	// Dir keeps the store file between runs: a run finding the same set
	// there (same count, dimension and seed) skips writing it. "" means a
	// temporary directory, removed at the end.
	Dir string
	// Reference is an embedding cache file (vectors.Cache's format) whose
	// vectors' cosines the generator's are compared with, at the
	// reference's count; "" means none.
	Reference string
	// ReuseTruth takes the exact scan's hits from an earlier run's file in
	// Dir instead of running the exact scan (for trying settings of the
	// index: the report then has no exact-scan timings).
	ReuseTruth bool
	Out        string // directory for report.md and result.json; "" = none
	JSON       bool
	Command    string
}

// VectorIndexRun is one way of answering the queries, over the same file.
type VectorIndexRun struct {
	Name  string  `json:"name"`
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	// CPUms is the process's CPU time over the timed queries, per query
	// (every worker's): steadier than wall time on a shared machine, and
	// the wall time a query would take on idle cores is about CPUms over
	// the workers.
	CPUms float64 `json:"cpu_ms_per_query"`
	// BuildS is the user's first query: reading her vectors from the file
	// into the slab or the codes, and answering.
	BuildS float64 `json:"build_s"`
	// HeapBytes is the growth of the Go heap (live objects after a
	// collection) from before the store opened to after the first query:
	// what the store keeps in memory.
	HeapBytes int64 `json:"heap_bytes"`
	// StoreBytes is the store's own account of it (Embedded.Stats).
	StoreBytes int64 `json:"store_bytes"`
	// RSSAnonBytes and RSSFileBytes are the process's resident anonymous
	// and file-backed memory after the queries (the latter is the store
	// file's pages the process has touched through bbolt's mmap: page
	// cache, which the kernel may drop and read again).
	RSSAnonBytes    int64   `json:"rss_anon_bytes"`
	RSSFileBytes    int64   `json:"rss_file_bytes"`
	MemoryToFloat32 float64 `json:"memory_to_float32"` // HeapBytes over the vectors as float32s
	hits            [][]vectors.Hit
}

// CosineSpread describes the cosines of a set of vectors: random pairs,
// and each sampled vector's nearest and tenth-nearest neighbour.
type CosineSpread struct {
	Vectors  int        `json:"vectors"`
	Dims     int        `json:"dims"`
	Pairs    [3]float64 `json:"random_pair_p10_p50_p90"`
	Nearest  [3]float64 `json:"nearest_p10_p50_p90"`
	Tenth    [3]float64 `json:"tenth_nearest_p10_p50_p90"`
	Measured string     `json:"measured"`
}

// VectorIndexResult is every number of a bench vectors run.
type VectorIndexResult struct {
	Settings        map[string]string `json:"settings"`
	Vectors         int               `json:"vectors"`
	Dims            int               `json:"dims"`
	Queries         int               `json:"queries"`
	K               int               `json:"k"`
	Float32Bytes    int64             `json:"float32_bytes"`
	P50ms           float64           `json:"p50_ms"` // the sign codes'
	P99ms           float64           `json:"p99_ms"`
	ExactP50ms      float64           `json:"exact_p50_ms"`
	ExactP99ms      float64           `json:"exact_p99_ms"`
	RecallAt10      float64           `json:"recall_at_10"` // of the exact scan's top k, averaged over queries
	MinRecall       float64           `json:"min_query_recall"`
	ScoreMaxDiff    float64           `json:"score_max_abs_diff"` // between the two runs' scores of the same hit
	MemoryToFloat32 float64           `json:"memory_to_float32"`
	BuildS          float64           `json:"build_s"`
	WriteS          float64           `json:"write_s"` // writing the set into the store (0: reused)
	StoreFileBytes  int64             `json:"store_file_bytes"`
	Runs            []*VectorIndexRun `json:"runs"`
	Spread          []CosineSpread    `json:"cosine_spread"`
}

const benchUser = "bench"

// VectorIndex measures the embedded store on one user's generated vectors
// (internal/embedgen): the sign-code index the store uses from
// vectors.DefaultCodesFrom vectors on, against the exact scan of the same
// file (its reference: CodesFrom < 0), which also gives the ground truth.
// The index runs first, so its heap is measured before the exact scan's
// slab has ever been allocated.
func VectorIndex(ctx context.Context, c VectorIndexConfig, stdout, stderr io.Writer) error {
	progress := stderr
	if c.JSON {
		progress = io.Discard
	}
	res := &VectorIndexResult{Vectors: c.Vectors, Dims: c.Dims, Queries: c.Queries, K: c.K,
		Float32Bytes: int64(c.Vectors) * int64(c.Dims) * 4,
		Settings: runSettings(map[string]string{
			"command": c.Command, "seed": strconv.FormatUint(c.Seed, 10),
			"codes from":   strconv.Itoa(vectors.DefaultCodesFrom),
			"vectors":      "internal/embedgen: 64 super-topics × 32 topics, subtopics of about 15 vectors, per-subtopic noise",
			"workers":      strconv.Itoa(runtime.GOMAXPROCS(0)),
			"memory count": "Go heap growth (live bytes after GC) from before open to after the first query; the store file's page cache is not counted (see rss_file_bytes)",
		})}
	if la := loadAverage(); la != "" {
		res.Settings["load average at start"] = la
	}
	dir := c.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "hindsight-bench-vectors-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, vectors.EmbeddedFileName)
	g := embedgen.New(c.Seed, c.Dims, c.Vectors)
	var err error
	if res.WriteS, err = writeGenerated(ctx, path, g, c, progress); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		res.StoreFileBytes = fi.Size()
	}
	qs := make([][]float32, c.Queries)
	for i := range qs {
		qs[i] = g.Query(make([]float32, c.Dims), uint64(i))
	}
	runs := []struct {
		name string
		opts vectors.EmbeddedOptions
	}{
		{"sign codes", vectors.EmbeddedOptions{}},
		{"exact scan", vectors.EmbeddedOptions{CodesFrom: -1}},
	}
	truthFile := filepath.Join(dir, fmt.Sprintf("exact-hits-q%d-k%d.json", c.Queries, c.K))
	var truth [][]vectors.Hit
	if c.ReuseTruth {
		b, err := os.ReadFile(truthFile)
		if err != nil {
			return fmt.Errorf("--reuse-truth: %w", err)
		}
		if err := json.Unmarshal(b, &truth); err != nil || len(truth) != c.Queries {
			return fmt.Errorf("--reuse-truth: %s does not hold %d queries' hits", truthFile, c.Queries)
		}
		runs = runs[:1]
		res.Settings["exact scan"] = "not run: its hits reused from " + truthFile
	}
	for _, run := range runs {
		r, err := timeQueries(ctx, path, run.opts, qs, c.K, res.Float32Bytes, progress)
		if err != nil {
			return fmt.Errorf("%s: %w", run.name, err)
		}
		r.Name = run.name
		res.Runs = append(res.Runs, r)
		fmt.Fprintf(progress, "%s: p50 %.2f ms, p99 %.2f ms, CPU %.2f ms a query, first query %.1f s, heap %.2f GB (%.3f× float32)\n",
			r.Name, r.P50ms, r.P99ms, r.CPUms, r.BuildS, float64(r.HeapBytes)/1e9, r.MemoryToFloat32)
	}
	idx := res.Runs[0]
	res.P50ms, res.P99ms = idx.P50ms, idx.P99ms
	res.MemoryToFloat32, res.BuildS = idx.MemoryToFloat32, idx.BuildS
	if truth == nil {
		exact := res.Runs[1]
		res.ExactP50ms, res.ExactP99ms = exact.P50ms, exact.P99ms
		truth = exact.hits
		if b, err := json.Marshal(truth); err == nil {
			os.WriteFile(truthFile, b, 0o644) // for --reuse-truth; a run that cannot keep it loses nothing
		}
	}
	res.RecallAt10, res.MinRecall, res.ScoreMaxDiff = compareHits(idx.hits, truth, c.K)

	spread := generatedSpread(g, c.Vectors, truth, c.K)
	res.Spread = append(res.Spread, spread)
	if c.Reference != "" {
		ref, err := readCacheVectors(c.Reference)
		if err != nil {
			return err
		}
		res.Spread = append(res.Spread,
			spreadOf(ref, c.Seed, "the reference file "+filepath.Base(c.Reference)),
			spreadOf(generateAll(embedgen.New(c.Seed, c.Dims, len(ref)), len(ref)), c.Seed,
				"the generator at the reference's count"))
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	report := vectorIndexReport(res)
	fmt.Fprint(stdout, report)
	if c.Out == "" {
		return nil
	}
	return bench.WriteRun(c.Out, res, report)
}

// writeGenerated writes the set into a store at path as one user's
// sessions of 20 chunks, unless the file there already holds it (a marker
// file names the set once it is complete). It returns the seconds spent
// writing, 0 when reused.
func writeGenerated(ctx context.Context, path string, g *embedgen.Generator, c VectorIndexConfig, progress io.Writer) (float64, error) {
	marker := path + ".set"
	want := fmt.Sprintf("vectors=%d dims=%d seed=%d\n", c.Vectors, c.Dims, c.Seed)
	if b, err := os.ReadFile(marker); err == nil && string(b) == want {
		fmt.Fprintf(progress, "reusing the set in %s\n", path)
		return 0, nil
	}
	for _, p := range []string{marker, path} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
	}
	st, err := vectors.OpenEmbedded(path, vectors.EmbeddedOptions{})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if err := st.SetMeta(ctx, "embedgen", c.Dims); err != nil {
		return 0, err
	}
	const perSession, perBatch = 20, 10000
	start := time.Now()
	batches := make(chan map[string][]vectors.Vector, 2)
	workers := runtime.GOMAXPROCS(0)
	nBatches := (c.Vectors + perBatch - 1) / perBatch
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for b := w; b < nBatches; b += workers {
				m := map[string][]vectors.Vector{}
				for i := b * perBatch; i < min((b+1)*perBatch, c.Vectors); i++ {
					sid := fmt.Sprintf("s%07d", i/perSession)
					m[sid] = append(m[sid], vectors.Vector{Ordinal: i % perSession, TextHash: "g",
						Values: g.Vector(make([]float32, c.Dims), uint64(i))})
				}
				select {
				case batches <- m:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(batches) }()
	written := 0
	for m := range batches {
		if err := st.Upsert(ctx, benchUser, m); err != nil {
			for range batches { // let the producers finish
			}
			return 0, err
		}
		for _, vs := range m {
			written += len(vs)
		}
		fmt.Fprintf(progress, "\rwritten %d/%d vectors", written, c.Vectors)
	}
	fmt.Fprintln(progress)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	el := time.Since(start).Seconds()
	if err := st.Close(); err != nil {
		return 0, err
	}
	return el, os.WriteFile(marker, []byte(want), 0o644)
}

// timeQueries opens the store at path with opts, measures the user's first
// query (the build) and what it left in memory, then times every query.
func timeQueries(ctx context.Context, path string, opts vectors.EmbeddedOptions, qs [][]float32, k int, f32 int64, progress io.Writer) (*VectorIndexRun, error) {
	heap0 := liveHeap()
	st, err := vectors.OpenEmbedded(path, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		st.Close()
		debug.FreeOSMemory() // the next run starts from an empty heap
	}()
	r := &VectorIndexRun{}
	start := time.Now()
	if _, err := st.Nearest(ctx, benchUser, qs[0], k); err != nil {
		return nil, err
	}
	r.BuildS = time.Since(start).Seconds()
	r.HeapBytes = int64(liveHeap()) - int64(heap0)
	s := st.Stats()
	r.StoreBytes = s.SlabBytes + s.CodeBytes + s.IndexBytes
	r.MemoryToFloat32 = float64(r.HeapBytes) / float64(f32)
	for _, q := range qs[:min(20, len(qs))] { // warm the caches
		if _, err := st.Nearest(ctx, benchUser, q, k); err != nil {
			return nil, err
		}
	}
	lat := make([]time.Duration, len(qs))
	r.hits = make([][]vectors.Hit, len(qs))
	cpu0, _ := processCPU()
	for i, q := range qs {
		t := time.Now()
		hits, err := st.Nearest(ctx, benchUser, q, k)
		lat[i] = time.Since(t)
		if err != nil {
			return nil, err
		}
		r.hits[i] = hits
		if i%100 == 99 {
			fmt.Fprintf(progress, "\r%d/%d queries", i+1, len(qs))
		}
	}
	fmt.Fprintln(progress)
	if cpu1, ok := processCPU(); ok {
		r.CPUms = float64((cpu1 - cpu0).Microseconds()) / 1e3 / float64(len(qs))
	}
	r.P50ms = float64(bench.Percentile(lat, 50).Microseconds()) / 1e3
	r.P99ms = float64(bench.Percentile(lat, 99).Microseconds()) / 1e3
	r.RSSAnonBytes, r.RSSFileBytes = residentKinds()
	return r, nil
}

// liveHeap is the Go heap's live bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// residentKinds returns RssAnon and RssFile of /proc/self/status (Linux),
// or zeros.
func residentKinds() (anon, file int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch name {
		case "RssAnon":
			anon = n * 1024
		case "RssFile":
			file = n * 1024
		}
	}
	return anon, file
}

// compareHits returns the mean and the least share of the exact top k
// found per query, and the largest score difference of a hit both found.
func compareHits(got, exact [][]vectors.Hit, k int) (mean, least, maxDiff float64) {
	type ref struct {
		sid string
		ord int
	}
	least = 1
	for i := range exact {
		want := map[ref]float64{}
		for _, h := range exact[i] {
			want[ref{h.SessionID, h.Ordinal}] = h.Score
		}
		found := 0
		for _, h := range got[i] {
			if s, ok := want[ref{h.SessionID, h.Ordinal}]; ok {
				found++
				maxDiff = max(maxDiff, math.Abs(s-h.Score))
			}
		}
		r := float64(found) / float64(min(k, len(exact[i])))
		mean += r
		least = min(least, r)
	}
	return mean / float64(len(exact)), least, maxDiff
}

// generatedSpread is the spread of the generated set: random pairs drawn
// from it, and the queries' nearest and k-th nearest exact hits.
func generatedSpread(g *embedgen.Generator, n int, exact [][]vectors.Hit, k int) CosineSpread {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := make([]float32, g.Dim()), make([]float32, g.Dim())
	var pairs, first, kth []float64
	for range 20000 {
		i, j := r.IntN(n), r.IntN(n)
		pairs = append(pairs, float64(blas32.Dot(vec(g.Vector(a, uint64(i))), vec(g.Vector(b, uint64(j))))))
	}
	for _, hs := range exact {
		if len(hs) >= k {
			first = append(first, hs[0].Score)
			kth = append(kth, hs[k-1].Score)
		}
	}
	return CosineSpread{Vectors: n, Dims: g.Dim(), Pairs: deciles(pairs), Nearest: deciles(first), Tenth: deciles(kth),
		Measured: "the generated set: 20,000 random pairs; the queries' exact nearest and tenth-nearest hits"}
}

func vec(x []float32) blas32.Vector { return blas32.Vector{N: len(x), Inc: 1, Data: x} }

// spreadOf measures a set held in memory: 20,000 random pairs, and for 300
// sampled members their nearest and tenth-nearest other member.
func spreadOf(set [][]float32, seed uint64, what string) CosineSpread {
	r := rand.New(rand.NewPCG(seed, 3))
	n, dim := len(set), len(set[0])
	var pairs, first, tenth []float64
	for range 20000 {
		i, j := r.IntN(n), r.IntN(n)
		pairs = append(pairs, float64(blas32.Dot(vec(set[i]), vec(set[j]))))
	}
	flat := make([]float32, 0, n*dim)
	for _, v := range set {
		flat = append(flat, v...)
	}
	a := blas32.General{Rows: n, Cols: dim, Stride: dim, Data: flat}
	scores := make([]float32, n)
	for range 300 {
		i := r.IntN(n)
		blas32.Gemv(blas.NoTrans, 1, a, vec(set[i]), 0, blas32.Vector{N: n, Inc: 1, Data: scores})
		scores[i] = float32(math.Inf(-1)) // not its own neighbour
		s := slices.Clone(scores)
		slices.Sort(s)
		first = append(first, float64(s[n-1]))
		tenth = append(tenth, float64(s[n-10]))
	}
	return CosineSpread{Vectors: n, Dims: dim, Pairs: deciles(pairs), Nearest: deciles(first), Tenth: deciles(tenth),
		Measured: what + ": 20,000 random pairs; 300 members' nearest and tenth-nearest other member"}
}

func generateAll(g *embedgen.Generator, n int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i] = g.Vector(make([]float32, g.Dim()), uint64(i))
	}
	return out
}

// deciles returns the 10th, 50th and 90th percentile of xs (nearest rank).
func deciles(xs []float64) [3]float64 {
	if len(xs) == 0 {
		return [3]float64{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	at := func(p float64) float64 {
		return s[min(len(s)-1, max(0, int(math.Ceil(p*float64(len(s))/100))-1))]
	}
	return [3]float64{at(10), at(50), at(90)}
}

// readCacheVectors reads every vector of an embedding cache file
// (vectors.ReadCached), unit length each; at least 20 of them.
func readCacheVectors(path string) ([][]float32, error) {
	out, err := vectors.ReadCached(path)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	if len(out) < 20 {
		return nil, fmt.Errorf("reference %s: %d vectors, want at least 20", path, len(out))
	}
	return out, nil
}

func vectorIndexReport(r *VectorIndexResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Vector search: %d vectors of %d dimensions, one user\n\n", r.Vectors, r.Dims)
	fmt.Fprintf(&b, "`%s`\n\n", r.Settings["command"])
	fmt.Fprintf(&b, "Top %d of %d queries. Recall@%d of the sign codes against the exact scan of the same file: %.4f (least per query %.2f); "+
		"scores of the same hit differ by at most %.2g.\n\n", r.K, r.Queries, r.K, r.RecallAt10, r.MinRecall, r.ScoreMaxDiff)
	b.WriteString("| search | p50 ms | p99 ms | CPU ms a query | first query (build) s | heap GB | × float32 | store's count GB | RSS anon GB | RSS file GB |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Runs {
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %.1f | %.3f | %.3f | %.3f | %.2f | %.2f |\n", x.Name, x.P50ms, x.P99ms, x.CPUms, x.BuildS,
			float64(x.HeapBytes)/1e9, x.MemoryToFloat32, float64(x.StoreBytes)/1e9, float64(x.RSSAnonBytes)/1e9, float64(x.RSSFileBytes)/1e9)
	}
	fmt.Fprintf(&b, "\nThe vectors as float32: %.2f GB; the store file: %.2f GB", float64(r.Float32Bytes)/1e9, float64(r.StoreFileBytes)/1e9)
	if r.WriteS > 0 {
		fmt.Fprintf(&b, ", written in %.0f s", r.WriteS)
	}
	b.WriteString(".\n\n## Cosine spread\n\n| set | vectors | dims | random pair p10/p50/p90 | nearest p10/p50/p90 | tenth nearest p10/p50/p90 |\n|---|---|---|---|---|---|\n")
	for _, s := range r.Spread {
		fmt.Fprintf(&b, "| %s | %d | %d | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f |\n", s.Measured, s.Vectors, s.Dims,
			s.Pairs[0], s.Pairs[1], s.Pairs[2], s.Nearest[0], s.Nearest[1], s.Nearest[2], s.Tenth[0], s.Tenth[1], s.Tenth[2])
	}
	b.WriteString("\n## Settings\n\n")
	bench.WriteSettingsTable(&b, r.Settings)
	return b.String()
}
