// Package weaviate keeps Hindsight's chunk vectors in a Weaviate server: a
// [vectors.Store] for deployments that outgrow the embedded store. The
// connection, GraphQL quoting and tenant naming it shares with the text
// index and the bench's peer are in internal/weaviatex.
//
// It is a package of its own because weaviate-go-client brings gRPC, the
// go-openapi stack and Weaviate's entity packages with it: server wires it
// in, package vectors and the pipeline never import it.
//
// # Layout
//
// One collection (default "HindsightChunk") with multi-tenancy: a tenant per
// user, created automatically by the first write (auto tenant creation and
// activation), so a user's vectors live in a shard of their own and no
// query can reach another user's. The tenant is the user id itself (1 to 64
// of [A-Za-z0-9-], as Hindsight's ids are), else "h_" and 40 hex digits of
// its SHA-256 (weaviatex.TenantOf). Vectorizer none; HNSW with cosine
// distance. Each object is one chunk vector with the properties
//
//	sessionId  text, tokenization "field" (the whole id), filterable
//	ordinal    int, filterable (paging a session in ordinal order)
//	textHash   text, neither filterable nor searchable
//
// and a deterministic id: a version-5 UUID of (user, session, ordinal), so a
// repeated write replaces the same objects. The recorded model and dimension
// live in the collection's description; the collection exists exactly when a
// model is recorded (SetMeta creates it, Reset drops it).
//
// # Search
//
// Nearest asks the user's tenant for the k nearest vectors (nearVector, no
// filter) and scores each 1 - cosine distance, the cosine similarity the
// embedded store reports. HNSW is approximate: Weaviate's default search
// breadth (ef = 8k, at least 100, at most 500) finds the exact top 10 of
// 10,000 clustered 512-dimensional vectors (the shape of real embeddings),
// and 0.71 of it for uniformly random ones, the worst case (0.93 when 25 are
// asked for, 0.99 at 50). Hindsight's ranking asks for at least 100 (twice
// its fetch depth), where ef is at its cap. A user whose tenant does not
// exist yet has no hits.
//
// # Server
//
// Weaviate 1.25 or later (automatic tenants), with ASYNC_INDEXING off (the
// default) and QUERY_MAXIMUM_RESULTS at least 5,000 (default 10,000): a
// session's vectors are listed 5,000 at a time and k is capped at 10,000.
//
// # Writes
//
// Upsert validates every vector first (dimension, finite non-zero values,
// ordinals, kept hashes against the stored ones), so an invalid write
// changes nothing; then it batch-writes the given vectors and deletes the
// session's other ordinals by id. Weaviate has no transactions: a write
// that fails half-way on the server (not on validation) can leave a session
// partly replaced, which repeating the Upsert (the indexing pipeline does)
// repairs, as Upsert is idempotent.
//
// Writes ask for consistency level QUORUM and reads use Weaviate's default,
// also QUORUM, so a read after a write sees it on a replicated cluster too;
// on one node (replication factor 1) both mean that node. Objects are
// indexed as they are written (the server's ASYNC_INDEXING must stay off,
// its default, for vector search to see a write at once).
//
// A killed server keeps acknowledged objects but may lose their places in
// the vector index; the Store checks its recent writes after any failed
// request and writes lost ones again (recover.go).
//
// # Concurrency
//
// A Store is safe for concurrent use; writes of one user are serialised in
// the process. Two processes writing the same session at once may
// interleave; SetMeta and Reset assume no other process writes meanwhile
// (`hindsight reembed` runs with the server stopped).
package weaviate

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/google/uuid"
	wv "github.com/weaviate/weaviate-go-client/v4/weaviate"
	"github.com/weaviate/weaviate-go-client/v4/weaviate/filters"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/hindsight-dev/hindsight/internal/weaviatex"
	"github.com/hindsight-dev/hindsight/vectors"
)

// DefaultCollection is the collection a Config without one uses.
const DefaultCollection = "HindsightChunk"

// Config says where the Weaviate server is.
type Config struct {
	// URL is the REST endpoint, e.g. http://localhost:8080 (no path).
	URL string
	// APIKey, when set, is sent as a bearer token (Weaviate's API key
	// authentication). It never appears in errors.
	APIKey string `json:"-"`
	// GRPCAddr, when set (host:port), sends batch writes over gRPC, which
	// carries vectors as bytes rather than JSON numbers. Refused with an
	// https URL: the client (v4.16.1) does not verify the gRPC server's
	// certificate.
	GRPCAddr string
	// Collection is the collection to use; "" means DefaultCollection.
	// Weaviate collection names start with an upper-case letter.
	Collection string
	// Timeout bounds each request; 0 means 60 seconds.
	Timeout time.Duration
}

const (
	consistency = "QUORUM"
	// metaPrefix starts the description of a collection this package
	// created; the model and dimension follow as JSON.
	metaPrefix = "Hindsight chunk vectors; meta: "
)

// pageSize is how many objects one listing query returns (a variable so
// tests can make paging happen with few objects).
var pageSize = 5000

// Store is a vectors.Store in Weaviate. See the package documentation.
type Store struct {
	conn   *weaviatex.Conn
	client *wv.Client // conn.Client
	class  string
	where  string // the URL, for errors

	// gate: writes hold it shared; SetMeta, Reset and Close exclusively,
	// so the collection and dimension they change cannot change under a
	// write.
	gate   sync.RWMutex
	closed bool
	model  string
	dim    int

	userLocks [64]sync.Mutex // writes of one user, striped by user id
	seed      maphash.Seed

	// Recovery after an outage (recover.go): the recent writes per user,
	// whether a request failed since they were last checked, and one
	// check at a time.
	recentMu  sync.Mutex
	recent    map[string]*recent
	outage    atomic.Bool
	recoverMu sync.Mutex
}

var _ vectors.Store = (*Store)(nil)

type meta struct {
	Model string `json:"model"`
	Dim   int    `json:"dim"`
}

// Open connects to the server, checks that it answers, and reads the
// recorded model of the collection (none when the collection does not exist
// yet: SetMeta creates it). It fails when the collection exists but was not
// created by this package.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	class := cmp.Or(cfg.Collection, DefaultCollection)
	conn, err := connect(ctx, cfg, class)
	if err != nil {
		return nil, err
	}
	s := &Store{conn: conn, client: conn.Client, class: class, where: conn.Where, seed: maphash.MakeSeed(), recent: map[string]*recent{}}
	m, err := s.readMeta(ctx)
	if err != nil {
		s.release()
		return nil, err
	}
	s.model, s.dim = m.Model, m.Dim
	return s, nil
}

// connect checks cfg and class, then dials the server (see weaviatex.Dial).
func connect(ctx context.Context, cfg Config, class string) (*weaviatex.Conn, error) {
	if _, err := weaviatex.CheckURL(cfg.URL); err != nil {
		return nil, err
	}
	if !weaviatex.ValidCollection(class) {
		return nil, fmt.Errorf("weaviate collection %q: a name starts with an upper-case letter and has only letters, digits and _", class)
	}
	return weaviatex.Dial(ctx, cfg.conn())
}

// conn is the connection part of cfg.
func (cfg Config) conn() weaviatex.Config {
	return weaviatex.Config{URL: cfg.URL, APIKey: cfg.APIKey, GRPCAddr: cfg.GRPCAddr, Timeout: cfg.Timeout}
}

func collectionOf(cfg Config) string { return cmp.Or(cfg.Collection, DefaultCollection) }

// readMeta reads the recorded model from the collection's description.
func (s *Store) readMeta(ctx context.Context) (meta, error) {
	c, err := s.client.Schema().ClassGetter().WithClassName(s.class).Do(ctx)
	if weaviatex.IsStatus(err, 404) {
		return meta{}, nil
	}
	if err != nil {
		return meta{}, s.fail(ctx, "read collection "+s.class, err)
	}
	raw, ok := strings.CutPrefix(c.Description, metaPrefix)
	var m meta
	if !ok || json.Unmarshal([]byte(raw), &m) != nil || m.Model == "" || m.Dim <= 0 {
		return meta{}, fmt.Errorf("weaviate at %s: collection %s exists but was not created by Hindsight (description %q); choose another collection or drop it", s.where, s.class, c.Description)
	}
	if c.MultiTenancyConfig == nil || !c.MultiTenancyConfig.Enabled {
		return meta{}, fmt.Errorf("weaviate at %s: collection %s is not multi-tenant; drop it and run `hindsight reembed`", s.where, s.class)
	}
	return m, nil
}

// Close releases the client (see release for why that matters even though
// no connection stays open). Calls after Close fail with vectors.ErrClosed.
// Safe to call twice.
func (s *Store) Close() error {
	s.gate.Lock()
	defer s.gate.Unlock()
	if !s.closed {
		s.closed = true
		s.release()
	}
	return nil
}

// release lets the client be collected (see weaviatex.Conn.Close for why
// that matters even though no connection stays open).
func (s *Store) release() {
	s.conn.Close()
	s.client = nil
}

// Where is the server's URL (scheme and host; no credentials).
func (s *Store) Where() string { return s.where }

// Collection is the collection the store uses.
func (s *Store) Collection() string { return s.class }

// Meta returns the recorded model and dimension ("" and 0 before SetMeta),
// as read at Open and changed by SetMeta and Reset.
func (s *Store) Meta(ctx context.Context) (string, int, error) {
	if err := ctx.Err(); err != nil {
		return "", 0, err
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed {
		return "", 0, vectors.ErrClosed
	}
	return s.model, s.dim, nil
}

// SetMeta records model and dim; see vectors.Store. A different model or
// dimension is accepted only while no tenant holds an object; the (empty)
// collection is then dropped and created again, as an HNSW index keeps the
// dimension of the vectors it has seen.
func (s *Store) SetMeta(ctx context.Context, model string, dim int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if model == "" || dim <= 0 {
		return fmt.Errorf("set vector store model: need a model name and a positive dimension, got %q, %d", model, dim)
	}
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return vectors.ErrClosed
	}
	if model == s.model && dim == s.dim {
		return nil
	}
	cur, err := s.readMeta(ctx) // another process may have recorded one
	if err != nil {
		return fmt.Errorf("set vector store model: %w", err)
	}
	if cur.Model == model && cur.Dim == dim {
		s.model, s.dim = model, dim
		return nil
	}
	if cur.Dim != 0 {
		some, err := s.holdsVectors(ctx)
		if err != nil {
			return fmt.Errorf("set vector store model: %w", err)
		}
		if some {
			return fmt.Errorf("set vector store model: store holds %s (%d dimensions), asked for %s (%d dimensions): %w", cur.Model, cur.Dim, model, dim, vectors.ErrModelMismatch)
		}
		if err := s.dropCollection(ctx); err != nil {
			return fmt.Errorf("set vector store model: %w", err)
		}
		s.model, s.dim = "", 0 // until the new collection exists
	}
	if err := s.createCollection(ctx, meta{Model: model, Dim: dim}); err != nil {
		return fmt.Errorf("set vector store model: %w", err)
	}
	s.model, s.dim = model, dim
	return nil
}

// Reset drops the collection: every vector of every user and the recorded
// model.
func (s *Store) Reset(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.gate.Lock()
	defer s.gate.Unlock()
	if s.closed {
		return vectors.ErrClosed
	}
	if err := s.dropCollection(ctx); err != nil {
		return fmt.Errorf("reset vector store: %w", err)
	}
	s.model, s.dim = "", 0
	s.recentMu.Lock()
	clear(s.recent) // nothing left to check
	s.recentMu.Unlock()
	return nil
}

func (s *Store) dropCollection(ctx context.Context) error {
	err := s.client.Schema().ClassDeleter().WithClassName(s.class).Do(ctx)
	if err != nil && !weaviatex.IsStatus(err, 404) {
		return s.fail(ctx, "drop collection "+s.class, err)
	}
	return nil
}

func (s *Store) createCollection(ctx context.Context, m meta) error {
	js, _ := json.Marshal(m)
	yes, no := true, false
	class := &models.Class{
		Class:           s.class,
		Description:     metaPrefix + string(js),
		Vectorizer:      "none",
		VectorIndexType: "hnsw",
		VectorIndexConfig: map[string]any{
			"distance": "cosine",
		},
		MultiTenancyConfig: &models.MultiTenancyConfig{Enabled: true, AutoTenantCreation: true, AutoTenantActivation: true},
		Properties: []*models.Property{
			{Name: "sessionId", DataType: []string{"text"}, Tokenization: "field", IndexFilterable: &yes, IndexSearchable: &no},
			{Name: "ordinal", DataType: []string{"int"}, IndexFilterable: &yes},
			{Name: "textHash", DataType: []string{"text"}, IndexFilterable: &no, IndexSearchable: &no},
		},
	}
	if err := s.client.Schema().ClassCreator().WithClass(class).Do(ctx); err != nil {
		return s.fail(ctx, "create collection "+s.class, err)
	}
	return nil
}

// holdsVectors reports whether any tenant of the collection holds an
// object. It asks each tenant, so it costs one request per user; only
// SetMeta's relabelling needs it.
func (s *Store) holdsVectors(ctx context.Context) (bool, error) {
	tenants, err := s.client.Schema().TenantsGetter().WithClassName(s.class).Do(ctx)
	if err != nil {
		return false, s.fail(ctx, "list tenants", err)
	}
	for _, t := range tenants {
		objs, err := s.get(ctx, fmt.Sprintf("tenant:%s, limit:1", weaviatex.GQLString(t.Name)), "_additional{id}")
		if err != nil {
			return false, fmt.Errorf("tenant %s: %w", t.Name, err)
		}
		if len(objs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// Upsert replaces the vectors of the listed sessions; see vectors.Store and
// the package documentation (Writes).
func (s *Store) Upsert(ctx context.Context, userID string, sessions map[string][]vectors.Vector) error {
	if err := s.write(ctx, userID, sessions); err != nil {
		return fmt.Errorf("upsert vectors: %w", err)
	}
	return nil
}

// Delete removes the listed sessions' vectors; see vectors.Store.
func (s *Store) Delete(ctx context.Context, userID string, sessionIDs []string) error {
	sessions := make(map[string][]vectors.Vector, len(sessionIDs))
	for _, id := range sessionIDs {
		sessions[id] = nil
	}
	if err := s.write(ctx, userID, sessions); err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	return nil
}

func (s *Store) write(ctx context.Context, userID string, sessions map[string][]vectors.Vector) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(sessions) == 0 {
		return nil
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed {
		return vectors.ErrClosed
	}
	rows := make(map[string][]vectors.Vector, len(sessions))
	for sid, vs := range sessions {
		if len(vs) > 0 && s.dim == 0 {
			return vectors.ErrNoMeta
		}
		rs, err := vectors.PrepareRows(sid, vs, s.dim)
		if err != nil {
			return err
		}
		rows[sid] = rs
	}
	if s.dim == 0 {
		return nil // no collection: nothing stored to remove
	}
	if err := s.recoverWrites(ctx); err != nil {
		return err
	}
	mu := s.userLock(userID)
	mu.Lock()
	defer mu.Unlock()

	tenant := weaviatex.TenantOf(userID)
	stored, err := s.list(ctx, tenant, slices.Sorted(maps.Keys(rows)))
	if err != nil {
		return err
	}
	var objs []*models.Object
	var stale []string
	for _, sid := range slices.Sorted(maps.Keys(rows)) {
		have := stored[sid]
		want := make(map[int]bool, len(rows[sid]))
		for _, r := range rows[sid] {
			want[r.Ordinal] = true
			if r.Values == nil {
				h, ok := have[r.Ordinal]
				if !ok {
					return fmt.Errorf("%w: session %q ordinal %d: no stored vector to keep", vectors.ErrInvalidVector, sid, r.Ordinal)
				}
				if h != r.TextHash {
					return fmt.Errorf("%w: session %q ordinal %d: stored vector has another text hash", vectors.ErrInvalidVector, sid, r.Ordinal)
				}
				continue // unchanged: not rewritten
			}
			objs = append(objs, &models.Object{
				Class:  s.class,
				ID:     objectID(userID, sid, r.Ordinal),
				Tenant: tenant,
				Properties: map[string]any{
					"sessionId": sid,
					"ordinal":   r.Ordinal,
					"textHash":  r.TextHash,
				},
				Vector: r.Values,
			})
		}
		for ord := range have {
			if !want[ord] {
				stale = append(stale, objectID(userID, sid, ord).String())
			}
		}
	}
	s.remember(userID, objs)
	if err := s.putObjects(ctx, objs); err != nil {
		return err
	}
	return s.deleteIDs(ctx, tenant, stale)
}

// userLock is the lock that serialises userID's writes.
func (s *Store) userLock(userID string) *sync.Mutex {
	return &s.userLocks[maphash.String(s.seed, userID)%uint64(len(s.userLocks))]
}

// idSpace is the UUID namespace of object ids.
var idSpace = uuid.MustParse("5e1c4b8e-4a4f-4f0e-9d3c-68696e647369")

// objectID is the version-5 UUID of (user, session, ordinal), each length-
// prefixed so no two triples share an id.
func objectID(userID, sid string, ord int) strfmt.UUID {
	b := make([]byte, 0, len(userID)+len(sid)+24)
	b = binary.AppendUvarint(b, uint64(len(userID)))
	b = append(b, userID...)
	b = binary.AppendUvarint(b, uint64(len(sid)))
	b = append(b, sid...)
	b = binary.BigEndian.AppendUint32(b, uint32(ord))
	return strfmt.UUID(uuid.NewHash(sha1.New(), idSpace, b, 5).String())
}

// putObjects writes objects in batches sized to about 4 MB of JSON.
func (s *Store) putObjects(ctx context.Context, objs []*models.Object) error {
	per := max(20, min(1000, 4_000_000/(12*max(1, s.dim))))
	for len(objs) > 0 {
		n := min(per, len(objs))
		res, err := s.client.Batch().ObjectsBatcher().WithObjects(objs[:n]...).WithConsistencyLevel(consistency).Do(ctx)
		if err != nil {
			return s.fail(ctx, "write vectors", err)
		}
		if err := weaviatex.BatchErrors(res); err != nil {
			s.markOutage() // some objects may be half written
			return fmt.Errorf("write vectors to weaviate at %s: %w", s.where, err)
		}
		objs = objs[n:]
	}
	return nil
}

// deleteIDs removes objects of one tenant by id.
func (s *Store) deleteIDs(ctx context.Context, tenant string, ids []string) error {
	for len(ids) > 0 {
		n := min(1000, len(ids))
		res, err := s.client.Batch().ObjectsBatchDeleter().
			WithClassName(s.class).
			WithTenant(tenant).
			WithConsistencyLevel(consistency).
			WithOutput("minimal").
			WithWhere(filters.Where().WithPath([]string{"id"}).WithOperator(filters.ContainsAny).WithValueText(ids[:n]...)).
			Do(ctx)
		if err != nil {
			return s.fail(ctx, "delete vectors", err)
		}
		if res.Results != nil && res.Results.Failed > 0 {
			return fmt.Errorf("delete vectors in weaviate at %s: %d of %d objects not deleted", s.where, res.Results.Failed, res.Results.Matches)
		}
		ids = ids[n:]
	}
	return nil
}

// Hashes returns the stored text hash per ordinal; see vectors.Store.
func (s *Store) Hashes(ctx context.Context, userID, sessionID string) (map[int]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed {
		return nil, vectors.ErrClosed
	}
	if s.dim == 0 {
		return map[int]string{}, nil
	}
	if err := s.recoverWrites(ctx); err != nil {
		return nil, fmt.Errorf("read vector hashes: %w", err)
	}
	got, err := s.list(ctx, weaviatex.TenantOf(userID), []string{sessionID})
	if err != nil {
		return nil, fmt.Errorf("read vector hashes: %w", err)
	}
	if got[sessionID] == nil {
		return map[int]string{}, nil
	}
	return got[sessionID], nil
}

// list returns ordinal -> text hash of the given sessions of one tenant. It
// asks for all of them in one query and, when that query is full, pages each
// session in ordinal order (a where filter cannot be combined with Weaviate's
// cursor, and offsets stop at QUERY_MAXIMUM_RESULTS). A tenant that does not
// exist holds nothing.
func (s *Store) list(ctx context.Context, tenant string, sids []string) (map[string]map[int]string, error) {
	out := make(map[string]map[int]string, len(sids))
	add := func(objs []object, only map[string]bool) {
		for _, o := range objs {
			if !only[o.SessionID] { // field tokenization trims; compare exactly
				continue
			}
			if out[o.SessionID] == nil {
				out[o.SessionID] = map[int]string{}
			}
			out[o.SessionID][o.Ordinal] = o.TextHash
		}
	}
	const fields = "sessionId ordinal textHash"
	if len(sids) > 1 {
		for chunk := range slices.Chunk(sids, 1000) {
			only := make(map[string]bool, len(chunk))
			for _, sid := range chunk {
				only[sid] = true
			}
			objs, err := s.get(ctx, fmt.Sprintf("tenant:%s, where:%s, limit:%d", weaviatex.GQLString(tenant), whereSessions(chunk), pageSize), fields)
			if err != nil {
				return s.missingTenant(ctx, tenant, out, err)
			}
			if len(objs) < pageSize {
				add(objs, only)
				continue
			}
			for _, sid := range chunk { // a full page: page each session
				if err := s.pageSession(ctx, tenant, sid, func(objs []object) { add(objs, only) }); err != nil {
					return s.missingTenant(ctx, tenant, out, err)
				}
			}
		}
		return out, nil
	}
	for _, sid := range sids {
		if err := s.pageSession(ctx, tenant, sid, func(objs []object) { add(objs, map[string]bool{sid: true}) }); err != nil {
			return s.missingTenant(ctx, tenant, out, err)
		}
	}
	return out, nil
}

// pageSession hands the objects of one session to fn, a page at a time in
// ordinal order.
func (s *Store) pageSession(ctx context.Context, tenant, sid string, fn func([]object)) error {
	after := -1
	for {
		where := fmt.Sprintf(`{operator:And, operands:[%s, {path:["ordinal"], operator:GreaterThan, valueInt:%d}]}`, whereSessions([]string{sid}), after)
		objs, err := s.get(ctx, fmt.Sprintf(`tenant:%s, where:%s, sort:[{path:["ordinal"], order:asc}], limit:%d`, weaviatex.GQLString(tenant), where, pageSize), "sessionId ordinal textHash")
		if err != nil {
			return err
		}
		fn(objs)
		if len(objs) < pageSize {
			return nil
		}
		after = objs[len(objs)-1].Ordinal
	}
}

// whereSessions is a GraphQL where filter matching the given session ids.
func whereSessions(sids []string) string {
	if len(sids) == 1 {
		return fmt.Sprintf(`{path:["sessionId"], operator:Equal, valueText:%s}`, weaviatex.GQLString(sids[0]))
	}
	quoted := make([]string, len(sids))
	for i, sid := range sids {
		quoted[i] = weaviatex.GQLString(sid)
	}
	return fmt.Sprintf(`{path:["sessionId"], operator:ContainsAny, valueText:[%s]}`, strings.Join(quoted, ","))
}

// missingTenant turns the error of a read into "nothing stored" when the
// tenant does not exist (Weaviate reports that as an error); any other
// error is returned, and marks a possible outage (see recoverWrites).
func (s *Store) missingTenant(ctx context.Context, tenant string, empty map[string]map[int]string, err error) (map[string]map[int]string, error) {
	if ctx.Err() == nil {
		if exists, xerr := s.client.Schema().TenantsExists().WithClassName(s.class).WithTenant(tenant).Do(ctx); xerr == nil && !exists {
			return empty, nil
		}
	}
	s.markOutage()
	return nil, err
}

// Nearest returns the k chunks of userID most similar to q; see
// vectors.Searcher and the package documentation (Search): unlike the
// embedded store's, the answer is approximate. k is capped at 10,000.
func (s *Store) Nearest(ctx context.Context, userID string, q []float32, k int) ([]vectors.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	if s.closed {
		return nil, vectors.ErrClosed
	}
	if k <= 0 || s.dim == 0 {
		return []vectors.Hit{}, nil
	}
	if len(q) != s.dim {
		return nil, fmt.Errorf("nearest: query has %d dimensions, the store holds %d: %w", len(q), s.dim, vectors.ErrDimensionMismatch)
	}
	qn, err := vectors.Normalised(q)
	if err != nil {
		return nil, fmt.Errorf("nearest: query: %w", err)
	}
	if err := s.recoverWrites(ctx); err != nil {
		return nil, fmt.Errorf("nearest: %w", err)
	}
	tenant := weaviatex.TenantOf(userID)
	args := fmt.Sprintf("tenant:%s, nearVector:{vector:%s}, limit:%d", weaviatex.GQLString(tenant), weaviatex.GQLVector(qn), min(k, weaviatex.MaxResults))
	objs, err := s.get(ctx, args, "sessionId ordinal _additional{distance}")
	if err != nil {
		if _, err := s.missingTenant(ctx, tenant, nil, err); err != nil {
			return nil, fmt.Errorf("nearest: %w", err)
		}
		return []vectors.Hit{}, nil
	}
	hits := make([]vectors.Hit, 0, len(objs))
	for _, o := range objs {
		if o.Additional.Distance == nil {
			return nil, fmt.Errorf("nearest: weaviate at %s returned a hit without a distance", s.where)
		}
		hits = append(hits, vectors.Hit{SessionID: o.SessionID, Ordinal: o.Ordinal, Score: 1 - *o.Additional.Distance})
	}
	slices.SortStableFunc(hits, func(a, b vectors.Hit) int { return cmp.Compare(b.Score, a.Score) })
	return hits, nil
}

// object is one object of a GraphQL Get reply.
type object struct {
	SessionID  string `json:"sessionId"`
	Ordinal    int    `json:"ordinal"`
	TextHash   string `json:"textHash"`
	Additional struct {
		ID       string   `json:"id"`
		Distance *float64 `json:"distance"`
	} `json:"_additional"`
}

// get runs {Get{<class>(<args>){<fields>}}} and decodes the objects.
func (s *Store) get(ctx context.Context, args, fields string) ([]object, error) {
	var got []object
	if err := s.getInto(ctx, s.class, args, fields, &got); err != nil {
		return nil, err
	}
	return got, nil
}

func (s *Store) getInto(ctx context.Context, class, args, fields string, into any) error {
	return s.conn.Get(ctx, class, args, fields, into)
}

// fail wraps an error of the client with the operation and the URL, and
// returns ctx's error instead when ctx ended (the client's errors do not
// unwrap to it).
func (s *Store) fail(ctx context.Context, op string, err error) error {
	s.markOutage()
	return weaviatex.FailAt(ctx, s.where, op, err)
}
