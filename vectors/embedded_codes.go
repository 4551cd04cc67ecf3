package vectors

import (
	"cmp"
	"context"
	"math"
	"math/bits"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/hindsight-dev/hindsight/topk"
)

const (
	// DefaultCodesFrom is the number of vectors from which a user's vectors
	// are searched through sign codes instead of an exact scan (see
	// Embedded): below it the exact scan costs a millisecond or two and its
	// slab a few megabytes.
	DefaultCodesFrom = 2048
	// minCandidates and candidatesPerHit size the short list a code scan
	// hands to exact re-scoring: max(minCandidates, candidatesPerHit×k).
	// bench/results/vectors-1m measures recall@10 with these values.
	minCandidates    = 256
	candidatesPerHit = 16
)

// signCodes is a user's compact index: for each row, the signs of the row
// minus a centre (one bit a dimension), the length of that difference and
// the row's dot product with the centre. The centre is the mean of the
// user's rows when the index was built; it stays fixed as rows come and go
// (a drifted centre costs recall, never correctness: the short list is
// re-scored exactly).
//
// A query q estimates x·q for every row x as
//
//	|x−c| |q−c| cos(π h/dim) + x·c + q·c − c·c
//
// where h is the Hamming distance of the two sign codes: for directions
// spread evenly around the centre, the fraction of differing signs
// estimates the angle between x−c and q−c over π. Centring matters:
// embeddings share a large common component (the offline model's vectors
// have a mean of length 0.8), which would otherwise fix most signs.
//
// A code is kept in two planes: its first eighth, and at least 256 bits
// (head, the signs of the first dimensions), and the rest (tail). A scan
// reads the head of every row, keeps the rows whose heads are nearest the
// query's (survivorsFor), and reads the tails of those alone. The scan
// streams the heads from memory, so their size bounds it (the survivors'
// tails are random reads, so they are kept few); a head under 256 bits
// loses neighbours where clusters are loose (TestCodesRecallLooseClusters).
type signCodes struct {
	dim, words int
	headWords  int // words in head; words−headWords in tail
	centre     []float32
	centreSq   float32   // c·c
	cosTable   []float32 // cos(π h/dim) for h in [0, dim]
	head       []uint64  // rows × headWords
	tail       []uint64  // rows × (words−headWords)
	norm       []float32 // |x−c| per row
	dotCentre  []float32 // x·c per row
	scratch    []uint64  // a code being written (under the user's write lock)
	scans      sync.Pool // of *scanScratch, for concurrent scans
}

func newSignCodes(dim int, centre []float32) *signCodes {
	words := (dim + 63) / 64
	c := &signCodes{dim: dim, words: words, headWords: min(words, max(4, (words+7)/8)), centre: centre, cosTable: make([]float32, dim+1),
		scratch: make([]uint64, words)}
	for _, x := range centre {
		c.centreSq += x * x
	}
	for h := range c.cosTable {
		c.cosTable[h] = float32(math.Cos(math.Pi * float64(h) / float64(dim)))
	}
	return c
}

// encode writes x's code into dst (words long) and returns |x−c| and x·c.
func (c *signCodes) encode(x []float32, dst []uint64) (norm, dotCentre float32) {
	clear(dst)
	var n2, dc float32
	for i, v := range x {
		d := v - c.centre[i]
		n2 += d * d
		dc += v * c.centre[i]
		if d > 0 {
			dst[i>>6] |= 1 << (i & 63)
		}
	}
	return float32(math.Sqrt(float64(n2))), dc
}

// appendRow adds x as the last row.
func (c *signCodes) appendRow(x []float32) {
	n, d := c.encode(x, c.scratch)
	c.head = append(c.head, c.scratch[:c.headWords]...)
	c.tail = append(c.tail, c.scratch[c.headWords:]...)
	c.norm = append(c.norm, n)
	c.dotCentre = append(c.dotCentre, d)
}

// moveRow copies row from over row to, and truncate drops rows from n on.
func (c *signCodes) moveRow(to, from int) {
	hw, tw := c.headWords, c.words-c.headWords
	copy(c.head[to*hw:(to+1)*hw], c.head[from*hw:(from+1)*hw])
	copy(c.tail[to*tw:(to+1)*tw], c.tail[from*tw:(from+1)*tw])
	c.norm[to], c.dotCentre[to] = c.norm[from], c.dotCentre[from]
}

func (c *signCodes) truncate(n int) {
	c.head, c.tail = c.head[:n*c.headWords], c.tail[:n*(c.words-c.headWords)]
	c.norm, c.dotCentre = c.norm[:n], c.dotCentre[:n]
}

// rows is the number of rows.
func (c *signCodes) rows() int { return len(c.norm) }

// bytes is the memory the codes hold.
func (c *signCodes) bytes() int64 {
	return int64(cap(c.head)+cap(c.tail)+cap(c.scratch))*8 + int64(cap(c.norm)+cap(c.dotCentre)+cap(c.centre)+cap(c.cosTable))*4
}

// codedQuery is a query prepared for estimate.
type codedQuery struct {
	bits  []uint64
	norm  float32 // |q−c|
	extra float32 // q·c − c·c
}

func (c *signCodes) prepare(q []float32) codedQuery {
	cq := codedQuery{bits: make([]uint64, c.words)}
	var dc float32
	cq.norm, dc = c.encode(q, cq.bits)
	cq.extra = dc - c.centreSq
	return cq
}

// survivorsFor is how many rows of a scanned range of rows keep their
// place by their heads alone: 1/64 of them, and never under 8n (n the
// short list wanted), so the full codes rank a few thousand rows.
func survivorsFor(rows, n int) int { return max(8*n, rows/64) }

// shortList returns the n rows of [lo, hi) with the highest estimated
// scores (in no order), checking ctx every scanBlock rows.
func (c *signCodes) shortList(ctx context.Context, q codedQuery, lo, hi, n int) ([]candidate, error) {
	top := topk.New(n, func(a, b candidate) bool { return a.score < b.score })
	// floor is the worst kept estimate once n are kept: most rows fall
	// below it and cost one comparison, not a call.
	floor := float32(math.Inf(-1))
	hw, tw := c.headWords, c.words-c.headWords
	qh, qt := q.bits[:hw], q.bits[hw:]
	rank := func(r, h int) {
		h += hamming(c.tail[r*tw:(r+1)*tw], qt)
		est := c.norm[r]*q.norm*c.cosTable[h] + c.dotCentre[r] + q.extra
		if est > floor {
			top.Push(candidate{score: est, row: int32(r)})
			if top.Len() == n {
				floor = top.Items()[0].score
			}
		}
	}
	keep := survivorsFor(hi-lo, n)
	if tw == 0 || keep >= hi-lo {
		for start := lo; start < hi; start += scanBlock {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for r := start; r < min(start+scanBlock, hi); r++ {
				rank(r, hamming(c.head[r*hw:(r+1)*hw], qh))
			}
		}
		return top.Items(), nil
	}
	// The heads' distances and their histogram, then the cut: every row
	// nearer than it, and rows at it in row order until keep rows are
	// kept, so the tails read (random reads, the costly part) are exactly
	// keep, whatever the distances' ties.
	sc, _ := c.scans.Get().(*scanScratch)
	if sc == nil {
		sc = new(scanScratch)
	}
	defer c.scans.Put(sc)
	dist := slices.Grow(sc.dist[:0], hi-lo)[:hi-lo]
	counts := slices.Grow(sc.counts[:0], 64*hw+1)[:64*hw+1]
	clear(counts)
	sc.dist, sc.counts = dist, counts
	for start := lo; start < hi; start += scanBlock {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+scanBlock, hi)
		headDistances(c.head[start*hw:end*hw], qh, dist[start-lo:end-lo], counts)
	}
	cut, kept := 0, 0
	for cut < len(counts)-1 && kept+counts[cut] < keep {
		kept += counts[cut]
		cut++
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	atCut := keep - kept // rows at the cut still to keep
	for i, h := range dist {
		switch {
		case int(h) < cut:
			rank(lo+i, int(h))
		case int(h) == cut && atCut > 0:
			atCut--
			rank(lo+i, int(h))
		}
	}
	return top.Items(), nil
}

// scanScratch is a code scan's working memory (a distance a row), reused
// between queries: a million rows' distances are 2 MB a query otherwise.
type scanScratch struct {
	dist   []uint16
	counts []int
}

// headDistances writes the Hamming distance of each head in heads (rows of
// len(q) words) to q into dist, and counts them in counts. The heads of
// the usual dimensions (up to 3,072) have a loop each: a fixed-size row is
// read without bounds checks or a call, which halves the scan.
func headDistances(heads, q []uint64, dist []uint16, counts []int) {
	switch len(q) {
	case 1:
		q0 := q[0]
		for i, x := range heads[:len(dist)] {
			h := bits.OnesCount64(x ^ q0)
			dist[i] = uint16(h)
			counts[h]++
		}
	case 2:
		qa := (*[2]uint64)(q)
		for i := range dist {
			x := (*[2]uint64)(heads[2*i:])
			h := bits.OnesCount64(x[0]^qa[0]) + bits.OnesCount64(x[1]^qa[1])
			dist[i] = uint16(h)
			counts[h]++
		}
	case 3:
		qa := (*[3]uint64)(q)
		for i := range dist {
			x := (*[3]uint64)(heads[3*i:])
			h := bits.OnesCount64(x[0]^qa[0]) + bits.OnesCount64(x[1]^qa[1]) + bits.OnesCount64(x[2]^qa[2])
			dist[i] = uint16(h)
			counts[h]++
		}
	case 4:
		qa := (*[4]uint64)(q)
		for i := range dist {
			x := (*[4]uint64)(heads[4*i:])
			h := bits.OnesCount64(x[0]^qa[0]) + bits.OnesCount64(x[1]^qa[1]) + bits.OnesCount64(x[2]^qa[2]) + bits.OnesCount64(x[3]^qa[3])
			dist[i] = uint16(h)
			counts[h]++
		}
	case 6:
		qa := (*[6]uint64)(q)
		for i := range dist {
			x := (*[6]uint64)(heads[6*i:])
			h := bits.OnesCount64(x[0]^qa[0]) + bits.OnesCount64(x[1]^qa[1]) + bits.OnesCount64(x[2]^qa[2]) +
				bits.OnesCount64(x[3]^qa[3]) + bits.OnesCount64(x[4]^qa[4]) + bits.OnesCount64(x[5]^qa[5])
			dist[i] = uint16(h)
			counts[h]++
		}
	default:
		w := len(q)
		for i := range dist {
			h := hamming(heads[i*w:(i+1)*w:(i+1)*w], q)
			dist[i] = uint16(h)
			counts[h]++
		}
	}
}

// hamming counts the differing bits of two codes of equal length.
func hamming(a, b []uint64) int {
	b = b[:len(a)]
	var h0, h1, h2, h3 int
	i := 0
	for ; i+4 <= len(a); i += 4 {
		h0 += bits.OnesCount64(a[i] ^ b[i])
		h1 += bits.OnesCount64(a[i+1] ^ b[i+1])
		h2 += bits.OnesCount64(a[i+2] ^ b[i+2])
		h3 += bits.OnesCount64(a[i+3] ^ b[i+3])
	}
	for ; i < len(a); i++ {
		h0 += bits.OnesCount64(a[i] ^ b[i])
	}
	return h0 + h1 + h2 + h3
}

// rescore computes the exact cosine of q (unit) with each candidate's
// stored vector, read from the file in one transaction, and returns the
// hits. A candidate whose vector is gone from the file (a write committed
// while the query ran, before the memory caught up) is skipped; one whose
// vector was replaced meanwhile is scored with the new vector.
func (u *userVectors) rescore(ctx context.Context, db *bolt.DB, userID string, q []float32, cands []candidate) ([]Hit, error) {
	hits := make([]Hit, 0, len(cands))
	buf := make([]float32, u.dim)
	x := blas32.Vector{N: u.dim, Inc: 1, Data: buf}
	qv := blas32.Vector{N: u.dim, Inc: 1, Data: q}
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketVectors)
		if b == nil {
			return nil
		}
		for i, c := range cands {
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			ref := u.rows[c.row]
			key := sessionPrefix(userID, ref.sess.id)
			key = append(key, byte(ref.ord>>24), byte(ref.ord>>16), byte(ref.ord>>8), byte(ref.ord))
			v := b.Get(key)
			if v == nil {
				continue
			}
			_, floats, err := decodeValue(v)
			if err != nil || len(floats) != 4*len(buf) {
				continue // Check reports such a value; the exact scan refuses to load it
			}
			decodeFloats(buf, floats)
			hits = append(hits, Hit{SessionID: ref.sess.id, Ordinal: int(ref.ord), Score: float64(blas32.Dot(qv, x))})
		}
		return nil
	})
	return hits, err
}

// centreOf is sum/n as float32s.
func centreOf(sum []float64, n int) []float32 {
	c := make([]float32, len(sum))
	for i, v := range sum {
		c[i] = float32(v / float64(max(n, 1)))
	}
	return c
}

// grow makes room for n more rows.
func (c *signCodes) grow(n int) {
	c.head = slices.Grow(c.head, n*c.headWords)
	c.tail = slices.Grow(c.tail, n*(c.words-c.headWords))
	c.norm = slices.Grow(c.norm, n)
	c.dotCentre = slices.Grow(c.dotCentre, n)
}

// encodeSlab replaces the slab by codes centred on its mean (caller holds
// u.mu for writing): the user has grown past codesFrom.
func (u *userVectors) encodeSlab() {
	n := len(u.rows)
	sum := make([]float64, u.dim)
	for r := range n {
		for i, v := range u.data[r*u.dim : (r+1)*u.dim] {
			sum[i] += float64(v)
		}
	}
	codes := newSignCodes(u.dim, centreOf(sum, n))
	codes.grow(n)
	for r := range n {
		codes.appendRow(u.data[r*u.dim : (r+1)*u.dim])
	}
	u.codes, u.data = codes, nil
}

// nearestCoded answers a query of a user kept as codes (caller holds u.mu
// for reading): the code scan picks a short list, which is re-scored with
// the stored vectors.
func (u *userVectors) nearestCoded(ctx context.Context, db *bolt.DB, userID string, q []float32, k, workers int) ([]Hit, error) {
	n := len(u.rows)
	if n == 0 {
		return []Hit{}, nil
	}
	k = min(k, n)
	short := max(minCandidates, candidatesPerHit*k)
	var cands []candidate
	if short >= n {
		cands = make([]candidate, n)
		for r := range cands {
			cands[r].row = int32(r)
		}
	} else {
		cq := u.codes.prepare(q)
		var err error
		cands, err = splitScan(n, workers, func(lo, hi int) ([]candidate, error) {
			return u.codes.shortList(ctx, cq, lo, hi, short)
		})
		if err != nil {
			return nil, err
		}
		// The parts kept short each; the best of them together.
		slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(b.score, a.score) })
		cands = cands[:min(short, len(cands))]
	}
	hits, err := u.rescore(ctx, db, userID, q, cands)
	if err != nil {
		return nil, err
	}
	return bestHits(hits, k), nil
}

// holds reports whether row r is the code of x.
func (c *signCodes) holds(r int, x []float32) bool {
	want := make([]uint64, c.words)
	n, d := c.encode(x, want)
	hw, tw := c.headWords, c.words-c.headWords
	return slices.Equal(want[:hw], c.head[r*hw:(r+1)*hw]) && slices.Equal(want[hw:], c.tail[r*tw:(r+1)*tw]) &&
		n == c.norm[r] && d == c.dotCentre[r]
}
