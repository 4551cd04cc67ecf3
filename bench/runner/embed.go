package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/vectors"
)

// EmbedConfig is what bench embed measures.
type EmbedConfig struct {
	ModelDir string // the offline model (HINDSIGHT_MODEL_DIR)
	Windows  int    // windows embedded per round
	Rounds   int    // rounds per setting, alternated
	Seed     uint64
	Out      string // directory for report.md and result.json; "" = none
	JSON     bool
	Command  string
}

// EmbedSetting is one way of computing the same windows, at one number of
// cores, with its median over the rounds.
type EmbedSetting struct {
	Name          string    `json:"name"`
	Cores         int       `json:"cores"`
	WindowsPerS   []float64 `json:"windows_per_s"` // one per round
	Median        float64   `json:"windows_per_s_median"`
	CPUPerWindow  float64   `json:"cpu_ms_per_window"` // process CPU over the rounds; 0 where not measurable
	TokensPerS    float64   `json:"tokens_per_s_median"`
	GemmGFLOPS    float64   `json:"gemm_gflops_median"` // the window's matrix products' arithmetic per second
	run           func() error
	cpu           time.Duration
	windowsInRuns int
}

// EmbedResult is every number of a bench embed run.
type EmbedResult struct {
	Settings  map[string]string `json:"settings"`
	Tokens    int               `json:"tokens_per_window"`
	GemmFLOPs float64           `json:"gemm_flops_per_window"`
	Runs      []*EmbedSetting   `json:"runs"`
	// WindowsOneCore and WindowsAll are Embed's medians on one core and on
	// every core (the runs' figures, named as issue 29 asks).
	WindowsOneCore float64 `json:"windows_per_s_1core"`
	WindowsAll     float64 `json:"windows_per_s_all"`
	Scaling        float64 `json:"scaling"`     // Embed on every core over Embed on one core
	ShareOfSgemm   float64 `json:"sgemm_share"` // Embed over bare sgemm, every core
	ShareOneCore   float64 `json:"sgemm_share_one_core"`
	OverPrevious   float64 `json:"over_one_text_at_a_time"`
	NumCPU         int     `json:"cores"`
	TextsPerRound  int     `json:"windows_per_round"`
}

// Embed measures the offline model's throughput on one core and on every
// core, beside bare matrix products of the shapes its encoder computes
// (vectors.LocalGemmShapes) run the same way, and beside the way Embed
// worked before it spread texts over cores (one text after another, each
// text's matrix products free to use every core).
func Embed(ctx context.Context, c EmbedConfig, stdout, stderr io.Writer) error {
	progressOut := stderr
	if c.JSON {
		progressOut = io.Discard
	}
	l, err := vectors.LoadLocal(c.ModelDir)
	if err != nil {
		return err
	}
	texts := embedWindows(l, c.Seed, c.Windows)
	shapes := vectors.LocalGemmShapes(vectors.LocalWindow)
	var flops float64
	for _, s := range shapes {
		flops += 2 * float64(s.M*s.K*s.N*s.Count)
	}
	ncpu := runtime.NumCPU()
	res := &EmbedResult{Tokens: vectors.LocalWindow, GemmFLOPs: flops, NumCPU: ncpu, TextsPerRound: len(texts),
		Settings: runSettings(map[string]string{
			"command": c.Command, "seed": strconv.FormatUint(c.Seed, 10), "rounds": strconv.Itoa(c.Rounds),
		})}
	if la := loadAverage(); la != "" {
		res.Settings["load average at start"] = la
	}
	sgemm := newSgemmWork(shapes, c.Seed)
	embedAll := func() error {
		_, err := l.Embed(ctx, texts)
		return err
	}
	oneByOne := func() error {
		for _, t := range texts {
			if _, err := l.Embed(ctx, []string{t}); err != nil {
				return err
			}
		}
		return nil
	}
	var runs []*EmbedSetting
	cores := []int{1}
	if ncpu > 1 {
		cores = append(cores, ncpu)
	}
	for _, cores := range cores {
		runs = append(runs,
			&EmbedSetting{Name: "embed", Cores: cores, run: embedAll},
			&EmbedSetting{Name: "sgemm", Cores: cores, run: func() error { sgemm.run(len(texts), runtime.GOMAXPROCS(0)); return nil }})
		if cores > 1 {
			runs = append(runs, &EmbedSetting{Name: "one-by-one", Cores: cores, run: oneByOne})
		}
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	// Warm the pools and caches once.
	runtime.GOMAXPROCS(ncpu)
	if err := embedAll(); err != nil {
		return err
	}
	for round := range c.Rounds {
		for _, r := range runs {
			runtime.GOMAXPROCS(r.Cores)
			cpu0, _ := processCPU()
			start := time.Now()
			if err := r.run(); err != nil {
				return err
			}
			el := time.Since(start)
			cpu1, _ := processCPU()
			r.cpu += cpu1 - cpu0
			r.windowsInRuns += len(texts)
			r.WindowsPerS = append(r.WindowsPerS, float64(len(texts))/el.Seconds())
			fmt.Fprintf(progressOut, "round %d/%d %-10s %d core(s): %7.1f windows/s\n", round+1, c.Rounds, r.Name, r.Cores, r.WindowsPerS[len(r.WindowsPerS)-1])
		}
	}
	for _, r := range runs {
		r.Median = median(r.WindowsPerS)
		r.TokensPerS = r.Median * float64(res.Tokens)
		r.GemmGFLOPS = r.Median * flops / 1e9
		r.CPUPerWindow = float64(r.cpu.Microseconds()) / 1e3 / float64(r.windowsInRuns)
	}
	res.Runs = runs
	find := func(name string, cores int) float64 {
		for _, r := range runs {
			if r.Name == name && r.Cores == cores {
				return r.Median
			}
		}
		return 0
	}
	res.WindowsOneCore, res.WindowsAll = find("embed", 1), find("embed", ncpu)
	res.Scaling = res.WindowsAll / res.WindowsOneCore
	res.ShareOfSgemm = find("embed", ncpu) / find("sgemm", ncpu)
	res.ShareOneCore = find("embed", 1) / find("sgemm", 1)
	if p := find("one-by-one", ncpu); p > 0 {
		res.OverPrevious = find("embed", ncpu) / p
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	report := embedReport(res)
	fmt.Fprint(stdout, report)
	if c.Out == "" {
		return nil
	}
	return bench.WriteRun(c.Out, res, report)
}

// embedWindows returns n texts of generated coding-session prose, each long
// enough to fill the model's window.
func embedWindows(l *vectors.Local, seed uint64, n int) []string {
	g := bench.NewGenerator(seed)
	var texts []string
	var cur []string
	for len(texts) < n {
		for _, m := range g.Session(20).Messages {
			for _, w := range strings.Fields(m.TextContent) {
				cur = append(cur, w)
				if len(cur)%8 == 0 && len(l.Tokenize(strings.Join(cur, " "))) >= vectors.LocalWindow {
					texts = append(texts, strings.Join(cur, " "))
					cur = cur[:0]
					if len(texts) == n {
						return texts
					}
				}
			}
		}
	}
	return texts
}

// sgemmWork holds random matrices of every shape, one set per worker.
type sgemmWork struct {
	shapes []vectors.GemmShape
	mats   [][][3][]float32 // worker, shape, a b c
}

func newSgemmWork(shapes []vectors.GemmShape, seed uint64) *sgemmWork {
	rng := rand.New(rand.NewPCG(seed, 7))
	w := &sgemmWork{shapes: shapes}
	for range runtime.NumCPU() {
		var set [][3][]float32
		for _, s := range shapes {
			m := [3][]float32{make([]float32, s.M*s.K), make([]float32, s.K*s.N), make([]float32, s.M*s.N)}
			for i := range 2 {
				for j := range m[i] {
					m[i][j] = rng.Float32() - 0.5
				}
			}
			set = append(set, m)
		}
		w.mats = append(w.mats, set)
	}
	return w
}

// run computes the products of n windows on workers goroutines, each
// taking the next window, as Embed spreads texts.
func (w *sgemmWork) run(n, workers int) {
	workers = max(1, min(workers, len(w.mats), n))
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				for i, s := range w.shapes {
					m := w.mats[k][i]
					for range s.Count {
						s.Gemm(m[0], m[1], m[2])
					}
				}
			}
		}()
	}
	wg.Wait()
}

// embedReport is the report.md of a run.
func embedReport(r *EmbedResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bench embed: the offline model on every core\n\n```\n%s\n```\n\n", r.Settings["command"])
	fmt.Fprintf(&b, "Commit %s, %s, %d CPUs, load average %s at start, %s.\n\n",
		r.Settings["commit"], r.Settings["go"], r.NumCPU, r.Settings["load average at start"], r.Settings["date"])
	fmt.Fprintf(&b, "%d windows of generated coding-session text, each filling the model's %d-token window, "+
		"embedded %s times per setting with the settings alternated; medians of windows per second. "+
		"**sgemm** runs only the matrix products the encoder computes for a window "+
		"(`vectors.LocalGemmShapes`: %.0f MFLOP a window), with gonum's sgemm, on random matrices of the same shapes, "+
		"spread over the cores as Embed spreads windows: the ceiling the products set. **one-by-one** is Embed called with one "+
		"window at a time, as Embed worked before it spread texts over cores (only each product's own parallelism "+
		"used the second core). Cores are set with GOMAXPROCS in one process.\n\n",
		r.TextsPerRound, r.Tokens, r.Settings["rounds"], r.GemmFLOPs/1e6)
	b.WriteString("| run | cores | windows/s (median) | tokens/s | products' GFLOP/s | CPU ms per window | rounds |\n|---|---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.Runs {
		rounds := make([]string, len(s.WindowsPerS))
		for i, v := range s.WindowsPerS {
			rounds[i] = fmt.Sprintf("%.1f", v)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.0f | %.2f | %.1f | %s |\n", s.Name, s.Cores, s.Median, s.TokensPerS, s.GemmGFLOPS, s.CPUPerWindow, strings.Join(rounds, ", "))
	}
	fmt.Fprintf(&b, "\n- Embed on %d cores over Embed on 1 core: **%.2f×** (goal ≥ 1.8).\n", r.NumCPU, r.Scaling)
	fmt.Fprintf(&b, "- Embed as a share of bare sgemm of the same shapes, %d cores: **%.2f** (goal ≥ 0.7); on 1 core: %.2f. "+
		"A share above 1 is possible: gonum's sgemm skips the zero entries of its left matrix, and the encoder's "+
		"second feed-forward product takes the ReLU's output, where many entries are zero, while the peer's random "+
		"matrices have none.\n", r.NumCPU, r.ShareOfSgemm, r.ShareOneCore)
	if r.OverPrevious > 0 {
		fmt.Fprintf(&b, "- Embed over one window at a time, %d cores: %.2f×.\n", r.NumCPU, r.OverPrevious)
	}
	return b.String()
}
