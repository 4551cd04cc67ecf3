package main

import (
	"context"
	"errors"

	"github.com/hindsight-dev/hindsight/vectors"
)

// openWeaviate opens the Weaviate vector store. (Placeholder until the
// Weaviate store lands in this same change; it refuses rather than pretends.)
func openWeaviate(ctx context.Context, cfg semanticConfig) (vectors.Store, string, error) {
	return nil, "", errors.New("WEAVIATE_URL is set but this build has no Weaviate store")
}
