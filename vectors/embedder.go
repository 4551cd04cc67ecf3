package vectors

import "context"

// Embedder turns texts into unit-length vectors of a fixed dimension.
//
// Embed returns one vector per text, in the order of texts, each of length
// Dim() and unit L2 norm. It returns an error, and no vectors, when any text
// fails or ctx ends first; on cancellation the error is ctx.Err().
// Implementations are safe for concurrent use.
//
// Model names the model that produced the vectors (for example "use-lite"
// for the local encoder or "text-embedding-3-small"); a vector store records
// it together with Dim so vectors from different models are never mixed.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Model() string // e.g. "use-lite" (local) or "text-embedding-3-small"
	Dim() int
}
