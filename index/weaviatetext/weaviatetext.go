// Package weaviatetext keeps Hindsight's full-text index in Weaviate instead
// of the embedded Bleve index, so that search can run on a replicated,
// sharded cluster and the Hindsight node keeps only its records. It is the
// same index as package index, seen from outside: Put, PutSessions,
// PutChunks, Delete, Search (index.Query in, index.Hit out), Count and
// Close, so the pipeline, ranking and the API use it unchanged.
//
// It lives beside package index (not in vectors/weaviate) because it is a
// full-text index: it takes its analysis, query parsing and snippets from
// package index ([index.Analyzer]) and only the storage and BM25 from
// Weaviate.
//
// # Layout
//
// Two collections (default HindsightTextSession and HindsightTextChunk),
// each multi-tenant with one tenant per user (weaviatex.TenantOf, as
// vectors/weaviate names them), created automatically by the first
// write. Objects carry the analyser's output, not the text: terms (identifier parts, stems, no
// stop words) joined by spaces, in properties with "whitespace"
// tokenization, so Weaviate's BM25 scores exactly the terms Bleve would.
// Queries are analysed the same way. A session object's scored property
// text holds the title's terms twice and then the body's, exactly the one
// field Bleve mode scores (index.DefaultTitleBoost); Weaviate's BM25F
// property weights were tried first, but BM25F normalises each property by
// its own average length, which is not Bleve's model and reordered hits on
// the test corpus. Chunk objects have text, sessionId and ordinal. Both
// collections set BM25 k1 = 1.2, b = 0.75 (Bleve's), no stop words (the
// analyser removed them) and ask for the classic WAND (usingBlockMaxWAND
// false), which Weaviate 1.35 ignores: a new collection always gets
// BlockMax WAND (the schema reads back true).
//
// # BlockMax WAND
//
// Weaviate 1.35's BlockMax WAND leaves documents out in two cases (see also
// bench/weaviatepeer). Right after a bulk write it misses postings still in
// memtables: a relevance run on a 2,000-document CoSQA slice read nDCG@10
// 0.03 against Bleve's 0.52. Weaviate writes a memtable out once it has
// been idle (60 seconds by default; PERSISTENCE_MEMTABLES_FLUSH_*), after
// which the same run reads 0.516, Bleve's figure; [Index.Settle] writes them
// out at once, and a rebuild or reindex calls it before it reports the
// index ready. So a session written in the last minute may rank lower than
// it should until then; what a rebuild wrote does not. And at small limits
// its pruning drops documents that belong in the top k even when settled,
// so a search asks for at least minFetch hits and keeps the first limit.
// With both, scores are Bleve's divided by k1+1 (a constant factor textbook
// BM25 keeps and Weaviate leaves out) and the rankings agree on the test
// corpus of TestSettleScoresLikeBleve; minFetch is not always enough: on
// TestTenantStatistics's (300 sessions of a user, with deletions) the
// first ten of a quarter of the queries left out documents Bleve ranks
// there, and a limit that reaches all of the user's documents drops none.
//
// # Tenants
//
// A tenant is a shard of its own, and Weaviate computes BM25's statistics
// (document count, document frequencies, mean length) per shard: a
// user's scores depend on that user's documents only, as in Bleve mode.
// TestTenantStatistics checks it against the real server: a user's hits
// and scores are the same whether the user's sessions are alone in the
// collections or beside other tenants, and the same hits as Bleve mode's
// for that user (at a limit where Weaviate's pruning drops nothing).
//
// Within a tenant the statistics follow the tenant's own history, not only
// its live documents: Weaviate 1.35 keeps a flushed document's length in
// the mean length after the document is deleted or replaced (until a
// compaction reclaims it, where weaviate/weaviate#12168 is in; for good
// before it), and never counts it when the put and the delete met in one
// memtable. So a user who deleted sessions may
// see her scores move when her shard flushes or compacts, at times of the
// server's choosing; another user's data or deletions never move them. (A Settle before and after the deletions does
// not make two tenants alike: compaction runs in the background.)
//
// # Reads
//
// Words are OR'ed and ranked by BM25, as in Bleve. A phrase narrows the
// candidates with a where filter (each position's terms present) and is
// then checked on the records' text (Source) with index's analyser, within
// the title or one message as in Bleve; exclusions of one word are a
// ContainsNone filter, longer ones are checked the same way. When the
// check would need more than one query returns (weaviatex.MaxResults
// candidates), the search returns what passed with index.ErrPartial.
// Snippets and matchedIn are computed from the records with
// index's snippet code. Both score textbook BM25 over analyser tokens
// (nDCG@10 within 0.001 of Bleve's on SciFact train and CoSQA dev,
// bench/results/scaleout-*). Bleve's plan that requires a selective word
// when the others are very frequent is not reproduced, so deep results
// (Recall@100) differ a little.
//
// # Consistency and availability
//
// Writes and reads ask for consistency level QUORUM: with replication
// factor 3 one node may be down and both still succeed, and a read sees
// every acknowledged write. A request that cannot be served (server down,
// quorum not reached, 5xx) fails with an error wrapping
// [index.ErrUnavailable]: the API answers 503 and the pipeline keeps its
// outbox entries until a write is acknowledged, so an outage delays
// indexing and loses nothing.
package weaviatetext

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/internal/weaviatex"
)

// ErrUnavailable is index.ErrUnavailable, wrapped by every error that
// waiting may cure.
var ErrUnavailable = index.ErrUnavailable

// DefaultPrefix names the collections of a Config without Prefix.
const DefaultPrefix = "HindsightText"

// BM25 parameters, set explicitly on both collections: Bleve's (v2.5.7,
// search.BM25_k1 and BM25_b), so the two modes rank alike.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// consistency is asked of every read and write (see the package doc).
const consistency = "QUORUM"

// Config says where the server is and how to lay the collections out.
type Config struct {
	URL    string // REST endpoint, http(s)://host:port
	APIKey string `json:"-"`
	// Prefix names the collections: Prefix+"Session" and Prefix+"Chunk".
	Prefix string
	// Replication is the replication factor of collections this package
	// creates (0 = 1). It must not exceed the number of nodes.
	Replication int
	// Timeout bounds each request; 0 = 30 seconds.
	Timeout time.Duration
	Logger  zerolog.Logger
}

// Source gives the text of sessions from the records: snippets and phrase
// checks read it, since Weaviate keeps only analysed terms.
type Source interface {
	// Texts returns the sessions (title, body and chunks) that exist,
	// keyed by session id; missing ones are left out.
	Texts(ctx context.Context, userID string, sessionIDs []string) (map[string]index.Session, error)
}

// Index is the full-text index in Weaviate. It is safe for concurrent use.
type Index struct {
	cfg      Config
	base     string // URL without a trailing slash
	where    string // for messages: scheme and host
	http     *http.Client
	an       *index.Analyzer
	src      Source
	sessions string
	chunks   string
	titleW   int
	log      zerolog.Logger

	// gate keeps requests and the collections' removal apart: every
	// request holds it shared (use) from its check that the collections
	// exist to its last reply, Drop holds it alone. Without it a write
	// checked before a drop lands after it, and Weaviate's auto-schema
	// creates the collection again without multi-tenancy (queries then
	// fail with "Unknown argument tenant" until it is dropped by hand);
	// and a request's ensure between Drop's flag and its deletes would
	// mark collections ready that Drop then removes.
	gate   sync.RWMutex
	mu     sync.Mutex // guards ready
	ready  bool       // the server was checked and the collections exist
	closed atomic.Bool
}

// Open returns the index. It does not need the server to answer: the
// server is checked (version) and the collections created at the first
// request, and every request until that succeeds fails with
// ErrUnavailable, so Hindsight starts and accepts syncs while Weaviate is
// down.
func Open(cfg Config, src Source) (*Index, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" {
		return nil, fmt.Errorf("weaviate text index: URL %q: want http(s)://host:port with no path or credentials", u.Redacted())
	}
	prefix := cmp.Or(cfg.Prefix, DefaultPrefix)
	if !weaviatex.ValidCollection(prefix) {
		return nil, fmt.Errorf("weaviate text index: prefix %q: a collection name starts with an upper-case letter and has only letters, digits and _", prefix)
	}
	if cfg.Replication < 0 {
		return nil, errors.New("weaviate text index: replication factor must be at least 1")
	}
	if src == nil {
		return nil, errors.New("weaviate text index: a Source is required")
	}
	an, err := index.NewAnalyzer()
	if err != nil {
		return nil, err
	}
	return &Index{
		cfg: cfg, base: u.Scheme + "://" + u.Host, where: u.Scheme + "://" + u.Host,
		http: &http.Client{Timeout: cmp.Or(cfg.Timeout, 30*time.Second)},
		an:   an, src: src, sessions: prefix + "Session", chunks: prefix + "Chunk",
		titleW: index.DefaultTitleBoost, log: cfg.Logger,
	}, nil
}

// Where is the server's URL (no credentials).
func (ix *Index) Where() string { return ix.where }

// Collections returns the names of the session and chunk collections.
func (ix *Index) Collections() (sessions, chunks string) { return ix.sessions, ix.chunks }

// Close releases the index. Calls after Close fail with index.ErrClosed.
func (ix *Index) Close() error {
	ix.closed.Store(true)
	ix.http.CloseIdleConnections()
	return nil
}

// Ping checks that the server answers ready; the error wraps
// ErrUnavailable when it does not.
func (ix *Index) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return ix.do(ctx, http.MethodGet, "/v1/.well-known/ready", nil, nil, nil)
}

// use starts a request: it holds the gate shared and makes sure the
// collections exist (ensure). The caller calls done when its last request
// has been answered; on error nothing is held.
func (ix *Index) use(ctx context.Context) (done func(), err error) {
	ix.gate.RLock()
	if err := ix.ensure(ctx); err != nil {
		ix.gate.RUnlock()
		return nil, err
	}
	return ix.gate.RUnlock, nil
}

// ensure checks the server and creates the collections once. Callers hold
// the gate (use, Reset).
func (ix *Index) ensure(ctx context.Context) error {
	if ix.closed.Load() {
		return index.ErrClosed
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.ready {
		return nil
	}
	// weaviatex.Dial checks the URL, that the server answers ready and its
	// version (1.25 or later: automatic tenants), with the messages the
	// vector store gives.
	c, err := weaviatex.Dial(ctx, weaviatex.Config{URL: ix.cfg.URL, APIKey: ix.cfg.APIKey, Timeout: ix.http.Timeout})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	c.Close()
	for _, class := range []string{ix.sessions, ix.chunks} {
		if err := ix.createIfMissing(ctx, class); err != nil {
			return err
		}
	}
	ix.ready = true
	return nil
}

// descPrefix starts the description of collections this package creates.
const descPrefix = "Hindsight full-text index (analysed terms; rebuild with hindsight reindex): "

func (ix *Index) schema(class string) map[string]any {
	text := func(name string) map[string]any {
		return map[string]any{"name": name, "dataType": []string{"text"}, "tokenization": "whitespace",
			"indexSearchable": true, "indexFilterable": true}
	}
	props := []map[string]any{
		{"name": "sessionId", "dataType": []string{"text"}, "tokenization": "field", "indexFilterable": true, "indexSearchable": false},
	}
	kind := "sessions"
	if class == ix.chunks {
		kind = "chunks"
		props = append(props, map[string]any{"name": "ordinal", "dataType": []string{"int"}, "indexFilterable": true}, text("text"))
	} else {
		props = append(props, text("text"))
	}
	factor := max(1, ix.cfg.Replication)
	return map[string]any{
		"class":             class,
		"description":       descPrefix + kind,
		"vectorizer":        "none",
		"vectorIndexConfig": map[string]any{"skip": true},
		"multiTenancyConfig": map[string]any{
			"enabled": true, "autoTenantCreation": true, "autoTenantActivation": true,
		},
		// Async replication repairs a replica that missed writes while it
		// was down, without waiting for a read to touch the object.
		// A deletion and a write a replica missed are settled by time, so a
		// node that was down neither resurrects deleted documents nor
		// loses rewritten ones.
		"replicationConfig": replication(factor),
		"invertedIndexConfig": map[string]any{
			"bm25":              map[string]any{"k1": BM25K1, "b": BM25B},
			"stopwords":         map[string]any{"preset": "none"},
			"usingBlockMaxWAND": false,
		},
		"properties": props,
	}
}

func replication(factor int) map[string]any {
	if factor <= 1 {
		return map[string]any{"factor": 1}
	}
	return map[string]any{"factor": factor, "asyncEnabled": true, "deletionStrategy": "TimeBasedResolution"}
}

func (ix *Index) createIfMissing(ctx context.Context, class string) error {
	var got struct {
		Description string `json:"description"`
	}
	err := ix.do(ctx, http.MethodGet, "/v1/schema/"+class, nil, nil, &got)
	switch {
	case err == nil:
		if !strings.HasPrefix(got.Description, descPrefix) {
			return fmt.Errorf("weaviate at %s: collection %s exists but was not created by Hindsight's text index; choose another prefix or drop it", ix.where, class)
		}
		return nil
	case !weaviatex.IsStatus(err, http.StatusNotFound):
		return err
	}
	if err := ix.do(ctx, http.MethodPost, "/v1/schema", nil, ix.schema(class), nil); err != nil {
		// Another process may have created it meanwhile.
		if weaviatex.IsStatus(err, http.StatusUnprocessableEntity) && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return fmt.Errorf("create collection %s: %w", class, err)
	}
	ix.log.Info().Str("collection", class).Int("replication", max(1, ix.cfg.Replication)).Msg("weaviate text index: collection created")
	return nil
}

// Reset drops both collections (every user's documents); the next request
// creates them again. hindsight reindex starts with it.
func (ix *Index) Reset(ctx context.Context) error {
	if err := ix.Drop(ctx); err != nil {
		return err
	}
	done, err := ix.use(ctx)
	if err != nil {
		return err
	}
	done()
	return nil
}

// Drop removes both collections and leaves them removed (a bench's
// scratch index at its end); a later request creates them again. It waits
// for the requests under way to finish and holds new ones until both
// collections are gone (see Index.gate).
func (ix *Index) Drop(ctx context.Context) error {
	ix.gate.Lock()
	defer ix.gate.Unlock()
	ix.mu.Lock()
	ix.ready = false
	ix.mu.Unlock()
	for _, class := range []string{ix.sessions, ix.chunks} {
		if err := ix.do(ctx, http.MethodDelete, "/v1/schema/"+class, nil, nil, nil); err != nil && !weaviatex.IsStatus(err, http.StatusNotFound) {
			return fmt.Errorf("drop collection %s: %w", class, err)
		}
	}
	return nil
}

// idSpace is the UUID namespace of object ids.
var idSpace = uuid.MustParse("0b7e3c2a-6f1d-4d8e-a1c4-746578746964")

// objectID is the version-5 UUID of (kind, user, session, ordinal), each
// length-prefixed so no two share an id; a rewrite replaces the object.
func objectID(kind byte, userID, sid string, ord int) string {
	b := make([]byte, 0, len(userID)+len(sid)+24)
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(userID)))
	b = append(b, userID...)
	b = binary.AppendUvarint(b, uint64(len(sid)))
	b = append(b, sid...)
	b = binary.BigEndian.AppendUint32(b, uint32(ord))
	return uuid.NewHash(sha1.New(), idSpace, b, 5).String()
}

// sessionTerms is the scored text of a session document as Bleve mode
// builds it: the title's terms titleW times, then the body's.
func (ix *Index) sessionTerms(s index.Session) string {
	title, body := ix.an.Terms(s.Title), ix.an.Terms(s.Body)
	all := make([]string, 0, ix.titleW*len(title)+len(body))
	for range ix.titleW {
		all = append(all, title...)
	}
	return strings.Join(append(all, body...), " ")
}

// terms is the analysed text as Weaviate stores it: terms joined by spaces.
func (ix *Index) terms(text string) string {
	return strings.Join(ix.an.Terms(text), " ")
}

// Put writes session and chunk documents; see index.Index.Put.
func (ix *Index) Put(ctx context.Context, sessions []index.Session) error {
	if err := ix.PutSessions(ctx, sessions); err != nil {
		return err
	}
	return ix.PutChunks(ctx, sessions)
}

// latest keeps the last occurrence of each session, validated.
func latest(sessions []index.Session) ([]index.Session, error) {
	at := make(map[[2]string]int, len(sessions))
	var out []index.Session
	for i, s := range sessions {
		if s.UserID == "" || s.SessionID == "" {
			return nil, fmt.Errorf("weaviate text index: put session %d: user id and session id are required", i)
		}
		seen := make(map[int]bool, len(s.Chunks))
		for _, c := range s.Chunks {
			if c.Ordinal < 0 || seen[c.Ordinal] {
				return nil, fmt.Errorf("weaviate text index: session %s: chunk ordinal %d is negative or repeated", s.SessionID, c.Ordinal)
			}
			seen[c.Ordinal] = true
		}
		k := [2]string{s.UserID, s.SessionID}
		if j, ok := at[k]; ok {
			out[j] = s
			continue
		}
		at[k] = len(out)
		out = append(out, s)
	}
	return out, nil
}

type object struct {
	Class      string         `json:"class"`
	ID         string         `json:"id"`
	Tenant     string         `json:"tenant"`
	Properties map[string]any `json:"properties"`
}

// PutSessions writes the session documents; see index.Index.PutSessions.
func (ix *Index) PutSessions(ctx context.Context, sessions []index.Session) error {
	ss, err := latest(sessions)
	if err != nil || len(ss) == 0 {
		return err
	}
	done, err := ix.use(ctx)
	if err != nil {
		return err
	}
	defer done()
	objs := make([]object, 0, len(ss))
	for _, s := range ss {
		objs = append(objs, object{Class: ix.sessions, ID: objectID('s', s.UserID, s.SessionID, 0), Tenant: weaviatex.TenantOf(s.UserID),
			Properties: map[string]any{"sessionId": s.SessionID, "text": ix.sessionTerms(s)}})
	}
	return ix.putObjects(ctx, objs)
}

// PutChunks writes the chunk documents and removes the sessions' chunks
// of higher ordinals; see index.Index.PutChunks. Ordinals below the
// highest that a session no longer has (the pipeline numbers chunks
// 0..n-1, so there are none) are not removed.
func (ix *Index) PutChunks(ctx context.Context, sessions []index.Session) error {
	ss, err := latest(sessions)
	if err != nil || len(ss) == 0 {
		return err
	}
	done, err := ix.use(ctx)
	if err != nil {
		return err
	}
	defer done()
	var objs []object
	stale := map[string][]any{} // tenant -> filters of chunks to remove
	for _, s := range ss {
		t := weaviatex.TenantOf(s.UserID)
		top := -1
		for _, c := range s.Chunks {
			top = max(top, c.Ordinal)
			objs = append(objs, object{Class: ix.chunks, ID: objectID('c', s.UserID, s.SessionID, c.Ordinal), Tenant: t,
				Properties: map[string]any{"sessionId": s.SessionID, "ordinal": c.Ordinal, "text": ix.terms(c.Text)}})
		}
		stale[t] = append(stale[t], and(
			map[string]any{"path": []string{"sessionId"}, "operator": "Equal", "valueText": s.SessionID},
			map[string]any{"path": []string{"ordinal"}, "operator": "GreaterThan", "valueInt": top}))
	}
	if err := ix.putObjects(ctx, objs); err != nil {
		return err
	}
	for t, fs := range stale {
		for part := range slices.Chunk(fs, 200) {
			if err := ix.deleteWhere(ctx, ix.chunks, t, or(part...)); err != nil {
				return fmt.Errorf("remove old chunks: %w", err)
			}
		}
	}
	return nil
}

func and(ops ...any) map[string]any {
	if len(ops) == 1 {
		return ops[0].(map[string]any)
	}
	return map[string]any{"operator": "And", "operands": ops}
}

func or(ops ...any) map[string]any {
	if len(ops) == 1 {
		return ops[0].(map[string]any)
	}
	return map[string]any{"operator": "Or", "operands": ops}
}

// putObjects batch-writes objects, about 4 MB of JSON per request.
func (ix *Index) putObjects(ctx context.Context, objs []object) error {
	q := url.Values{"consistency_level": {consistency}}
	for len(objs) > 0 {
		n, size := 0, 0
		for n < len(objs) && (n == 0 || size < 4<<20) && n < 1000 {
			for _, v := range objs[n].Properties {
				if s, ok := v.(string); ok {
					size += len(s)
				}
			}
			size += 200
			n++
		}
		var res []struct {
			ID     string `json:"id"`
			Result struct {
				Errors *struct {
					Error []struct {
						Message string `json:"message"`
					} `json:"error"`
				} `json:"errors"`
			} `json:"result"`
		}
		if err := ix.do(ctx, http.MethodPost, "/v1/batch/objects", q, map[string]any{"objects": objs[:n]}, &res); err != nil {
			return fmt.Errorf("write %d documents: %w", n, err)
		}
		var errs []string
		for _, r := range res {
			if r.Result.Errors != nil {
				for _, e := range r.Result.Errors.Error {
					errs = append(errs, "object "+r.ID+": "+e.Message)
				}
			}
		}
		if len(errs) > 0 {
			msg := strings.Join(errs[:min(len(errs), 5)], "; ")
			err := fmt.Errorf("weaviate at %s: %d of %d documents not written: %s", ix.where, len(errs), n, msg)
			if transient(msg) {
				err = fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			return err
		}
		objs = objs[n:]
	}
	return nil
}

// deleteWhere removes the objects of one tenant that match the filter. A
// tenant that does not exist holds nothing.
func (ix *Index) deleteWhere(ctx context.Context, class, tenant string, where map[string]any) error {
	q := url.Values{"consistency_level": {consistency}, "tenant": {tenant}}
	for {
		var res struct {
			Results struct {
				Failed     int `json:"failed"`
				Matches    int `json:"matches"`
				Successful int `json:"successful"`
				Limit      int `json:"limit"`
			} `json:"results"`
		}
		body := map[string]any{"match": map[string]any{"class": class, "where": where}, "output": "minimal"}
		err := ix.do(ctx, http.MethodDelete, "/v1/batch/objects", q, body, &res)
		if err != nil {
			if se := (*weaviatex.StatusError)(nil); errors.As(err, &se) && se.Code < 500 && isTenantMissing(se.Msg) {
				return nil
			}
			return err
		}
		if res.Results.Failed > 0 {
			return fmt.Errorf("%w: weaviate at %s: %d of %d documents not deleted", ErrUnavailable, ix.where, res.Results.Failed, res.Results.Matches)
		}
		// One request deletes at most QUERY_MAXIMUM_RESULTS objects.
		if res.Results.Limit == 0 || res.Results.Matches < res.Results.Limit {
			return nil
		}
	}
}

// Delete removes every document of the given sessions of one user.
func (ix *Index) Delete(ctx context.Context, userID string, sessionIDs []string) error {
	if userID == "" {
		return errors.New("weaviate text index: delete: user id is required")
	}
	var ids []string
	for _, id := range sessionIDs {
		if id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	done, err := ix.use(ctx)
	if err != nil {
		return err
	}
	defer done()
	t := weaviatex.TenantOf(userID)
	for part := range slices.Chunk(ids, 1000) {
		w := map[string]any{"path": []string{"sessionId"}, "operator": "ContainsAny", "valueTextArray": part}
		for _, class := range []string{ix.sessions, ix.chunks} {
			if err := ix.deleteWhere(ctx, class, t, w); err != nil {
				return fmt.Errorf("weaviate text index: delete: %w", err)
			}
		}
	}
	return nil
}

// Count returns the number of session and chunk documents over all users
// (one count per tenant: for reindex's summary and tests, not for hot
// paths).
func (ix *Index) Count(ctx context.Context) (sessions, chunks uint64, err error) {
	done, err := ix.use(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer done()
	count := func(class string) (uint64, error) {
		var tenants []struct {
			Name string `json:"name"`
		}
		if err := ix.do(ctx, http.MethodGet, "/v1/schema/"+class+"/tenants", nil, nil, &tenants); err != nil {
			return 0, err
		}
		var n uint64
		for _, t := range tenants {
			var got []struct {
				Meta struct {
					Count uint64 `json:"count"`
				} `json:"meta"`
			}
			q := fmt.Sprintf("{Aggregate{%s(tenant:%s){meta{count}}}}", class, weaviatex.GQLString(t.Name))
			if err := ix.graphQL(ctx, "Aggregate", class, q, &got); err != nil {
				return 0, err
			}
			if len(got) > 0 {
				n += got[0].Meta.Count
			}
		}
		return n, nil
	}
	if sessions, err = count(ix.sessions); err != nil {
		return 0, 0, fmt.Errorf("weaviate text index: count sessions: %w", err)
	}
	if chunks, err = count(ix.chunks); err != nil {
		return 0, 0, fmt.Errorf("weaviate text index: count chunks: %w", err)
	}
	return sessions, chunks, nil
}

// Search runs q over the user's tenant; see index.Index.Search and the
// package documentation (Reads).
func (ix *Index) Search(ctx context.Context, q index.Query) ([]index.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.UserID == "" {
		return nil, errors.New("weaviate text index: search: user id is required")
	}
	if q.Kind != index.Sessions && q.Kind != index.Chunks {
		return nil, fmt.Errorf("weaviate text index: search: unknown kind %d", int(q.Kind))
	}
	limit := q.Limit
	if limit <= 0 {
		limit = index.DefaultLimit
	}
	limit = min(limit, index.MaxLimit)
	pq, err := ix.an.Parse(q.Text)
	if err != nil {
		return nil, err
	}
	done, err := ix.use(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	class, fields := ix.sessions, "sessionId _additional{score}"
	if q.Kind == index.Chunks {
		class, fields = ix.chunks, "sessionId ordinal _additional{score}"
	}
	where, check := filters(pq)
	// A phrase or a long exclusion is checked on the records, so fetch more
	// than asked and widen until enough pass or the candidates run out.
	fetch := max(limit, minFetch)
	if check {
		fetch = min(max(4*limit, minFetch), weaviatex.MaxResults)
	}
	tenant := weaviatex.TenantOf(q.UserID)
	for {
		args := fmt.Sprintf(`tenant:%s, bm25:{query:%s, properties:["text"]}, limit:%d`,
			weaviatex.GQLString(tenant), weaviatex.GQLString(strings.Join(pq.Terms(), " ")), fetch)
		if ix.cfg.Replication > 1 {
			// GraphQL has the argument only for replicated collections.
			args += ", consistencyLevel:" + consistency
		}
		if where != "" {
			args += ", where:" + where
		}
		var got []struct {
			SessionID  string `json:"sessionId"`
			Ordinal    int    `json:"ordinal"`
			Additional struct {
				Score string `json:"score"`
			} `json:"_additional"`
		}
		err := ix.graphQL(ctx, "Get", class, fmt.Sprintf("{Get{%s(%s){%s}}}", class, args, fields), &got)
		if errors.Is(err, errNoTenant) {
			return []index.Hit{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("weaviate text index: search: %w", err)
		}
		hits := make([]index.Hit, 0, len(got))
		for _, g := range got {
			s, err := strconv.ParseFloat(g.Additional.Score, 64)
			if err != nil {
				return nil, fmt.Errorf("weaviate text index: search: score %q: %w", g.Additional.Score, err)
			}
			ord := -1
			if q.Kind == index.Chunks {
				ord = g.Ordinal
			}
			hits = append(hits, index.Hit{SessionID: g.SessionID, Ordinal: ord, Score: s})
		}
		ranOut := len(got) < fetch
		if check || q.Explain {
			if hits, err = ix.checkAndExplain(ctx, q, pq, hits, check); err != nil {
				return nil, err
			}
		}
		if len(hits) >= limit || ranOut || fetch >= weaviatex.MaxResults {
			index.SortHits(hits)
			hits = hits[:min(limit, len(hits))]
			if check && len(hits) < limit && !ranOut {
				// More candidates than one query returns: some may pass.
				return hits, index.ErrPartial
			}
			return hits, nil
		}
		fetch = min(4*fetch, weaviatex.MaxResults)
	}
}

// minFetch is the fewest hits a search asks Weaviate for. Weaviate 1.35's
// top-k pruning is not exact for small limits: on a settled tenant of 600
// documents, limit 10 left out documents that limit 100 ranks among the
// first ten with Bleve's scores (TestSettleScoresLikeBleve). Asking for at
// least minFetch and keeping the first limit gives Bleve's ranking.
const minFetch = 100

// filters returns the where filter of a query's phrases and one-position
// exclusions, and whether the hits must still be checked on the records (a
// phrase's order, an exclusion of several positions).
func filters(pq index.ParsedQuery) (string, bool) {
	anyProp := func(op string, terms []string) string {
		return fmt.Sprintf(`{path:["text"], operator:%s, valueText:%s}`, op, gqlList(terms))
	}
	var conds []string
	check := false
	for _, ph := range pq.Phrases() {
		for _, alts := range ph {
			if len(alts) > 0 {
				conds = append(conds, anyProp("ContainsAny", alts))
			}
		}
		if len(ph) > 1 {
			check = true
		}
	}
	for _, ph := range pq.Exclusions() {
		if len(ph) == 1 && len(ph[0]) > 0 {
			conds = append(conds, anyProp("ContainsNone", ph[0]))
		} else {
			check = true
		}
	}
	switch len(conds) {
	case 0:
		return "", check
	case 1:
		return conds[0], check
	}
	return fmt.Sprintf(`{operator:And, operands:[%s]}`, strings.Join(conds, ",")), check
}

func gqlList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = weaviatex.GQLString(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

// checkAndExplain reads the hits' text from the records, drops those that
// fail the phrase and exclusion check (when check) and fills snippets
// (when q.Explain). A hit whose session is gone from the records is dropped:
// it was deleted and its documents are about to be removed.
func (ix *Index) checkAndExplain(ctx context.Context, q index.Query, pq index.ParsedQuery, hits []index.Hit, check bool) ([]index.Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	ids := make([]string, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.SessionID)
	}
	texts, err := ix.src.Texts(ctx, q.UserID, ids)
	if err != nil {
		return nil, fmt.Errorf("weaviate text index: read records: %w", err)
	}
	out := hits[:0]
	for _, h := range hits {
		s, ok := texts[h.SessionID]
		if !ok {
			continue
		}
		title, body, breaks := s.Title, s.Body, s.Breaks
		if q.Kind == index.Chunks {
			title, body, breaks = "", "", nil
			for _, c := range s.Chunks {
				if c.Ordinal == h.Ordinal {
					body, breaks = c.Text, c.Breaks
				}
			}
		}
		if check && !ix.an.MatchesMessages(pq, title, body, breaks) {
			continue
		}
		if q.Explain {
			h.Snippet, h.MatchedIn = ix.an.Explain(pq, title, body)
		}
		out = append(out, h)
	}
	return out, nil
}

// Settle sets every tenant of both collections INACTIVE and then ACTIVE
// again, which writes their memtables out and loads the shards from disk as
// a restart does, and waits until each answers. Weaviate 1.35 scores BM25
// wrongly over postings still in memtables right after a bulk write (see
// bench/weaviatepeer); after Settle it scores them as after a restart.
func (ix *Index) Settle(ctx context.Context) error {
	done, err := ix.use(ctx)
	if err != nil {
		return err
	}
	defer done()
	for _, class := range []string{ix.sessions, ix.chunks} {
		var tenants []struct {
			Name string `json:"name"`
		}
		if err := ix.do(ctx, http.MethodGet, "/v1/schema/"+class+"/tenants", nil, nil, &tenants); err != nil {
			return fmt.Errorf("weaviate text index: settle %s: %w", class, err)
		}
		if len(tenants) == 0 {
			continue
		}
		for _, status := range []string{"INACTIVE", "ACTIVE"} {
			body := make([]map[string]string, len(tenants))
			for i, t := range tenants {
				body[i] = map[string]string{"name": t.Name, "activityStatus": status}
			}
			if err := ix.do(ctx, http.MethodPut, "/v1/schema/"+class+"/tenants", nil, body, nil); err != nil {
				return fmt.Errorf("weaviate text index: settle %s: set tenants %s: %w", class, status, err)
			}
		}
		for _, t := range tenants {
			for { // the shard loads in the background
				var one []struct{}
				q := fmt.Sprintf("{Get{%s(tenant:%s, limit:1){sessionId}}}", class, weaviatex.GQLString(t.Name))
				err := ix.graphQL(ctx, "Get", class, q, &one)
				if err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}
	return nil
}
