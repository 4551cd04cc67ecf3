// Package vectors turns text into vectors and finds the stored vectors nearest
// to a query, for one user at a time.
//
// # Embedders
//
// An [Embedder] maps texts to unit-length vectors of a fixed dimension:
// [OpenAI] (any OpenAI-compatible endpoint) or [Local] (an offline model).
// Behaviour is added by wrapping the same interface: [Retrying] retries
// rate limits and server errors, honouring Retry-After; [Metered] counts
// requests, tokens and cost. The OpenAI client itself stays a thin translation
// of the wire protocol.
//
// # Stores
//
// A [Store] keeps each user's chunk vectors and answers cosine-nearest
// queries ([Embedded] is the default, in its own bbolt file). A store records
// the model and dimension of the vectors it holds and refuses to mix them:
// a vector of another dimension is rejected with [ErrDimensionMismatch], and a
// store that holds vectors of another model is refused at start with
// [ErrModelMismatch] ([EnsureMeta]). Both errors tell the operator to run
// `hindsight reembed`.
//
// # Ownership
//
// Every stored vector is keyed by its owner's user id; no method reads
// vectors without naming the user, so a query never sees another user's
// chunks.
package vectors

import (
	"context"
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrDimensionMismatch: a vector's length differs from the dimension the
	// embedder is configured for or the store holds.
	ErrDimensionMismatch = errors.New("vector dimension mismatch: the embedding model or its dimension changed; run `hindsight reembed` to rebuild the vectors")
	// ErrModelMismatch: the store holds vectors of another model or
	// dimension than the configured embedder produces.
	ErrModelMismatch = errors.New("the vector store holds vectors of another embedding model; run `hindsight reembed` to rebuild them with the configured one")
	// ErrNoMeta: vectors were written before the store recorded a model
	// (SetMeta or EnsureMeta must come first).
	ErrNoMeta = errors.New("vector store has no embedding model recorded")
	// ErrInvalidVector: a vector cannot be stored or searched with: zero
	// length, NaN or infinite components, a negative or repeated ordinal, or
	// a SessionID that differs from the session it is filed under.
	ErrInvalidVector = errors.New("invalid vector")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("vector store closed")
)

// Vector is one embedded chunk of a session.
type Vector struct {
	SessionID string // may be left empty inside Upsert's map; it is the map key
	Ordinal   int    // chunk number within the session, from 0
	TextHash  string // hash of the chunk's text, to skip re-embedding unchanged chunks
	Values    []float32
}

// Hit is a chunk found by Nearest.
type Hit struct {
	SessionID string
	Ordinal   int
	Score     float64 // cosine similarity of the query and the chunk, in [-1, 1]
}

// Searcher is the read side of a store: ranking needs only this.
type Searcher interface {
	// Nearest returns the k chunks of userID most similar (cosine) to q,
	// best first. A user with no vectors gets no hits and no error; k larger
	// than the user's count returns them all. q need not be normalised. A q
	// whose length differs from the store's dimension is an error wrapping
	// ErrDimensionMismatch. Equal scores come in no particular order.
	Nearest(ctx context.Context, userID string, q []float32, k int) ([]Hit, error)
}

// Store keeps the vectors of every user's session chunks. Implementations are
// safe for concurrent use. Writes are idempotent: repeating an Upsert or a
// Delete leaves the same state, so an indexing pipeline that may redo a batch
// after a crash needs no deduplication.
type Store interface {
	Searcher

	// Upsert replaces the vectors of the given sessions of one user: after
	// it, each listed session has exactly the vectors given for it (ordinals
	// not given are removed; an empty list removes the session). Sessions
	// not listed are untouched. Values need not be normalised; the store
	// keeps unit vectors. Every vector must have the recorded dimension
	// (else ErrDimensionMismatch, and nothing is written); before SetMeta
	// every Upsert fails with ErrNoMeta. The write is all or nothing.
	//
	// A Vector with nil Values keeps the stored vector of its ordinal, which
	// must be stored with the same TextHash (else ErrInvalidVector and nothing
	// is written): a session that grew by one message re-embeds only its new
	// chunks.
	Upsert(ctx context.Context, userID string, sessions map[string][]Vector) error

	// Delete removes every vector of the given sessions of one user.
	// Unknown sessions are ignored.
	Delete(ctx context.Context, userID string, sessionIDs []string) error

	// Hashes returns the stored text hash per ordinal of a session (to skip
	// re-embedding unchanged chunks); an unknown session gives an empty map.
	Hashes(ctx context.Context, userID, sessionID string) (map[int]string, error)

	// Meta returns the model and dimension the store holds ("" and 0 before
	// the first SetMeta).
	Meta(ctx context.Context) (model string, dim int, err error)

	// SetMeta records the model and dimension of the vectors to come. It
	// may change them only while the store holds no vectors; otherwise a
	// different model or dimension fails with ErrModelMismatch.
	SetMeta(ctx context.Context, model string, dim int) error

	// Reset removes every vector of every user and the recorded model, as
	// `hindsight reembed` needs before it writes vectors of a new model.
	Reset(ctx context.Context) error

	// Close releases the store. Calls after Close fail with ErrClosed.
	Close() error
}

// EnsureMeta makes st ready for vectors of model and dim: on first use it
// records them; when st already holds a different model or dimension it
// returns an error wrapping ErrModelMismatch that names both, so startup can
// refuse to mix vectors. A store whose recorded model differs but which holds
// no vectors is relabelled.
func EnsureMeta(ctx context.Context, st Store, model string, dim int) error {
	have, haveDim, err := st.Meta(ctx)
	if err != nil {
		return fmt.Errorf("read vector store model: %w", err)
	}
	if have == model && haveDim == dim {
		return nil
	}
	if err := st.SetMeta(ctx, model, dim); err != nil {
		if errors.Is(err, ErrModelMismatch) {
			return fmt.Errorf("vector store holds %s (%d dimensions), embedder is %s (%d dimensions): %w", have, haveDim, model, dim, ErrModelMismatch)
		}
		return fmt.Errorf("record vector store model: %w", err)
	}
	return nil
}
