// Command hindsight bench relevance --peers: the other systems a run places
// next to Hindsight's modes.
package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/vectors"
)

// Peer names accepted by --peers. weaviate-hybrid is shorthand for both
// fusions.
const (
	peerWeaviateBM25     = "weaviate-bm25"
	peerWeaviateHybrid   = "weaviate-hybrid"          // rankedFusion, alpha 0.5
	peerWeaviateRelative = "weaviate-hybrid-relative" // relativeScoreFusion, alpha 0.5
)

var knownPeers = []string{bench.FTS5Name, peerWeaviateBM25, peerWeaviateHybrid, peerWeaviateRelative}

// parsePeers parses --peers: a comma-separated list of known peer names, or
// "none". "weaviate-hybrid" also brings in "weaviate-hybrid-relative", so
// both fusions are measured as the design's table does.
func parsePeers(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(knownPeers, p) {
			return nil, &usageError{fmt.Sprintf("unknown peer %q (known: %s, or none)", p, strings.Join(knownPeers, ", "))}
		}
		add(p)
		if p == peerWeaviateHybrid {
			add(peerWeaviateRelative)
		}
	}
	return out, nil
}

// peerEnv is what the peers may need from the run.
type peerEnv struct {
	work        string           // scratch directory of the run
	weaviateURL string           // WEAVIATE_URL; "" = launch the pinned server
	weaviateKey string           // WEAVIATE_API_KEY
	embedder    vectors.Embedder // the run's embedder; nil without one
	progress    io.Writer        // where to say what is being started

	weaviate *weaviateGroup // the Weaviate peers' shared collection, opened on first use
}

// openPeers opens the named peers; on error the ones already open are closed.
func openPeers(ctx context.Context, names []string, env peerEnv) ([]bench.Peer, error) {
	if !slices.Contains(names, peerWeaviateHybrid) && !slices.Contains(names, peerWeaviateRelative) {
		env.embedder = nil // weaviate-bm25 alone: index whole documents, no vectors
	}
	var peers []bench.Peer
	for _, name := range names {
		p, err := openPeer(ctx, name, &env)
		if err != nil {
			for _, q := range peers {
				q.Close()
			}
			return nil, fmt.Errorf("peer %s: %w", name, err)
		}
		peers = append(peers, p)
	}
	return peers, nil
}

func openPeer(ctx context.Context, name string, env *peerEnv) (bench.Peer, error) {
	switch name {
	case bench.FTS5Name:
		return bench.OpenFTS5(filepath.Join(env.work, "fts5.db"))
	case peerWeaviateBM25, peerWeaviateHybrid, peerWeaviateRelative:
		return openWeaviatePeer(ctx, name, env)
	}
	return nil, fmt.Errorf("unknown peer %q", name)
}
