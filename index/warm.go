package index

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Warming. The first query to meet a segment builds what the pruned
// evaluation reads from it (blockmax.go): the segment's document values,
// the querying user's view of it and the blocks of the query's words, each
// a walk over postings of the whole segment. Every batch and every merge
// writes a new segment, and whoever queries next would pay for it. The
// warmer builds them in the background as soon as a segment of at least
// warmMinDocs documents appears (a merge's, mostly): the values and every
// user's view, and the blocks of the words the cache served most recently
// (up to warmTerms of them) for the users who asked for them. A word nobody
// asked for lately still costs its first query the build of its blocks,
// and so does a small segment: its blocks cost little to build, while
// warming every batch's segment would take a share of the cores from
// indexing during a bulk import.
const (
	// warmTerms is how many of the most recently used (word, user) blocks
	// a new segment gets built in advance.
	warmTerms = 2048
	// warmMinDocs is the size from which a new segment is warmed.
	warmMinDocs = 4096
	// warmPoll is how often the warmer looks for segments that merges
	// wrote (a Put wakes it at once).
	warmPoll = 250 * time.Millisecond
)

// warmer runs Index.warmNew in the background until stop.
type warmer struct {
	kick    chan struct{} // a Put wrote a segment
	cancel  context.CancelFunc
	stopped chan struct{}
	seen    map[segment.Segment]bool // warmed (only the warmer's goroutine uses it)
}

// startWarmer starts ix's warmer; stopWarmer ends it.
func (ix *Index) startWarmer() {
	ctx, cancel := context.WithCancel(context.Background())
	w := &warmer{kick: make(chan struct{}, 1), cancel: cancel, stopped: make(chan struct{}),
		seen: make(map[segment.Segment]bool)}
	ix.warm = w
	go func() {
		defer close(w.stopped)
		t := time.NewTicker(warmPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.kick:
			case <-t.C:
			}
			if err := ix.warmNew(ctx, w.seen, warmMinDocs); err != nil && ctx.Err() == nil {
				ix.log.Warn().Err(err).Msg("index: warming new segments")
			}
		}
	}()
}

// wake tells the warmer a segment was written; it never blocks.
func (w *warmer) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// stop ends the warmer and waits for it.
func (w *warmer) stop() {
	w.cancel()
	<-w.stopped
}

// warmNew builds the cached values, views and recent blocks of the
// segments of the current snapshot of at least minDocs documents not in
// seen, and adds them to seen (dropping those no longer live).
func (ix *Index) warmNew(ctx context.Context, seen map[segment.Segment]bool, minDocs uint64) error {
	c := &ix.sessionLengths.blocks
	return ix.snapshot(func(snap *scorch.IndexSnapshot) error {
		segs := snap.Segments()
		live := make(map[segment.Segment]bool, len(segs))
		var fresh []segment.Segment
		for _, s := range segs {
			seg := s.Segment()
			live[seg] = true
			if !seen[seg] && seg.Count() >= minDocs {
				fresh = append(fresh, seg)
			}
		}
		for seg := range seen {
			if !live[seg] {
				delete(seen, seg)
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		recent := c.recentTerms(warmTerms)
		for _, seg := range fresh {
			if err := warmSegment(ctx, c, seg, recent); err != nil {
				return err
			}
			seen[seg] = true
		}
		return nil
	})
}

// warmSegment builds every user's view of seg (and with the first, seg's
// values), and the blocks of recent in it.
func warmSegment(ctx context.Context, c *blockCache, seg segment.Segment, recent []recentTerm) error {
	d, err := seg.Dictionary(fieldUser)
	if err != nil {
		return err
	}
	views := make(map[string]*userDocs)
	err = eachTerm(d, func(user string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		u, err := c.userDocs(seg, user)
		views[user] = u
		return err
	})
	if err != nil {
		return err
	}
	for _, r := range recent {
		u := views[r.user]
		if u == nil || len(u.docs) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := c.termBlocksUsed(seg, r.user, u, r.term, r.avgdl, max(r.used, 1)); err != nil {
			return err
		}
	}
	return nil
}

// recentTerm is a word's blocks a user's query built: the word, the user
// and the mean length the blocks were built for.
type recentTerm struct {
	term, user string
	avgdl      float64
	used       uint64
}

// recentTerms returns the (word, user) blocks the cache holds, at most n,
// most recently used first, each once (with its most recent mean length).
func (c *blockCache) recentTerms(n int) []recentTerm {
	type key struct{ term, user string }
	c.mu.Lock()
	byKey := make(map[key]recentTerm)
	for k, e := range c.entries {
		if k.kind != keyTerm {
			continue
		}
		select {
		case <-e.done:
		default:
			continue // being built
		}
		tb, ok := e.val.(*termBlocks)
		if !ok || e.err != nil {
			continue
		}
		r := recentTerm{term: k.name, user: k.user, avgdl: tb.avgdl0, used: e.used}
		if old, ok := byKey[key{k.name, k.user}]; !ok || old.used < r.used {
			byKey[key{k.name, k.user}] = r
		}
	}
	c.mu.Unlock()
	out := make([]recentTerm, 0, len(byKey))
	for _, r := range byKey {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b recentTerm) int {
		if c := cmp.Compare(b.used, a.used); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.term, b.term), cmp.Compare(a.user, b.user))
	})
	return out[:min(n, len(out))]
}
