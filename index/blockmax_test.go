package index

import (
	"math/bits"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// snapshotSegments returns the segments of ix's sessions index and a
// function that releases them.
func snapshotSegments(t *testing.T, ix *Index) ([]*scorch.SegmentSnapshot, func()) {
	t.Helper()
	adv, err := ix.sessions.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		t.Fatalf("index is %T", r)
	}
	return snap.Segments(), func() { r.Close() }
}

// TestTermBlocksHoldEveryPosting checks, for terms from very common to
// rare, that the blocks give back every posting's frequency and length as
// zap decodes them, and that each block's maximum, scaled for the mean
// length (scaleAt), bounds the tf part of BM25 of each of its postings at
// mean lengths below, at and above the one it was computed at.
func TestTermBlocksHoldEveryPosting(t *testing.T) {
	ix := openTest(t, "")
	putGenCorpus(t, ix, 600)
	segs, release := snapshotSegments(t, ix)
	defer release()
	avgdl, err := ix.sessionLengths.avgLength(segs)
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"the", "error", "test", "retri", "backoff", "parseconfigfil", "webhook", "nosuchterm"}
	checked, converted := 0, 0
	for _, s := range segs {
		seg := s.Segment()
		lens, err := documentLengths(seg)
		if err != nil {
			t.Fatal(err)
		}
		dict, err := seg.Dictionary(fieldText)
		if err != nil {
			t.Fatal(err)
		}
		// A few of the segment's rarest terms, which keep sparse blocks.
		terms := slices.Clone(common)
		it := dict.AutomatonIterator(nil, nil, nil)
		for e, err := it.Next(); err == nil && e != nil && len(terms) < len(common)+3; e, err = it.Next() {
			if e.Count == 1 {
				terms = append(terms, e.Term)
			}
		}
		for _, term := range terms {
			tb, err := buildTermBlocks(seg, lens, term, avgdl)
			if err != nil {
				t.Fatal(err)
			}
			if tb.lens != nil {
				t.Errorf("%q: the length field disagrees with the norms", term)
			}
			pl, err := dict.PostingsList([]byte(term), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(tb.tf), int(pl.Count()); got != want {
				t.Fatalf("%q: %d postings in blocks, %d in the segment", term, got, want)
			}
			inMasks := 0
			tb.each(func(_ int, bi blockInfo) { inMasks += bits.OnesCount64(bi.mask) })
			if inMasks != len(tb.tf) {
				t.Fatalf("%q: %d documents in the masks, %d postings", term, inMasks, len(tb.tf))
			}
			// The other form holds the same blocks.
			blocks := (int(seg.Count()) + blockMask) >> blockShift
			other := *tb
			other.setForm(blocks, tb.ids != nil)
			for b := range blocks {
				if tb.at(b) != other.at(b) {
					t.Fatalf("%q block %d: %+v dense, %+v sparse", term, b, tb.at(b), other.at(b))
				}
			}
			converted++
			it := pl.Iterator(true, true, false, nil)
			for k := uint32(0); ; k++ {
				p, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				if p == nil {
					break
				}
				d := uint32(p.Number())
				b := d >> blockShift
				bi := tb.at(int(b))
				if m := bi.mask; m&(1<<(d&blockMask)) == 0 || bi.first+uint32(bits.OnesCount64(m&(1<<(d&blockMask)-1))) != k {
					t.Fatalf("%q: posting %d (document %d) not where block %d says", term, k, d, b)
				}
				tf, l := float64(p.Frequency()), postingLength(p.Norm())
				length := float64(lens[d])
				if tb.lens != nil {
					length = tb.lens[k]
				}
				if tb.freq(k) != tf || length != l {
					t.Fatalf("%q document %d: tf %v length %v, want %v %v", term, d, tb.freq(k), length, tf, l)
				}
				for _, a := range []float64{avgdl / 2, avgdl, avgdl * 1.09, avgdl * 3} {
					if bound := float64(bi.bound) * tb.scaleAt(a); bm25TF(tf, l, a) > bound {
						t.Fatalf("%q document %d at mean length %v: tf part %v above the bound %v", term, d, a, bm25TF(tf, l, a), bound)
					}
				}
				checked++
			}
		}
	}
	if checked < 1000 || converted == 0 {
		t.Fatalf("only %d postings checked, %d blocks compared in both forms", checked, converted)
	}
}

// TestBlockCache checks that the cache builds an entry once, rebuilds it
// when the mean length has drifted, evicts the least recently used to stay
// within its limit, and drops the entries of segments no longer live.
func TestBlockCache(t *testing.T) {
	ix := openTest(t, "")
	putGenCorpus(t, ix, 300)
	segs, release := snapshotSegments(t, ix)
	defer release()
	seg := segs[0].Segment()
	var c blockCache
	lens, err := c.lengths(seg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(term string, avgdl float64) *termBlocks {
		t.Helper()
		tb, err := c.termBlocks(seg, lens, term, avgdl)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	a := get("the", 100)
	if get("the", 100) != a || get("the", 100*boundDrift) != a {
		t.Error("a cached entry was rebuilt")
	}
	if b := get("the", 100*boundDrift*1.01); b == a || b.avgdl0 != 100*boundDrift*1.01 {
		t.Error("an entry past the drift was not rebuilt")
	}
	if none := get("nosuchterm", 100); none.postings() != 0 || get("nosuchterm", 100) != none {
		t.Errorf("a term the segment lacks: %d postings, or not cached", none.postings())
	}

	// Eviction: the limit holds, and the entry used last stays.
	entries, bytes, _ := c.stats()
	if entries != 3 { // the lengths, "the" and "nosuchterm"
		t.Fatalf("%d entries, want 3", entries)
	}
	c.setLimit(bytes - 1)
	if _, got, _ := c.stats(); got > bytes-1 {
		t.Errorf("%d bytes cached over a limit of %d", got, bytes-1)
	}
	for _, term := range []string{"test", "retri", "backoff", "webhook", "config", "the"} {
		get(term, 100)
	}
	c.setLimit(get("the", 100).size() + 4*int64(len(lens)))
	c.mu.Lock()
	_, kept := c.entries[blockKey{seg: seg, name: "the"}]
	c.mu.Unlock()
	if !kept {
		t.Error("the entry used last was evicted")
	}
	c.setLimit(0)

	// Once the cache holds entries of many more segments than are live,
	// those of the others go.
	type deadSegment struct {
		segment.Segment
		n int
	}
	for n := range 12 {
		dead := blockKey{seg: deadSegment{n: n}, kind: keyLengths}
		if _, err := c.get(dead, nil, func() (any, int64, error) { return []uint32{}, 1, nil }); err != nil {
			t.Fatal(err)
		}
	}
	before, _, _ := c.stats()
	c.retain([]segment.Segment{seg})
	after, _, _ := c.stats()
	c.mu.Lock()
	for k := range c.entries {
		if k.seg != seg {
			t.Errorf("an entry of a dead segment was kept")
		}
	}
	c.mu.Unlock()
	if after != before-12 {
		t.Errorf("%d entries after dropping 12 of %d", after, before)
	}
}
