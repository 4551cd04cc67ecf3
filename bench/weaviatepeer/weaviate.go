// Package weaviatepeer runs Weaviate's own BM25 and hybrid search over a
// relevance-bench corpus, so the bench can place Weaviate next to
// Hindsight's modes with the same documents, queries and vectors. It is
// bench code: the server never links it.
package weaviatepeer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/google/uuid"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/hindsight-dev/hindsight/internal/weaviatex"
)

// Peer search modes.
const (
	BM25           = "bm25"            // BM25 over whole documents
	HybridRanked   = "hybrid-ranked"   // hybrid over chunks, rankedFusion, alpha 0.5
	HybridRelative = "hybrid-relative" // hybrid over chunks, relativeScoreFusion, alpha 0.5
)

// Alpha is the hybrid weight of the vector leg (1 - alpha for BM25).
const Alpha = 0.5

// Doc is one document of a bench corpus.
type Doc struct {
	ID, Title, Text string
	// Vectors are the document's chunk vectors (one dimension for the
	// whole corpus); nil for a BM25-only run.
	Vectors [][]float32
	// Chunks, when set, are the texts Vectors were embedded from, one per
	// vector (Chunks makes them). When nil and Vectors is set, Text is
	// cut into len(Vectors) runs of about equal word counts. Each chunk is
	// indexed with the title in front.
	Chunks []string
}

// Chunks cuts a document's text into windows of at most words words
// (words <= 0 means 64, the offline model's window), the chunks a bench
// embeds for Doc.Vectors and passes as Doc.Chunks. A text without
// words gives one empty chunk, so every document has a vector.
func Chunks(text string, words int) []string {
	if words <= 0 {
		words = 64
	}
	fs := strings.Fields(text)
	if len(fs) == 0 {
		return []string{""}
	}
	var out []string
	for i := 0; i < len(fs); i += words {
		out = append(out, strings.Join(fs[i:min(i+words, len(fs))], " "))
	}
	return out
}

// withTitle is the text a chunk or document is indexed with.
func withTitle(title, text string) string {
	switch {
	case title == "":
		return text
	case text == "":
		return title
	}
	return title + "\n" + text
}

// splitEven cuts text into n runs of about equal word counts.
func splitEven(text string, n int) []string {
	fs := strings.Fields(text)
	out := make([]string, n)
	for i := range n {
		out[i] = strings.Join(fs[i*len(fs)/n:(i+1)*len(fs)/n], " ")
	}
	return out
}

// Peer runs Weaviate's own BM25 and hybrid search over a bench corpus, so
// the relevance bench can place Weaviate next to Hindsight's modes with the
// same documents, queries and vectors.
//
// # Setup
//
// One collection per peer (a fresh name unless Config.Collection is set;
// Close drops it) with Weaviate's defaults: vectorizer none, HNSW with
// cosine distance, BM25 k1 1.2 and b 0.75, word tokenization, the "en"
// stop-word list, BlockMax WAND. Its properties are
//
//	docId  text, field tokenization, not searchable
//	chunk  int, the chunk's number in its document (0 for documents)
//	text   text, searched by every mode
//
// and it holds two tenants, each a shard with its own BM25 statistics:
//
//   - "docs": one object per document, text = title + "\n" + text, no
//     vector. Mode bm25 searches it: bm25 {query, properties ["text"]}.
//     (Title and text in one field, as Hindsight's own index does: on
//     SciFact train that reads 0.666 nDCG@10, the title in a property of
//     its own 0.655.)
//   - "chunks": one object per chunk vector, text = title + "\n" + the
//     chunk's text (Doc.Chunks, the window its vector was embedded
//     from), with the vector. (The title on every chunk: on SciFact train
//     chunk-level BM25 reads 0.656 so, 0.633 with the title in the first
//     chunk only.) The hybrid modes search it: hybrid {query, vector:
//     the query vector given explicitly (vectorizer none), alpha 0.5,
//     fusionType rankedFusion (hybrid-ranked) or relativeScoreFusion
//     (hybrid-relative), properties ["text"]}, asking for 8k chunks (at
//     least 100); a document ranks by its best chunk, and the first k
//     documents are returned.
//
// # Steady state
//
// Right after an import Weaviate 1.35's BM25 (BlockMax WAND) misses
// documents whose postings are still in memtables: the documents it does
// find score the same as later, but better ones are left out. On a
// 1,000-document slice of SciFact train the top 3 of 647 of 809 queries
// changed once the memtables were written out; on TestRestart's synthetic
// corpus the top 10 right after the import share 1% with the top 10 after a
// restart. Weaviate writes a memtable out 60 seconds after its last write
// (PERSISTENCE_MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS), when it grows large, or
// at shutdown: chunk-level BM25 on SciFact read 0.53 right after an import and 0.668 after a
// restart. [Peer.Settle] sets both tenants INACTIVE and back ACTIVE, which
// shuts their shards down (writing every memtable out) and loads them from
// disk, as a restart does: BM25 after Settle answers as after a restart
// (TestRestart), and on SciFact train doc-level BM25 reads 0.666 nDCG@10.
// Search calls Settle before its first query after an Index.
//
// A Peer is used by one goroutine at a time: Index, then Search, then Close.
type Peer struct {
	conn  *weaviatex.Conn // its Client is nil after Close
	class string
	keep  bool // the collection was given: leave it at Close

	dim     int // of the vectors indexed so far; 0 = none yet
	settled bool
}

// idSpace is the UUID namespace of the peer's object ids.
var idSpace = uuid.MustParse("8f0b6c52-3d0e-4c55-9a3e-70656572736b")

// The peer's tenants (see Peer).
const (
	tenantDocs   = "docs"
	tenantChunks = "chunks"
)

// Open connects and creates the peer's collection: collection if
// set (dropped first if it exists: a peer run starts empty), else a fresh
// "HindsightPeer_<random>" that Close drops again.
func Open(ctx context.Context, cfg weaviatex.Config, collection string) (*Peer, error) {
	class := collection
	keep := class != ""
	if !keep {
		var b [6]byte
		rand.Read(b[:])
		class = "HindsightPeer_" + hex.EncodeToString(b[:])
	}
	if !weaviatex.ValidCollection(class) {
		return nil, fmt.Errorf("weaviate collection %q: a name starts with an upper-case letter and has only letters, digits and _", class)
	}
	c, err := weaviatex.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := &Peer{conn: c, class: class, keep: keep}
	if err := p.create(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return p, nil
}

// Collection is the collection the peer uses.
func (p *Peer) Collection() string { return p.class }

func (p *Peer) create(ctx context.Context) error {
	s := p.conn.Client.Schema()
	if err := s.ClassDeleter().WithClassName(p.class).Do(ctx); err != nil && !weaviatex.IsStatus(err, 404) {
		return p.conn.Fail(ctx, "drop collection "+p.class, err)
	}
	yes, no := true, false
	class := &models.Class{
		Class:              p.class,
		Description:        "Hindsight relevance bench peer (safe to drop)",
		Vectorizer:         "none",
		VectorIndexType:    "hnsw",
		VectorIndexConfig:  map[string]any{"distance": "cosine"},
		MultiTenancyConfig: &models.MultiTenancyConfig{Enabled: true},
		Properties: []*models.Property{
			{Name: "docId", DataType: []string{"text"}, Tokenization: "field", IndexFilterable: &yes, IndexSearchable: &no},
			{Name: "chunk", DataType: []string{"int"}, IndexFilterable: &no},
			{Name: "text", DataType: []string{"text"}},
		},
	}
	if err := s.ClassCreator().WithClass(class).Do(ctx); err != nil {
		return p.conn.Fail(ctx, "create collection "+p.class, err)
	}
	err := s.TenantsCreator().WithClassName(p.class).WithTenants(models.Tenant{Name: tenantDocs}, models.Tenant{Name: tenantChunks}).Do(ctx)
	if err != nil {
		return p.conn.Fail(ctx, "create the tenants of "+p.class, err)
	}
	return nil
}

// Index adds docs. It may be called several times; a document id is given
// at most once.
func (p *Peer) Index(ctx context.Context, docs []Doc) error {
	if p.conn.Client == nil {
		return errors.New("weaviate peer: closed")
	}
	var objs []*models.Object
	for _, d := range docs {
		objs = append(objs, p.object(tenantDocs, d.ID, 0, withTitle(d.Title, d.Text), nil))
		if len(d.Vectors) == 0 {
			continue
		}
		chunks := d.Chunks
		if chunks == nil {
			chunks = splitEven(d.Text, len(d.Vectors))
		}
		if len(chunks) != len(d.Vectors) {
			return fmt.Errorf("weaviate peer: document %q has %d chunks and %d vectors", d.ID, len(chunks), len(d.Vectors))
		}
		for i, v := range d.Vectors {
			if p.dim == 0 {
				p.dim = len(v)
			}
			if len(v) != p.dim || len(v) == 0 {
				return fmt.Errorf("weaviate peer: document %q chunk %d has %d dimensions, earlier vectors %d", d.ID, i, len(v), p.dim)
			}
			objs = append(objs, p.object(tenantChunks, d.ID, i, withTitle(d.Title, chunks[i]), v))
		}
	}
	per := max(20, min(1000, 4_000_000/(12*max(1, p.dim))))
	for len(objs) > 0 {
		n := min(per, len(objs))
		res, err := p.conn.Client.Batch().ObjectsBatcher().WithObjects(objs[:n]...).Do(ctx)
		if err != nil {
			return p.conn.Fail(ctx, "index peer documents", err)
		}
		if err := weaviatex.BatchErrors(res); err != nil {
			return fmt.Errorf("index peer documents in weaviate at %s: %w", p.conn.Where, err)
		}
		objs = objs[n:]
		p.settled = false
	}
	return nil
}

func (p *Peer) object(tenant, docID string, chunk int, text string, vec []float32) *models.Object {
	id := uuid.NewSHA1(idSpace, fmt.Appendf(nil, "%s:%d:%s:%d", tenant, len(docID), docID, chunk))
	return &models.Object{
		Class:      p.class,
		Tenant:     tenant,
		ID:         strfmt.UUID(id.String()),
		Vector:     vec,
		Properties: map[string]any{"docId": docID, "chunk": chunk, "text": text},
	}
}

// Settle brings both tenants to the state a restarted server would serve
// (see Peer: Steady state) and waits until they answer again. Search calls
// it when an Index came after the last Settle; otherwise it does nothing.
func (p *Peer) Settle(ctx context.Context) error {
	if p.conn.Client == nil {
		return errors.New("weaviate peer: closed")
	}
	if p.settled {
		return nil
	}
	for _, status := range []string{models.TenantActivityStatusINACTIVE, models.TenantActivityStatusACTIVE} {
		err := p.conn.Client.Schema().TenantsUpdater().WithClassName(p.class).WithTenants(
			models.Tenant{Name: tenantDocs, ActivityStatus: status},
			models.Tenant{Name: tenantChunks, ActivityStatus: status},
		).Do(ctx)
		if err != nil {
			return p.conn.Fail(ctx, "set the peer's tenants "+status, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, tenant := range []string{tenantDocs, tenantChunks} {
		for { // the shard loads in the background
			var one []struct{}
			err := p.conn.Get(ctx, p.class, fmt.Sprintf("tenant:%s, limit:1", weaviatex.GQLString(tenant)), "chunk", &one)
			if err == nil {
				break
			}
			if ctx.Err() != nil || time.Now().After(deadline) {
				return fmt.Errorf("weaviate peer: tenant %s not back after reactivation: %w", tenant, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	p.settled = true
	return nil
}

// Search returns the ids of at most k documents for the query, best first.
// mode is BM25, HybridRanked or HybridRelative; the hybrid
// modes need queryVector (of the indexed vectors' dimension) and a corpus
// indexed with vectors. A query of stop words only finds nothing in bm25.
func (p *Peer) Search(ctx context.Context, mode, query string, queryVector []float32, k int) ([]string, error) {
	return p.SearchAlpha(ctx, mode, query, queryVector, k, Alpha)
}

// SearchAlpha is Search with the hybrid modes' alpha (the weight of the
// vector leg, in [0, 1]) given; BM25 ignores it.
func (p *Peer) SearchAlpha(ctx context.Context, mode, query string, queryVector []float32, k int, alpha float64) ([]string, error) {
	if alpha < 0 || alpha > 1 {
		return nil, fmt.Errorf("weaviate peer: alpha %g is not in [0, 1]", alpha)
	}
	if p.conn.Client == nil {
		return nil, errors.New("weaviate peer: closed")
	}
	if k <= 0 {
		return []string{}, nil
	}
	var tenant, search string
	limit := k
	switch mode {
	case BM25:
		tenant = tenantDocs
		search = fmt.Sprintf(`bm25:{query:%s, properties:["text"]}`, weaviatex.GQLString(query))
	case HybridRanked, HybridRelative:
		if p.dim == 0 {
			return nil, fmt.Errorf("weaviate peer: mode %s needs documents indexed with vectors", mode)
		}
		if len(queryVector) != p.dim {
			return nil, fmt.Errorf("weaviate peer: mode %s: query vector has %d dimensions, the indexed vectors %d", mode, len(queryVector), p.dim)
		}
		fusion := "rankedFusion"
		if mode == HybridRelative {
			fusion = "relativeScoreFusion"
		}
		tenant = tenantChunks
		limit = min(weaviatex.MaxResults, max(100, 8*k))
		search = fmt.Sprintf(`hybrid:{query:%s, vector:%s, alpha:%g, fusionType:%s, properties:["text"]}`,
			weaviatex.GQLString(query), weaviatex.GQLVector(queryVector), alpha, fusion)
	default:
		return nil, fmt.Errorf("weaviate peer: unknown mode %q (want %s, %s or %s)", mode, BM25, HybridRanked, HybridRelative)
	}
	if err := p.Settle(ctx); err != nil {
		return nil, err
	}
	var hits []struct {
		DocID string `json:"docId"`
	}
	args := fmt.Sprintf("tenant:%s, %s, limit:%d", weaviatex.GQLString(tenant), search, min(limit, weaviatex.MaxResults))
	if err := p.conn.Get(ctx, p.class, args, "docId", &hits); err != nil {
		return nil, fmt.Errorf("weaviate peer %s: %w", mode, err)
	}
	out := make([]string, 0, min(k, len(hits)))
	seen := make(map[string]bool, k)
	for _, h := range hits {
		if seen[h.DocID] {
			continue
		}
		seen[h.DocID] = true
		out = append(out, h.DocID)
		if len(out) == k {
			break
		}
	}
	return out, nil
}

// Close drops the collection (unless Config.Collection named it) and
// releases the client. Safe to call twice.
func (p *Peer) Close() error {
	c := p.conn.Client
	if c == nil {
		return nil
	}
	defer p.conn.Close()
	if p.keep {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Schema().ClassDeleter().WithClassName(p.class).Do(ctx); err != nil && !weaviatex.IsStatus(err, 404) {
		return p.conn.Fail(ctx, "drop peer collection "+p.class, err)
	}
	return nil
}
