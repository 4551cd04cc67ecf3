package index

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
)

// Kind selects which documents a query searches.
type Kind int

const (
	// Sessions searches session documents (title + body); one hit per session.
	Sessions Kind = iota
	// Chunks searches chunk documents; a session may have several hits.
	Chunks
)

func (k Kind) String() string {
	switch k {
	case Sessions:
		return "sessions"
	case Chunks:
		return "chunks"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Limits of Query.Limit.
const (
	DefaultLimit = 20
	MaxLimit     = 1000
)

// Query is one full-text search of one user's documents.
type Query struct {
	// UserID is required: only this user's documents can match.
	UserID string
	// Text is what the user typed; not Bleve query syntax. Words are OR'ed
	// and ranked by BM25, "quoted phrases" must match, -word and -"phrase"
	// exclude. Other punctuation is ignored. See MaxQueryTerms.
	Text string
	Kind Kind
	// Limit is the number of hits wanted: 0 means DefaultLimit, larger
	// than MaxLimit means MaxLimit.
	Limit int
	// Explain fills Hit.Snippet and Hit.MatchedIn. It loads the hits' stored
	// text, so it costs more than a plain search.
	Explain bool
}

// Hit is one search result.
type Hit struct {
	SessionID string
	Ordinal   int // chunk ordinal for Kind Chunks, -1 for sessions
	Score     float64
	// Snippet (Explain only) is a fragment of the matched text, HTML-escaped,
	// with <mark>...</mark> around the words that match the query. It is safe
	// to insert into HTML as is.
	Snippet string
	// MatchedIn (Explain only) lists where query words occur: "title" and/or
	// "messages" for sessions, "messages" for chunks.
	MatchedIn []string
}

// Search returns the best-scoring documents of q.Kind owned by q.UserID,
// best first (equal scores by session id, then ordinal). It returns an error
// wrapping ErrBadQuery when q.Text has nothing to search for.
//
// A search does not read stored fields unless q.Explain is set: session id
// and ordinal are decoded from the document id. Plain words are evaluated
// directly on the index segments (searchWords); phrases and exclusions go
// through Bleve's query (searchBleve). Both rank the same way.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.UserID == "" {
		return nil, errors.New("index: search: user id is required")
	}
	var idx bleve.Index
	switch q.Kind {
	case Sessions:
		idx = ix.sessions
	case Chunks:
		idx = ix.chunks
	default:
		return nil, fmt.Errorf("index: search: unknown kind %d", int(q.Kind))
	}
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	pq, err := parseQuery(ix.analyzer, q.Text)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	lengths := &ix.sessionLengths
	if q.Kind == Chunks {
		lengths = &ix.chunkLengths
	}
	stored := q.Explain && ix.text == nil // load the hits' stored text
	// The total is for the debug log only: counting the documents pruning
	// skipped costs a union of posting bitmaps.
	ev := ix.log.Debug()
	countAll := ev.Enabled()
	ev.Discard()
	docs, total, err := searchWords(ctx, idx, lengths, q.UserID, pq, limit, stored, evaluation{countAll: countAll})
	if err != nil {
		return nil, ix.searchErr(ctx, q.Kind, err)
	}
	var terms map[string]struct{}
	var texts map[string]Session // with a TextSource: the hits' sessions
	if q.Explain {
		terms = pq.matchTerms()
		if ix.text != nil && len(docs) > 0 {
			if texts, err = ix.hitTexts(ctx, q.UserID, q.Kind, docs); err != nil {
				return nil, err
			}
		}
	}
	hits := make([]Hit, 0, len(docs))
	for _, d := range docs {
		key, ord := d.id, -1
		if q.Kind == Chunks {
			var ok bool
			if key, ord, ok = splitChunkID(d.id); !ok {
				return nil, fmt.Errorf("index: search: malformed document id %q", d.id)
			}
		}
		owner, sessionID, ok := splitKey(key)
		if !ok {
			return nil, fmt.Errorf("index: search: malformed document id %q", d.id)
		}
		if owner != q.UserID { // cannot happen: both paths match only the user's documents
			return nil, errors.New("index: search: a document of another user matched")
		}
		hit := Hit{SessionID: sessionID, Ordinal: ord, Score: d.score}
		if q.Explain {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			title, body := d.title, d.body
			if texts != nil {
				title, body = textOf(texts[sessionID], ord)
			}
			hit.Snippet, hit.MatchedIn = explain(ix.analyzer, terms, title, body)
		}
		hits = append(hits, hit)
	}
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.SessionID != b.SessionID {
			return a.SessionID < b.SessionID
		}
		return a.Ordinal < b.Ordinal
	})
	ix.log.Debug().Stringer("kind", q.Kind).Int("hits", len(hits)).Uint64("total", total).
		Dur("took", time.Since(start)).Msg("index: search")
	return hits, nil
}

// hitTexts asks the TextSource for the sessions of the hits, in one call.
func (ix *Index) hitTexts(ctx context.Context, userID string, kind Kind, docs []docHit) (map[string]Session, error) {
	ids := make([]string, 0, len(docs))
	seen := make(map[string]bool, len(docs))
	for _, d := range docs {
		key := d.id
		if kind == Chunks {
			key, _, _ = splitChunkID(d.id)
		}
		if _, sid, ok := splitKey(key); ok && !seen[sid] {
			seen[sid] = true
			ids = append(ids, sid)
		}
	}
	// A session snippet reads no further into the body than this (see
	// findMatches and fragment); a chunk's needs the chunks.
	bodyBytes := 0
	if kind == Sessions {
		bodyBytes = maxScanBytes + snippetBytes + utf8.UTFMax
	}
	texts, err := ix.text.SessionText(ctx, userID, ids, bodyBytes)
	if err != nil {
		return nil, fmt.Errorf("index: search: text of the hits: %w", err)
	}
	if texts == nil {
		texts = map[string]Session{}
	}
	return texts, nil
}

// textOf is the text a hit's snippet is made from: the session's title and
// body, or (ordinal >= 0) the chunk's text. A session or chunk that is gone
// from the source gives none.
func textOf(s Session, ordinal int) (title, body string) {
	if ordinal < 0 {
		return s.Title, s.Body
	}
	for _, c := range s.Chunks {
		if c.Ordinal == ordinal {
			return "", c.Text
		}
	}
	return "", ""
}

// docHit is one document of a result, as the two evaluation paths return
// it: the Bleve document id, the score, and the stored text when asked for.
type docHit struct {
	id          string
	score       float64
	title, body string
}

func (ix *Index) searchErr(ctx context.Context, kind Kind, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, bleve.ErrorIndexClosed) {
		return ErrClosed
	}
	return fmt.Errorf("index: search %s: %w", kind, err)
}

// frequentTermShare is the share of an index's documents above which a
// query term counts as frequent (see wordsQuery). Measured on SciFact and
// CoSQA, where 0.1 leaves nDCG@10 unchanged. Indexes under
// minDocsForFrequent documents are fast enough without a plan.
const (
	frequentTermShare  = 0.1
	minDocsForFrequent = 1000
)

// wordsPlan says which documents the plain words may match beyond "any of
// them" (see wordsQuery). The zero value restricts nothing.
type wordsPlan struct {
	selective map[string]bool // non-nil: a document must contain one of these terms
}

// planFromFrequencies decides the plan from the number of documents n
// and each plain word's document frequency (over all users, like the BM25
// statistics): when the words mix frequent ones (in more than
// frequentTermShare of the documents) and selective ones (present, but not
// frequent), a document must hold a selective one. Queries whose words are
// all frequent get no plan: requiring all of them was measured, and
// intersecting lists that each cover most of the index costs as much as
// scoring their union.
func planFromFrequencies(n uint64, terms []string, dfs []uint64) wordsPlan {
	if len(terms) < 2 || n < minDocsForFrequent {
		return wordsPlan{}
	}
	limit := uint64(frequentTermShare * float64(n))
	selective := make(map[string]bool)
	var anyFrequent bool
	for i, t := range terms {
		switch df := dfs[i]; {
		case df > limit:
			anyFrequent = true
		case df > 0:
			selective[t] = true
		}
	}
	if !anyFrequent || len(selective) == 0 {
		return wordsPlan{}
	}
	return wordsPlan{selective: selective}
}
