package index

import (
	"math"
	"strconv"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	bleveindex "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Scoring is textbook BM25 (Robertson, Spärck Jones; Lucene's and SQLite
// FTS5's form). A document d matching the query's distinct terms T scores
//
//	score(d) = Σ_{t∈T, tf(t,d)>0} idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl))
//	idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// with N the live documents of the index (all users), df(t) the live
// documents holding t, tf the occurrences of t in d's scored text, |d| the
// length of that text in words (lengthOf) and avgdl the mean |d| over the
// live documents. Each term's contribution is below idf(t)·(k1+1), a clean
// upper bound for dynamic pruning (MaxScore, WAND).
//
// The parameters are the usual defaults, not fitted to any dataset: they
// measured within ±0.003 nDCG@10 of the best of a small grid on SciFact
// train and CoSQA dev (see doc.go).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// bm25IDF is idf(t) above.
func bm25IDF(n, df uint64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// bm25TF is the term-frequency part of a term's contribution.
func bm25TF(tf, length, avgdl float64) float64 {
	return bm25Sat(tf, bm25Norm(length, avgdl))
}

// bm25Norm is the length part of bm25TF's denominator, the same for every
// term of a document: the pruned evaluation computes it once per document.
// The conversion rounds it, so that no build fuses it with the addition in
// bm25Sat (into an FMA) in one place and not in another: the evaluations
// must agree to the bit.
func bm25Norm(length, avgdl float64) float64 {
	return float64(bm25K1 * (1 - bm25B + bm25B*length/avgdl))
}

// bm25Sat is bm25TF of frequency tf at length part norm.
func bm25Sat(tf, norm float64) float64 {
	return tf * (bm25K1 + 1) / (tf + norm)
}

// lengthOf is the length BM25 normalises by: the number of tokens the
// analyzer emits, as Bleve and Lucene (without discountOverlaps) count it,
// so an identifier or compound counts as its whole plus its parts. Counting
// positions instead (a word once, however many terms it yields) measured
// worse on both datasets (SciFact train 0.705 against 0.706, CoSQA dev
// 0.382 against 0.385).
func lengthOf(tokens analysis.TokenStream) int {
	return len(tokens)
}

// fieldLength is the keyword field holding each document's length in
// decimal (one term per document): summing over its dictionary gives the
// total length of a segment's live documents in as many steps as there are
// distinct lengths (lengthCache). fieldChunks and fieldChunkLength hold the
// number of the session's chunks and their total length, summed the same
// way: the mean chunk length that chunk scores are normalised by.
const (
	fieldLength      = "len"
	fieldChunks      = "chunks"
	fieldChunkLength = "chunklen"
)

// analyzedText is the scored text field, analysed when the document is
// built rather than in Bleve's batch, so that its length is known for
// fieldLength; Bleve's own call to Analyze then does nothing. The norm
// Bleve stores is computed from AnalyzedLength, which it reports as
// lengthOf rather than the number of tokens.
type analyzedText struct {
	*document.TextField
	length int
	freqs  bleveindex.TokenFrequencies
}

// newAnalyzedTokens is the field of text, given the tokens the analyzer
// made of it.
func newAnalyzedTokens(name string, text []byte, tokens analysis.TokenStream) *analyzedText {
	f := &analyzedText{TextField: document.NewTextFieldCustom(name, nil, text, textOpts, nil)}
	f.length = lengthOf(tokens)
	// Bleve's own frequency computation, with term vectors as textOpts says.
	f.freqs = analysis.TokenFrequency(tokens, nil, textOpts)
	return f
}

// Analyze implements document.Field: the work is done in newAnalyzedTokens.
func (f *analyzedText) Analyze() {}

// AnalyzedLength implements document.Field: the BM25 length, lengthOf.
func (f *analyzedText) AnalyzedLength() int { return f.length }

// AnalyzedTokenFrequencies implements document.Field.
func (f *analyzedText) AnalyzedTokenFrequencies() bleveindex.TokenFrequencies { return f.freqs }

// numberField is a keyword field holding n in decimal (fieldLength,
// fieldChunks, fieldChunkLength).
func numberField(name string, n int) *document.TextField {
	return document.NewTextFieldCustom(name, nil, []byte(strconv.Itoa(n)), keywordOpts, nil)
}

// segmentLengths is one segment's (or an index's) live documents, their
// total length, their chunks and the chunks' total length.
type segmentLengths struct {
	deleted            uint64 // the deletions they were counted with
	docs, total        uint64
	chunks, chunkTotal uint64
}

// lengthCache keeps what queries learn about an index's segments: their
// length totals and (blocks) the block maxima of the query terms.
// Segments are immutable but for deletions, so a total is recounted only
// when a segment is new or has lost documents. It is safe for concurrent
// use.
type lengthCache struct {
	mu     sync.Mutex
	segs   map[segment.Segment]segmentLengths
	blocks blockCache
}

// avgLength returns the mean length of the live documents of segs.
func (c *lengthCache) avgLength(segs []*scorch.SegmentSnapshot) (float64, error) {
	t, err := c.totals(segs)
	if err != nil || t.docs == 0 || t.total == 0 {
		return 1, err
	}
	return float64(t.total) / float64(t.docs), nil
}

// avgChunkLength returns the mean length of the chunks of the live
// documents of segs.
func (c *lengthCache) avgChunkLength(segs []*scorch.SegmentSnapshot) (float64, error) {
	t, err := c.totals(segs)
	if err != nil || t.chunks == 0 || t.chunkTotal == 0 {
		return 1, err
	}
	return float64(t.chunkTotal) / float64(t.chunks), nil
}

// totals adds up the lengths of the live documents of segs.
func (c *lengthCache) totals(segs []*scorch.SegmentSnapshot) (segmentLengths, error) {
	var t segmentLengths
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.segs == nil || len(c.segs) > 2*len(segs)+16 { // drop merged-away segments
		c.segs = make(map[segment.Segment]segmentLengths, len(segs))
	}
	for _, s := range segs {
		var deleted uint64
		if d := s.Deleted(); d != nil {
			deleted = d.GetCardinality()
		}
		sl, ok := c.segs[s.Segment()]
		if !ok || sl.deleted != deleted {
			var err error
			if sl, err = countLengths(s.Segment(), s.Deleted()); err != nil {
				return t, err
			}
			sl.deleted = deleted
			c.segs[s.Segment()] = sl
		}
		t.docs += sl.docs
		t.total += sl.total
		t.chunks += sl.chunks
		t.chunkTotal += sl.chunkTotal
	}
	return t, nil
}

// countLengths adds up the lengths of a segment's live documents from its
// number fields' dictionaries.
func countLengths(seg segment.Segment, deleted *roaring.Bitmap) (segmentLengths, error) {
	var sl segmentLengths
	var err error
	if sl.docs, sl.total, err = sumField(seg, deleted, fieldLength); err != nil {
		return sl, err
	}
	if _, sl.chunks, err = sumField(seg, deleted, fieldChunks); err != nil {
		return sl, err
	}
	_, sl.chunkTotal, err = sumField(seg, deleted, fieldChunkLength)
	return sl, err
}

// sumField returns how many live documents of seg have a value in the
// number field name, and the sum of their values.
func sumField(seg segment.Segment, deleted *roaring.Bitmap, name string) (docs, sum uint64, err error) {
	d, err := seg.Dictionary(name)
	if err != nil {
		return 0, 0, err
	}
	it := d.AutomatonIterator(nil, nil, nil)
	for {
		e, err := it.Next()
		if err != nil {
			return 0, 0, err
		}
		if e == nil {
			return docs, sum, nil
		}
		v, err := strconv.ParseUint(e.Term, 10, 64)
		if err != nil {
			continue // not written by this package
		}
		pl, err := d.PostingsList([]byte(e.Term), deleted, nil)
		if err != nil {
			return 0, 0, err
		}
		n := pl.Count()
		docs += n
		sum += n * v
	}
}
