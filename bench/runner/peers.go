package runner

// The relevance bench's peers: the other systems a run places next to
// Hindsight's modes.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/bench/weaviatepeer"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/localweaviate"
	"github.com/hindsight-dev/hindsight/internal/weaviatex"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/vectors"
)

// Peer names accepted by --peers. weaviate-hybrid is shorthand for both
// fusions.
const (
	peerWeaviateBM25     = "weaviate-bm25"
	peerWeaviateHybrid   = "weaviate-hybrid"          // rankedFusion, alpha 0.5
	peerWeaviateRelative = "weaviate-hybrid-relative" // relativeScoreFusion, alpha 0.5
)

// KnownPeers are the names --peers accepts (besides none).
var KnownPeers = []string{bench.FTS5Name, bench.FTS5TextName, peerWeaviateBM25, peerWeaviateHybrid, peerWeaviateRelative, peerHindsightBleve, peerHindsightWeaviate}

// ParsePeers parses --peers: a comma-separated list of known peer names, or
// "none". "weaviate-hybrid" also brings in "weaviate-hybrid-relative", so
// both fusions are measured as the design's table does.
func ParsePeers(s string) ([]string, error) {
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
		if !slices.Contains(KnownPeers, p) {
			return nil, fmt.Errorf("unknown peer %q (known: %s, or none)", p, strings.Join(KnownPeers, ", "))
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
	// stored, when set, hands the hybrid peers the vectors Hindsight's
	// embedding stage already computed for a document (see storedVectors).
	stored *storedVectors

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
	case bench.FTS5TextName:
		return bench.OpenFTS5Text(filepath.Join(env.work, "fts5-text.db"))
	case peerWeaviateBM25, peerWeaviateHybrid, peerWeaviateRelative:
		return openWeaviatePeer(ctx, name, env)
	case peerHindsightBleve, peerHindsightWeaviate:
		return openTextPeer(ctx, name, env)
	}
	return nil, fmt.Errorf("unknown peer %q", name)
}

// Weaviate's own BM25 and hybrid search over the same documents, with
// vectors of the same embedder (--peers weaviate-*).

// weaviateModes maps the peer names to the weaviate package's search modes.
var weaviateModes = map[string]string{
	peerWeaviateBM25:     weaviatepeer.BM25,
	peerWeaviateHybrid:   weaviatepeer.HybridRanked,
	peerWeaviateRelative: weaviatepeer.HybridRelative,
}

// weaviateGroup is the one Weaviate collection the Weaviate peers of a run
// share: the corpus is embedded and indexed once, and each peer searches it
// in its own mode. It closes the collection (and a server it launched) when
// the last peer is closed.
type weaviateGroup struct {
	mu     sync.Mutex
	peer   *weaviatepeer.Peer
	server *localweaviate.Server // launched for this run; nil with WEAVIATE_URL
	emb    vectors.Embedder      // nil: BM25 only
	window int                   // words per embedded window; 0 = the whole text
	owner  string                // the peer whose Index calls index the corpus
	open   int
	// queries caches query vectors for the sweeps (SearchAt).
	queries map[string][]float32
	stored  *storedVectors
}

// storedVectors finds a document's windows and their vectors in
// Hindsight's embedded vector store, filled in by the run once the corpus is
// ingested and embedded. The hybrid peers then index exactly the windows
// Hindsight embedded, with the same vectors, and embedding a corpus with the
// offline model (minutes) is done once, not once per system.
type storedVectors struct {
	userID    string
	sessionOf map[string]string // corpus id -> session id
	records   *kv.Store
	stage     *ingest.EmbedStage
	store     interface {
		Stored(ctx context.Context, userID, sessionID string) ([]vectors.Vector, error)
	}
}

// lookup returns docID's window bodies and their stored vectors, or false
// when the store does not hold exactly the stage's windows of the session.
func (sv *storedVectors) lookup(ctx context.Context, docID string) (chunks []string, vecs [][]float32, ok bool) {
	if sv == nil || sv.store == nil || sv.stage == nil {
		return nil, nil, false
	}
	sid, ok := sv.sessionOf[docID]
	if !ok {
		return nil, nil, false
	}
	var d ingest.Doc
	if err := sv.records.View(ctx, func(tx *kv.Tx) error {
		var err error
		d, err = ingest.LoadDoc(tx, sv.userID, sid)
		return err
	}); err != nil {
		return nil, nil, false
	}
	ws := sv.stage.Windows(d)
	vs, err := sv.store.Stored(ctx, sv.userID, sid)
	if err != nil || len(ws) == 0 || len(vs) != len(ws) {
		return nil, nil, false
	}
	for i, v := range vs {
		if v.Ordinal != ws[i].Ordinal || v.TextHash != ws[i].TextHash {
			return nil, nil, false
		}
		chunks, vecs = append(chunks, ws[i].Body), append(vecs, v.Values)
	}
	return chunks, vecs, true
}

// openWeaviatePeer returns the peer name searching the run's shared Weaviate
// collection, connecting on first use: to WEAVIATE_URL, or else to a
// weaviate-server this run launches from the pinned binary (make weaviate).
// The hybrid peers need an embedder; their documents are cut into the same
// windows Hindsight's embedding stage uses and embedded with the same
// embedder, so both systems search the same vectors.
func openWeaviatePeer(ctx context.Context, name string, env *peerEnv) (bench.Peer, error) {
	mode := weaviateModes[name]
	if mode != weaviatepeer.BM25 && env.embedder == nil {
		return nil, errors.New("the hybrid peers need an embedder for the vectors: --embedder local or openai")
	}
	if env.weaviate == nil {
		g, err := openWeaviateGroup(ctx, env)
		if err != nil {
			return nil, err
		}
		g.owner = name
		env.weaviate = g
	}
	g := env.weaviate
	g.mu.Lock()
	g.open++
	g.mu.Unlock()
	return &weaviatePeer{g: g, name: name, mode: mode}, nil
}

func openWeaviateGroup(ctx context.Context, env *peerEnv) (*weaviateGroup, error) {
	g := &weaviateGroup{emb: env.embedder, queries: map[string][]float32{}, stored: env.stored}
	if env.embedder != nil && env.embedder.Model() == vectors.LocalModel {
		g.window = 64 // as serve's embedding stage for the offline model
	}
	url := env.weaviateURL
	if url == "" {
		bin, err := localweaviate.Binary()
		if err != nil {
			return nil, fmt.Errorf("no Weaviate to run the peers on: set WEAVIATE_URL, or build the pinned server with `make weaviate` (%w)", err)
		}
		fmt.Fprintf(env.progress, "starting weaviate-server for the peers (%s)\n", bin)
		srv, err := localweaviate.Launch(ctx, bin, filepath.Join(env.work, "weaviate"))
		if err != nil {
			return nil, fmt.Errorf("start weaviate-server: %w", err)
		}
		g.server, url = srv, srv.URL
	}
	p, err := weaviatepeer.Open(ctx, weaviatex.Config{URL: url, APIKey: env.weaviateKey}, "")
	if err != nil {
		if g.server != nil {
			g.server.Stop()
		}
		return nil, err
	}
	g.peer = p
	return g, nil
}

// index embeds (for the hybrid peers) and indexes docs.
func (g *weaviateGroup) index(ctx context.Context, docs []bench.Doc) error {
	pd := make([]weaviatepeer.Doc, len(docs))
	var texts []string
	var toEmbed []int // documents whose vectors are not stored
	for i, d := range docs {
		pd[i] = weaviatepeer.Doc{ID: d.ID, Title: d.Title, Text: d.Text}
		if g.emb == nil {
			continue
		}
		if g.window > 0 {
			pd[i].Chunks = weaviatepeer.Chunks(d.Text, g.window)
		} else {
			pd[i].Chunks = []string{d.Text}
		}
		if chunks, vs, ok := g.stored.lookup(ctx, d.ID); ok {
			pd[i].Chunks, pd[i].Vectors = chunks, vs
			continue
		}
		var dt []string
		for _, c := range pd[i].Chunks { // embedded as Hindsight embeds a window: under the title
			dt = append(dt, ingest.EmbedText(d.Title, c))
		}
		toEmbed = append(toEmbed, i)
		texts = append(texts, dt...)
	}
	if len(texts) > 0 {
		vs, err := g.emb.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embed peer documents: %w", err)
		}
		for _, i := range toEmbed {
			n := len(pd[i].Chunks)
			pd[i].Vectors, vs = vs[:n], vs[n:]
		}
	}
	return g.peer.Index(ctx, pd)
}

func (g *weaviateGroup) release() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open--
	if g.open > 0 || g.peer == nil {
		return nil
	}
	err := g.peer.Close()
	g.peer = nil
	if g.server != nil {
		err = errors.Join(err, g.server.Stop())
	}
	return err
}

// weaviatePeer is one search mode over the shared collection.
type weaviatePeer struct {
	g          *weaviateGroup
	name, mode string
}

func (p *weaviatePeer) Name() string { return p.name }

// Index indexes docs once for all the Weaviate peers: the first one opened
// does it, the others accept and ignore the same documents.
func (p *weaviatePeer) Index(ctx context.Context, docs []bench.Doc) error {
	if p.name != p.g.owner {
		return nil
	}
	return p.g.index(ctx, docs)
}

// Search embeds the query for the hybrid modes (its time counts, as it does
// for Hindsight's hybrid mode) and asks Weaviate.
func (p *weaviatePeer) Search(ctx context.Context, q string, k int) ([]string, error) {
	var qv []float32
	if p.mode != weaviatepeer.BM25 {
		vs, err := p.g.emb.Embed(ctx, []string{q})
		if err != nil {
			return nil, fmt.Errorf("embed query: %w", err)
		}
		qv = vs[0]
	}
	return p.g.peer.Search(ctx, p.mode, q, qv, k)
}

// weaviateAlphas are the hybrid peers' alphas the bench sweeps (the weight
// of the vector leg; weaviatepeer.Alpha, 0.5, is Weaviate's default). The
// fusion type is the other setting: each fusion is its own peer, both swept.
var weaviateAlphas = []float64{0.1, 0.25, 0.5, 0.75, 0.9}

// Settings implements bench.TunablePeer: alpha for the hybrid peers;
// weaviate-bm25 has no query-time setting (k1 and b are fixed when the
// collection is made).
func (p *weaviatePeer) Settings() ([]bench.Param, bench.Point) {
	if p.mode == weaviatepeer.BM25 {
		return nil, nil
	}
	return []bench.Param{{Name: "alpha", Values: weaviateAlphas}}, bench.Point{{Name: "alpha", Value: weaviatepeer.Alpha}}
}

// SearchAt implements bench.TunablePeer. Every point asks the same queries:
// each query is embedded once (the sweep compares ranking, not embedding).
func (p *weaviatePeer) SearchAt(ctx context.Context, pt bench.Point, q string, k int) ([]string, error) {
	alpha, ok := pt.Get("alpha")
	if !ok {
		return nil, fmt.Errorf("weaviate peer: bad point %s", pt)
	}
	p.g.mu.Lock()
	qv, ok := p.g.queries[q]
	p.g.mu.Unlock()
	if !ok {
		vs, err := p.g.emb.Embed(ctx, []string{q})
		if err != nil {
			return nil, fmt.Errorf("embed query: %w", err)
		}
		qv = vs[0]
		p.g.mu.Lock()
		p.g.queries[q] = qv
		p.g.mu.Unlock()
	}
	return p.g.peer.SearchAlpha(ctx, p.mode, q, qv, k, alpha)
}

func (p *weaviatePeer) Close() error { return p.g.release() }
