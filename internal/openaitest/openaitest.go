// Package openaitest runs an OpenAI-compatible embeddings server in the test
// process, on loopback: POST /v1/embeddings with OpenAI's request and
// response format, deterministic vectors derived from each text, a request
// counter, and scripted faults (rate limits with Retry-After, server errors,
// malformed bodies, wrong dimensions, dropped connections).
//
//	srv := openaitest.New(t, openaitest.Options{APIKey: "sk-test"})
//	srv.Script(openaitest.RateLimited("1"), openaitest.ServerError())
//	e := vectors.NewOpenAI(vectors.OpenAIConfig{APIKey: "sk-test", BaseURL: srv.URL()})
//
// It never logs what it receives.
package openaitest

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Options configures New. Zero values take defaults.
type Options struct {
	// Dim is the native dimension of every model; 0 means 1536. A request's
	// `dimensions` (at most Dim) shortens the vectors, as OpenAI's
	// text-embedding-3 models do.
	Dim int
	// APIKey, when set, is the only key accepted; other requests get 401
	// with OpenAI's invalid_api_key error.
	APIKey string
	// MaxInputTokens is the model's input limit in Tokens; 0 means 8192.
	// Longer inputs get OpenAI's 400 error.
	MaxInputTokens int
}

// Request is a request the server received, decoded.
type Request struct {
	Model          string
	Input          []string
	InputIsString  bool // input was a single string, not an array
	EncodingFormat string
	Dimensions     int
	Authorized     bool // the Authorization header carried the expected key
}

// Fault is a scripted answer to one request. The zero Fault is a normal
// answer.
type Fault struct {
	Status     int           // answer with this status and an OpenAI-style error body
	Code       string        // error code in the body (e.g. "rate_limit_exceeded")
	Message    string        // error message in the body; "" means the status text
	Header     http.Header   // extra response headers (Retry-After, retry-after-ms)
	Body       string        // answer 200 with this raw body
	Dim        int           // answer with vectors of this dimension
	Reverse    bool          // list the embeddings in reverse order (indexes stay right)
	DropOne    bool          // leave out the last embedding
	Drop       bool          // close the connection without answering
	NoUsage    bool          // leave usage out of the answer
	BadIndexes bool          // number every embedding 0
	Delay      time.Duration // wait this long (or until the client gives up) before answering
}

// RateLimited is a 429 with the given Retry-After ("" for none).
func RateLimited(retryAfter string) Fault {
	f := Fault{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded"}
	if retryAfter != "" {
		f.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return f
}

// ServerError is a 500.
func ServerError() Fault { return Fault{Status: http.StatusInternalServerError, Code: "server_error"} }

// Malformed is a 200 whose body is not JSON.
func Malformed() Fault { return Fault{Body: `{"object":"list","data":[{"embedding":[0.1,oops`} }

// WrongDim answers with vectors of dim dimensions.
func WrongDim(dim int) Fault { return Fault{Dim: dim} }

// Slow answers normally after d (a provider timing out, for a client
// whose timeout is shorter).
func Slow(d time.Duration) Fault { return Fault{Delay: d} }

// Dropped closes the connection without an answer.
func Dropped() Fault { return Fault{Drop: true} }

// Server is a running fake. It is closed when the test ends.
type Server struct {
	opts Options
	srv  *httptest.Server

	mu       sync.Mutex
	script   []Fault
	outage   *Fault // FailAll's fault, until Recover
	received []Request
	requests int
}

// New starts a server on 127.0.0.1 and closes it at t's cleanup.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Dim == 0 {
		opts.Dim = 1536
	}
	if opts.MaxInputTokens == 0 {
		opts.MaxInputTokens = 8192
	}
	s := &Server{opts: opts}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve)) // binds 127.0.0.1
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure a client with (it ends in /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Script queues faults: each request takes the next one; when the queue is
// empty requests are answered normally.
func (s *Server) Script(faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, faults...)
}

// FailAll answers every request with f (after any scripted faults) until
// Recover: an outage rather than a blip, for tests of what a server does
// while its provider is down.
func (s *Server) FailAll(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = &f
}

// Recover ends FailAll's outage.
func (s *Server) Recover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = nil
}

// Requests is how many requests reached the server.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Received returns the decodable requests, in arrival order.
func (s *Server) Received() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.received)
}

// Vector is the raw vector the server returns for text at dim dimensions:
// deterministic, not normalised (norm about √(dim/3)), and unrelated between
// different texts.
func Vector(text string, dim int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	x := h.Sum64()
	v := make([]float32, dim)
	for i := range v {
		x += 0x9e3779b97f4a7c15 // splitmix64
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		v[i] = float32(float64(z>>11)/(1<<52) - 1) // uniform in [-1, 1)
	}
	return v
}

// Tokens is the server's token count of one input: a quarter of its bytes,
// rounded up, at least 1 (OpenAI's tokenizer averages about 4 bytes a token
// on English).
func Tokens(text string) int { return max(1, (len(text)+3)/4) }

type wireRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     int             `json:"dimensions"`
}

type wireEmbedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32 or base64 string
}

type wireUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type wireResponse struct {
	Object string          `json:"object"`
	Data   []wireEmbedding `json:"data"`
	Model  string          `json:"model"`
	Usage  *wireUsage      `json:"usage,omitempty"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path))
		return
	}
	s.mu.Lock()
	s.requests++
	var f Fault
	if len(s.script) > 0 {
		f, s.script = s.script[0], s.script[1:]
	} else if s.outage != nil {
		f = *s.outage
	}
	s.mu.Unlock()

	var wr wireRequest
	if err := json.NewDecoder(r.Body).Decode(&wr); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request.")
		return
	}
	req := Request{Model: wr.Model, EncodingFormat: wr.EncodingFormat, Dimensions: wr.Dimensions,
		Authorized: s.opts.APIKey == "" || r.Header.Get("Authorization") == "Bearer "+s.opts.APIKey}
	var one string
	if err := json.Unmarshal(wr.Input, &one); err == nil {
		req.Input, req.InputIsString = []string{one}, true
	} else if err := json.Unmarshal(wr.Input, &req.Input); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "'$.input' is invalid.")
		return
	}
	s.mu.Lock()
	s.received = append(s.received, req)
	s.mu.Unlock()

	if f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case !req.Authorized:
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	case f.Drop:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case f.Status != 0:
		for k, vs := range f.Header {
			w.Header()[k] = vs
		}
		writeError(w, f.Status, "error", f.Code, cmp.Or(f.Message, http.StatusText(f.Status)))
		return
	case f.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(f.Body))
		return
	}

	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "you must provide a model parameter")
		return
	}
	if len(req.Input) == 0 || len(req.Input) > 2048 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "'$.input' must have between 1 and 2048 items.")
		return
	}
	dim := s.opts.Dim
	if req.Dimensions != 0 {
		if req.Dimensions < 1 || req.Dimensions > s.opts.Dim {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", "Invalid value for 'dimensions'.")
			return
		}
		dim = req.Dimensions
	}
	if f.Dim != 0 {
		dim = f.Dim
	}
	total := 0
	data := make([]wireEmbedding, 0, len(req.Input))
	for i, text := range req.Input {
		if text == "" {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", "'$.input' is invalid. Please check the API reference.")
			return
		}
		n := Tokens(text)
		if n > s.opts.MaxInputTokens {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "",
				fmt.Sprintf("This model's maximum context length is %d tokens, however you requested %d tokens. Please reduce your prompt.", s.opts.MaxInputTokens, n))
			return
		}
		total += n
		e := wireEmbedding{Object: "embedding", Index: i}
		if f.BadIndexes {
			e.Index = 0
		}
		v := Vector(text, dim)
		if req.EncodingFormat == "base64" {
			e.Embedding = encodeBase64(v)
		} else {
			e.Embedding = v
		}
		data = append(data, e)
	}
	if f.Reverse {
		slices.Reverse(data)
	}
	if f.DropOne {
		data = data[:len(data)-1]
	}
	resp := wireResponse{Object: "list", Data: data, Model: req.Model}
	if !f.NoUsage {
		resp.Usage = &wireUsage{PromptTokens: total, TotalTokens: total}
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(resp); err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "encode")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(buf.Bytes())
}

func encodeBase64(v []float32) string {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	body := map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nilIfEmpty(code)}}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
