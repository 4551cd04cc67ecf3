package index

import (
	"context"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// The phrase filter: which of a user's documents hold a query's phrases
// and which hold an exclusion, decided on the word pairs and their
// positions (pairs.go) segment by segment, without reading any text.
//
// A phrase is a chain of pairs at offsets of the phrase (pairAt): "a b c"
// is "a b" at offset 0 and "b c" at offset 1, and a document holds it at
// p when it holds each pair at p plus its offset. The documents holding
// every pair are found first, with the pairs' bitmaps; only they are
// checked on positions, each pair's positions read at the documents
// (posCursor) and intersected, offset by offset, until a start is left or
// none is. A phrase matches in the body or in the title (whose pairs have
// their own terms), never partly in each.
//
// The position check costs in proportion to the documents it reads, and
// a phrase many documents hold needs only the best few of them: a pruned
// search for a few hits (the lazy filter) scores the documents holding
// the pairs and checks positions on its best ones (wordSearch.bestChecked),
// asking for more while fewer than the limit pass, and checks every
// document only past maxLazyFetch of them.

// docFilter is what a query's phrases and exclusions leave of each
// segment's documents: those holding every phrase (required, when there
// are phrases) and those holding an exclusion the pairs decide (excluded;
// see phrase.exact). A phrase the pairs do not decide leaves the
// documents holding its words in the pairs' order as far as the pairs
// tell; only the text can tell the rest (parsedQuery.needsCheck).
type docFilter struct {
	userID   string            // whose pairs the phrases are
	required []*roaring.Bitmap // by segment; nil slice: no phrase
	excluded []*roaring.Bitmap // by segment; nil slice: no exclusion
	// unchecked holds the phrases whose positions required does not
	// check yet (lazy): its documents hold their pairs (verify checks).
	unchecked []phrase
}

// apply narrows segment i's candidates; cand is not modified.
func (f *docFilter) apply(i int, cand *roaring.Bitmap) *roaring.Bitmap {
	if f.required != nil {
		cand = roaring.And(cand, f.required[i])
	}
	if f.excluded != nil {
		cand = roaring.AndNot(cand, f.excluded[i])
	}
	return cand
}

// phraseFilter returns the filter of pq's phrases and exclusions over the
// user's live documents of segs; nil when pq has neither. With lazy, the
// positions of the phrases are not read: required holds the documents
// holding their pairs, and unchecked the phrases verify must still check.
// Exclusions are always checked.
func phraseFilter(ctx context.Context, segs []*scorch.SegmentSnapshot, userID string, pq parsedQuery, lazy bool) (*docFilter, error) {
	var excl []phrase
	for _, ph := range pq.Exclude {
		if ph.exact() {
			excl = append(excl, ph)
		}
	}
	if len(pq.Phrases) == 0 && len(excl) == 0 {
		return nil, nil
	}
	f := &docFilter{userID: userID}
	if len(pq.Phrases) > 0 {
		f.required = make([]*roaring.Bitmap, len(segs))
	}
	if len(excl) > 0 {
		f.excluded = make([]*roaring.Bitmap, len(segs))
	}
	for i, s := range segs {
		d, err := s.Segment().Dictionary(fieldUser)
		if err != nil {
			return nil, err
		}
		pl, err := d.PostingsList([]byte(userID), s.Deleted(), nil)
		if err != nil {
			return nil, err
		}
		user := postingsBitmap(pl)
		if f.required != nil {
			req := user
			for _, ph := range pq.Phrases {
				if req, err = phraseDocs(ctx, s.Segment(), userID, req, ph, !lazy); err != nil {
					return nil, err
				}
			}
			f.required[i] = req
		}
		if f.excluded != nil {
			exc := roaring.New()
			for _, ph := range excl {
				m, err := phraseDocs(ctx, s.Segment(), userID, user, ph, true)
				if err != nil {
					return nil, err
				}
				exc.Or(m)
			}
			f.excluded[i] = exc
		}
	}
	if lazy {
		for _, ph := range pq.Phrases {
			if len(ph.pairs(userID, pairTerm)) > 1 {
				f.unchecked = append(f.unchecked, ph)
			}
		}
	}
	return f, nil
}

// verify returns the documents of best (in order) that hold every
// unchecked phrase, read on the positions of segs.
func (f *docFilter) verify(ctx context.Context, segs []*scorch.SegmentSnapshot, best []scoredDoc) ([]scoredDoc, error) {
	if len(f.unchecked) == 0 {
		return best, nil
	}
	bySeg := make(map[int]*roaring.Bitmap)
	for _, d := range best {
		if bySeg[d.seg] == nil {
			bySeg[d.seg] = roaring.New()
		}
		bySeg[d.seg].Add(d.doc)
	}
	for i, docs := range bySeg {
		checked, err := f.check(ctx, segs[i].Segment(), docs)
		if err != nil {
			return nil, err
		}
		bySeg[i] = checked
	}
	kept := best[:0:0]
	for _, d := range best {
		if bySeg[d.seg].Contains(d.doc) {
			kept = append(kept, d)
		}
	}
	return kept, nil
}

// checkAll returns the filter with every unchecked phrase checked on the
// positions of all the documents required holds.
func (f *docFilter) checkAll(ctx context.Context, segs []*scorch.SegmentSnapshot) (*docFilter, error) {
	out := &docFilter{userID: f.userID, required: make([]*roaring.Bitmap, len(f.required)), excluded: f.excluded}
	for i, req := range f.required {
		checked, err := f.check(ctx, segs[i].Segment(), req)
		if err != nil {
			return nil, err
		}
		out.required[i] = checked
	}
	return out, nil
}

// check returns the documents of docs (seg's; not modified) that hold
// every unchecked phrase, read on their positions.
func (f *docFilter) check(ctx context.Context, seg segment.Segment, docs *roaring.Bitmap) (*roaring.Bitmap, error) {
	for _, ph := range f.unchecked {
		m, err := phraseDocs(ctx, seg, f.userID, docs, ph, true)
		if err != nil {
			return nil, err
		}
		docs = m
	}
	return docs, nil
}

// phraseDocs returns the documents of within (seg's, userID's; not
// modified) that hold ph in one message or in the title, exactly when ph.exact and
// positions, else a superset of them (without positions: those holding
// its pairs).
func phraseDocs(ctx context.Context, seg segment.Segment, userID string, within *roaring.Bitmap, ph phrase, positions bool) (*roaring.Bitmap, error) {
	body, err := chainDocs(ctx, seg, within, ph.pairs(userID, pairTerm), positions)
	if err != nil {
		return nil, err
	}
	title, err := chainDocs(ctx, seg, within, ph.pairs(userID, titlePairTerm), positions)
	if err != nil {
		return nil, err
	}
	out := roaring.Or(body, title)
	for _, alts := range ph.unpaired() {
		if out.IsEmpty() {
			break
		}
		words := roaring.New()
		for _, t := range alts {
			pl, err := postingsOf(seg, fieldText, t)
			if err != nil {
				return nil, err
			}
			words.Or(postingsBitmap(pl))
		}
		out.And(words)
	}
	return out, nil
}

// pairAt is one link of a phrase's chain: the pair terms of its
// alternatives at offset at and at+1.
type pairAt struct {
	at    int
	terms []string
}

// exact reports whether the pairs decide the phrase: one position with
// terms (a word), or every position with terms next to another with
// terms, so that the chain of pairs covers it.
func (ph phrase) exact() bool {
	withTerms := 0
	for _, alts := range ph {
		if len(alts) > 0 {
			withTerms++
		}
	}
	return withTerms == 1 || (withTerms > 1 && len(ph.unpaired()) == 0)
}

// pairs returns the phrase's chain: for each two adjacent positions with
// terms, userID's terms (made by term) of every pair of their
// alternatives.
func (ph phrase) pairs(userID string, term func(userID, x, y string) string) []pairAt {
	var out []pairAt
	for i := 0; i+1 < len(ph); i++ {
		if len(ph[i]) == 0 || len(ph[i+1]) == 0 {
			continue
		}
		p := pairAt{at: i}
		for _, x := range ph[i] {
			for _, y := range ph[i+1] {
				p.terms = append(p.terms, term(userID, x, y))
			}
		}
		out = append(out, p)
	}
	return out
}

// unpaired returns, for each position with terms but no neighbour with
// terms, its alternatives (scored-text words): they are looked for in the
// document, not at a position.
func (ph phrase) unpaired() [][]string {
	var out [][]string
	for i, alts := range ph {
		if len(alts) == 0 || (i > 0 && len(ph[i-1]) > 0) || (i+1 < len(ph) && len(ph[i+1]) > 0) {
			continue
		}
		out = append(out, alts)
	}
	return out
}

// chainDocs returns the documents of within (not modified) holding every
// pair of chain at positions p+at for one p (without positions: holding
// every pair); within itself for an empty chain.
func chainDocs(ctx context.Context, seg segment.Segment, within *roaring.Bitmap, chain []pairAt, positions bool) (*roaring.Bitmap, error) {
	cand := within.Clone()
	lists := make([][]segment.PostingsList, len(chain))
	for k, p := range chain {
		held := roaring.New()
		for _, t := range p.terms {
			pl, err := postingsOf(seg, fieldPairs, t)
			if err != nil {
				return nil, err
			}
			lists[k] = append(lists[k], pl)
			held.Or(postingsBitmap(pl))
		}
		if cand.And(held); cand.IsEmpty() {
			return cand, nil
		}
	}
	if len(chain) <= 1 || !positions {
		return cand, nil
	}
	cursors := make([][]*posCursor, len(chain))
	for k := range lists {
		for _, pl := range lists[k] {
			cursors[k] = append(cursors[k], newPosCursor(pl, cand))
		}
	}
	out := roaring.New()
	var starts, pos []uint64
	docs := cand.Iterator()
	for n := 0; docs.HasNext(); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		doc := uint64(docs.Next())
		starts = starts[:0]
		for k, p := range chain {
			pos = pos[:0]
			for _, c := range cursors[k] {
				at, err := c.positions(doc)
				if err != nil {
					return nil, err
				}
				for _, x := range at {
					if x >= uint64(p.at) {
						pos = append(pos, x-uint64(p.at))
					}
				}
			}
			slices.Sort(pos)
			if k == 0 {
				starts = append(starts, pos...)
			} else {
				starts = intersectSorted(starts, pos)
			}
			if len(starts) == 0 {
				break
			}
		}
		if len(starts) > 0 {
			out.Add(uint32(doc))
		}
	}
	return out, nil
}

// posCursor reads one posting list's positions at ascending documents.
// It keeps the posting it read last: an iterator cannot step back to a
// document it has passed.
type posCursor struct {
	it   segment.PostingsIterator
	doc  uint64
	pos  []uint64
	read bool // doc and pos hold a posting
	done bool
}

// newPosCursor returns a cursor over pl's postings that decodes only
// those of docs where the segment allows it.
func newPosCursor(pl segment.PostingsList, docs *roaring.Bitmap) *posCursor {
	it := pl.Iterator(true, false, true, nil)
	if o, ok := it.(segment.OptimizablePostingsIterator); ok {
		if bm := o.ActualBitmap(); bm != nil {
			o.ReplaceActual(roaring.And(bm, docs))
		}
	}
	return &posCursor{it: it}
}

// positions returns the positions of the posting of doc (nil when the
// list does not hold doc); docs must come in ascending order. The slice
// is valid until the next call.
func (c *posCursor) positions(doc uint64) ([]uint64, error) {
	if c.done {
		return nil, nil
	}
	if !c.read || c.doc < doc {
		p, err := c.it.Advance(doc)
		if err != nil {
			return nil, err
		}
		if p == nil {
			c.done = true
			return nil, nil
		}
		c.read, c.doc, c.pos = true, p.Number(), c.pos[:0]
		locs := p.Locations()
		if len(locs) == 0 { // found once: see newPairsField
			c.pos = append(c.pos, p.Frequency()-1)
		}
		for _, l := range locs {
			at := l.Pos()
			c.pos = append(c.pos, at)
			for _, d := range l.ArrayPositions() {
				at += d
				c.pos = append(c.pos, at)
			}
		}
	}
	if c.doc != doc {
		return nil, nil
	}
	return c.pos, nil
}

// intersectSorted returns the values of a (sorted) also in b (sorted),
// reusing a.
func intersectSorted(a, b []uint64) []uint64 {
	out, j := a[:0], 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			out = append(out, x)
		}
	}
	return out
}
