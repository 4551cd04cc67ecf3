package runner

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net"
	"net/http"
	"time"

	"github.com/hindsight-dev/hindsight/internal/embedgen"
)

// SyntheticDim is the dimension of the synthetic embedder's vectors: that
// of OpenAI's text-embedding-3-small, the provider a team would use.
const SyntheticDim = 1536

// syntheticModel is the model name the synthetic embedder answers as.
const syntheticModel = "synthetic-embedgen"

// startSynthetic serves an OpenAI-compatible POST /v1/embeddings on
// loopback whose vector for a text is a vector of internal/embedgen's
// clustered set, picked by the text's hash: what `bench load --embedder
// synthetic` embeds with, so the semantic and hybrid modes can be timed at
// sizes no real model could embed in a run (their rankings mean nothing).
// stop closes it.
func startSynthetic(seed uint64) (url string, stop func(), err error) {
	g := embedgen.New(seed, SyntheticDim, 1_000_000)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad request body","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string  `json:"object"`
			Data   []datum `json:"data"`
			Model  string  `json:"model"`
		}{Object: "list", Model: syntheticModel, Data: make([]datum, len(req.Input))}
		for i, text := range req.Input {
			h := fnv.New64a()
			h.Write([]byte(text))
			out.Data[i] = datum{Object: "embedding", Index: i, Embedding: g.Vector(make([]float32, SyntheticDim), h.Sum64())}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ln.Close()
		}
	}()
	return "http://" + ln.Addr().String() + "/v1", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}
