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
// checked on positions, each pair's positions looked up at the documents
// and intersected, offset by offset, until a start is left or none is. A
// phrase matches in the body or in the title (whose pairs have their own
// terms), never partly in each. A short pair list's positions in a
// segment are decoded whole the first time a query needs them and kept in
// the block cache (pairPositions), under their owner, as a word's blocks
// are; a long list is walked to the documents checked (posCursor).
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
	// read and held are, by segment, the documents whose positions
	// verify has read and those of them that hold every unchecked
	// phrase: a later round reads only documents it has not read.
	read, held []*roaring.Bitmap
	lists      *pairLists
}

// pairLists keeps the posting lists of the pair terms a query looks up,
// by segment and term, so that each is looked up in a segment's
// dictionary once per query however many rounds read it. Not safe for
// concurrent use.
type pairLists struct {
	segs  []*scorch.SegmentSnapshot
	cache *blockCache // where the pairs' decoded positions are kept
	m     map[segTerm]segment.PostingsList
}

type segTerm struct {
	seg  int
	term string
}

func newPairLists(segs []*scorch.SegmentSnapshot, cache *blockCache) *pairLists {
	return &pairLists{segs: segs, cache: cache, m: make(map[segTerm]segment.PostingsList)}
}

// get returns the posting list of term in the pairs field of segment i.
func (l *pairLists) get(i int, term string) (segment.PostingsList, error) {
	k := segTerm{i, term}
	if pl, ok := l.m[k]; ok {
		return pl, nil
	}
	pl, err := postingsOf(l.segs[i].Segment(), fieldPairs, term)
	if err != nil {
		return nil, err
	}
	l.m[k] = pl
	return pl, nil
}

// cachedPairPostings bounds the pair lists whose positions are decoded
// whole and kept (pairPositions): zap cuts a list of fewer postings into
// one chunk, and reaching any document of a chunk decodes every posting
// before it, so decoding such a list once costs what one check does, and
// keeping it costs little. A longer list has chunks zap seeks to: it is
// walked to the documents checked (posCursor), decoding only their
// chunks, and not kept (at 300,000 sessions keeping long lists filled
// the cache and evicted what later queries needed; docs/index.md).
const cachedPairPostings = 1024

// positionReader gives a pair list's positions at documents in ascending
// order.
type positionReader interface {
	positions(doc uint32) ([]uint32, error)
}

// reader returns a reader of userID's pair term in segment i at the
// documents of docs (ascending): the kept positions of a short list
// (built on first use), else a cursor over the list.
func (l *pairLists) reader(i int, userID, term string, docs *roaring.Bitmap) (positionReader, error) {
	pl, err := l.get(i, term)
	if err != nil {
		return nil, err
	}
	if pl.Count() >= cachedPairPostings {
		return newPosCursor(pl, docs), nil
	}
	seg := l.segs[i].Segment()
	v, err := l.cache.get(blockKey{seg: seg, name: term, user: userID, kind: keyPairs}, nil, func() (any, int64, error) {
		pp, err := decodePairPositions(pl)
		if err != nil {
			return nil, 0, err
		}
		return pp, pp.size(), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*pairPositions), nil
}

// candidates returns how many documents required holds in all.
func (f *docFilter) candidates() uint64 {
	var n uint64
	for _, r := range f.required {
		if r != nil {
			n += r.GetCardinality()
		}
	}
	return n
}

// tasks returns, by segment, the documents the filter leaves of required
// (the user's live documents holding the phrases): the candidates of a
// query with phrases.
func (f *docFilter) tasks() []segTask {
	var tasks []segTask
	for i, r := range f.required {
		if r == nil || r.IsEmpty() {
			continue
		}
		if cand := f.apply(i, r); !cand.IsEmpty() {
			tasks = append(tasks, segTask{seg: i, cand: cand})
		}
	}
	return tasks
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
func phraseFilter(ctx context.Context, cache *blockCache, segs []*scorch.SegmentSnapshot, userID string, pq parsedQuery, lazy bool) (*docFilter, error) {
	var excl []phrase
	for _, ph := range pq.Exclude {
		if ph.exact() {
			excl = append(excl, ph)
		}
	}
	if len(pq.Phrases) == 0 && len(excl) == 0 {
		return nil, nil
	}
	f := &docFilter{userID: userID, lists: newPairLists(segs, cache)}
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
				if req, err = phraseDocs(ctx, f.lists, i, userID, req, ph, !lazy); err != nil {
					return nil, err
				}
			}
			f.required[i] = req
		}
		if f.excluded != nil {
			exc := roaring.New()
			for _, ph := range excl {
				m, err := phraseDocs(ctx, f.lists, i, userID, user, ph, true)
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
		f.read, f.held = make([]*roaring.Bitmap, len(segs)), make([]*roaring.Bitmap, len(segs))
		for i := range segs {
			f.read[i], f.held[i] = roaring.New(), roaring.New()
		}
	}
	return f, nil
}

// verify returns the documents of best (in order) that hold every
// unchecked phrase, read on the positions of their segments; documents
// an earlier call read are not read again.
func (f *docFilter) verify(ctx context.Context, best []scoredDoc) ([]scoredDoc, error) {
	if len(f.unchecked) == 0 {
		return best, nil
	}
	bySeg := make(map[int]*roaring.Bitmap)
	for _, d := range best {
		if f.read[d.seg].Contains(d.doc) {
			continue
		}
		if bySeg[d.seg] == nil {
			bySeg[d.seg] = roaring.New()
		}
		bySeg[d.seg].Add(d.doc)
	}
	for i, docs := range bySeg {
		if err := f.readPositions(ctx, i, docs); err != nil {
			return nil, err
		}
		f.read[i].Or(docs)
	}
	kept := best[:0:0]
	for _, d := range best {
		if f.held[d.seg].Contains(d.doc) {
			kept = append(kept, d)
		}
	}
	return kept, nil
}

// readPositions checks the unchecked phrases on docs (segment i's, none
// read before; not modified) and notes them in read and held.
func (f *docFilter) readPositions(ctx context.Context, i int, docs *roaring.Bitmap) error {
	for _, ph := range f.unchecked {
		m, err := phraseDocs(ctx, f.lists, i, f.userID, docs, ph, true)
		if err != nil {
			return err
		}
		if docs = m; docs.IsEmpty() {
			break
		}
	}
	f.held[i].Or(docs)
	return nil
}

// checkAll returns the filter with every unchecked phrase checked on the
// positions of all the documents required holds (reading only those no
// earlier verify read).
func (f *docFilter) checkAll(ctx context.Context) (*docFilter, error) {
	out := &docFilter{userID: f.userID, required: make([]*roaring.Bitmap, len(f.required)), excluded: f.excluded, lists: f.lists}
	for i, req := range f.required {
		fresh := roaring.AndNot(req, f.read[i])
		if err := f.readPositions(ctx, i, fresh); err != nil {
			return nil, err
		}
		f.read[i].Or(fresh)
		out.required[i] = roaring.And(req, f.held[i])
	}
	return out, nil
}

// phraseDocs returns the documents of within (seg's, userID's; not
// modified) that hold ph in one message or in the title, exactly when ph.exact and
// positions, else a superset of them (without positions: those holding
// its pairs).
func phraseDocs(ctx context.Context, lists *pairLists, seg int, userID string, within *roaring.Bitmap, ph phrase, positions bool) (*roaring.Bitmap, error) {
	body, err := chainDocs(ctx, lists, seg, userID, within, ph.pairs(userID, pairTerm), positions)
	if err != nil {
		return nil, err
	}
	title, err := chainDocs(ctx, lists, seg, userID, within, ph.pairs(userID, titlePairTerm), positions)
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
			pl, err := postingsOf(lists.segs[seg].Segment(), fieldText, textTerm(userID, t))
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
func chainDocs(ctx context.Context, lists *pairLists, seg int, userID string, within *roaring.Bitmap, chain []pairAt, positions bool) (*roaring.Bitmap, error) {
	cand := within.Clone()
	pls := make([][]segment.PostingsList, len(chain))
	for k, p := range chain {
		held := roaring.New()
		for _, t := range p.terms {
			pl, err := lists.get(seg, t)
			if err != nil {
				return nil, err
			}
			pls[k] = append(pls[k], pl)
			held.Or(postingsBitmap(pl))
		}
		if cand.And(held); cand.IsEmpty() {
			return cand, nil
		}
	}
	if len(chain) <= 1 || !positions {
		return cand, nil
	}
	at := make([][]positionReader, len(chain))
	for k, p := range chain {
		for _, t := range p.terms {
			r, err := lists.reader(seg, userID, t, cand)
			if err != nil {
				return nil, err
			}
			at[k] = append(at[k], r)
		}
	}
	out := roaring.New()
	var starts, pos []uint32
	docs := cand.Iterator()
	for n := 0; docs.HasNext(); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		doc := docs.Next()
		starts = starts[:0]
		for k, p := range chain {
			pos = pos[:0]
			for _, r := range at[k] {
				held, err := r.positions(doc)
				if err != nil {
					return nil, err
				}
				for _, x := range held {
					if x >= uint32(p.at) {
						pos = append(pos, x-uint32(p.at))
					}
				}
			}
			if len(at[k]) > 1 {
				slices.Sort(pos)
			}
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
			out.Add(doc)
		}
	}
	return out, nil
}

// pairPositions is one short pair list's postings in a segment with
// their positions, decoded once and kept (blockCache, keyPairs; see
// cachedPairPostings).
type pairPositions struct {
	docs []uint32 // ascending
	ends []uint32 // docs[i]'s positions are pos[ends[i-1]:ends[i]]
	pos  []uint32 // ascending within a document
}

// decodePairPositions reads every posting of pl with its positions.
func decodePairPositions(pl segment.PostingsList) (*pairPositions, error) {
	pp := &pairPositions{}
	it := pl.Iterator(true, false, true, nil)
	for {
		p, err := it.Next()
		if err != nil {
			return nil, err
		}
		if p == nil {
			return pp, nil
		}
		pp.docs = append(pp.docs, uint32(p.Number()))
		pp.pos = appendPositions(pp.pos, p)
		pp.ends = append(pp.ends, uint32(len(pp.pos)))
	}
}

// positions returns the positions of doc (nil when the pair is not in
// it).
func (pp *pairPositions) positions(doc uint32) ([]uint32, error) {
	i, ok := slices.BinarySearch(pp.docs, doc)
	if !ok {
		return nil, nil
	}
	from := uint32(0)
	if i > 0 {
		from = pp.ends[i-1]
	}
	return pp.pos[from:pp.ends[i]], nil
}

func (pp *pairPositions) size() int64 {
	return 4*int64(cap(pp.docs)+cap(pp.ends)+cap(pp.pos)) + 72
}

// posCursor reads one posting list's positions at ascending documents.
// It keeps the posting it read last: an iterator cannot step back to a
// document it has passed.
type posCursor struct {
	it   segment.PostingsIterator
	doc  uint32
	pos  []uint32
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
func (c *posCursor) positions(doc uint32) ([]uint32, error) {
	if c.done {
		return nil, nil
	}
	if !c.read || c.doc < doc {
		p, err := c.it.Advance(uint64(doc))
		if err != nil {
			return nil, err
		}
		if p == nil {
			c.done = true
			return nil, nil
		}
		c.read, c.doc, c.pos = true, uint32(p.Number()), appendPositions(c.pos[:0], p)
	}
	if c.doc != doc {
		return nil, nil
	}
	return c.pos, nil
}

// appendPositions appends the positions of posting p of a pair list to
// dst (see newPairsField for how they are stored).
func appendPositions(dst []uint32, p segment.Posting) []uint32 {
	locs := p.Locations()
	if len(locs) == 0 { // found once: see newPairsField
		return append(dst, uint32(p.Frequency()-1))
	}
	for _, l := range locs {
		at := l.Pos()
		dst = append(dst, uint32(at))
		for _, d := range l.ArrayPositions() {
			at += d
			dst = append(dst, uint32(at))
		}
	}
	return dst
}

// intersectSorted returns the values of a (sorted) also in b (sorted),
// reusing a.
func intersectSorted(a, b []uint32) []uint32 {
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
