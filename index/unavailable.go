package index

import "errors"

// ErrUnavailable is wrapped by a full-text index kept in another service
// (the Weaviate text index) when that service cannot answer now: a search
// or write may succeed later, so the API answers 503 with Retry-After and
// the indexing pipeline keeps its work queued. Bleve never returns it.
var ErrUnavailable = errors.New("full-text index unavailable")
