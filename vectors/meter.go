package vectors

import (
	"context"
	"math"
	"sync/atomic"
)

// ModelPrice is the list price in US dollars per million tokens of the
// embedding models this package knows (0 for the others, local ones included).
func ModelPrice(model string) float64 {
	switch model {
	case "text-embedding-3-small":
		return 0.02
	case "text-embedding-3-large":
		return 0.13
	case "text-embedding-ada-002":
		return 0.10
	}
	return 0
}

// Usage counts what embedders wrapped by Metered did. The counters are
// atomic: one Usage may be shared by several wrappers and read with Snapshot
// at any time. Do not copy a Usage after first use.
type Usage struct {
	// PricePerMTokens is the price in US dollars of one million tokens; 0
	// means ModelPrice of the wrapped embedder's model. Set it before
	// passing the Usage to Metered.
	PricePerMTokens float64

	calls, requests, inputs, tokens, estimated, errors atomic.Int64
	picoUSD                                            atomic.Int64 // 1e-12 dollars
}

// UsageSnapshot is a copy of a Usage's counters.
type UsageSnapshot struct {
	Calls    int64 // Embed calls
	Requests int64 // requests to the provider, as reported by the embedder (OpenAI: every HTTP request, failed ones too)
	Inputs   int64 // texts passed to Embed
	// Tokens are the provider's count (usage.total_tokens) of the requests
	// that succeeded; EstimatedTokens are EstimateTokens of the texts of
	// successful calls whose embedder reported no count (a local model).
	Tokens          int64
	EstimatedTokens int64
	Errors          int64   // Embed calls that failed
	CostUSD         float64 // (Tokens + EstimatedTokens) at the price in force
}

// Snapshot returns the counters. Each is read atomically; a call in flight
// may be counted in some and not yet in others.
func (u *Usage) Snapshot() UsageSnapshot {
	return UsageSnapshot{
		Calls:           u.calls.Load(),
		Requests:        u.requests.Load(),
		Inputs:          u.inputs.Load(),
		Tokens:          u.tokens.Load(),
		EstimatedTokens: u.estimated.Load(),
		Errors:          u.errors.Load(),
		CostUSD:         float64(u.picoUSD.Load()) / 1e12,
	}
}

// Metered returns e counting its calls, inputs, tokens, errors and cost in
// u. Where it sits in a chain decides what a call is: Metered(Retrying(e))
// counts one call per Embed however many attempts it took (Requests and
// Tokens still count every attempt's requests), Retrying(Metered(e)) counts
// each attempt, so Errors shows every rate limit.
func Metered(e Embedder, u *Usage) Embedder {
	price := u.PricePerMTokens
	if price == 0 {
		price = ModelPrice(e.Model())
	}
	return &metered{Embedder: e, u: u, picoPerToken: price * 1e6}
}

type metered struct {
	Embedder
	u            *Usage
	picoPerToken float64
}

func (m *metered) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	tr := &usageTrace{parent: traceFrom(ctx)}
	vs, err := m.Embedder.Embed(context.WithValue(ctx, usageTraceKey{}, tr), texts)
	u := m.u
	u.calls.Add(1)
	u.inputs.Add(int64(len(texts)))
	u.requests.Add(tr.requests.Load())
	tokens := tr.tokens.Load()
	u.tokens.Add(tokens)
	if err != nil {
		u.errors.Add(1)
	} else if !tr.reported.Load() {
		for _, t := range texts {
			tokens += int64(EstimateTokens(t))
		}
		u.estimated.Add(tokens)
	}
	u.picoUSD.Add(int64(math.Round(float64(tokens) * m.picoPerToken)))
	return vs, err
}

// usageTrace collects, for one Metered call, what the embedder below
// reports. It travels in the context (like net/http/httptrace) so it reaches
// through any wrappers between Metered and the embedder without each having
// to forward it.
type usageTrace struct {
	parent   *usageTrace // an outer Metered's trace, also told
	requests atomic.Int64
	tokens   atomic.Int64
	reported atomic.Bool
}

type usageTraceKey struct{}

func traceFrom(ctx context.Context) *usageTrace {
	tr, _ := ctx.Value(usageTraceKey{}).(*usageTrace)
	return tr
}

// reportRequest tells the Metered wrappers above that a request is being sent.
func reportRequest(ctx context.Context) {
	for tr := traceFrom(ctx); tr != nil; tr = tr.parent {
		tr.requests.Add(1)
	}
}

// reportTokens tells the Metered wrappers above how many tokens the provider
// counted for a successful request.
func reportTokens(ctx context.Context, n int) {
	for tr := traceFrom(ctx); tr != nil; tr = tr.parent {
		tr.tokens.Add(int64(n))
		tr.reported.Store(true)
	}
}
