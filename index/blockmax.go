package index

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Block maxima. Zap cannot jump to a posting's frequency and norm: they
// are varints in chunks of about 1,024 postings, read from the chunk's
// start, so any evaluation over zap iterators reads every posting of a
// common word. termBlocks is a term's postings in one segment decoded once
// into a form that can be read anywhere: the postings cut into blocks of
// blockSize document numbers, each with the largest term-frequency part
// of BM25 its postings reach (its block maximum). Queries (scoreBest)
// then score only the blocks whose maxima can still reach the limit-th
// score, the most promising first.
//
// Segments are immutable (deletions only hide documents, so a maximum over
// all of a segment's postings still bounds the live ones), so the blocks
// are built on a term's first query in a segment and kept in a blockCache,
// bounded in bytes, until they are the least recently used.
const (
	blockShift = 6
	blockSize  = 1 << blockShift
	blockMask  = blockSize - 1
	blockWords = blockSize / 64 // words of a block's candidate bitmap
	// blockCacheBytes bounds the memory of one index's cached blocks.
	// A cached posting costs 2 bytes, a block 8 (see termBlocks.size).
	blockCacheBytes = 128 << 20
	// minCachedPostings: shorter posting lists are decoded for each query
	// (about as fast as reading them from the cache) and not kept.
	minCachedPostings = 16
	// boundDrift is how far the mean length may grow past the one a term's
	// maxima were computed with before they are recomputed (see scaleAt).
	boundDrift = 1.1
)

// termBlocks is one term's postings in one segment, all of them (deleted
// documents included), in blocks of blockSize document numbers.
type termBlocks struct {
	first []uint32 // by block, and one past the last: the block's first posting
	low   []uint8  // by posting: its document number within its block
	tf    []uint8  // by posting: its term frequency, or 255: see big
	big   map[uint32]uint32
	// lens is nil when the segment's length field gives every posting's
	// document length (documentLengths); otherwise it holds them by posting.
	lens []float64
	// bound holds by block the largest bm25TF of its postings at mean
	// length avgdl0, rounded up.
	bound  []float32
	avgdl0 float64
}

// size is the memory tb holds, in bytes.
func (tb *termBlocks) size() int64 {
	return int64(len(tb.low)+len(tb.tf)) + 4*int64(len(tb.first)+len(tb.bound)) +
		8*int64(len(tb.lens)) + 16*int64(len(tb.big)) + 128
}

// freq returns the term frequency of posting k.
func (tb *termBlocks) freq(k uint32) float64 {
	if f := tb.tf[k]; f < math.MaxUint8 {
		return float64(f)
	}
	return float64(tb.big[k])
}

// length returns the document length of posting k, of document d.
func (tb *termBlocks) length(k uint32, segLens []uint32, d uint32) float64 {
	if tb.lens != nil {
		return tb.lens[k]
	}
	return float64(segLens[d])
}

// scaleAt returns the factor that turns the maxima into bounds at mean
// length avgdl. bm25TF grows with the mean length: with A above A0, its
// length term k1·b·|d|/A is that at A0 times A0/A, so the whole
// denominator is at least A0/A of its value at A0, and bm25TF at most
// A/A0 times its value there. A smaller mean only lowers bm25TF.
func (tb *termBlocks) scaleAt(avgdl float64) float64 {
	return max(1, avgdl/tb.avgdl0)
}

// buildTermBlocks decodes term's postings in seg. segLens are the
// segment's document lengths (documentLengths), avgdl the mean length the
// maxima are computed at.
func buildTermBlocks(seg segment.Segment, segLens []uint32, term string, avgdl float64) (*termBlocks, error) {
	dict, err := seg.Dictionary(fieldText)
	if err != nil {
		return nil, err
	}
	pl, err := dict.PostingsList([]byte(term), nil, nil)
	if err != nil {
		return nil, err
	}
	blocks := (int(seg.Count()) + blockMask) >> blockShift
	n := int(pl.Count())
	tb := &termBlocks{
		first:  make([]uint32, blocks+1),
		low:    make([]uint8, 0, n),
		tf:     make([]uint8, 0, n),
		avgdl0: avgdl,
	}
	maxima := make([]float64, blocks)
	lens := make([]float64, 0, n)
	agree := true // every length equals the segment's
	it := pl.Iterator(true, true, false, nil)
	for {
		p, err := it.Next()
		if err != nil {
			return nil, err
		}
		if p == nil {
			break
		}
		d := p.Number()
		b := int(d >> blockShift)
		if b >= blocks {
			return nil, fmt.Errorf("term %q: posting of document %d beyond the segment's %d", term, d, seg.Count())
		}
		k := uint32(len(tb.low))
		tb.first[b+1]++
		tb.low = append(tb.low, uint8(d&blockMask))
		f := p.Frequency()
		if f < math.MaxUint8 {
			tb.tf = append(tb.tf, uint8(f))
		} else {
			tb.tf = append(tb.tf, math.MaxUint8)
			if tb.big == nil {
				tb.big = make(map[uint32]uint32)
			}
			tb.big[k] = uint32(min(f, math.MaxUint32))
		}
		l := postingLength(p.Norm())
		lens = append(lens, l)
		agree = agree && int(d) < len(segLens) && float64(segLens[d]) == l
		maxima[b] = max(maxima[b], bm25TF(tb.freq(k), l, avgdl))
	}
	for b := range blocks {
		tb.first[b+1] += tb.first[b]
	}
	tb.bound = make([]float32, blocks)
	for b, m := range maxima {
		tb.bound[b] = roundUp32(m)
	}
	if !agree {
		tb.lens = lens
	}
	return tb, nil
}

// roundUp32 returns the smallest float32 not below x.
func roundUp32(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// documentLengths returns the length of each of seg's documents (deleted
// ones included) from its fieldLength dictionary; 0 where a document has
// none.
func documentLengths(seg segment.Segment) ([]uint32, error) {
	lens := make([]uint32, seg.Count())
	d, err := seg.Dictionary(fieldLength)
	if err != nil {
		return nil, err
	}
	it := d.AutomatonIterator(nil, nil, nil)
	for {
		e, err := it.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			return lens, nil
		}
		length, err := strconv.ParseUint(e.Term, 10, 32)
		if err != nil {
			continue // not written by this package
		}
		pl, err := d.PostingsList([]byte(e.Term), nil, nil)
		if err != nil {
			return nil, err
		}
		pi := pl.Iterator(false, false, false, nil)
		for {
			p, err := pi.Next()
			if err != nil {
				return nil, err
			}
			if p == nil {
				break
			}
			if n := p.Number(); n < uint64(len(lens)) {
				lens[n] = uint32(length)
			}
		}
	}
}

// blockCache keeps the termBlocks (and document lengths) of an index's
// segments, at most blockCacheBytes of them, dropping the least recently
// used first. Concurrent queries that need the same blocks build them
// once. It is safe for concurrent use; the zero value is ready.
type blockCache struct {
	mu      sync.Mutex
	entries map[blockKey]*blockEntry
	segs    map[segment.Segment]int // entries by segment
	bytes   int64
	tick    uint64
	limit   int64 // 0: blockCacheBytes (tests set less)
}

// blockKey names a term's blocks in a segment, or (lengths) the
// segment's document lengths.
type blockKey struct {
	seg     segment.Segment
	term    string
	lengths bool
}

type blockEntry struct {
	done chan struct{} // closed when val and err are set
	val  any           // *termBlocks or []uint32
	err  error
	size int64
	used uint64 // tick of the last use
}

// get returns the cached value of key, building it with build when it is
// missing or stale says it no longer serves.
func (c *blockCache) get(key blockKey, stale func(any) bool, build func() (any, int64, error)) (any, error) {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = make(map[blockKey]*blockEntry)
		c.segs = make(map[segment.Segment]int)
	}
	c.tick++
	e := c.entries[key]
	if e != nil && stale != nil {
		select {
		case <-e.done:
			if e.err == nil && stale(e.val) {
				c.remove(key, e)
				e = nil
			}
		default:
		}
	}
	if e != nil {
		e.used = c.tick
		c.mu.Unlock()
		<-e.done
		return e.val, e.err
	}
	e = &blockEntry{done: make(chan struct{}), used: c.tick}
	c.entries[key] = e
	c.segs[key.seg]++
	c.mu.Unlock()

	val, size, err := build()
	c.mu.Lock()
	e.val, e.err = val, err
	if err != nil {
		c.remove(key, e)
	} else {
		e.size = size
		c.bytes += size
		c.evict()
	}
	c.mu.Unlock()
	close(e.done)
	return val, err
}

// remove drops e, if it is still key's entry. c.mu is held.
func (c *blockCache) remove(key blockKey, e *blockEntry) {
	if c.entries[key] == e {
		delete(c.entries, key)
		c.bytes -= e.size
		if c.segs[key.seg]--; c.segs[key.seg] == 0 {
			delete(c.segs, key.seg)
		}
	}
}

// evict drops the least recently used entries until the cache holds at
// most three quarters of its limit, when it holds more than the limit.
// c.mu is held.
func (c *blockCache) evict() {
	limit := c.limit
	if limit == 0 {
		limit = blockCacheBytes
	}
	if c.bytes <= limit {
		return
	}
	type aged struct {
		key blockKey
		e   *blockEntry
	}
	var all []aged
	for k, e := range c.entries {
		if e.size > 0 {
			all = append(all, aged{k, e})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.e.used, b.e.used) })
	for _, a := range all {
		if c.bytes <= limit/4*3 {
			break
		}
		c.remove(a.key, a.e)
	}
}

// stats returns the cached entries, their bytes, and the postings the
// cached termBlocks hold.
func (c *blockCache) stats() (entries int, bytes, postings int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if tb, ok := e.val.(*termBlocks); ok && e.size > 0 {
			postings += int64(len(tb.low))
		}
	}
	return len(c.entries), c.bytes, postings
}

// lengths returns seg's document lengths (documentLengths), cached.
func (c *blockCache) lengths(seg segment.Segment) ([]uint32, error) {
	v, err := c.get(blockKey{seg: seg, lengths: true}, nil, func() (any, int64, error) {
		lens, err := documentLengths(seg)
		return lens, 4 * int64(len(lens)), err
	})
	if err != nil {
		return nil, err
	}
	return v.([]uint32), nil
}

// termBlocks returns term's blocks in seg, cached when its posting list
// (postings live postings) is long enough to be worth keeping.
func (c *blockCache) termBlocks(seg segment.Segment, segLens []uint32, term string, postings uint64, avgdl float64) (*termBlocks, error) {
	if postings < minCachedPostings {
		return buildTermBlocks(seg, segLens, term, avgdl)
	}
	stale := func(v any) bool { return avgdl > v.(*termBlocks).avgdl0*boundDrift }
	v, err := c.get(blockKey{seg: seg, term: term}, stale, func() (any, int64, error) {
		tb, err := buildTermBlocks(seg, segLens, term, avgdl)
		if err != nil {
			return nil, 0, err
		}
		return tb, tb.size(), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*termBlocks), nil
}

// retain drops the entries of segments other than live (those merged
// away, mostly) once the cache holds entries of many more segments than
// live: a query of an older snapshot may still need them.
func (c *blockCache) retain(live []segment.Segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.segs) <= 2*len(live)+8 {
		return
	}
	keep := make(map[segment.Segment]bool, len(live))
	for _, s := range live {
		keep[s] = true
	}
	for k, e := range c.entries {
		if !keep[k.seg] {
			select {
			case <-e.done:
				c.remove(k, e)
			default: // being built: its builder adds it
			}
		}
	}
}

// setLimit sets the cache's limit in bytes (tests set less than
// blockCacheBytes) and evicts down to it.
func (c *blockCache) setLimit(bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = bytes
	c.evict()
}
