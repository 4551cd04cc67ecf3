package vectors

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// liteMinCosine is how close every vector must be to the TF.js one.
const liteMinCosine = 0.99999

// liteModelDir is where the tests find the model: $HINDSIGHT_MODEL_DIR, else
// <repo>/.cache/models/use-lite, where `make model` puts it.
func liteModelDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("HINDSIGHT_MODEL_DIR"); dir != "" {
		return dir
	}
	dir, err := filepath.Abs(filepath.Join("..", ".cache", "models", "use-lite"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// loadLiteModel loads the model, or skips the test loudly when it has not
// been fetched. With HINDSIGHT_REQUIRE_MODEL=1 (set by CI after `make model`)
// a missing model fails the test instead. A model that is present but does
// not load always fails.
//
// Every test shares one load (liteShared): loading decodes ~28 MB of
// weights, seconds of CPU under -race, and a Local never changes once
// loaded (Embed may be called concurrently), so what one test does with it
// cannot change what another sees.
func loadLiteModel(t testing.TB) *Local {
	t.Helper()
	dir := liteModelDir(t)
	liteShared.once.Do(func() { liteShared.l, liteShared.err = LoadLocal(dir) })
	l, err := liteShared.l, liteShared.err
	switch {
	case err == nil:
		return l
	case errors.Is(err, fs.ErrNotExist) && os.Getenv("HINDSIGHT_REQUIRE_MODEL") != "1":
		t.Skipf("SKIPPING: local embedding model not found in %s; run `make model` to fetch it "+
			"(HINDSIGHT_REQUIRE_MODEL=1 turns this skip into a failure): %v", dir, err)
	default:
		t.Fatalf("HINDSIGHT_REQUIRE_MODEL=%q: %v", os.Getenv("HINDSIGHT_REQUIRE_MODEL"), err)
	}
	return nil
}

// liteShared is the model loadLiteModel loads once for the test binary.
var liteShared struct {
	once sync.Once
	l    *Local
	err  error
}

// liteRefCase is one entry of testdata/use_lite/reference.json, written by
// scripts/use-reference/dump.js from TF.js.
type liteRefCase struct {
	Name   string    `json:"name"`
	Text   string    `json:"text"`
	IDs    []int     `json:"ids"` // full TF.js tokenizer output; the model keeps 128
	Vector []float64 `json:"vector"`
	Note   string    `json:"note"`
}

func loadLiteReference(t *testing.T) []liteRefCase {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "use_lite", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []liteRefCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatalf("parse reference.json: %v", err)
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no cases in testdata/use_lite/reference.json")
	}
	return ref.Cases
}

func liteTexts(cases []liteRefCase) []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.Text
	}
	return out
}

// liteVariedTexts is the reference texts the concurrency tests embed:
// the first eight (1 to 16 tokens) and the last (past the 128-token
// window). What those tests check, that a vector does not depend on which
// goroutine computed it or on what its scratch buffers held before, needs
// texts of different lengths on every worker, not all 39: each embedding
// costs seconds under -race, and TestLocalMatchesReference covers every
// text's vector.
func liteVariedTexts(t *testing.T) []string {
	t.Helper()
	cases := loadLiteReference(t)
	if len(cases) < 9 || len(cases[len(cases)-1].IDs) <= liteMaxTokens {
		t.Fatal("testdata/use_lite/reference.json: want at least 9 texts, the last past the window")
	}
	return liteTexts(append(cases[:8:8], cases[len(cases)-1]))
}

func liteCosine[A, B float32 | float64](a []A, b []B) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	return dot / math.Sqrt(na*nb)
}

func liteNorm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestLocalMatchesReference(t *testing.T) {
	l := loadLiteModel(t)
	cases := loadLiteReference(t)
	got, err := l.Embed(context.Background(), liteTexts(cases))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cases) {
		t.Fatalf("Embed returned %d vectors for %d texts", len(got), len(cases))
	}
	minCos, minName := 2.0, ""
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			v := got[i]
			if len(v) != l.Dim() || len(c.Vector) != l.Dim() {
				t.Fatalf("len(vector) = %d, reference %d, want %d", len(v), len(c.Vector), l.Dim())
			}
			cos := liteCosine(v, c.Vector)
			if cos < minCos {
				minCos, minName = cos, c.Name
			}
			if !(cos >= liteMinCosine) {
				t.Errorf("cosine to TF.js = %.7f, want >= %v (text %q)", cos, liteMinCosine, c.Text)
			}
			if n := liteNorm(v); math.Abs(n-1) > 1e-5 {
				t.Errorf("norm = %v, want 1", n)
			}
		})
	}
	t.Logf("min cosine to TF.js over %d cases: %.9f (1-cos = %.2g, %s)", len(cases), minCos, 1-minCos, minName)
}

func TestLocalTokenizeMatchesReference(t *testing.T) {
	l := loadLiteModel(t)
	for _, c := range loadLiteReference(t) {
		t.Run(c.Name, func(t *testing.T) {
			want := c.IDs[:min(len(c.IDs), liteMaxTokens)]
			if got := l.Tokenize(c.Text); !slices.Equal(got, want) {
				t.Errorf("Tokenize(%q) =\n%v\nwant (TF.js)\n%v", c.Text, got, want)
			}
		})
	}
}

// TestLocalSanity checks the similarity figures recorded in models.md.
func TestLocalSanity(t *testing.T) {
	l := loadLiteModel(t)
	const anchor = "how do I fix a segfault in my C program"
	tests := []struct {
		other string
		want  float64
	}{
		{other: "debugging a crash with a null pointer dereference", want: 0.635},
		{other: "bake a chocolate cake", want: 0.118},
	}
	for _, tt := range tests {
		t.Run(tt.other, func(t *testing.T) {
			v, err := l.Embed(context.Background(), []string{anchor, tt.other})
			if err != nil {
				t.Fatal(err)
			}
			cos := liteCosine(v[0], v[1])
			t.Logf("cosine(%q, %q) = %.4f", anchor, tt.other, cos)
			if math.Abs(cos-tt.want) > 0.005 {
				t.Errorf("cosine(%q, %q) = %.4f, want %.3f ± 0.005", anchor, tt.other, cos, tt.want)
			}
		})
	}
}

func TestLocalEmbedContract(t *testing.T) {
	l := loadLiteModel(t)
	if l.Model() != "use-lite" || l.Dim() != 512 {
		t.Errorf("Model(), Dim() = %q, %d, want \"use-lite\", 512", l.Model(), l.Dim())
	}
	got, err := l.Embed(context.Background(), nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Embed(nil) = %d vectors, %v; want none, nil", len(got), err)
	}

	// The same text gives the same bits alone, in a batch, and again.
	const text = "Fix flaky auth test in CI pipeline"
	a, err := l.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Embed(context.Background(), []string{"", "other words first", text, text})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range b[2:] {
		if !slices.Equal(a[0], v) {
			t.Errorf("Embed is not deterministic for %q", text)
		}
	}
	// Every empty text gets the same unit vector.
	e, err := l.Embed(context.Background(), []string{"", ""})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e[0], b[0]) || !slices.Equal(e[0], e[1]) || math.Abs(liteNorm(e[0])-1) > 1e-5 {
		t.Errorf("empty texts give different or non-unit vectors")
	}
}

// TestLocalConcurrent runs Embed from several goroutines at once (run it with
// -race) and expects exactly the serial results, on liteVariedTexts.
func TestLocalConcurrent(t *testing.T) {
	l := loadLiteModel(t)
	in := liteVariedTexts(t)
	want, err := l.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	const workers = 6
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each worker starts at a different text so scratch buffers are
			// reused across different lengths.
			order := append(slices.Clone(in[w:]), in[:w]...)
			got, err := l.Embed(context.Background(), order)
			if err != nil {
				errs[w] = err
				return
			}
			for i, v := range got {
				if !slices.Equal(v, want[(i+w)%len(in)]) {
					errs[w] = errors.New("vector for " + order[i] + " differs from the serial one")
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// liteErrAfter is a context whose Err starts reporting context.Canceled after
// its first ok calls, to cancel Embed between two texts deterministically.
// Embed's workers call Err concurrently.
type liteErrAfter struct {
	context.Context
	ok    int64
	calls atomic.Int64
}

func (c *liteErrAfter) Err() error {
	if c.calls.Add(1) > c.ok {
		return context.Canceled
	}
	return nil
}

// TestLocalEmbedSpread embeds the same texts (liteVariedTexts, an empty
// one and one past the window) on one worker and on several and expects the
// same vectors bit for bit, in the same order: how Embed spreads texts over
// cores must not change a vector.
func TestLocalEmbedSpread(t *testing.T) {
	l := loadLiteModel(t)
	in := liteVariedTexts(t)
	in = append(in, "", strings.Repeat("a window longer than the model's 128 tokens ", 40))
	want, err := l.embed(context.Background(), in, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{2, 3, 8, len(in) + 5} {
		got, err := l.embed(context.Background(), in, workers)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d workers: %d vectors for %d texts", workers, len(got), len(in))
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("%d workers: the vector of text %d (%.30q) differs from one worker's", workers, i, in[i])
			}
		}
	}
}

func TestLocalEmbedHonoursContext(t *testing.T) {
	l := loadLiteModel(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()

	tests := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{name: "cancelled before the first text", ctx: cancelled, want: context.Canceled},
		{name: "deadline already passed", ctx: expired, want: context.DeadlineExceeded},
		{name: "cancelled between texts", ctx: &liteErrAfter{Context: context.Background(), ok: 2}, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.Embed(tt.ctx, []string{"one", "two", "three"})
			if err != tt.want || got != nil {
				t.Errorf("Embed = %d vectors, %v; want none, %v (ctx.Err() itself)", len(got), err, tt.want)
			}
		})
	}
}

func TestLoadLocalErrors(t *testing.T) {
	// Cases with a non-nil setup start from a copy of the real model.
	tests := []struct {
		name        string
		setup       func(t *testing.T, dir string)
		noModel     bool // the directory does not exist at all
		wantErr     string
		wantMissing bool // errors.Is(err, fs.ErrNotExist)
	}{
		{name: "no directory", noModel: true, wantMissing: true},
		{name: "missing shard", setup: liteRemove("group1-shard7of7"), wantMissing: true},
		{name: "missing vocab", setup: liteRemove("vocab.json"), wantMissing: true},
		{name: "truncated shard", setup: liteTruncate("group1-shard7of7", 1000), wantErr: "shards end before"},
		{name: "extra bytes", setup: liteAppend("group1-shard7of7", 4), wantErr: "shards hold more"},
		{name: "corrupt model.json", setup: liteWrite("model.json", "{"), wantErr: "parse model.json"},
		{name: "corrupt vocab.json", setup: liteWrite("vocab.json", "[[1,2]"), wantErr: "parse vocabulary"},
		{name: "foreign graph", setup: liteWrite("model.json", `{"weightsManifest":[{"paths":["group1-shard1of7"],"weights":[{"name":"w","shape":[4],"dtype":"float32"}]}]}`), wantErr: "shards hold more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "use-lite")
			if !tt.noModel {
				liteCopyModel(t, dir)
				tt.setup(t, dir)
			}
			l, err := LoadLocal(dir)
			if err == nil {
				t.Fatalf("LoadLocal succeeded (%v), want an error", l.Model())
			}
			if !strings.Contains(err.Error(), "make model") || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not name `make model` and %q", err, tt.wantErr)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tt.wantMissing {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v (err %v)", got, tt.wantMissing, err)
			}
		})
	}
}

// liteCopyModel copies the real model into dir, skipping the test when it has
// not been fetched.
func liteCopyModel(t *testing.T, dir string) {
	t.Helper()
	loadLiteModel(t) // skips or fails when the model is unavailable
	src := liteModelDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range liteFiles {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func liteRemove(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func liteWrite(name, content string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func liteTruncate(name string, by int64) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, fi.Size()-by); err != nil {
			t.Fatal(err)
		}
	}
}

func liteAppend(name string, n int) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLocalGemmShapes ties LocalGemmShapes to the loaded network: the
// products whose right-hand side is a weight matrix must cover every dense
// kernel exactly once (a product added to apply without a shape, or a shape
// of the wrong size, fails), and the attention products must be four per
// layer of each kind.
func TestLocalGemmShapes(t *testing.T) {
	l := loadLiteModel(t)
	const T = 100 // no weight matrix has 100 rows or columns
	var weights, attention int
	for _, s := range LocalGemmShapes(T) {
		if s.N == T || s.K == T {
			attention += s.Count
			continue
		}
		weights += s.K * s.N * s.Count
	}
	want := len(l.net.tanhW)
	for _, L := range l.net.layers {
		want += len(L.qkvW) + len(L.outW) + len(L.resW) + len(L.ffn1W) + len(L.ffn2W)
	}
	if weights != want {
		t.Errorf("the shapes multiply by %d weights, the network holds %d in its dense kernels", weights, want)
	}
	if attention != 2*2*liteHeads {
		t.Errorf("%d attention products, want %d (q·kᵀ and weights·v per head, two layers)", attention, 2*2*liteHeads)
	}
	for _, s := range LocalGemmShapes(1000) {
		if s.M > liteMaxTokens {
			t.Errorf("shape %+v: more rows than the window's %d tokens", s, liteMaxTokens)
		}
	}
}
