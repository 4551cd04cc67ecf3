package runner

// The session-score experiment (--session-score): how a session's
// full-text score should follow from its parts. Real sessions run to
// hundreds of messages and megabytes, and one BM25 document of the whole
// session (what the index scores today) leaves it to length normalisation
// whether a long session that holds the answer in one exchange beats a
// short one that mentions the words in passing. Each variant re-ranks the
// best sessions of the whole-session ranking with the index's own chunk
// scores (index.Chunks: BM25 of each message chunk, with the sessions' idf
// and the mean chunk length), so it measures what the index can compute,
// not a scorer of the bench's own.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ranking"
)

// SessionScores are the variants --session-score accepts; each is measured
// as the mode "fulltext:<variant>".
var SessionScores = []string{"whole", "best-chunk", "whole+best-chunk", "best-chunk+top3"}

// sessionScorePrefix names the experiment's modes.
const sessionScorePrefix = "fulltext:"

// ParseSessionScores parses --session-score: a comma-separated list of
// SessionScores, or "" for none.
func ParseSessionScores(s string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !slices.Contains(SessionScores, v) {
			return nil, fmt.Errorf("unknown session score %q (known: %s)", v, strings.Join(SessionScores, ", "))
		}
		if !slices.Contains(out, sessionScorePrefix+v) {
			out = append(out, sessionScorePrefix+v)
		}
	}
	return out, nil
}

// sessionScoreSearch answers the experiment's modes: the whole-session
// ranking (index.Sessions, k deep) with its best sessions (the ones
// index.Chunks reads, at most 50) re-ranked by the variant's score from
// their chunks; the rest keep their whole-session order.
//
// The chunk hits of a query are kept for the other variants: on long
// sessions they are the expensive part (every chunk of 50 sessions read and
// analysed), and every variant asks for the same. They are computed under
// runCtx, the run's context, not the query's: the experiment measures
// ranking, and on a busy machine reading 50 long sessions can take longer
// than a query's time limit; the latency records what it took.
func sessionScoreSearch(runCtx context.Context, text ranking.TextSearcher, userID string, docOf map[string]string) bench.SearchFunc {
	var mu sync.Mutex
	chunkHits := map[string][]index.Hit{}
	return func(ctx context.Context, mode, q string, k int) ([]string, error) {
		variant, ok := strings.CutPrefix(mode, sessionScorePrefix)
		if !ok || !slices.Contains(SessionScores, variant) {
			return nil, fmt.Errorf("unknown mode %q", mode)
		}
		whole, err := text.Search(ctx, index.Query{UserID: userID, Text: q, Kind: index.Sessions, Limit: k})
		if errors.Is(err, index.ErrBadQuery) {
			return nil, bench.ErrNoTerms
		}
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(whole))
		for i, h := range whole {
			ids[i] = h.SessionID
		}
		if variant != "whole" {
			mu.Lock()
			chunks, ok := chunkHits[q]
			mu.Unlock()
			if !ok {
				chunks, err = text.Search(runCtx, index.Query{UserID: userID, Text: q, Kind: index.Chunks, Limit: index.MaxLimit})
				if err != nil && !errors.Is(err, index.ErrBadQuery) {
					return nil, err
				}
				mu.Lock()
				chunkHits[q] = chunks
				mu.Unlock()
			}
			ids = rescore(whole, chunks, variant)
		}
		return mapIDs(ids, docOf), nil
	}
}

// rescore re-ranks the sessions of whole that have chunk hits by the
// variant's score; sessions without keep their order after them. Ties keep
// the whole-session order.
func rescore(whole, chunks []index.Hit, variant string) []string {
	byS := map[string][]float64{} // session -> its chunk scores, best first (chunks come sorted)
	for _, c := range chunks {
		byS[c.SessionID] = append(byS[c.SessionID], c.Score)
	}
	type scored struct {
		id    string
		score float64
		rank  int
	}
	var top, rest []scored
	for i, h := range whole {
		cs, ok := byS[h.SessionID]
		if !ok {
			rest = append(rest, scored{h.SessionID, 0, i})
			continue
		}
		var s float64
		switch variant {
		case "best-chunk":
			s = cs[0]
		case "whole+best-chunk":
			s = h.Score + cs[0]
		case "best-chunk+top3":
			// The best chunk, plus half of each of the next two: a
			// session that answers in several exchanges over one that
			// mentions the words once.
			s = cs[0]
			for _, c := range cs[1:min(3, len(cs))] {
				s += c / 2
			}
		}
		top = append(top, scored{h.SessionID, s, i})
	}
	slices.SortStableFunc(top, func(a, b scored) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.rank, b.rank)) })
	out := make([]string, 0, len(whole))
	for _, s := range append(top, rest...) {
		out = append(out, s.id)
	}
	return out
}
