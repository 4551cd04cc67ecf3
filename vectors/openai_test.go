package vectors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/internal/openaitest"
)

const oaiKey = "sk-test-0123456789"

// oaiServer starts a fake OpenAI with the given native dimension that
// accepts oaiKey only.
func oaiServer(t *testing.T, dim int) *openaitest.Server {
	return openaitest.New(t, openaitest.Options{Dim: dim, APIKey: oaiKey})
}

func oaiEmbedder(srv *openaitest.Server, cfg OpenAIConfig) *OpenAI {
	if cfg.APIKey == "" {
		cfg.APIKey = oaiKey
	}
	cfg.BaseURL = srv.URL()
	return NewOpenAI(cfg)
}

// oaiWant is the unit vector the fake server's answer for text becomes.
func oaiWant(t *testing.T, text string, dim int) []float32 {
	v := make([]float32, dim)
	if !normaliseInto(v, openaitest.Vector(text, dim)) {
		t.Fatalf("fake vector of %q is zero", text)
	}
	return v
}

func oaiCheckVectors(t *testing.T, got [][]float32, texts []string, dim int) {
	t.Helper()
	if len(got) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(got), len(texts))
	}
	for i, text := range texts {
		if !slices.Equal(got[i], oaiWant(t, text, dim)) {
			t.Fatalf("vector %d (%q) is not the server's vector for its text, normalised", i, text)
		}
		var sum float64
		for _, x := range got[i] {
			sum += float64(x) * float64(x)
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Fatalf("vector %d has norm² %v", i, sum)
		}
	}
}

func TestOpenAIWireFormat(t *testing.T) {
	srv := oaiServer(t, 1536)
	e := oaiEmbedder(srv, OpenAIConfig{})
	if e.Model() != "text-embedding-3-small" || e.Dim() != 1536 {
		t.Fatalf("defaults: model %q dim %d", e.Model(), e.Dim())
	}
	texts := []string{"flaky auth test", "parse config file"}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	oaiCheckVectors(t, got, texts, 1536)
	reqs := srv.Received()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "text-embedding-3-small" || r.EncodingFormat != "float" || r.InputIsString || !slices.Equal(r.Input, texts) || !r.Authorized {
		t.Errorf("request = %+v", r)
	}
	if r.Dimensions != 0 {
		t.Errorf("dimensions = %d sent for the model's native dimension", r.Dimensions)
	}
}

func TestOpenAIDimensions(t *testing.T) {
	cases := []struct {
		model      string
		dim        int // configured
		serverDim  int
		wantDim    int // Dim()
		wantParam  int // `dimensions` sent
		wantVector int
	}{
		{"text-embedding-3-small", 0, 1536, 1536, 0, 1536},
		{"text-embedding-3-small", 512, 1536, 512, 512, 512},
		{"text-embedding-3-large", 0, 3072, 3072, 0, 3072},
		{"text-embedding-3-large", 256, 3072, 256, 256, 256},
		{"text-embedding-ada-002", 0, 1536, 1536, 0, 1536},
		{"nomic-embed-text", 768, 768, 768, 0, 768}, // unknown models are never sent dimensions
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.model, c.dim), func(t *testing.T) {
			srv := oaiServer(t, c.serverDim)
			e := oaiEmbedder(srv, OpenAIConfig{Model: c.model, Dim: c.dim})
			if e.Dim() != c.wantDim {
				t.Errorf("Dim() = %d, want %d", e.Dim(), c.wantDim)
			}
			got, err := e.Embed(context.Background(), []string{"x"})
			if err != nil {
				t.Fatal(err)
			}
			oaiCheckVectors(t, got, []string{"x"}, c.wantVector)
			if r := srv.Received()[0]; r.Dimensions != c.wantParam || r.Model != c.model {
				t.Errorf("sent model %q dimensions %d, want %q %d", r.Model, r.Dimensions, c.model, c.wantParam)
			}
		})
	}
}

func TestOpenAIBatching(t *testing.T) {
	srv := oaiServer(t, 64)
	e := oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 64})
	texts := make([]string, 5000)
	for i := range texts {
		texts[i] = fmt.Sprintf("chunk %d", i)
	}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	oaiCheckVectors(t, got, texts, 64)
	var sizes []int
	var sent []string
	for _, r := range srv.Received() {
		sizes = append(sizes, len(r.Input))
		sent = append(sent, r.Input...)
	}
	if !slices.Equal(sizes, []int{2048, 2048, 904}) {
		t.Errorf("batch sizes %v, want [2048 2048 904]", sizes)
	}
	if !slices.Equal(sent, texts) {
		t.Error("inputs not sent in order")
	}

	// A token budget per request splits too: each text is about 40 tokens.
	srv2 := oaiServer(t, 8)
	e2 := oaiEmbedder(srv2, OpenAIConfig{Model: "m", Dim: 8, MaxBatchTokens: 100})
	long := make([]string, 7)
	for i := range long {
		long[i] = strings.Repeat(fmt.Sprintf("w%d ", i), 20) // 20 × (1 + 0) = 40 estimated
	}
	if _, err := e2.Embed(context.Background(), long); err != nil {
		t.Fatal(err)
	}
	sizes = nil
	for _, r := range srv2.Received() {
		sizes = append(sizes, len(r.Input))
	}
	if !slices.Equal(sizes, []int{2, 2, 2, 1}) {
		t.Errorf("batch sizes under a token budget %v, want [2 2 2 1]", sizes)
	}
}

func TestOpenAIOrdersByIndex(t *testing.T) {
	srv := oaiServer(t, 16)
	srv.Script(openaitest.Fault{Reverse: true})
	e := oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16})
	texts := []string{"a", "b", "c", "d"}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	oaiCheckVectors(t, got, texts, 16)
}

func TestOpenAIEmptyInputs(t *testing.T) {
	srv := oaiServer(t, 16)
	e := oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16})
	got, err := e.Embed(context.Background(), nil)
	if err != nil || len(got) != 0 || srv.Requests() != 0 {
		t.Fatalf("Embed(nil) = %d vectors, %v, %d requests", len(got), err, srv.Requests())
	}
	got, err = e.Embed(context.Background(), []string{"", "x"})
	if err != nil {
		t.Fatalf("Embed with an empty text: %v", err)
	}
	oaiCheckVectors(t, got, []string{" ", "x"}, 16)
}

// TestOpenAIResponseErrors: answers that no retry can fix fail at once.
func TestOpenAIResponseErrors(t *testing.T) {
	cases := []struct {
		name    string
		fault   openaitest.Fault
		wantErr error
	}{
		{"malformed body", openaitest.Malformed(), ErrBadResponse},
		{"missing embedding", openaitest.Fault{DropOne: true}, ErrBadResponse},
		{"repeated index", openaitest.Fault{BadIndexes: true}, ErrBadResponse},
		{"wrong dimension", openaitest.WrongDim(12), ErrDimensionMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := oaiServer(t, 16)
			srv.Script(c.fault)
			var slept []time.Duration
			e := Retrying(oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16}), RetryOptions{Sleep: recordSleep(&slept)})
			_, err := e.Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			if srv.Requests() != 1 || len(slept) != 0 {
				t.Errorf("%d requests, %d waits: want 1 and none (not retryable)", srv.Requests(), len(slept))
			}
			if c.wantErr == ErrDimensionMismatch && !strings.Contains(err.Error(), "hindsight reembed") {
				t.Errorf("dimension error does not name `hindsight reembed`: %v", err)
			}
		})
	}
}

func TestOpenAIStatusErrorsNotRetried(t *testing.T) {
	cases := []struct {
		name       string
		key        string
		maxInput   int
		fault      openaitest.Fault
		wantStatus int
	}{
		{name: "401 wrong key", key: "sk-wrong", wantStatus: 401},
		{name: "400 input too long (cutting disabled)", maxInput: 1 << 30, wantStatus: 400},
		{name: "429 quota exhausted", fault: openaitest.Fault{Status: 429, Code: "insufficient_quota"}, wantStatus: 429},
		{name: "403", fault: openaitest.Fault{Status: 403}, wantStatus: 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := oaiServer(t, 16)
			srv.Script(c.fault)
			var slept []time.Duration
			inner := oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16, APIKey: c.key, MaxInputTokens: c.maxInput})
			e := Retrying(inner, RetryOptions{Sleep: recordSleep(&slept)})
			_, err := e.Embed(context.Background(), []string{strings.Repeat("long text ", 5000)})
			var pe *ProviderError
			if !errors.As(err, &pe) || pe.StatusCode != c.wantStatus || pe.Temporary() {
				t.Fatalf("error %v, want a permanent ProviderError %d", err, c.wantStatus)
			}
			if srv.Requests() != 1 || len(slept) != 0 {
				t.Errorf("%d requests, %d waits: want 1 and none", srv.Requests(), len(slept))
			}
			for _, secret := range []string{oaiKey, "sk-wrong", "long text"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error message holds %q: %v", secret, err)
				}
			}
		})
	}
}

func TestOpenAIRedactsEchoedKey(t *testing.T) {
	srv := oaiServer(t, 16)
	srv.Script(openaitest.Fault{Status: 400, Message: "bad key " + oaiKey + " used"})
	_, err := oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16}).Embed(context.Background(), []string{"x"})
	if err == nil || strings.Contains(err.Error(), oaiKey) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error %v: the key must be redacted", err)
	}
	if s := fmt.Sprint(OpenAIConfig{APIKey: oaiKey}); strings.Contains(s, oaiKey) {
		t.Errorf("config prints the key: %s", s)
	}
}

func recordSleep(slept *[]time.Duration) func(context.Context, time.Duration) error {
	var mu sync.Mutex
	return func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		*slept = append(*slept, d)
		return ctx.Err()
	}
}

func TestRetryingWaits(t *testing.T) {
	const base = 100 * time.Millisecond
	type span struct{ lo, hi time.Duration }
	date := time.Now().Add(5 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		name         string
		script       []openaitest.Fault
		wantWaits    []span
		wantRequests int
		wantErr      bool
		maxDelay     time.Duration // 0 = 30s
	}{
		{"500 then success", []openaitest.Fault{openaitest.ServerError()},
			[]span{{base / 2, base}}, 2, false, 0},
		{"backoff doubles", []openaitest.Fault{openaitest.ServerError(), {Status: 502}, {Status: 503}},
			[]span{{base / 2, base}, {base, 2 * base}, {2 * base, 4 * base}}, 4, false, 0},
		{"Retry-After seconds", []openaitest.Fault{openaitest.RateLimited("3")},
			[]span{{3 * time.Second, 3300 * time.Millisecond}}, 2, false, 0},
		{"retry-after-ms", []openaitest.Fault{{Status: 429, Header: http.Header{"Retry-After-Ms": {"1500"}}}},
			[]span{{1500 * time.Millisecond, 1650 * time.Millisecond}}, 2, false, 0},
		{"Retry-After HTTP date", []openaitest.Fault{openaitest.RateLimited(date)},
			[]span{{3500 * time.Millisecond, 5500 * time.Millisecond}}, 2, false, 0},
		{"429 without Retry-After", []openaitest.Fault{openaitest.RateLimited("")},
			[]span{{base / 2, base}}, 2, false, 0},
		{"dropped connection", []openaitest.Fault{openaitest.Dropped()},
			[]span{{base / 2, base}}, 2, false, 0},
		{"gives up after MaxAttempts", slices.Repeat([]openaitest.Fault{openaitest.ServerError()}, 5),
			[]span{{base / 2, base}, {base, 2 * base}, {2 * base, 4 * base}, {4 * base, 8 * base}}, 5, true, 0},
		{"Retry-After beyond MaxDelay stops at once", []openaitest.Fault{openaitest.RateLimited("120")},
			nil, 1, true, 0},
		{"MaxDelay caps the backoff", slices.Repeat([]openaitest.Fault{openaitest.ServerError()}, 4),
			[]span{{base / 2, base}, {base, 2 * base}, {base, 2 * base}, {base, 2 * base}}, 5, false, 2 * base},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := oaiServer(t, 16)
			srv.Script(c.script...)
			var slept []time.Duration
			e := Retrying(oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16}),
				RetryOptions{BaseDelay: base, MaxDelay: cmp.Or(c.maxDelay, 30*time.Second), Sleep: recordSleep(&slept)})
			got, err := e.Embed(context.Background(), []string{"a"})
			if c.wantErr != (err != nil) {
				t.Fatalf("error %v, want error: %v", err, c.wantErr)
			}
			if err == nil {
				oaiCheckVectors(t, got, []string{"a"}, 16)
			} else {
				var pe *ProviderError
				if !errors.As(err, &pe) {
					t.Errorf("error %v does not carry the ProviderError", err)
				}
			}
			if srv.Requests() != c.wantRequests {
				t.Errorf("%d requests, want %d", srv.Requests(), c.wantRequests)
			}
			if len(slept) != len(c.wantWaits) {
				t.Fatalf("waits %v, want %d", slept, len(c.wantWaits))
			}
			for i, w := range c.wantWaits {
				if slept[i] < w.lo || slept[i] > w.hi {
					t.Errorf("wait %d = %v, want within [%v, %v]", i, slept[i], w.lo, w.hi)
				}
			}
		})
	}
}

// TestRetryAfterHonouredInRealTime waits a real one-second Retry-After.
func TestRetryAfterHonouredInRealTime(t *testing.T) {
	srv := oaiServer(t, 16)
	srv.Script(openaitest.RateLimited("1"))
	e := Retrying(oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16}), RetryOptions{BaseDelay: time.Millisecond})
	start := time.Now()
	got, err := e.Embed(context.Background(), []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	oaiCheckVectors(t, got, []string{"a"}, 16)
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("retried after %v, before the 1s Retry-After", elapsed)
	}
	if srv.Requests() != 2 {
		t.Errorf("%d requests, want 2", srv.Requests())
	}
}

func TestRetryingRespectsContext(t *testing.T) {
	t.Run("wait past the deadline is not started", func(t *testing.T) {
		srv := oaiServer(t, 16)
		// A wait of an hour against a deadline of ten minutes: a retrier
		// that started waiting would end with the deadline's error, not
		// the 429 (no clock is read: a loaded machine cannot fail it).
		srv.Script(openaitest.RateLimited("3600"))
		e := Retrying(oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16}), RetryOptions{MaxDelay: 2 * time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_, err := e.Embed(ctx, []string{"a"})
		var pe *ProviderError
		if !errors.As(err, &pe) || pe.StatusCode != 429 {
			t.Fatalf("error %v, want the 429", err)
		}
		if srv.Requests() != 1 {
			t.Errorf("%d requests; want an immediate failure after one", srv.Requests())
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		srv := oaiServer(t, 16)
		// An hour's wait: a retrier that ignored the cancellation would
		// hang until go test's -timeout, which fails with every stack.
		srv.Script(openaitest.RateLimited("3600"))
		e := Retrying(oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16}), RetryOptions{MaxDelay: 2 * time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		if _, err := e.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
		if srv.Requests() != 1 {
			t.Errorf("%d requests; want the first only", srv.Requests())
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		srv := oaiServer(t, 16)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16}).Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
		if srv.Requests() != 0 {
			t.Errorf("%d requests after cancellation", srv.Requests())
		}
	})
	t.Run("request timeout is retried", func(t *testing.T) {
		srv := oaiServer(t, 16)
		// The first answer never comes (an hour, until the client gives
		// up). A loaded machine may also time out an answered request:
		// then it is retried too, so the property is counted, not timed:
		// at least two requests, each timeout followed by one wait.
		srv.Script(openaitest.Fault{Delay: time.Hour})
		var slept []time.Duration
		e := Retrying(oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16, Timeout: time.Second}),
			RetryOptions{Sleep: recordSleep(&slept), MaxAttempts: 100})
		got, err := e.Embed(context.Background(), []string{"a"})
		if err != nil {
			t.Fatal(err)
		}
		oaiCheckVectors(t, got, []string{"a"}, 16)
		if srv.Requests() < 2 || len(slept) != srv.Requests()-1 {
			t.Errorf("%d requests, %d waits; want 2 or more, one wait fewer", srv.Requests(), len(slept))
		}
	})
}

// fixedEmbedder is a working in-process embedder that reports no usage, as
// the local model does.
type fixedEmbedder struct{ dim int }

func (f fixedEmbedder) Model() string { return "fixed" }
func (f fixedEmbedder) Dim() int      { return f.dim }
func (f fixedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = make([]float32, f.dim)
		normaliseInto(out[i], openaitest.Vector(t, f.dim))
	}
	return out, ctx.Err()
}

func TestMetered(t *testing.T) {
	ctx := context.Background()
	texts := []string{"first chunk of text", "second", "third one here"}
	tokens := 0
	for _, s := range texts {
		tokens += openaitest.Tokens(s)
	}

	t.Run("outside Retrying", func(t *testing.T) {
		srv := oaiServer(t, 16)
		srv.Script(openaitest.ServerError())
		var u Usage
		var slept []time.Duration
		e := Metered(Retrying(oaiEmbedder(srv, OpenAIConfig{Model: "text-embedding-3-small", Dim: 16}), RetryOptions{Sleep: recordSleep(&slept)}), &u)
		if e.Model() != "text-embedding-3-small" || e.Dim() != 16 {
			t.Errorf("wrappers hide Model/Dim: %q %d", e.Model(), e.Dim())
		}
		if _, err := e.Embed(ctx, texts); err != nil {
			t.Fatal(err)
		}
		wrong := Metered(oaiEmbedder(srv, OpenAIConfig{Model: "text-embedding-3-small", Dim: 16, APIKey: "sk-wrong"}), &u)
		if _, err := wrong.Embed(ctx, texts); err == nil {
			t.Fatal("wrong key succeeded")
		}
		want := UsageSnapshot{Calls: 2, Requests: 3, Inputs: 6, Tokens: int64(tokens), Errors: 1, CostUSD: float64(tokens) * 0.02 / 1e6}
		if got := u.Snapshot(); !usageEqual(got, want) {
			t.Errorf("usage %+v, want %+v", got, want)
		}
	})
	t.Run("inside Retrying counts attempts", func(t *testing.T) {
		srv := oaiServer(t, 16)
		srv.Script(openaitest.RateLimited("1"), openaitest.ServerError())
		var u Usage
		var slept []time.Duration
		e := Retrying(Metered(oaiEmbedder(srv, OpenAIConfig{Model: "text-embedding-3-large", Dim: 16}), &u), RetryOptions{Sleep: recordSleep(&slept)})
		if _, err := e.Embed(ctx, texts); err != nil {
			t.Fatal(err)
		}
		want := UsageSnapshot{Calls: 3, Requests: 3, Inputs: 9, Tokens: int64(tokens), Errors: 2, CostUSD: float64(tokens) * 0.13 / 1e6}
		if got := u.Snapshot(); !usageEqual(got, want) {
			t.Errorf("usage %+v, want %+v", got, want)
		}
	})
	t.Run("batches add up", func(t *testing.T) {
		srv := oaiServer(t, 16)
		u := Usage{PricePerMTokens: 1.5}
		e := Metered(oaiEmbedder(srv, OpenAIConfig{Model: "text-embedding-3-small", Dim: 16, MaxBatch: 2}), &u)
		if _, err := e.Embed(ctx, texts); err != nil {
			t.Fatal(err)
		}
		want := UsageSnapshot{Calls: 1, Requests: 2, Inputs: 3, Tokens: int64(tokens), CostUSD: float64(tokens) * 1.5 / 1e6}
		if got := u.Snapshot(); !usageEqual(got, want) {
			t.Errorf("usage %+v, want %+v", got, want)
		}
	})
	t.Run("estimated without a provider count", func(t *testing.T) {
		var u Usage
		if _, err := Metered(fixedEmbedder{8}, &u).Embed(ctx, texts); err != nil {
			t.Fatal(err)
		}
		srv := oaiServer(t, 16)
		srv.Script(openaitest.Fault{NoUsage: true})
		if _, err := Metered(oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16}), &u).Embed(ctx, texts); err != nil {
			t.Fatal(err)
		}
		est := 0
		for _, s := range texts {
			est += EstimateTokens(s)
		}
		want := UsageSnapshot{Calls: 2, Requests: 1, Inputs: 6, EstimatedTokens: 2 * int64(est)}
		if got := u.Snapshot(); !usageEqual(got, want) {
			t.Errorf("usage %+v, want %+v", got, want)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		srv := oaiServer(t, 16)
		var u Usage
		e := Metered(Retrying(oaiEmbedder(srv, OpenAIConfig{Model: "text-embedding-3-small", Dim: 16}), RetryOptions{}), &u)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				texts := []string{fmt.Sprintf("g%d a", g), fmt.Sprintf("g%d b", g)}
				got, err := e.Embed(ctx, texts)
				if err != nil {
					t.Error(err)
					return
				}
				oaiCheckVectors(t, got, texts, 16)
			})
		}
		wg.Wait()
		if s := u.Snapshot(); s.Calls != 8 || s.Requests != 8 || s.Inputs != 16 || s.Tokens != 16 { // 1 token per 4-byte text
			t.Errorf("usage %+v", s)
		}
	})
}

func usageEqual(a, b UsageSnapshot) bool {
	costOK := math.Abs(a.CostUSD-b.CostUSD) < 1e-12
	a.CostUSD, b.CostUSD = 0, 0
	return costOK && a == b
}

func TestOpenAICutsLongInputs(t *testing.T) {
	srv := openaitest.New(t, openaitest.Options{Dim: 16, APIKey: oaiKey}) // rejects inputs over 8192 tokens
	e := oaiEmbedder(srv, OpenAIConfig{Model: "m", Dim: 16})
	prose := strings.Repeat("The flaky auth test failed again on CI. ", 3000) // 120k bytes
	accents := strings.Repeat("Über naïve café — résumé 日本語のテキスト. ", 2000)    // multibyte
	code := strings.Repeat("func parseConfigFile(path string) (*Config, error) {\n\treturn nil, nil\n}\n", 1500)
	short := "short text"
	texts := []string{prose, accents, code, short}
	if _, err := e.Embed(context.Background(), texts); err != nil {
		t.Fatalf("long inputs were not cut enough: %v", err)
	}
	sent := srv.Received()[0].Input
	for i, s := range sent {
		if !strings.HasPrefix(texts[i], s) || !utf8.ValidString(s) {
			t.Errorf("input %d: sent text is not a valid prefix of the original", i)
		}
		if n := EstimateTokens(s); n > 8191 {
			t.Errorf("input %d: sent %d estimated tokens, limit 8191", i, n)
		}
	}
	if sent[3] != short {
		t.Errorf("short input changed: %q", sent[3])
	}
	// Cutting is conservative, not wasteful: English keeps over 20,000
	// characters (about 5,000 real tokens).
	if len(sent[0]) < 20000 || len(sent[0]) >= len(prose) {
		t.Errorf("prose cut to %d bytes", len(sent[0]))
	}
	t.Logf("kept bytes: prose %d, accented %d, code %d", len(sent[0]), len(sent[1]), len(sent[2]))
}

func TestEstimateTokens(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello", 2},           // 5 letters: 1 per 3
		{"hello world", 4},     // the space joins "world"
		{"abc", 1},             // 3 letters
		{"12345", 2},           // digits in groups of 3
		{"a1b2", 4},            // letters and digits split
		{"a, b", 3},            // comma 1, space 0
		{"\n", 1},              // a newline is its own token
		{"\n\n\n\n", 2},        // whitespace runs: 1 per 2
		{"a  b", 3},            // two spaces: 1
		{"    x", 3},           // indentation 2 + x 1
		{"é", 2},               // non-ASCII: a token per byte
		{"日本", 6},              // 3 bytes each
		{"parseConfigFile", 5}, // identifiers: 15 letters
	}
	for _, c := range cases {
		if got := EstimateTokens(c.in); got != c.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	// Properties over random text: the estimate never exceeds the byte
	// count (the tokenizer's hard bound), covers the fake server's count,
	// and cutting returns a valid prefix within the limit.
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("aZ09 .\n\t,éü日😀")
	for range 2000 {
		rs := make([]rune, r.IntN(200))
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(rs)
		n := EstimateTokens(s)
		if n > len(s) || (s != "" && n+1 < openaitest.Tokens(s)) { // +1: a trailing lone space is free
			t.Fatalf("EstimateTokens(%q) = %d: outside [%d, %d]", s, n, openaitest.Tokens(s), len(s))
		}
		limit := r.IntN(60)
		cut, m := cutToTokens(s, limit)
		if !strings.HasPrefix(s, cut) || !utf8.ValidString(cut) || m > limit || m != EstimateTokens(cut) {
			t.Fatalf("cutToTokens(%q, %d) = %q, %d", s, limit, cut, m)
		}
		if cut != s { // the next rune would not have fitted
			_, w := utf8.DecodeRuneInString(s[len(cut):])
			if EstimateTokens(s[:len(cut)+w]) <= limit {
				t.Fatalf("cutToTokens(%q, %d) = %q stopped early", s, limit, cut)
			}
		}
	}
}
