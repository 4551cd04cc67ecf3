package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
)

// This file checks a bbolt file's structure by reading it, never by mapping
// it, before bbolt opens it. bbolt trusts its file: a page past the end of a
// truncated file is a SIGBUS when touched through the map, and a damaged page
// header or element is a panic, some of them on goroutines bbolt starts (its
// consistency check and the free-page scan at open run the tree in another
// goroutine and panic there on the first fault), so no recover can catch
// them. checkBoltFile verifies everything those code paths rely on.
//
// The layout (bbolt's internal/common, format version 2; all integers in the
// machine's byte order, as bbolt writes them):
//
//	page header, 16 bytes: id u64, flags u16, count u16, overflow u32
//	meta (after the header of pages 0 and 1): magic u32, version u32,
//	  pageSize u32, flags u32, root bucket {root u64, sequence u64},
//	  freelist u64, pgid (high water mark) u64, txid u64, checksum u64
//	  (FNV-64a of the 56 bytes before it)
//	branch element, 16 bytes: pos u32, ksize u32, pgid u64
//	leaf element, 16 bytes: flags u32, pos u32, ksize u32, vsize u32
//	  (key at the element's offset + pos, the value right after it)
//	bucket value: root u64, sequence u64, then, when root is 0 (an inline
//	  bucket), a leaf page of its own

const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltHeaderSize   = 16
	boltElemSize     = 16
	boltMetaSize     = 64
	boltBranchFlag   = 0x01
	boltLeafFlag     = 0x02
	boltFreelistFlag = 0x10
	boltBucketFlag   = 0x01
	boltNoFreelist   = ^uint64(0)
	boltMaxDepth     = 64 // far beyond any real tree: bbolt's fan-out is in the hundreds
)

var ne = binary.NativeEndian

// boltMeta is the part of a meta page the checks use.
type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64
	txid     uint64
}

// parseMeta reads and validates the meta page in b (a whole page or more).
func parseMeta(b []byte) (boltMeta, bool) {
	if len(b) < boltHeaderSize+boltMetaSize {
		return boltMeta{}, false
	}
	m := b[boltHeaderSize : boltHeaderSize+boltMetaSize]
	h := fnv.New64a()
	h.Write(m[:56])
	if ne.Uint32(m[0:]) != boltMagic || ne.Uint32(m[4:]) != boltVersion || ne.Uint64(m[56:]) != h.Sum64() {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: ne.Uint32(m[8:]), root: ne.Uint64(m[16:]), freelist: ne.Uint64(m[32:]),
		pgid: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}, true
}

// errNotBolt is returned when a file has no valid bbolt meta page.
var errNotBolt = errors.New("it has no valid bbolt header")

// errTruncated is wrapped by the errors of a file shorter than its header says.
var errTruncated = errors.New("truncated")

// boltMetaOf finds the meta page bbolt would use in the first size bytes of
// r: the valid one of pages 0 and 1 with the higher transaction id, the page
// size read from page 0, or else found where page 1 is for some page size.
func boltMetaOf(r io.ReaderAt, size int64) (boltMeta, error) {
	read := func(off int64, n int) []byte {
		if off+int64(n) > size {
			return nil
		}
		b := make([]byte, n)
		if _, err := r.ReadAt(b, off); err != nil {
			return nil
		}
		return b
	}
	var ps uint32
	if m, ok := parseMeta(read(0, boltHeaderSize+boltMetaSize)); ok {
		ps = m.pageSize
	} else {
		for try := uint32(1024); try <= 1<<16; try *= 2 {
			if m, ok := parseMeta(read(int64(try), boltHeaderSize+boltMetaSize)); ok && m.pageSize == try {
				ps = try
				break
			}
		}
	}
	if ps == 0 {
		return boltMeta{}, errNotBolt
	}
	if ps < 512 || ps > 1<<16 || bits.OnesCount32(ps) != 1 {
		return boltMeta{}, fmt.Errorf("its header gives a page size of %d bytes", ps)
	}
	if size < 2*int64(ps) {
		return boltMeta{}, fmt.Errorf("%w: %d bytes, less than its two header pages of %d", errTruncated, size, ps)
	}
	m0, ok0 := parseMeta(read(0, int(ps)))
	m1, ok1 := parseMeta(read(int64(ps), int(ps)))
	ok0 = ok0 && m0.pageSize == ps
	ok1 = ok1 && m1.pageSize == ps
	var m boltMeta
	switch {
	case ok0 && (!ok1 || m0.txid >= m1.txid):
		m = m0
	case ok1:
		m = m1
	default:
		return boltMeta{}, errNotBolt
	}
	if m.pgid < 3 || m.pgid > uint64(size)/uint64(ps) {
		if m.pgid >= 3 && m.pgid <= 1<<48 {
			return boltMeta{}, fmt.Errorf("%w: it has %d bytes, its header says %d", errTruncated, size, m.pgid*uint64(ps))
		}
		return boltMeta{}, fmt.Errorf("its header gives %d pages", m.pgid)
	}
	if m.root < 2 || m.root >= m.pgid {
		return boltMeta{}, fmt.Errorf("its root page %d is outside pages 2 to %d", m.root, m.pgid-1)
	}
	if m.freelist != boltNoFreelist && (m.freelist < 2 || m.freelist >= m.pgid) {
		return boltMeta{}, fmt.Errorf("its free list page %d is outside pages 2 to %d", m.freelist, m.pgid-1)
	}
	return m, nil
}

// boltWalk is one structural check of a bbolt file.
type boltWalk struct {
	r    io.ReaderAt
	m    boltMeta
	ps   int64
	used []uint64 // bitmap of the pages seen, by id
	free []uint64 // bitmap of the pages on a stored free list
}

// checkBoltFile verifies the bbolt file in the first size bytes of r (see
// the top of this file): its meta page, and that every page reachable from
// the root is in the file, is what it is referenced as, is referenced once,
// holds its elements and their keys and values within itself with keys in
// order (within the page and within the bounds its parent gives), and that
// every bucket value and inline bucket is well-formed; a stored free list
// must lie in the file and name no page in use. It reads each page once.
func checkBoltFile(r io.ReaderAt, size int64) error {
	m, err := boltMetaOf(r, size)
	if err != nil {
		return err
	}
	w := &boltWalk{r: r, m: m, ps: int64(m.pageSize), used: make([]uint64, (m.pgid+63)/64)}
	w.mark(w.used, 0)
	w.mark(w.used, 1)
	if m.freelist != boltNoFreelist {
		if err := w.readFreelist(); err != nil {
			return err
		}
	}
	if _, err := w.tree(m.root, nil, nil, 0); err != nil {
		return err
	}
	return nil
}

func (w *boltWalk) mark(bm []uint64, id uint64) bool {
	was := bm[id/64]&(1<<(id%64)) != 0
	bm[id/64] |= 1 << (id % 64)
	return was
}

func (w *boltWalk) marked(bm []uint64, id uint64) bool { return bm[id/64]&(1<<(id%64)) != 0 }

// page reads page id whole (with its overflow pages), requiring its header
// to name it, and marks it used. The caller checks its type (b[8:10]).
func (w *boltWalk) page(id uint64) ([]byte, error) {
	if id < 2 || id >= w.m.pgid {
		return nil, fmt.Errorf("a reference to page %d, outside pages 2 to %d", id, w.m.pgid-1)
	}
	var h [boltHeaderSize]byte
	if _, err := w.r.ReadAt(h[:], int64(id)*w.ps); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	if got := ne.Uint64(h[0:]); got != id {
		return nil, fmt.Errorf("page %d names itself %d", id, got)
	}
	overflow := uint64(ne.Uint32(h[12:]))
	if overflow >= w.m.pgid-id {
		return nil, fmt.Errorf("page %d runs %d pages past the end", id, overflow+1-(w.m.pgid-id))
	}
	for i := id; i <= id+overflow; i++ {
		if w.mark(w.used, i) {
			return nil, fmt.Errorf("page %d is referenced twice", i)
		}
		if w.free != nil && w.marked(w.free, i) {
			return nil, fmt.Errorf("page %d is in use and on the free list", i)
		}
	}
	b := make([]byte, int64(overflow+1)*w.ps)
	if _, err := w.r.ReadAt(b, int64(id)*w.ps); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return b, nil
}

func (w *boltWalk) readFreelist() error {
	id := w.m.freelist
	b, err := w.page(id)
	if err != nil {
		return fmt.Errorf("free list: %w", err)
	}
	if flags := ne.Uint16(b[8:]); flags != boltFreelistFlag {
		return fmt.Errorf("free list page %d has type %#x", id, flags)
	}
	n, start := uint64(ne.Uint16(b[10:])), uint64(boltHeaderSize)
	if n == 0xFFFF { // the count is the first element
		n, start = ne.Uint64(b[boltHeaderSize:]), boltHeaderSize+8
	}
	if n > (uint64(len(b))-start)/8 {
		return fmt.Errorf("free list page %d: %d entries do not fit", id, n)
	}
	w.free = make([]uint64, len(w.used))
	for i := range n {
		p := ne.Uint64(b[start+8*i:])
		if p < 2 || p >= w.m.pgid {
			return fmt.Errorf("free list page %d: entry %d is outside pages 2 to %d", id, p, w.m.pgid-1)
		}
		if w.mark(w.free, p) {
			return fmt.Errorf("free list page %d: page %d is listed twice", id, p)
		}
		if w.marked(w.used, p) {
			return fmt.Errorf("free list page %d: page %d is in use", id, p)
		}
	}
	return nil
}

// elem returns element i of the page in b (header at b[0:]): its key, its
// value (leaf) and its flags (leaf) or child page (branch).
func elem(b []byte, i int, leaf bool) (key, value []byte, x uint64, err error) {
	e := boltHeaderSize + i*boltElemSize
	var pos, ksize, vsize uint64
	if leaf {
		x, pos, ksize, vsize = uint64(ne.Uint32(b[e:])), uint64(ne.Uint32(b[e+4:])), uint64(ne.Uint32(b[e+8:])), uint64(ne.Uint32(b[e+12:]))
	} else {
		pos, ksize, x = uint64(ne.Uint32(b[e:])), uint64(ne.Uint32(b[e+4:])), ne.Uint64(b[e+8:])
	}
	start := uint64(e) + pos
	if start+ksize+vsize > uint64(len(b)) {
		return nil, nil, 0, fmt.Errorf("element %d lies outside its page", i)
	}
	return b[start : start+ksize], b[start+ksize : start+ksize+vsize], x, nil
}

// tree checks the bucket tree from page id, whose keys must lie in
// [lo, hi) (nil: unbounded), and returns its greatest key, as bbolt's own
// check orders them.
func (w *boltWalk) tree(id uint64, lo, hi []byte, depth int) ([]byte, error) {
	if depth > boltMaxDepth {
		return nil, fmt.Errorf("page %d: the tree is deeper than %d levels", id, boltMaxDepth)
	}
	b, err := w.page(id)
	if err != nil {
		return nil, err
	}
	switch flags := ne.Uint16(b[8:]); flags {
	case boltLeafFlag:
		return w.leaf(id, b, lo, hi, depth)
	case boltBranchFlag:
	default:
		return nil, fmt.Errorf("page %d has type %#x where a branch or leaf page belongs", id, flags)
	}
	n := int(ne.Uint16(b[10:]))
	if n == 0 || boltHeaderSize+n*boltElemSize > len(b) {
		return nil, fmt.Errorf("branch page %d: %d elements do not fit", id, n)
	}
	keys, kids := make([][]byte, n), make([]uint64, n)
	for i := range n {
		if keys[i], _, kids[i], err = elem(b, i, false); err != nil {
			return nil, fmt.Errorf("branch page %d: %w", id, err)
		}
	}
	run, max := lo, []byte(nil)
	for i := range n {
		if err := keyInOrder(id, i, keys[i], run, hi); err != nil {
			return nil, err
		}
		next := hi
		if i < n-1 {
			next = keys[i+1]
		}
		if max, err = w.tree(kids[i], keys[i], next, depth+1); err != nil {
			return nil, err
		}
		run = max
	}
	return max, nil
}

// leaf checks the leaf page id (b), and the buckets it holds.
func (w *boltWalk) leaf(id uint64, b, lo, hi []byte, depth int) ([]byte, error) {
	n := int(ne.Uint16(b[10:]))
	if boltHeaderSize+n*boltElemSize > len(b) {
		return nil, fmt.Errorf("leaf page %d: %d elements do not fit", id, n)
	}
	run := lo
	for i := range n {
		k, v, flags, err := elem(b, i, true)
		if err != nil {
			return nil, fmt.Errorf("leaf page %d: %w", id, err)
		}
		if err := keyInOrder(id, i, k, run, hi); err != nil {
			return nil, err
		}
		run = k
		switch flags {
		case 0:
		case boltBucketFlag:
			if err := w.bucket(id, i, v, depth); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("leaf page %d: element %d has flags %#x", id, i, flags)
		}
	}
	if n == 0 {
		return nil, nil
	}
	return run, nil
}

// bucket checks a bucket value: a tree of its own, or an inline leaf page
// (which bbolt never gives buckets of its own).
func (w *boltWalk) bucket(id uint64, i int, v []byte, depth int) error {
	if len(v) < 16 {
		return fmt.Errorf("leaf page %d: bucket %d has a %d-byte header", id, i, len(v))
	}
	if root := ne.Uint64(v); root != 0 {
		_, err := w.tree(root, nil, nil, depth+1)
		return err
	}
	in := v[16:]
	if len(in) < boltHeaderSize || ne.Uint16(in[8:]) != boltLeafFlag {
		return fmt.Errorf("leaf page %d: inline bucket %d is not a leaf page", id, i)
	}
	n := int(ne.Uint16(in[10:]))
	if boltHeaderSize+n*boltElemSize > len(in) {
		return fmt.Errorf("leaf page %d: inline bucket %d: %d elements do not fit", id, i, n)
	}
	var run []byte
	for j := range n {
		k, _, flags, err := elem(in, j, true)
		if err != nil {
			return fmt.Errorf("leaf page %d: inline bucket %d: %w", id, i, err)
		}
		if flags != 0 {
			return fmt.Errorf("leaf page %d: inline bucket %d holds a bucket", id, i)
		}
		if j > 0 && bytes.Compare(run, k) >= 0 {
			return fmt.Errorf("leaf page %d: inline bucket %d: keys out of order", id, i)
		}
		run = k
	}
	return nil
}

// keyInOrder is bbolt's ordering rule for element i of page id: the first
// key not below the bound from the parent (prev), each later one above the
// one before (prev), and all below hi.
func keyInOrder(id uint64, i int, key, prev, hi []byte) error {
	c := bytes.Compare(prev, key)
	if i == 0 && prev != nil && c > 0 || i > 0 && c >= 0 {
		return fmt.Errorf("page %d: key %d out of order", id, i)
	}
	if hi != nil && bytes.Compare(key, hi) >= 0 {
		return fmt.Errorf("page %d: key %d not below its parent's next key", id, i)
	}
	return nil
}
