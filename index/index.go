package index

import (
	"cmp"
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
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	bleveindex "github.com/blevesearch/bleve_index_api"
	"github.com/rs/zerolog"
)

// DefaultTitleBoost is the title weight used when Options.TitleBoost is 0:
// the title is written this many times into the scored text. Chosen by
// measurement on SciFact train (see the package doc).
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
	fieldUser   = "userId" // keyword: owner of the document; every query requires it
	fieldText   = "text"   // analysed, not stored, no positions: the scored text (title + body)
	fieldTitle  = "title"  // stored only, without a TextSource: for snippets and phrase checks
	fieldBody   = "body"   // stored only, without a TextSource
	fieldChunk  = "chunk"  // stored only, without a TextSource: one per chunk, "ordinal\tbreaks\ttext"
	fieldBreaks = "breaks" // stored only, without a TextSource: Session.Breaks
	fieldPairs  = "pairs"  // keyword-like, not scored: the adjacent word pairs of each message (pairs.go)
)

// formatVersion changes whenever documents, mapping or analysis change in a
// way that needs a rebuild.
// Version 2: BM25 lengths in words and the length field (scoring.go).
// Version 3: no term vectors and no chunk index; chunk statistics on the
// session documents (fieldChunks, fieldChunkLength).
// Version 4: the word pairs of each message (fieldPairs), for phrases.
// Version 5: the pairs' positions, so that phrases need no text.
// Version 6: each pair's term starts with its owner (ownerPrefix).
// Version 7: so does each term of the scored text (textTerm).
const formatVersion = 7

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
	// Text, when set, is where the index reads the text of its hits: for
	// snippets, for checking the rare phrase its pairs do not decide and
	// for scoring chunks (there are no chunk documents). The index then
	// stores no text of its own: the records it is derived from hold the
	// same text anyway. Without it, the title, body and chunks are stored
	// with each session document (tests, scratch indexes).
	Text TextSource
	// VolumeBytes is the body size above which a session is indexed as
	// several documents, its volumes (volumes.go); 0 means
	// DefaultVolumeBytes.
	VolumeBytes int
}

// TextSource gives the current text of indexed sessions: snippets, phrase
// checks and chunk scores are computed from it.
type TextSource interface {
	// SessionText returns the user's sessions among ids, as Put would be
	// given them now (Title, Body and Chunks), keyed by session id. Sessions
	// that no longer exist are left out. With bodyBytes > 0 only Title and
	// the first bodyBytes of Body are needed (a longer Body is fine), and
	// Chunks are not.
	SessionText(ctx context.Context, userID string, ids []string, bodyBytes int) (map[string]Session, error)
}

// MessageSource is what a TextSource may also offer for phrase checks:
// the user's sessions among ids read a text at a time, so that a check
// stops at the message that decides it rather than reading and analysing
// the whole session.
type MessageSource interface {
	// EachText calls fn for each of the user's sessions among ids that
	// exists, with its title (first, even when empty) and then the text of
	// each of its messages, in order: the pieces of the Body SessionText
	// gives between its Breaks. fn returns false to skip the rest of that
	// session.
	EachText(ctx context.Context, userID string, ids []string, fn func(id, text string) bool) error
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

// Index is the full-text index of sessions. It is safe for concurrent use:
// searches run in parallel with each other and with writes; Put and Delete
// are serialised against each other.
//
// One Bleve index of session documents lives under the directory. It holds
// what BM25 scores and what phrases need: postings with frequencies and
// norms, and each message's word pairs with their positions (pairs.go); no
// positions of the scored words and no text. Chunks (Kind Chunks) are
// scored from the text of the best sessions (see searchChunks): positions
// and chunk documents made the index 3.4 times the text it indexes (docs/index.md).
// Results and
// scores are per user: the BM25 statistics are computed over the querying
// user's live documents only (scoring.go).
//
// A search sees a consistent snapshot that includes every Put and Delete
// that returned before it started; the text it reads for phrases and
// chunks is the TextSource's at that moment.
type Index struct {
	sessions bleve.Index
	// Length totals of the segments, for BM25's average lengths.
	sessionLengths lengthCache
	analyzer       analysis.Analyzer
	repeat         int        // times the title is written into the scored text
	text           TextSource // the hits' text: Options.Text, or the stored fields
	stored         bool       // documents carry their text (no Options.Text)
	log            zerolog.Logger
	checkBudget    int // tests: sessions a search may read for phrase checks; 0 is maxChecked

	volumeBytes int          // a longer session is indexed as volumes (volumes.go)
	analysed    atomic.Int64 // bytes of text Put analysed (tests count work with it)

	wmu    sync.Mutex // serialises Put, Delete and Close
	closed atomic.Bool
	warm   *warmer // builds new segments' blocks in the background (warm.go)
}

// Open opens the index stored under dir, creating it (and dir) when it does
// not exist. The caller must Close it. Only one process may open a directory
// at a time.
func Open(dir string, opts Options) (*Index, error) {
	return open(dir, opts, nil)
}

// open is Open with Bleve's runtime configuration config (nil: Bleve's
// defaults; tests set a merge plan).
func open(dir string, opts Options, config map[string]any) (*Index, error) {
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
	if opts.VolumeBytes < 0 {
		return nil, fmt.Errorf("index: VolumeBytes %d: must be 0 (default) or more", opts.VolumeBytes)
	}
	ix := &Index{analyzer: a, repeat: repeat, text: opts.Text, log: opts.Logger, volumeBytes: cmp.Or(opts.VolumeBytes, DefaultVolumeBytes)}
	var stored []string
	if ix.text == nil {
		ix.stored, stored = true, []string{fieldTitle, fieldBody, fieldChunk, fieldBreaks}
	}
	var created bool
	ix.sessions, created, err = openOrCreate(filepath.Join(dir, "sessions.bleve"), newMapping(stored), config)
	if err != nil {
		return nil, err
	}
	if ix.stored {
		ix.text = storedText{ix.sessions}
	}
	if err := ix.checkMeta(created); err != nil {
		_ = ix.Close()
		return nil, err
	}
	ix.startWarmer()
	return ix, nil
}

func openOrCreate(path string, m mapping.IndexMapping, config map[string]any) (idx bleve.Index, created bool, err error) {
	idx, err = bleve.OpenUsing(path, config)
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		idx, err = bleve.NewUsing(path, m, bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, config)
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

// newMapping describes the session documents: the keyword fields, the
// scored text field and the stored-only fields. Documents are built directly
// (sessionDoc) with the same options (TestFieldOptions checks that), so the
// stored mapping stays a true description of the index, but for one thing
// it cannot say: the terms of the scored text and of the pairs start with
// their owner's prefix (ownerPrefix). Nothing is indexed dynamically,
// there is no _all field, and no field has doc values.
func newMapping(stored []string) *mapping.IndexMappingImpl {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bleveindex.BM25Scoring
	im.DefaultAnalyzer = AnalyzerName
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	dm := bleve.NewDocumentStaticMapping()
	for _, name := range []string{fieldUser, fieldLength, fieldChunks, fieldChunkLength, fieldPairs} {
		dm.AddFieldMappingsAt(name, keywordField())
	}
	dm.AddFieldMappingsAt(fieldText, textField())
	dm.AddFieldMappingsAt(fieldVolume, storedField())
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

// textField: the scored text, with frequencies and norms only. Positions
// (term vectors) were four fifths of the postings; phrases are checked on
// the text instead (searchSessions).
func textField() *mapping.FieldMapping {
	fm := bleve.NewTextFieldMapping()
	fm.Analyzer = AnalyzerName
	fm.Store, fm.DocValues, fm.IncludeInAll, fm.IncludeTermVectors = false, false, false, false
	return fm
}

// storedField: kept for snippets and checks, not searchable.
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
	textOpts    = bleveindex.IndexField
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
	if ix.warm != nil {
		ix.warm.stop()
	}
	if err := ix.sessions.Close(); err != nil {
		return fmt.Errorf("index: close: %w", err)
	}
	return nil
}

// Session is everything indexed for one session: its title, its body and
// the chunks its body is cut into.
type Session struct {
	UserID, SessionID string
	Title             string
	// Body is the searchable message text of the session (already filtered
	// by the caller), messages joined by "\n\n".
	Body string
	// Breaks are the byte offsets in Body at which a message other than
	// the first begins, increasing: the text between two is one message's.
	// A quoted phrase matches within the title or within one message,
	// never across a break. Nil: Body is one message.
	Breaks []int
	// Chunks are message-level chunks (one per user->assistant exchange,
	// split when long), built by the caller. Ordinals must be distinct and
	// non-negative. The index keeps only their number and total length
	// (for the chunk scores' average length); Kind Chunks reads their text
	// from the TextSource.
	Chunks []Chunk
	// Volume is the number of the volume Body begins (volumes.go): 0 for
	// the whole session; n > 0 when Body is the session's text from the
	// start of its volume n on, the volumes before n being indexed and
	// unchanged (the pipeline appending to a long session).
	Volume int
	// Cuts are the byte offsets in Body at which a volume may begin,
	// increasing, each also a break (the pipeline gives the starts of its
	// exchanges); nil: at any break.
	Cuts []int
	// More says that Body stops short of the session's end, at a cut: the
	// session's text goes on after it (the pipeline reading a long
	// session's tail a part at a time). Put then writes only the volumes
	// Body holds whole (writtenVolumes) and leaves the session's later
	// volumes as they are; LastVolume says where the next part begins.
	More bool
}

// Chunk is one message-level piece of a session.
type Chunk struct {
	Ordinal int // 0..n-1 within the session
	Text    string
	// Breaks are the byte offsets in Text at which another message's text
	// begins, increasing (as Session.Breaks).
	Breaks []int
}

// Put indexes the sessions in one Bleve batch. It is idempotent: it
// replaces the document a previous Put wrote for the same (UserID,
// SessionID). When a session appears twice in the slice, the later one
// wins.
//
// Batches of a few hundred sessions amortise the per-batch cost (a
// synchronous flush to disk); 200-1000 is a good range, 500 a good default
// for rebuilds. Put analyses its sessions before taking the write lock, so
// two Puts called at once overlap: one analyses while the other writes (a
// rebuild keeps two in flight). Each chunk is analysed once and the
// session's tokens composed from its title's and chunks' (composeSession).
func (ix *Index) Put(ctx context.Context, sessions []Session) error {
	return ix.put(ctx, sessions)
}

// PutSessions is Put. The pipeline's search queue calls it; with no chunk
// documents, a session document is all there is to write.
func (ix *Index) PutSessions(ctx context.Context, sessions []Session) error {
	return ix.put(ctx, sessions)
}

// PutChunks writes nothing: chunks are scored from the sessions' text at
// query time, and their statistics are written with the session document.
// It validates its input like Put, so callers see the same errors.
func (ix *Index) PutChunks(ctx context.Context, sessions []Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, s := range sessions {
		if err := validate(s); err != nil {
			return fmt.Errorf("index: put chunks of session %d: %w", i, err)
		}
	}
	if ix.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (ix *Index) put(ctx context.Context, sessions []Session) error {
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
	// What to write: each session's volumes, those of a long session only
	// where their content changed, and what to delete: the volumes a
	// session no longer has.
	var writes []volumeWrite
	var stale []string
	for _, k := range keys {
		w, d, err := ix.planVolumes(sessions[latest[k]])
		if err != nil {
			return fmt.Errorf("index: put: %w", err)
		}
		writes, stale = append(writes, w...), append(stale, d...)
	}
	// Analysis (in building the documents, see analyzedText) is most of a
	// Put's CPU: it runs on every core, as Bleve's batch would run it, and
	// outside the write lock, so a rebuild analyses its next batch while
	// the previous one is written (see Put).
	docs := make([]*document.Document, len(writes))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(writes)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(writes) || ctx.Err() != nil {
					return
				}
				w := writes[i]
				docs[i] = ix.sessionDocOf(w.key, w.s)
				if w.hash != "" {
					docs[i].AddField(document.NewTextFieldCustom(fieldVolume, nil, []byte(w.hash), storedOpts, nil))
				}
				ix.analysed.Add(int64(len(w.s.Title) + len(w.s.Body)))
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
	b := ix.sessions.NewBatch()
	for _, d := range docs {
		if err := b.IndexAdvanced(d); err != nil {
			return fmt.Errorf("index: put: %w", err)
		}
	}
	for _, id := range stale {
		b.Delete(id)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ix.sessions.Batch(b); err != nil {
		return fmt.Errorf("index: put: %w", err)
	}
	ix.warm.wake()
	ix.log.Debug().Int("sessions", len(keys)).Int("documents", len(writes)).Dur("took", time.Since(start)).Msg("index: put")
	return nil
}

// volumeWrite is one volume document Put writes: its id, its content and,
// for a session of several volumes, its hash (fieldVolume).
type volumeWrite struct {
	key  string
	s    Session
	hash string
}

// planVolumes returns the volume documents Put writes for s and the ids of
// those it deletes. A session of one volume is written whole, as it was
// before volumes; one of several, only the volumes whose hash differs from
// the stored one. The stored volumes are looked up for a session of
// several volumes, and for one of more than a quarter of the volume size,
// which may have had several: a session's text shrinks only by edits and
// redaction, and one edited down from several volumes to under a quarter
// of one keeps its stale volumes until it is deleted or the index rebuilt
// (the look-up would cost every short session's rewrite and rebuild).
// A part of a session (Session.More) has its whole volumes written and
// none deleted.
func (ix *Index) planVolumes(s Session) (writes []volumeWrite, stale []string, err error) {
	vols, whole := ix.writtenVolumes(s)
	vols = vols[:whole]
	multi := len(vols) > 1 || s.Volume > 0 || s.More
	var stored []string // from volume s.Volume on
	if multi || len(s.Body) > ix.volumeBytes/4 {
		if stored, err = ix.storedVolumes(s.UserID, s.SessionID, s.Volume); err != nil {
			return nil, nil, fmt.Errorf("session %s: stored volumes: %w", s.SessionID, err)
		}
	}
	if !multi {
		writes = append(writes, volumeWrite{key: docKey(s.UserID, s.SessionID), s: s})
	} else {
		for n, v := range vols {
			h := volumeHash(v)
			if n < len(stored) && stored[n] == h {
				continue
			}
			writes = append(writes, volumeWrite{key: volumeKey(s.UserID, s.SessionID, s.Volume+n), s: v, hash: h})
		}
	}
	for n := len(vols); n < len(stored) && !s.More; n++ {
		stale = append(stale, volumeKey(s.UserID, s.SessionID, s.Volume+n))
	}
	return writes, stale, nil
}

func validate(s Session) error {
	if s.UserID == "" || s.SessionID == "" {
		return errors.New("user id and session id are required")
	}
	if strings.IndexByte(s.SessionID, 0) >= 0 {
		return errors.New("a session id must not hold a NUL byte") // volumeKey's separator
	}
	if err := validBreaks(s.Breaks, len(s.Body)); err != nil {
		return fmt.Errorf("session %s: body: %w", s.SessionID, err)
	}
	if err := validBreaks(s.Cuts, len(s.Body)); err != nil {
		return fmt.Errorf("session %s: volume cuts: %w", s.SessionID, err)
	}
	if s.Volume < 0 {
		return fmt.Errorf("session %s: volume %d is negative", s.SessionID, s.Volume)
	}
	seen := make(map[int]struct{}, len(s.Chunks))
	for _, c := range s.Chunks {
		if err := validBreaks(c.Breaks, len(c.Text)); err != nil {
			return fmt.Errorf("session %s: chunk %d: %w", s.SessionID, c.Ordinal, err)
		}
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

// validBreaks checks message breaks in a text of n bytes: increasing,
// within it, none at its start.
func validBreaks(breaks []int, n int) error {
	last := 0
	for _, b := range breaks {
		if b <= last || b >= n {
			return fmt.Errorf("message break %d out of order or outside the text (%d bytes)", b, n)
		}
		last = b
	}
	return nil
}

// sessionDocOf builds the session document. The chunks are analysed first
// (their lengths are the chunk statistics), and the session's tokens
// composed from theirs where composeSession can.
func (ix *Index) sessionDocOf(key string, s Session) *document.Document {
	segs := make([]segmentTokens, len(s.Chunks))
	composable := true
	chunkTokens := 0
	for j, c := range s.Chunks {
		text := []byte(c.Text)
		seg, ok := analyzeSegment(ix.analyzer, text)
		if !ok {
			composable = false
			seg.tokens = ix.analyzer.Analyze(text)
		}
		segs[j] = seg
		chunkTokens += lengthOf(seg.tokens)
	}
	var title segmentTokens
	if composable && s.Title != "" {
		title, composable = analyzeSegment(ix.analyzer, []byte(s.Title))
	}
	var tokens analysis.TokenStream
	if composable {
		if composed, ok := composeSession(s, ix.repeat, title, segs); ok {
			tokens = composed
		}
	}
	return ix.sessionDoc(key, s, tokens, len(s.Chunks), chunkTokens)
}

// sessionDoc builds the session document, analysing its text unless its
// tokens are given. The scored text is sessionText: BM25 then sees one
// length and one term frequency per term, which is what measured best.
func (ix *Index) sessionDoc(key string, s Session, tokens analysis.TokenStream, chunks, chunkTokens int) *document.Document {
	text := []byte(sessionText(s, ix.repeat))
	if tokens == nil {
		tokens = ix.analyzer.Analyze(text)
	}
	d := document.NewDocument(key)
	d.AddField(document.NewTextFieldCustom(fieldUser, nil, []byte(s.UserID), keywordOpts, nil))
	scored := newAnalyzedTokens(fieldText, s.UserID, text, tokens)
	d.AddField(scored)
	d.AddField(numberField(fieldLength, scored.length))
	d.AddField(numberField(fieldChunks, chunks))
	d.AddField(numberField(fieldChunkLength, chunkTokens))
	d.AddField(newPairsField(s.UserID, tokens, ix.segmenter(s)))
	if ix.stored {
		d.AddField(document.NewTextFieldCustom(fieldTitle, nil, []byte(s.Title), storedOpts, nil))
		d.AddField(document.NewTextFieldCustom(fieldBody, nil, []byte(s.Body), storedOpts, nil))
		d.AddField(document.NewTextFieldCustom(fieldBreaks, nil, []byte(formatBreaks(s.Breaks)), storedOpts, nil))
		for _, c := range s.Chunks {
			v := strconv.Itoa(c.Ordinal) + "\t" + formatBreaks(c.Breaks) + "\t" + c.Text
			d.AddField(document.NewTextFieldCustom(fieldChunk, nil, []byte(v), storedOpts, nil))
		}
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

// storedText is the TextSource of an index without one: the text stored
// with each session document.
type storedText struct{ idx bleve.Index }

func (st storedText) SessionText(ctx context.Context, userID string, ids []string, _ int) (map[string]Session, error) {
	out := make(map[string]Session, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, err := st.idx.Document(docKey(userID, id))
		if err != nil {
			return nil, err
		}
		if d == nil {
			continue
		}
		s := Session{UserID: userID, SessionID: id}
		d.VisitFields(func(f bleveindex.Field) {
			v := string(f.Value())
			switch f.Name() {
			case fieldTitle:
				s.Title = v
			case fieldBody:
				s.Body = v
			case fieldBreaks:
				s.Breaks = parseBreaks(v)
			case fieldChunk:
				ord, rest, _ := strings.Cut(v, "\t")
				breaks, text, _ := strings.Cut(rest, "\t")
				if n, err := strconv.Atoi(ord); err == nil {
					s.Chunks = append(s.Chunks, Chunk{Ordinal: n, Text: text, Breaks: parseBreaks(breaks)})
				}
			}
		})
		out[id] = s
	}
	return out, nil
}

// Delete removes the documents of the given sessions of one user. Unknown
// sessions are ignored.
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
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.closed.Load() {
		return ErrClosed
	}
	b := ix.sessions.NewBatch()
	for _, id := range sessionIDs {
		if id == "" {
			continue
		}
		b.Delete(docKey(userID, id))
		// A long session's other volumes (see volumes.go).
		stored, err := ix.storedVolumes(userID, id, 0)
		if err != nil {
			return fmt.Errorf("index: delete: %w", err)
		}
		for n := 1; n < len(stored); n++ {
			b.Delete(volumeKey(userID, id, n))
		}
	}
	if err := ix.sessions.Batch(b); err != nil {
		return fmt.Errorf("index: delete: %w", err)
	}
	ix.log.Debug().Int("sessions", len(sessionIDs)).Msg("index: delete")
	return nil
}

// Count returns the number of sessions over all users and the number of
// chunks they hold.
func (ix *Index) Count(ctx context.Context) (sessions, chunks uint64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	if ix.closed.Load() {
		return 0, 0, ErrClosed
	}
	err = ix.snapshot(func(snap *scorch.IndexSnapshot) error {
		t, err := ix.sessionLengths.totals(snap.Segments())
		sessions, chunks = t.docs, t.chunks
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("index: count: %w", err)
	}
	return sessions, chunks, nil
}

// snapshot calls fn with a snapshot of the sessions index.
func (ix *Index) snapshot(fn func(*scorch.IndexSnapshot) error) (err error) {
	adv, err := ix.sessions.Advanced()
	if err != nil {
		return err
	}
	r, err := adv.Reader()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return fmt.Errorf("index is %T, not a scorch index", r)
	}
	return fn(snap)
}

// Document ids. A session document's id is its key: the owner's prefix
// (ownerPrefix), then the session id. The length prefix makes the split
// unambiguous whatever characters the ids contain, and puts the owner in
// every id, so a hit can be checked against the querying user without
// loading stored fields.

func docKey(userID, sessionID string) string {
	return ownerPrefix(userID) + sessionID
}

// ownerPrefix starts what the index writes under a user's name: the
// document ids (docKey), the terms of the scored text (textTerm) and of
// the pairs (pairTerm). It is the length of the id, ':' and the id, so
// that no user's prefix starts another's and each term's posting list
// holds one user's documents.
func ownerPrefix(userID string) string { return strconv.Itoa(len(userID)) + ":" + userID }

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
