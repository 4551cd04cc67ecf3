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
// with tf the occurrences of t in d's scored text and |d| the length of
// that text in words (lengthOf). The statistics are the querying user's:
// N is the user's live documents, df(t) those of them holding t and avgdl
// the mean |d| over them. Another user's documents change none of them, so
// they change neither a user's ranking nor the scores a user is shown
// (userLengths, lookUpBlocks, lookUpWords). Each term's contribution is
// below idf(t)·(k1+1), a clean upper bound for dynamic pruning (MaxScore,
// WAND).
//
// The parameters are the usual defaults, not fitted to any dataset: they
// measured within ±0.003 nDCG@10 of the best of a small grid on SciFact
// train and CoSQA dev (see docs/index.md).
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

// newAnalyzedTokens is the field of text, userID's, given the tokens the
// analyzer made of it. Its terms are userID's (textTerm); its length is
// the tokens', whatever their terms.
func newAnalyzedTokens(name, userID string, text []byte, tokens analysis.TokenStream) *analyzedText {
	f := &analyzedText{TextField: document.NewTextFieldCustom(name, nil, text, textOpts, nil)}
	f.length = lengthOf(tokens)
	// Bleve's own frequency computation, with term vectors as textOpts
	// says, then each term under its owner's name.
	freqs := analysis.TokenFrequency(tokens, nil, textOpts)
	f.freqs = make(bleveindex.TokenFrequencies, len(freqs))
	prefix := ownerPrefix(userID)
	for term, tf := range freqs {
		t := prefix + term
		tf.Term = []byte(t)
		f.freqs[t] = tf
	}
	return f
}

// textTerm is the term of userID's documents that hold the analysed term
// in the scored text. Each user's terms are their own, as each user's
// pairs are (pairTerm): a term's posting list holds its owner's documents
// only, so that decoding it, which zap does posting by posting from the
// start of a chunk, costs the user's postings of the word, never another
// user's (buildTermBlocks). What the analyzer gives code outside the index
// (Analyze, Analyzer), snippets and matchedIn are the unprefixed terms.
func textTerm(userID, term string) string { return ownerPrefix(userID) + term }

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

// lengthTotals is what BM25 reads of a set of live documents (a user's,
// or a segment's): how many they are, their total length, their chunks and
// the chunks' total length.
type lengthTotals struct {
	docs, total        uint64
	chunks, chunkTotal uint64
}

func (t *lengthTotals) add(o lengthTotals) {
	t.docs += o.docs
	t.total += o.total
	t.chunks += o.chunks
	t.chunkTotal += o.chunkTotal
}

// meanLength is avgdl: the documents' mean length, 1 when there is none.
func (t lengthTotals) meanLength() float64 {
	if t.docs == 0 || t.total == 0 {
		return 1
	}
	return float64(t.total) / float64(t.docs)
}

// meanChunkLength is the chunks' mean length, which chunk scores are
// normalised by; 1 when there is none.
func (t lengthTotals) meanChunkLength() float64 {
	if t.chunks == 0 || t.chunkTotal == 0 {
		return 1
	}
	return float64(t.chunkTotal) / float64(t.chunks)
}

// lengthCache keeps what queries learn about an index's segments: the
// length totals of their live documents, every user's (Index.Count), and
// (blocks) each user's view of them and the block maxima of the query
// terms, with which queries compute their user's statistics. Segments are
// immutable but for deletions, so a total is recounted only when a segment
// is new or has lost documents. It is safe for concurrent use.
type lengthCache struct {
	mu     sync.Mutex
	segs   map[segment.Segment]segmentTotals
	blocks blockCache
}

// segmentTotals is the totals of a segment's live documents, counted with
// deleted deletions.
type segmentTotals struct {
	deleted uint64
	lengthTotals
}

// totals adds up the lengths of the live documents of segs, every user's.
// The segments not counted yet are read without the lock held, so a slow
// count does not hold up other queries (two may count one segment at
// once; both get the same totals).
func (c *lengthCache) totals(segs []*scorch.SegmentSnapshot) (lengthTotals, error) {
	deleted := make([]uint64, len(segs))
	for i, s := range segs {
		if d := s.Deleted(); d != nil {
			deleted[i] = d.GetCardinality()
		}
	}
	known := make([]segmentTotals, len(segs))
	var missing []int
	c.mu.Lock()
	for i, s := range segs {
		st, ok := c.segs[s.Segment()]
		if !ok || st.deleted != deleted[i] {
			missing = append(missing, i)
			continue
		}
		known[i] = st
	}
	c.mu.Unlock()
	for _, i := range missing {
		lt, err := countLengths(segs[i].Segment(), segs[i].Deleted(), nil)
		if err != nil {
			return lengthTotals{}, err
		}
		known[i] = segmentTotals{deleted: deleted[i], lengthTotals: lt}
	}
	if len(missing) > 0 {
		c.mu.Lock()
		if c.segs == nil || len(c.segs) > 2*len(segs)+16 { // drop merged-away segments
			c.segs = make(map[segment.Segment]segmentTotals, len(segs))
		}
		for _, i := range missing {
			c.segs[segs[i].Segment()] = known[i]
		}
		c.mu.Unlock()
	}
	var t lengthTotals
	for _, st := range known {
		t.add(st.lengthTotals)
	}
	return t, nil
}

// countLengths adds up the lengths of a segment's live documents (only
// those in only, when it is not nil) from its number fields'
// dictionaries. Documents without a length count as documents of length 0
// when only is given, and not at all otherwise.
func countLengths(seg segment.Segment, deleted, only *roaring.Bitmap) (lengthTotals, error) {
	var lt lengthTotals
	var err error
	if lt.docs, lt.total, err = sumField(seg, deleted, only, fieldLength); err != nil {
		return lt, err
	}
	if only != nil {
		lt.docs = only.GetCardinality()
	}
	if _, lt.chunks, err = sumField(seg, deleted, only, fieldChunks); err != nil {
		return lt, err
	}
	_, lt.chunkTotal, err = sumField(seg, deleted, only, fieldChunkLength)
	return lt, err
}

// sumField returns how many live documents of seg (of those in only, when
// it is not nil) have a value in the number field name, and the sum of
// their values.
func sumField(seg segment.Segment, deleted, only *roaring.Bitmap, name string) (docs, sum uint64, err error) {
	d, err := seg.Dictionary(name)
	if err != nil {
		return 0, 0, err
	}
	err = eachTerm(d, func(term string) error {
		v, err := strconv.ParseUint(term, 10, 64)
		if err != nil {
			return nil // not written by this package
		}
		pl, err := d.PostingsList([]byte(term), deleted, nil)
		if err != nil {
			return err
		}
		n := pl.Count()
		if only != nil {
			n = postingsBitmap(pl).AndCardinality(only)
		}
		docs += n
		sum += n * v
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return docs, sum, nil
}
