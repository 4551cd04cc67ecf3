package ranking

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hindsight-dev/hindsight/contextanswer"
	"github.com/hindsight-dev/hindsight/index"
)

// contextDepth is how many chunks each leg fetches for context.
const contextDepth = 100

// ContextHits ranks the user's sessions for a context request: chunks are
// retrieved by full-text and, with an embedder, by vector (fused with RRF);
// sessions are ordered by their best chunk. degraded is "semantic" when the
// vector leg was wanted but failed (the embedding provider or the vector
// store): the answer is then from full-text alone. partial is true when the
// full-text leg stopped at its budget (see Response.Partial).
func (e *Engine) ContextHits(ctx context.Context, userID, text string, limit int) (hits []contextanswer.Hit, degraded string, partial bool, err error) {
	depth := e.opts.depth(limit, contextDepth)
	q := Query{UserID: userID, Text: text}
	th, textErr := e.text.Search(ctx, index.Query{UserID: userID, Text: text, Kind: index.Chunks, Limit: depth})
	if errors.Is(textErr, index.ErrPartial) {
		partial, textErr = true, nil
	}
	if textErr != nil && !(errors.Is(textErr, index.ErrBadQuery) && e.emb != nil) {
		return nil, "", false, textErr
	}
	textList := make([]Result, len(th))
	for i, h := range th {
		textList[i] = Result{SessionID: chunkKey(h.SessionID, h.Ordinal), Score: h.Score}
	}
	fused := textList
	if e.emb != nil {
		vh, verr := e.contextVectors(ctx, q, depth)
		var ue *UnavailableError
		switch {
		case errors.As(verr, &ue):
			if textErr != nil {
				return nil, "", false, textErr // neither leg can answer
			}
			e.degrade(ue)
			degraded = "semantic"
		case verr != nil:
			return nil, "", false, verr
		default:
			vecList := make([]Result, len(vh))
			for i, h := range vh {
				vecList[i] = Result{SessionID: chunkKey(h.SessionID, h.Ordinal), Score: h.Score}
			}
			fused = e.fuse(textList, vecList, 2*depth, false)
		}
	}
	bySession := map[string]int{}
	for _, r := range fused {
		sid, ord := splitChunkKey(r.SessionID)
		i, ok := bySession[sid]
		if !ok {
			if len(hits) == limit {
				continue
			}
			i = len(hits)
			bySession[sid] = i
			hits = append(hits, contextanswer.Hit{SessionID: sid})
		}
		hits[i].Ordinals = append(hits[i].Ordinals, ord)
	}
	return hits, degraded, partial, nil
}

func (e *Engine) contextVectors(ctx context.Context, q Query, depth int) ([]VectorHit, error) {
	vec, err := e.embedQuery(ctx, q)
	if err != nil {
		return nil, err
	}
	return e.nearest(ctx, q.UserID, vec, depth)
}

// embedQuery embeds the query text under its own deadline, so a slow
// provider costs a bounded delay; failures are *UnavailableError (the
// caller's own cancellation stays itself).
func (e *Engine) embedQuery(ctx context.Context, q Query) ([]float32, error) {
	ectx, cancel := context.WithTimeout(ctx, e.opts.EmbedTimeout)
	defer cancel()
	v, err := e.emb.Embed(ectx, []string{q.Text})
	if err == nil && len(v) != 1 {
		err = fmt.Errorf("embedder returned %d vectors for 1 query", len(v))
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, e.failed(DepProvider, fmt.Errorf("embed query: %w", err))
	}
	e.recovered(DepProvider)
	return v[0], nil
}

func chunkKey(sid string, ord int) string { return fmt.Sprintf("%s#%d", sid, ord) }

func splitChunkKey(k string) (string, int) {
	i := strings.LastIndexByte(k, '#')
	var ord int
	fmt.Sscanf(k[i+1:], "%d", &ord)
	return k[:i], ord
}
