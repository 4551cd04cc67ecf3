package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/hindsight-dev/hindsight/progress"
)

// Peer is another search system run on the same documents and queries as
// Hindsight, so one table places Hindsight's modes next to known systems
// (SQLite FTS5 here; Weaviate's BM25 and hybrid search through a peer that
// cmd/hindsight builds from the vectors package).
//
// A peer is used by one goroutine at a time: Index, then any number of
// Search calls, then Close.
type Peer interface {
	// Name identifies the peer in tables and result files, e.g.
	// "sqlite-fts5". It must not collide with a Hindsight mode name.
	Name() string
	// Index adds docs. It may be called several times (the bench indexes in
	// batches to draw progress); a document id is given at most once.
	Index(ctx context.Context, docs []Doc) error
	// Search returns the ids of at most k documents for the query text,
	// best first. A query with no searchable term returns ErrNoTerms.
	Search(ctx context.Context, q string, k int) ([]string, error)
	// Close releases the peer's resources (files, connections, tenants).
	Close() error
}

// peerBatch is how many documents IndexPeer hands to Peer.Index at once.
const peerBatch = 500

// IndexPeer indexes the corpus of ds into p in batches, drawing a progress
// bar labelled "index <name>" on progressOut (nil or io.Discard: quiet).
func IndexPeer(ctx context.Context, p Peer, ds *Dataset, progressOut io.Writer) error {
	bar := progress.New(progressOut, "index "+p.Name(), len(ds.Corpus))
	defer bar.Done()
	for i := 0; i < len(ds.Corpus); i += peerBatch {
		end := min(i+peerBatch, len(ds.Corpus))
		if err := p.Index(ctx, ds.Corpus[i:end]); err != nil {
			return fmt.Errorf("index %s: %w", p.Name(), err)
		}
		bar.Set(end)
	}
	return nil
}

// WithPeers returns a SearchFunc that answers the modes named after a peer
// with that peer and every other mode with search. RunRelevance can then
// time and score Hindsight's modes and the peers in one pass, with the same
// queries and the same metrics.
func WithPeers(search SearchFunc, peers ...Peer) SearchFunc {
	byName := make(map[string]Peer, len(peers))
	for _, p := range peers {
		byName[p.Name()] = p
	}
	return func(ctx context.Context, mode, q string, k int) ([]string, error) {
		if p, ok := byName[mode]; ok {
			return p.Search(ctx, q, k)
		}
		if search == nil {
			return nil, fmt.Errorf("no search for mode %q", mode)
		}
		return search(ctx, mode, q, k)
	}
}

// TunablePeer is a peer with settings of its own that the bench sweeps, so
// each peer is reported at its best point next to its default, as
// Hindsight's settings are (--sweep): a comparison with a peer left at
// defaults that Hindsight's were tuned against would flatter Hindsight.
type TunablePeer interface {
	Peer
	// Settings returns the grid to sweep and the peer's default point;
	// no params: nothing to sweep.
	Settings() (params []Param, def Point)
	// SearchAt is Search with the settings of point p.
	SearchAt(ctx context.Context, p Point, q string, k int) ([]string, error)
}

// PeerSweeps sweeps every tunable peer of peers over its own grid
// (TunablePeer.Settings) with limit results per query, and returns one
// sweep per tunable peer, its mode named after the peer. A peer that fails
// at some point is left out, with the error in failed.
func PeerSweeps(ctx context.Context, ds *Dataset, peers []Peer, limit int, seed uint64, progressOut io.Writer) (sweeps []*SweepResult, failed map[string]error, err error) {
	for _, p := range peers {
		tp, ok := p.(TunablePeer)
		if !ok {
			continue
		}
		params, def := tp.Settings()
		if len(params) == 0 {
			continue
		}
		at := func(_ context.Context, pt Point) (SearchFunc, error) {
			return func(ctx context.Context, _ string, q string, k int) ([]string, error) {
				return tp.SearchAt(ctx, pt, q, k)
			}, nil
		}
		sw, serr := RunSweep(ctx, ds, at, SweepOptions{Mode: p.Name(), Limit: limit, Params: params, Default: def, Seed: seed, Progress: progressOut,
			peer: true})
		if serr != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			if failed == nil {
				failed = map[string]error{}
			}
			failed[p.Name()] = serr
			continue
		}
		sweeps = append(sweeps, sw)
	}
	return sweeps, failed, nil
}
