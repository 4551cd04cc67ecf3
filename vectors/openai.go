package vectors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sashabaranov/go-openai"

	"github.com/hindsight-dev/hindsight/internal/retry"
)

// OpenAIModel is the default embedding model.
const OpenAIModel = "text-embedding-3-small"

// ErrBadResponse: the provider answered 2xx with something that is not a
// usable embeddings response (not JSON, a wrong count or index, a zero
// vector). It is not retried: a misconfigured base URL answers the same way
// every time.
var ErrBadResponse = errors.New("embedding provider returned a malformed response")

// openAINativeDims are the dimensions OpenAI's models return by default. Only
// the text-embedding-3 models accept a shorter `dimensions`.
var openAINativeDims = map[string]struct {
	dim       int
	shortened bool
}{
	"text-embedding-3-small": {1536, true},
	"text-embedding-3-large": {3072, true},
	"text-embedding-ada-002": {1536, false},
}

// OpenAIConfig configures NewOpenAI. Zero values take defaults. Print it with
// %v safely: String hides the key.
type OpenAIConfig struct {
	APIKey string `json:"-"`
	// BaseURL is the API root up to and including /v1; "" means
	// https://api.openai.com/v1. Any OpenAI-compatible server works (vLLM,
	// Ollama, LM Studio, a gateway).
	BaseURL string
	// Model is sent as `model`; "" means text-embedding-3-small.
	Model string
	// Dim is the dimension expected back; 0 means the model's native one
	// (1536 for models this package does not know). When it differs from a
	// text-embedding-3 model's native dimension it is sent as `dimensions`
	// so the API shortens the vectors; other models are never sent
	// `dimensions` (most compatible servers reject it) and must return Dim.
	Dim int
	// MaxBatch caps the inputs per request; 0 means 2048 (OpenAI's limit).
	MaxBatch int
	// MaxBatchTokens caps the estimated tokens per request; 0 means 300,000
	// (OpenAI's limit summed over a request's inputs).
	MaxBatchTokens int
	// MaxInputTokens is the model's input limit; 0 means 8191. Longer
	// inputs are cut (see EstimateTokens).
	MaxInputTokens int
	// Timeout bounds each HTTP request; 0 means 60 seconds.
	Timeout time.Duration
	// HTTPClient sends the requests; nil means a new http.Client. It is
	// used as is (Timeout applies through the request context).
	HTTPClient *http.Client
}

// String describes the configuration without the key.
func (c OpenAIConfig) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("openai{base=%s model=%s dim=%d key=%s}", c.BaseURL, c.Model, c.Dim, key)
}

func (c OpenAIConfig) withDefaults() OpenAIConfig {
	c.BaseURL = cmp.Or(c.BaseURL, "https://api.openai.com/v1")
	c.Model = cmp.Or(c.Model, OpenAIModel)
	if c.Dim == 0 {
		c.Dim = cmp.Or(openAINativeDims[c.Model].dim, 1536)
	}
	c.MaxBatch = cmp.Or(c.MaxBatch, 2048)
	c.MaxBatchTokens = cmp.Or(c.MaxBatchTokens, 300_000)
	c.MaxInputTokens = cmp.Or(c.MaxInputTokens, 8191)
	c.Timeout = cmp.Or(c.Timeout, 60*time.Second)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return c
}

// OpenAI embeds texts with an OpenAI-compatible /embeddings endpoint through
// go-openai. It is a thin translation of the wire protocol: it cuts inputs
// to the model's limit, splits large calls into requests, checks each
// response (count, order by index, dimension) and normalises the vectors.
// It does not retry (wrap it in Retrying) or count cost (Metered); it reports
// each request and the response's usage.total_tokens to a Metered wrapper
// through ctx.
//
// Failed requests return a *ProviderError carrying the HTTP status and
// Retry-After. Neither the key nor any text appears in its errors.
// An OpenAI is safe for concurrent use.
type OpenAI struct {
	client  *openai.Client
	cfg     OpenAIConfig
	sendDim bool
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI returns an embedder for cfg. It makes no request.
func NewOpenAI(cfg OpenAIConfig) *OpenAI {
	cfg = cfg.withDefaults()
	cc := openai.DefaultConfig(cfg.APIKey)
	cc.BaseURL = cfg.BaseURL
	cc.HTTPClient = recordingDoer{cfg.HTTPClient}
	native, known := openAINativeDims[cfg.Model]
	return &OpenAI{
		client:  openai.NewClientWithConfig(cc),
		cfg:     cfg,
		sendDim: known && native.shortened && cfg.Dim != native.dim,
	}
}

// Model returns the configured model name.
func (o *OpenAI) Model() string { return o.cfg.Model }

// Dim returns the configured dimension.
func (o *OpenAI) Dim() int { return o.cfg.Dim }

// Embed returns one unit vector per text, in order. Texts longer than
// MaxInputTokens (estimated) are cut; an empty text is sent as a single
// space, which the API accepts where it rejects "". Calls larger than one
// request are sent as consecutive requests; if one fails, Embed fails and
// returns no vectors.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	if len(texts) == 0 {
		return out, nil
	}
	inputs := make([]string, len(texts))
	costs := make([]int, len(texts))
	for i, t := range texts {
		inputs[i], costs[i] = cutToTokens(t, o.cfg.MaxInputTokens)
		if inputs[i] == "" {
			inputs[i], costs[i] = " ", 1
		}
	}
	dim := o.cfg.Dim
	flat := make([]float32, len(texts)*dim) // one allocation for all vectors
	for start := 0; start < len(inputs); {
		end, tokens := start, 0
		for end < len(inputs) && end-start < o.cfg.MaxBatch && (end == start || tokens+costs[end] <= o.cfg.MaxBatchTokens) {
			tokens += costs[end]
			end++
		}
		if err := o.embedBatch(ctx, inputs[start:end], flat[start*dim:end*dim]); err != nil {
			return nil, err
		}
		for i := start; i < end; i++ {
			out[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
		}
		start = end
	}
	return out, nil
}

// embedBatch sends one request and writes its normalised vectors into dst
// (len(inputs) rows of Dim).
func (o *OpenAI) embedBatch(ctx context.Context, inputs []string, dst []float32) error {
	rec := &responseRecord{}
	reqCtx, cancel := context.WithTimeout(context.WithValue(ctx, responseRecordKey{}, rec), o.cfg.Timeout)
	defer cancel()
	req := openai.EmbeddingRequest{
		Input:          inputs,
		Model:          openai.EmbeddingModel(o.cfg.Model),
		EncodingFormat: openai.EmbeddingEncodingFormatFloat,
	}
	if o.sendDim {
		req.Dimensions = o.cfg.Dim
	}
	reportRequest(ctx)
	resp, err := o.client.CreateEmbeddings(reqCtx, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return o.classify(err, rec)
	}
	if n := cmp.Or(resp.Usage.TotalTokens, resp.Usage.PromptTokens); n > 0 {
		reportTokens(ctx, n) // compatible servers often leave usage out
	}
	if len(resp.Data) != len(inputs) {
		return fmt.Errorf("openai embeddings: %w: %d embeddings for %d inputs", ErrBadResponse, len(resp.Data), len(inputs))
	}
	dim := o.cfg.Dim
	seen := make([]bool, len(inputs))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(inputs) || seen[d.Index] {
			return fmt.Errorf("openai embeddings: %w: index %d repeated or out of range for %d inputs", ErrBadResponse, d.Index, len(inputs))
		}
		seen[d.Index] = true
		if len(d.Embedding) != dim {
			return fmt.Errorf("openai embeddings: model %s returned %d dimensions, configured for %d: %w", o.cfg.Model, len(d.Embedding), dim, ErrDimensionMismatch)
		}
		if !normaliseInto(dst[d.Index*dim:(d.Index+1)*dim], d.Embedding) {
			return fmt.Errorf("openai embeddings: %w: zero or non-finite vector at index %d", ErrBadResponse, d.Index)
		}
	}
	return nil
}

// classify turns a go-openai error into a *ProviderError (the provider
// answered with an error status, or could not be reached) or an
// ErrBadResponse (it answered 2xx with something unreadable).
func (o *OpenAI) classify(err error, rec *responseRecord) error {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		code, _ := apiErr.Code.(string)
		msg := apiErr.Message
		if o.cfg.APIKey != "" { // a server that echoes the key must not put it in our logs
			msg = strings.ReplaceAll(msg, o.cfg.APIKey, "[redacted]")
		}
		return &ProviderError{StatusCode: apiErr.HTTPStatusCode, Code: cmp.Or(code, apiErr.Type), Message: msg, RetryAfter: rec.retryAfter, Err: err}
	case errors.As(err, &reqErr):
		return &ProviderError{StatusCode: reqErr.HTTPStatusCode, Message: http.StatusText(reqErr.HTTPStatusCode), RetryAfter: rec.retryAfter, Err: err}
	}
	var netErr net.Error
	if !rec.responded || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) {
		// No answer, an answer cut short, or our per-request timeout.
		return &ProviderError{Err: err}
	}
	return fmt.Errorf("openai embeddings: %w: %v", ErrBadResponse, err)
}

// normaliseInto writes v scaled to unit length into dst and reports whether
// v had a usable norm.
func normaliseInto(dst, v []float32) bool {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return false
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		dst[i] = float32(float64(x) * inv)
	}
	return true
}

// ProviderError is a request to an embedding provider that failed: an error
// status, or no usable answer (StatusCode 0: connection refused or reset,
// timeout, a body cut short). Retrying reads it to decide whether and when to
// try again. Its message holds the status and the provider's message, never
// the request.
type ProviderError struct {
	StatusCode int           // HTTP status; 0 when no complete answer arrived
	Code       string        // provider's error code or type, e.g. "insufficient_quota"
	Message    string        // provider's message (cut to 200 bytes)
	RetryAfter time.Duration // the provider's Retry-After (or retry-after-ms); 0 when absent
	Err        error         // the client's error
}

func (e *ProviderError) Error() string {
	if e.StatusCode == 0 {
		return fmt.Sprintf("embedding provider unreachable: %v", e.Err)
	}
	msg := e.Message
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	s := fmt.Sprintf("embedding provider answered %d", e.StatusCode)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if msg != "" {
		s += ": " + msg
	}
	return s
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Temporary reports whether the same request may succeed later: no answer,
// 408, 429 (except an exhausted quota) and 5xx.
func (e *ProviderError) Temporary() bool {
	switch {
	case e.StatusCode == 0, e.StatusCode == http.StatusRequestTimeout, e.StatusCode >= 500:
		return true
	case e.StatusCode == http.StatusTooManyRequests:
		return e.Code != "insufficient_quota" // a billing limit, not a rate limit
	}
	return false
}

// recordingDoer sends requests with an http.Client and, when the request's
// context carries a *responseRecord, notes what go-openai does not expose
// on its errors: that an answer arrived, and its Retry-After.
type recordingDoer struct{ c *http.Client }

type responseRecordKey struct{}

type responseRecord struct {
	responded  bool
	retryAfter time.Duration
}

func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if resp != nil {
		if rec, ok := req.Context().Value(responseRecordKey{}).(*responseRecord); ok {
			rec.responded = true
			rec.retryAfter = retry.After(resp.Header, time.Now())
		}
	}
	return resp, err
}

// EstimateTokens over-estimates how many tokens an OpenAI tokenizer
// (cl100k_base) makes of text, without its 1.7 MB vocabulary. It follows the
// tokenizer's pre-split: runs of ASCII letters count one token per 3 letters
// (English words average 1.3 tokens per 4.7 letters; identifiers and random
// strings split finer, rarely under 3 letters a token), runs of digits one
// per 3 (the tokenizer groups at most 3 digits), every other ASCII symbol
// one, a single space nothing (it joins the next word's token), other runs
// of whitespace one per 2 characters, and any other character one token
// per UTF-8 byte, the tokenizer's worst case. English prose comes out about
// 1.5 to 2 times the real count, so cutting at the limit keeps roughly 4,000
// to 5,500 real tokens of a very long English text; the over-estimate is the
// price of never sending an input the API rejects (one rejected input fails
// its whole batch, and the pipeline would retry it forever).
func EstimateTokens(text string) int {
	_, n := cutToTokens(text, math.MaxInt)
	return n
}

// cutToTokens returns the longest prefix of text whose EstimateTokens is at
// most limit (cut between runes), and that estimate.
func cutToTokens(text string, limit int) (string, int) {
	const (
		none = iota
		letters
		digits
		spaces
	)
	n, run, runLen, spaceFirst := 0, none, 0, false
	for i := 0; i < len(text); {
		c := text[i]
		cost, kind, width := 0, none, 1
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			kind = letters
		case '0' <= c && c <= '9':
			kind = digits
		case c == ' ', c == '\t', c == '\n', c == '\r', c == '\v', c == '\f':
			kind = spaces
		case c < utf8.RuneSelf:
			cost = 1
		default:
			_, width = utf8.DecodeRuneInString(text[i:])
			cost = width
		}
		if kind != run {
			run, runLen = kind, 0
		}
		switch kind {
		case letters, digits:
			if runLen%3 == 0 {
				cost = 1
			}
		case spaces: // ceil(L/2) for a run of L, but a lone space is free
			switch {
			case runLen == 0:
				spaceFirst = c == ' '
				if !spaceFirst {
					cost = 1
				}
			case runLen == 1:
				if spaceFirst {
					cost = 1
				}
			case runLen%2 == 0:
				cost = 1
			}
		}
		if n+cost > limit {
			return text[:i], n
		}
		n += cost
		runLen++
		i += width
	}
	return text, n
}
