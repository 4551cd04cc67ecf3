// Command hindsight keeps its vectors in Weaviate when WEAVIATE_URL is set:
// this file opens that store for serve and the other subcommands.
package main

import (
	"context"
	"fmt"

	"github.com/hindsight-dev/hindsight/vectors"
	"github.com/hindsight-dev/hindsight/vectors/weaviate"
)

// openWeaviate opens the Weaviate vector store at cfg.WeaviateURL, sending
// cfg.WeaviateKey (WEAVIATE_API_KEY) as a bearer token when set, in the
// collection weaviate.DefaultCollection. When the server does not answer the
// error names the URL and what to check.
func openWeaviate(ctx context.Context, cfg semanticConfig) (vectors.Store, string, error) {
	st, err := weaviate.Open(ctx, weaviate.Config{URL: cfg.WeaviateURL, APIKey: cfg.WeaviateKey})
	if err != nil {
		return nil, "", fmt.Errorf("WEAVIATE_URL: %w\n"+
			"(Weaviate 1.25 or later is needed; set WEAVIATE_API_KEY if it requires a key, or unset WEAVIATE_URL to keep the vectors in the embedded store)", err)
	}
	return st, fmt.Sprintf("Weaviate at %s (collection %s)", st.Where(), st.Collection()), nil
}
