package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
	"github.com/rs/zerolog"
)

// DefaultTitleBoost is the title weight used when Options.TitleBoost is 0:
// the title is written this many times into the scored text. Chosen by
// measurement on SciFact train (see relevance_test.go and the package doc).
const DefaultTitleBoost = 2

// Errors returned by this package besides ErrBadQuery.
var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("index is closed")
	// ErrIncompatible is returned by Open when the directory holds an index
	// written in another format. The index is derived data: remove the
	// directory and rebuild it (hindsight reindex).
	ErrIncompatible = errors.New("index format is incompatible")
)

// Field names of the Bleve documents.
const (
	fieldUser    = "userId" // keyword: owner of the document; every query requires it
	fieldSession = "sid"    // keyword, chunk documents only: session key, to find a session's chunks
	fieldText    = "text"   // analysed, not stored: the scored text (title + body; or chunk text)
	fieldTitle   = "title"  // stored only, session documents: for snippets and matchedIn
	fieldBody    = "body"   // stored only: session body or chunk text, for snippets
)

// formatVersion changes whenever documents, mapping or analysis change in a
// way that needs a rebuild.
// Version 2: BM25 lengths in words and the length field (scoring.go).
const formatVersion = 2

// metaKey is the Bleve internal key (in the sessions index) that records the
// format and the settings the index was built with.
const metaKey = "hindsight.index.meta"

type meta struct {
	Format      int `json:"format"`
	TitleRepeat int `json:"titleRepeat"`
}

// Options configures Open. The zero value gives the defaults.
type Options struct {
	// TitleBoost is how strongly title terms count relative to body terms.
	// The title is folded into the one scored field (a separate title clause
	// measured 0.10 nDCG@10 worse on SciFact); the boost is applied by
	// writing the title round(TitleBoost) times into it. 0 means
	// DefaultTitleBoost; other values must be >= 1. It takes effect at
	// indexing time: after a change, rebuild the index for consistent
	// ranking (Open logs a warning when it differs from the stored value).
	TitleBoost float64
	// Logger receives debug lines (counts and durations, never document or
	// query text) and warnings. The zero value is silent.
	Logger zerolog.Logger
	// Text, when set, is where snippets read the hits' text, and the index
	// stores no text of its own: stored text is about half of an index,
	// and the records it is derived from hold the same text anyway. Without
	// it, the title and body (chunk text) are stored with each document.
	// The choice applies to documents written from then on; an index written
	// with stored text keeps working with a source (rebuild it to shed the
	// stored text).
	Text TextSource
}

// TextSource gives the current text of indexed sessions, for snippets.
type TextSource interface {
	// SessionText returns the user's sessions among ids, as Put would be
	// given them now (Title, Body and Chunks), keyed by session id. Sessions
	// that no longer exist are left out. With bodyBytes > 0 only Title and
	// the first bodyBytes of Body are needed (a longer Body is fine), and
	// Chunks are not.
	SessionText(ctx context.Context, userID string, ids []string, bodyBytes int) (map[string]Session, error)
}

func (o Options) titleRepeat() (int, error) {
	b := o.TitleBoost
	switch {
	case b == 0:
		return DefaultTitleBoost, nil
	case math.IsNaN(b) || math.IsInf(b, 0) || b < 1 || b > 100:
		return 0, fmt.Errorf("index: TitleBoost %v: must be 0 (default) or between 1 and 100", b)
	}
	return int(math.Round(b)), nil
}

// Index is the full-text index of sessions and their chunks. It is safe for
// concurrent use: searches run in parallel with each other and with writes;
// Put and Delete are serialised against each other.
//
// Two Bleve indexes live under the directory: one of session documents and
// one of chunk documents. Separate indexes keep the BM25 statistics of each
// kind its own: chunks repeat the session text in short pieces, so in a
// shared index they would double every document frequency, shorten the
// average document length session scores are normalised by, and make the
// kind a filter every query must pay for. Each index also scores with
// statistics over all users (document frequencies and average length are
// global); only the result set is per user.
//
// A search sees, per index, a consistent snapshot that includes every Put and
// Delete that returned before it started. The two indexes are written one
// after the other (or, with PutSessions and PutChunks, at different times),
// so a reader may see a session's new session document with its old chunks.
type Index struct {
	sessions bleve.Index
	chunks   bleve.Index
	// Length totals of each index's segments, for BM25's average length.
	sessionLengths, chunkLengths lengthCache
	analyzer                     analysis.Analyzer
	repeat                       int        // times the title is written into the scored text
	text                         TextSource // nil: text is stored in the documents
	log                          zerolog.Logger

	wmu    sync.Mutex // serialises Put, Delete and Close
	closed atomic.Bool
}

// Open opens the index stored under dir, creating it (and dir) when it does
// not exist. The caller must Close it. Only one process may open a directory
// at a time.
func Open(dir string, opts Options) (*Index, error) {
	repeat, err := opts.titleRepeat()
	if err != nil {
		return nil, err
	}
	a, err := newAnalyzer()
	if err != nil {
		return nil, fmt.Errorf("index: analyzer: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	ix := &Index{analyzer: a, repeat: repeat, text: opts.Text, log: opts.Logger}
	sessionStored, chunkStored := []string{fieldTitle, fieldBody}, []string{fieldBody}
	if ix.text != nil {
		sessionStored, chunkStored = nil, nil
	}
	var created bool
	ix.sessions, created, err = openOrCreate(filepath.Join(dir, "sessions.bleve"), newMapping([]string{fieldUser, fieldLength}, sessionStored))
	if err != nil {
		return nil, err
	}
	ix.chunks, _, err = openOrCreate(filepath.Join(dir, "chunks.bleve"), newMapping([]string{fieldUser, fieldSession, fieldLength}, chunkStored))
	if err != nil {
		_ = ix.sessions.Close()
		return nil, err
	}
	if err := ix.checkMeta(created); err != nil {
		_ = ix.Close()
		return nil, err
	}
	return ix, nil
}

func openOrCreate(path string, m mapping.IndexMapping) (idx bleve.Index, created bool, err error) {
	idx, err = bleve.Open(path)
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		idx, err = bleve.New(path, m)
		created = true
	}
	if err != nil {
		return nil, false, fmt.Errorf("index: open %s: %w", path, err)
	}
	return idx, created, nil
}

func (ix *Index) checkMeta(created bool) error {
	want := meta{Format: formatVersion, TitleRepeat: ix.repeat}
	if created {
		b, _ := json.Marshal(want)
		if err := ix.sessions.SetInternal([]byte(metaKey), b); err != nil {
			return fmt.Errorf("index: write metadata: %w", err)
		}
		return nil
	}
	b, err := ix.sessions.GetInternal([]byte(metaKey))
	if err != nil {
		return fmt.Errorf("index: read metadata: %w", err)
	}
	var got meta
	if len(b) == 0 || json.Unmarshal(b, &got) != nil || got.Format != formatVersion {
		return fmt.Errorf("%w: found format %d, this build writes %d; remove the index directory and rebuild it",
			ErrIncompatible, got.Format, formatVersion)
	}
	if got.TitleRepeat != want.TitleRepeat {
		ix.log.Warn().Int("built_with_title_boost", got.TitleRepeat).Int("title_boost", want.TitleRepeat).
			Msg("index: title boost differs from the one the index was built with; rebuild for consistent ranking")
	}
	return nil
}

// newMapping describes the documents of one index: the keyword fields, the
// scored text field and the stored-only fields. Documents are built directly
// (sessionDoc, chunkDoc) with the same options (TestFieldOptions checks
// that), so the stored mapping stays a true description of the index.
// Nothing is indexed dynamically, there is no _all field, and no field has
// doc values.
func newMapping(keywords, stored []string) *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bleveindex.BM25Scoring
	im.DefaultAnalyzer = AnalyzerName
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	dm := bleve.NewDocumentStaticMapping()
	for _, name := range keywords {
		dm.AddFieldMappingsAt(name, keywordField())
	}
	dm.AddFieldMappingsAt(fieldText, textField())
	for _, name := range stored {
		dm.AddFieldMappingsAt(name, storedField())
	}
	im.DefaultMapping = dm
	return im
}

// keywordField: exact value, one term, no frequencies or norms (never scored).
func keywordField() *mapping.FieldMapping {
	fm := bleve.NewKeywordFieldMapping()
	fm.Store, fm.DocValues, fm.IncludeInAll, fm.IncludeTermVectors = false, false, false, false
	fm.SkipFreqNorm = true
	return fm
}

// textField: the scored text. Term vectors (positions) are what phrase
// queries need; the text itself is not stored here.
func textField() *mapping.FieldMapping {
	fm := bleve.NewTextFieldMapping()
	fm.Analyzer = AnalyzerName
	fm.Store, fm.DocValues, fm.IncludeInAll = false, false, false
	fm.IncludeTermVectors = true
	return fm
}

// storedField: kept for snippets, not searchable.
func storedField() *mapping.FieldMapping {
	fm := bleve.NewTextFieldMapping()
	fm.Index, fm.DocValues, fm.IncludeInAll, fm.IncludeTermVectors = false, false, false, false
	fm.Store = true
	return fm
}

// Indexing options of the three kinds of field, as the mappings above give
// them.
const (
	keywordOpts = bleveindex.IndexField | bleveindex.SkipFreqNorm
	textOpts    = bleveindex.IndexField | bleveindex.IncludeTermVectors
	storedOpts  = bleveindex.StoreField
)

// Close flushes and closes the index. It waits for a Put or Delete in
// progress. Calling Close again returns nil.
func (ix *Index) Close() error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, idx := range []bleve.Index{ix.sessions, ix.chunks} {
		if idx != nil {
			if err := idx.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("index: close: %w", err)
	}
	return nil
}

// Session is everything indexed for one session: one session-level document
// plus its chunk documents.
type Session struct {
	UserID, SessionID string
	Title             string
	// Body is the searchable message text of the session (already filtered
	// by the caller), messages joined by "\n\n".
	Body string
	// Chunks are message-level chunks (one per user->assistant exchange,
	// split when long), built by the caller. Ordinals must be distinct and
	// non-negative.
	Chunks []Chunk
}

// Chunk is one message-level piece of a session.
type Chunk struct {
	Ordinal int // 0..n-1 within the session
	Text    string
}

// Put indexes the sessions: one Bleve batch for the session documents and
// one for the chunk documents. It is idempotent: it replaces every document a
// previous Put wrote for the same (UserID, SessionID), including chunk
// ordinals that no longer exist. When a session appears twice in the slice,
// the later one wins.
//
// Batches of a few hundred sessions amortise the per-batch cost (a lookup of
// the sessions' existing chunks and a synchronous flush to disk); 200-1000 is
// a good range, 500 a good default for rebuilds. Put analyses its sessions
// before taking the write lock, so two Puts called at once overlap: one
// analyses while the other writes (a rebuild keeps two in flight). Put
// analyses each text once: the session document's tokens are composed from
// its title's and chunks' (composeSession). Put is not atomic across the
// two indexes: if it returns an error, some documents may be written; calling
// it again with the same sessions repairs that.
func (ix *Index) Put(ctx context.Context, sessions []Session) error {
	return ix.put(ctx, sessions, true, true)
}

// PutSessions writes only the session documents (what Search with Kind
// Sessions reads), ignoring Chunks. Session documents cost less than half of
// a Put, so an indexer that falls behind can make new sessions searchable
// first and write their chunks (PutChunks) when it has caught up.
func (ix *Index) PutSessions(ctx context.Context, sessions []Session) error {
	return ix.put(ctx, sessions, true, false)
}

// PutChunks writes only the chunk documents (what Kind Chunks reads),
// ignoring Title and Body, with Put's replace semantics for the chunks.
func (ix *Index) PutChunks(ctx context.Context, sessions []Session) error {
	return ix.put(ctx, sessions, false, true)
}

func (ix *Index) put(ctx context.Context, sessions []Session, withSessions, withChunks bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(sessions) == 0 {
		return nil
	}
	latest := make(map[string]int, len(sessions)) // session key -> index of its last occurrence
	keys := make([]string, 0, len(sessions))
	for i, s := range sessions {
		if err := validate(s); err != nil {
			return fmt.Errorf("index: put session %d: %w", i, err)
		}
		k := docKey(s.UserID, s.SessionID)
		if _, ok := latest[k]; !ok {
			keys = append(keys, k)
		}
		latest[k] = i
	}

	if ix.closed.Load() {
		return ErrClosed
	}
	start := time.Now()
	// Analysis (in building the documents, see analyzedText) is most of a
	// Put's CPU: it runs on every core, as Bleve's batch would run it, and
	// outside the write lock, so a rebuild analyses its next batch while
	// the previous one is written (see Put).
	type built struct {
		session *document.Document
		chunks  []*document.Document
	}
	docs := make([]built, len(keys))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(keys)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) || ctx.Err() != nil {
					return
				}
				k := keys[i]
				s := sessions[latest[k]]
				switch {
				case withSessions && withChunks:
					docs[i].session, docs[i].chunks = ix.sessionDocs(k, s)
				case withSessions:
					docs[i].session = ix.sessionDoc(k, s, nil)
				default:
					docs[i].chunks = make([]*document.Document, len(s.Chunks))
					for j, c := range s.Chunks {
						docs[i].chunks[j] = chunkDoc(k, s.UserID, c, ix.analyzer.Analyze([]byte(c.Text)), ix.text == nil)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}

	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.closed.Load() {
		return ErrClosed
	}
	var old map[string][]string
	if withChunks {
		var err error
		if old, err = ix.chunkIDs(ctx, keys); err != nil {
			return fmt.Errorf("index: put: find existing chunks: %w", err)
		}
	}
	var sb, cb *bleve.Batch
	if withSessions {
		sb = ix.sessions.NewBatch()
	}
	if withChunks {
		cb = ix.chunks.NewBatch()
	}
	nChunks := 0
	for i, k := range keys {
		if withSessions {
			if err := sb.IndexAdvanced(docs[i].session); err != nil {
				return fmt.Errorf("index: put: %w", err)
			}
		}
		if !withChunks {
			continue
		}
		fresh := make(map[string]struct{}, len(docs[i].chunks))
		for _, d := range docs[i].chunks {
			fresh[d.ID()] = struct{}{}
			if err := cb.IndexAdvanced(d); err != nil {
				return fmt.Errorf("index: put: %w", err)
			}
			nChunks++
		}
		for _, id := range old[k] {
			if _, ok := fresh[id]; !ok {
				cb.Delete(id)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ix.applyBatches(sb, cb); err != nil {
		return fmt.Errorf("index: put: %w", err)
	}
	ix.log.Debug().Int("sessions", len(keys)).Int("chunks", nChunks).Bool("session_docs", withSessions).
		Dur("took", time.Since(start)).Msg("index: put")
	return nil
}

func validate(s Session) error {
	if s.UserID == "" || s.SessionID == "" {
		return errors.New("user id and session id are required")
	}
	seen := make(map[int]struct{}, len(s.Chunks))
	for _, c := range s.Chunks {
		if c.Ordinal < 0 {
			return fmt.Errorf("session %s: chunk ordinal %d is negative", s.SessionID, c.Ordinal)
		}
		if _, dup := seen[c.Ordinal]; dup {
			return fmt.Errorf("session %s: chunk ordinal %d appears twice", s.SessionID, c.Ordinal)
		}
		seen[c.Ordinal] = struct{}{}
	}
	return nil
}

// sessionDocs builds the session document and its chunks' documents. The
// chunks are analysed first, and the session's tokens composed from theirs
// where composeSession can.
func (ix *Index) sessionDocs(key string, s Session) (*document.Document, []*document.Document) {
	chunks := make([]*document.Document, len(s.Chunks))
	segs := make([]segmentTokens, len(s.Chunks))
	composable := true
	for j, c := range s.Chunks {
		text := []byte(c.Text)
		seg, ok := analyzeSegment(ix.analyzer, text)
		if !ok {
			composable = false
			seg.tokens = ix.analyzer.Analyze(text)
		}
		segs[j] = seg
		chunks[j] = chunkDoc(key, s.UserID, c, seg.tokens, ix.text == nil)
	}
	var title segmentTokens
	if composable && s.Title != "" {
		title, composable = analyzeSegment(ix.analyzer, []byte(s.Title))
	}
	if composable {
		if tokens, ok := composeSession(s, ix.repeat, title, segs); ok {
			return ix.sessionDoc(key, s, tokens), chunks
		}
	}
	return ix.sessionDoc(key, s, nil), chunks
}

// sessionDoc builds the session document, analysing its text unless its
// tokens are given. The scored text is sessionText: BM25 then sees one
// length and one term frequency per term, which is what measured best.
func (ix *Index) sessionDoc(key string, s Session, tokens analysis.TokenStream) *document.Document {
	text := []byte(sessionText(s, ix.repeat))
	if tokens == nil {
		tokens = ix.analyzer.Analyze(text)
	}
	d := document.NewDocument(key)
	d.AddField(document.NewTextFieldCustom(fieldUser, nil, []byte(s.UserID), keywordOpts, nil))
	scored := newAnalyzedTokens(fieldText, text, tokens)
	d.AddField(scored)
	d.AddField(lengthField(scored.length))
	if ix.text == nil {
		d.AddField(document.NewTextFieldCustom(fieldTitle, nil, []byte(s.Title), storedOpts, nil))
		d.AddField(document.NewTextFieldCustom(fieldBody, nil, []byte(s.Body), storedOpts, nil))
	}
	return d
}

// sessionText is the scored text of a session document: the title repeat
// times, then the body.
func sessionText(s Session, repeat int) string {
	if s.Title == "" {
		return s.Body
	}
	var b strings.Builder
	b.Grow(repeat*(len(s.Title)+1) + 1 + len(s.Body))
	for range repeat {
		b.WriteString(s.Title)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(s.Body)
	return b.String()
}

// chunkDoc builds a chunk document from its text's tokens, with its text
// stored when stored is set.
func chunkDoc(key, userID string, c Chunk, tokens analysis.TokenStream, stored bool) *document.Document {
	d := document.NewDocument(chunkID(key, c.Ordinal))
	d.AddField(document.NewTextFieldCustom(fieldUser, nil, []byte(userID), keywordOpts, nil))
	d.AddField(document.NewTextFieldCustom(fieldSession, nil, []byte(key), keywordOpts, nil))
	scored := newAnalyzedTokens(fieldText, []byte(c.Text), tokens)
	d.AddField(scored)
	d.AddField(lengthField(scored.length))
	if stored {
		d.AddField(document.NewTextFieldCustom(fieldBody, nil, []byte(c.Text), storedOpts, nil))
	}
	return d
}

// chunkIDs returns the ids of the chunk documents of the given session keys
// that are in the chunk index now, grouped by session key.
func (ix *Index) chunkIDs(ctx context.Context, keys []string) (map[string][]string, error) {
	if n, err := ix.chunks.DocCount(); err != nil || n == 0 {
		return nil, err
	}
	qs := make([]query.Query, len(keys))
	for i, k := range keys {
		qs[i] = termQuery(fieldSession, k)
	}
	q := query.NewDisjunctionQuery(qs)
	size := 16 * len(keys)
	for {
		req := bleve.NewSearchRequestOptions(q, size, 0, false)
		req.Score = "none"
		res, err := ix.chunks.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		if res.Total > uint64(len(res.Hits)) {
			size = int(res.Total)
			continue
		}
		out := make(map[string][]string)
		for _, h := range res.Hits {
			k, _, ok := splitChunkID(h.ID)
			if !ok {
				return nil, fmt.Errorf("malformed chunk document id %q", h.ID)
			}
			out[k] = append(out[k], h.ID)
		}
		return out, nil
	}
}

// applyBatches executes the session and chunk batches concurrently: each
// builds its in-memory segment on the calling goroutine, so running them side
// by side uses two cores. A nil batch is skipped.
func (ix *Index) applyBatches(sb, cb *bleve.Batch) error {
	var wg sync.WaitGroup
	var cerr, serr error
	if cb != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cerr = ix.chunks.Batch(cb); cerr != nil {
				cerr = fmt.Errorf("chunks: %w", cerr)
			}
		}()
	}
	if sb != nil {
		if serr = ix.sessions.Batch(sb); serr != nil {
			serr = fmt.Errorf("sessions: %w", serr)
		}
	}
	wg.Wait()
	return errors.Join(serr, cerr)
}

// Delete removes every document (session and chunks) of the given sessions
// of one user. Unknown sessions are ignored.
func (ix *Index) Delete(ctx context.Context, userID string, sessionIDs []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if userID == "" {
		return errors.New("index: delete: user id is required")
	}
	if len(sessionIDs) == 0 {
		return nil
	}
	keys := make([]string, 0, len(sessionIDs))
	for _, id := range sessionIDs {
		if id != "" {
			keys = append(keys, docKey(userID, id))
		}
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.closed.Load() {
		return ErrClosed
	}
	old, err := ix.chunkIDs(ctx, keys)
	if err != nil {
		return fmt.Errorf("index: delete: find chunks: %w", err)
	}
	sb, cb := ix.sessions.NewBatch(), ix.chunks.NewBatch()
	for _, k := range keys {
		sb.Delete(k)
		for _, id := range old[k] {
			cb.Delete(id)
		}
	}
	if err := ix.applyBatches(sb, cb); err != nil {
		return fmt.Errorf("index: delete: %w", err)
	}
	ix.log.Debug().Int("sessions", len(keys)).Msg("index: delete")
	return nil
}

// Count returns the number of session and chunk documents over all users.
func (ix *Index) Count(ctx context.Context) (sessions, chunks uint64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	if ix.closed.Load() {
		return 0, 0, ErrClosed
	}
	if sessions, err = ix.sessions.DocCount(); err != nil {
		return 0, 0, fmt.Errorf("index: count sessions: %w", err)
	}
	if chunks, err = ix.chunks.DocCount(); err != nil {
		return 0, 0, fmt.Errorf("index: count chunks: %w", err)
	}
	return sessions, chunks, nil
}

// Document ids. A session document's id is its key: the length of the user
// id, ':', the user id, then the session id. The length prefix makes the
// split unambiguous whatever characters the ids contain, and puts the owner
// in every id, so a hit can be checked against the querying user without
// loading stored fields. A chunk document's id is the key, '#' and the
// ordinal in decimal.

func docKey(userID, sessionID string) string {
	return strconv.Itoa(len(userID)) + ":" + userID + sessionID
}

func chunkID(key string, ordinal int) string {
	return key + "#" + strconv.Itoa(ordinal)
}

// splitKey is the inverse of docKey.
func splitKey(key string) (userID, sessionID string, ok bool) {
	colon := strings.IndexByte(key, ':')
	if colon < 1 {
		return "", "", false
	}
	n, err := strconv.Atoi(key[:colon])
	if err != nil || n < 0 || colon+1+n > len(key) {
		return "", "", false
	}
	return key[colon+1 : colon+1+n], key[colon+1+n:], true
}

// splitChunkID is the inverse of chunkID.
func splitChunkID(id string) (key string, ordinal int, ok bool) {
	hash := strings.LastIndexByte(id, '#')
	if hash < 0 {
		return "", 0, false
	}
	ord, err := strconv.Atoi(id[hash+1:])
	if err != nil || ord < 0 {
		return "", 0, false
	}
	return id[:hash], ord, true
}
