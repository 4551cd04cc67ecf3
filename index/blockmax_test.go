package index

import (
	"fmt"
	"math/bits"
	"reflect"
	"slices"
	"strings"
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
// rare and for each user, that the blocks give back every posting of the
// user's documents, with its frequency and length as zap decodes them, at
// the document's rank among the user's; that each block's maximum, scaled
// for the mean length (scaleAt), bounds the tf part of BM25 of each of its
// postings at mean lengths below, at and above the one it was computed at;
// and that each user's term lists only the user's documents (textTerm).
func TestTermBlocksHoldEveryPosting(t *testing.T) {
	ix := openTest(t, "")
	users, _ := putLoadCorpus(t, ix, 600)
	segs, release := snapshotSegments(t, ix)
	defer release()
	all, err := ix.sessionLengths.totals(segs)
	if err != nil {
		t.Fatal(err)
	}
	avgdl := all.meanLength()
	common := []string{"the", "error", "test", "retri", "backoff", "parseconfigfil", "webhook", "nosuchterm"}
	checked, converted := 0, 0
	for _, s := range segs {
		seg := s.Segment()
		vals, err := documentValues(seg)
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
			if _, term, ok := splitKey(e.Term); ok && e.Count == 1 {
				terms = append(terms, term)
			}
		}
		views := make([]*userDocs, len(users))
		for i, user := range users {
			bm, err := termDocs(seg, fieldUser, user)
			if err != nil {
				t.Fatal(err)
			}
			views[i] = buildUserDocs(seg, vals, bm)
		}
		for _, term := range terms {
			for i, u := range views {
				pl, err := dict.PostingsList([]byte(textTerm(users[i], term)), nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				tb := checkTermBlocks(t, seg, users[i], u, pl, term, avgdl)
				if tb.liveDocs(nil) != uint64(tb.postings()) {
					t.Fatalf("%q: %d postings, %d documents", term, tb.postings(), tb.liveDocs(nil))
				}
				if tb.postings() != int(pl.Count()) {
					t.Fatalf("%q of %q: the blocks hold %d postings, the user's list %d", term, users[i], tb.postings(), pl.Count())
				}
				checked += tb.postings()
				converted++
			}
		}
	}
	if checked < 1000 || converted == 0 {
		t.Fatalf("only %d postings checked, %d blocks compared in both forms", checked, converted)
	}
}

// checkTermBlocks builds term's blocks in user's documents of seg (u)
// and checks them against the posting list of the user's term pl (see
// TestTermBlocksHoldEveryPosting).
func checkTermBlocks(t *testing.T, seg segment.Segment, user string, u *userDocs, pl segment.PostingsList, term string, avgdl float64) *termBlocks {
	t.Helper()
	tb, decoded, err := buildTermBlocks(seg, user, u, term, avgdl)
	if err != nil {
		t.Fatal(err)
	}
	if decoded != tb.postings() {
		t.Errorf("%q of %q: %d postings decoded for %d of the user's", term, user, decoded, tb.postings())
	}
	if tb.lens != nil {
		t.Errorf("%q: the length field disagrees with the norms", term)
	}
	inMasks := 0
	tb.each(func(_ int, bi blockInfo) { inMasks += bits.OnesCount64(bi.mask) })
	if inMasks != len(tb.tf) {
		t.Fatalf("%q: %d documents in the masks, %d postings", term, inMasks, len(tb.tf))
	}
	// The other form holds the same blocks.
	blocks := u.blocks()
	other := termBlocks{blk: tb.blk, part: tb.part, ids: tb.ids} // what setForm reads and writes
	other.setForm(blocks, tb.ids != nil)
	parts := func(tb *termBlocks, b int) blockParts {
		if i, ok := tb.index(b); ok {
			return tb.part[i]
		}
		return blockParts{}
	}
	for b := range blocks {
		if tb.at(b) != other.at(b) || parts(tb, b) != parts(&other, b) {
			t.Fatalf("%q block %d: %+v %v in one form, %+v %v in the other", term, b, tb.at(b), parts(tb, b), other.at(b), parts(&other, b))
		}
	}
	it := pl.Iterator(true, true, false, nil)
	for k := uint32(0); ; {
		p, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			if int(k) != tb.postings() {
				t.Fatalf("%q: %d of the user's postings in the segment, %d in blocks", term, k, tb.postings())
			}
			break
		}
		d, ok := u.rank(uint32(p.Number()))
		if !ok {
			t.Fatalf("%q of %q: the list holds document %d, not the user's", term, user, p.Number())
		}
		if u.docs[d] != uint32(p.Number()) {
			t.Fatalf("document %d has rank %d, which names document %d", p.Number(), d, u.docs[d])
		}
		b := d >> blockShift
		bi := tb.at(int(b))
		if m := bi.mask; m&(1<<(d&blockMask)) == 0 || bi.first+uint32(bits.OnesCount64(m&(1<<(d&blockMask)-1))) != k {
			t.Fatalf("%q: posting %d (rank %d) not where block %d says", term, k, d, b)
		}
		tf, l := float64(p.Frequency()), postingLength(p.Norm())
		length := float64(u.lens[d])
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
			// The part's bound, but for the rounding pruneSlack allows.
			e := (d & blockMask) >> partShift
			if bound := float64(bi.bound) * float64(parts(tb, int(b))[e]) / partScale * tb.scaleAt(a); bm25TF(tf, l, a) > bound*(1+1e-12) {
				t.Fatalf("%q document %d at mean length %v: tf part %v above its part's bound %v", term, d, a, bm25TF(tf, l, a), bound)
			}
		}
		k++
	}
	return tb
}

// TestBlockCache checks that the cache builds an entry once, rebuilds it
// when the mean length has drifted, evicts the least recently used to stay
// within its limit, and drops the entries of segments no longer live.
func TestBlockCache(t *testing.T) {
	ix := openTest(t, "")
	users, _ := putLoadCorpus(t, ix, 300)
	segs, release := snapshotSegments(t, ix)
	defer release()
	seg := segs[0].Segment()
	var c blockCache
	u, err := c.userDocs(seg, users[0])
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.userDocs(seg, users[0]); err != nil || again != u {
		t.Fatalf("a user's documents were built again (%v)", err)
	}
	get := func(term string, avgdl float64) *termBlocks {
		t.Helper()
		tb, err := c.termBlocks(seg, users[0], u, term, avgdl)
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
	if entries != 4 { // the document values, the user's documents, "the" and "nosuchterm"
		t.Fatalf("%d entries, want 4", entries)
	}
	c.setLimit(bytes - 1)
	if _, got, _ := c.stats(); got > bytes-1 {
		t.Errorf("%d bytes cached over a limit of %d", got, bytes-1)
	}
	for _, term := range []string{"test", "retri", "backoff", "webhook", "config", "the"} {
		get(term, 100)
	}
	c.setLimit(2 * get("the", 100).size())
	c.mu.Lock()
	_, kept := c.entries[blockKey{seg: seg, name: "the", user: users[0]}]
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
		dead := blockKey{seg: deadSegment{n: n}, kind: keyValues}
		if _, err := c.get(dead, nil, func() (any, int64, error) { return &docValues{}, 1, nil }); err != nil {
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

// at returns what the term holds in block b (nothing: a zero mask).
func (tb *termBlocks) at(b int) blockInfo {
	if i, ok := tb.index(b); ok {
		return tb.blk[i]
	}
	return blockInfo{}
}

// each calls f with every block that holds a posting.
func (tb *termBlocks) each(f func(b int, bi blockInfo)) {
	for i, bi := range tb.blk {
		if bi.mask == 0 {
			continue
		}
		if tb.ids != nil {
			f(int(tb.ids[i]), bi)
		} else {
			f(i, bi)
		}
	}
}

// TestBlockCacheFair checks that eviction is fair between users: one
// user's queries of many words, far past the limit, evict that user's own
// blocks, not another user's few.
func TestBlockCacheFair(t *testing.T) {
	ix := openTest(t, "")
	users, _ := putLoadCorpus(t, ix, 300)
	segs, release := snapshotSegments(t, ix)
	defer release()
	seg := segs[0].Segment()
	var c blockCache
	views := make([]*userDocs, 2)
	for i := range views {
		u, err := c.userDocs(seg, users[i])
		if err != nil {
			t.Fatal(err)
		}
		views[i] = u
	}
	get := func(user int, term string) *termBlocks {
		t.Helper()
		tb, err := c.termBlocks(seg, users[user], views[user], term, 100)
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	light := []string{"the", "test", "retri"}
	var lightBytes int64
	for _, term := range light {
		lightBytes += get(1, term).size()
	}
	_, base, _ := c.stats()
	c.setLimit(base + 4*lightBytes)
	heavy := 0
	d, err := seg.Dictionary(fieldText)
	if err != nil {
		t.Fatal(err)
	}
	it := d.AutomatonIterator(nil, nil, nil)
	for heavy < 400 {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if owner, term, ok := splitKey(e.Term); ok && owner == users[0] && get(0, term).postings() > 0 {
			heavy++
		}
	}
	if _, bytes, _ := c.stats(); heavy < 100 || bytes > base+4*lightBytes {
		t.Fatalf("%d words of the heavy user, %d bytes cached: the test did not fill the cache", heavy, bytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, term := range light {
		if _, ok := c.entries[blockKey{seg: seg, name: term, user: users[1]}]; !ok {
			t.Errorf("the light user's blocks of %q were evicted by the heavy user's queries", term)
		}
	}
	if n := c.built[keyTerm]; n < heavy+len(light) {
		t.Errorf("%d blocks built, want at least %d", n, heavy+len(light))
	}
}

// TestFirstQueryDecodesOwnPostings checks that a user's first query of a
// word decodes the user's postings of it and no other user's: alice's
// first query of "quasar" decodes exactly her documents holding it, and
// of "build" hers holding that, whether bob holds none or thousands of
// documents with both words, written in the same batches as hers, so that
// their documents lie between hers in the same segments. Her hits and
// scores are the same in every case (TestTenantStatistics checks that at
// large). With every user's postings of a word in one list, as before
// format 7, zap decoded the chunks her postings fall in, which with
// interleaved documents is nearly all of bob's postings too.
func TestFirstQueryDecodesOwnPostings(t *testing.T) {
	const aliceDocs, aliceQuasar = 300, 100 // every third of hers holds quasar
	bobs := []int{0, 3000}
	if fullSize() && !raceEnabled {
		bobs = append(bobs, 10000)
	}
	var want []Hit
	for _, bobDocs := range bobs {
		ix, err := Open(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		ix.warm.stop() // only the queries build blocks
		// Batches of a few hundred, each with alice's sessions among bob's.
		var batch []Session
		flush := func() {
			put(t, ix, batch...)
			batch = batch[:0]
		}
		for i, j := 0, 0; i < aliceDocs || j < bobDocs; {
			// alice's i-th session comes after bob's i*bobDocs/aliceDocs-th.
			if i < aliceDocs && (j >= bobDocs || i*bobDocs <= j*aliceDocs) {
				body := "the build failed with a socket timeout"
				if i%3 == 0 {
					body = "the build failed with a quasar timeout"
				}
				batch = append(batch, Session{UserID: "alice", SessionID: fmt.Sprintf("a%d", i), Body: body})
				i++
			} else {
				batch = append(batch, Session{UserID: "bob", SessionID: fmt.Sprintf("b%d", j),
					Body: fmt.Sprintf("quasar build log %d of the nightly build", j)})
				j++
			}
			if len(batch) == 400 {
				flush()
			}
		}
		flush()
		if bobDocs > 0 && !interleaved(t, ix, "alice", "bob") {
			t.Fatalf("bob %d: no segment holds alice's documents between bob's: the test proves nothing", bobDocs)
		}
		// Each query reads one snapshot, which holds each document once
		// however merges have cut it into segments.
		c := &ix.sessionLengths.blocks
		for _, q := range []struct {
			text string
			want int64
		}{
			{"quasar", aliceQuasar},
			{"build", aliceDocs},
		} {
			before := c.decoded.Load()
			hits := search(t, ix, Query{UserID: "alice", Text: q.text, Kind: Sessions, Limit: 2 * aliceDocs})
			if got := c.decoded.Load() - before; got != q.want {
				t.Errorf("bob holding %d: alice's first query of %q decoded %d postings, want %d (hers)", bobDocs, q.text, got, q.want)
			}
			if q.text == "quasar" {
				// Every match, in the order of their ids: ties are
				// ordered by document number.
				slices.SortFunc(hits, func(a, b Hit) int { return strings.Compare(a.SessionID, b.SessionID) })
				if want == nil {
					want = hits
				} else if !reflect.DeepEqual(hits, want) {
					t.Errorf("bob holding %d: alice's hits for quasar %v, want %v", bobDocs, hits, want)
				}
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(want) != aliceQuasar {
		t.Fatalf("alice's query of quasar: %d hits, want %d", len(want), aliceQuasar)
	}
}

// interleaved reports whether a segment of ix holds documents of a
// between documents of b (a's smallest below b's largest and a's largest
// above b's smallest).
func interleaved(t *testing.T, ix *Index, a, b string) bool {
	t.Helper()
	found := false
	err := ix.snapshot(func(snap *scorch.IndexSnapshot) error {
		for _, s := range snap.Segments() {
			as, err := termDocs(s.Segment(), fieldUser, a)
			if err != nil {
				return err
			}
			bs, err := termDocs(s.Segment(), fieldUser, b)
			if err != nil {
				return err
			}
			if !as.IsEmpty() && !bs.IsEmpty() && as.Minimum() < bs.Maximum() && as.Maximum() > bs.Minimum() {
				found = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
