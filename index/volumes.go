package index

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	bleveindex "github.com/blevesearch/bleve_index_api"
)

// Volumes. A session whose body is longer than the index's volume size
// (Options.VolumeBytes, DefaultVolumeBytes) is indexed as several
// documents, its volumes: runs of consecutive chunks, each cut where a
// message begins, of at most the volume size (a run of one message may be
// longer). Every volume is scored as a session of its own, with the
// session's title; a search returns a session once, with its best
// volume's score (searchBest). A session under the volume size is one
// document, exactly as before volumes.
//
// Volumes make a write to a long session cost what it adds: volumes are
// cut from the start of the session, so an append changes the last volume
// only (or starts a new one), and Put re-analyses and rewrites only the
// volumes whose content changed (each volume document of a long session
// keeps a hash of its content, fieldVolume). Re-indexing the whole text
// on every append cost a 14.6 MiB session 1.6 GB of resident memory and
// held other users' live messages for minutes (issue 29).
//
// Volume 0's document id is the session's docKey; volume n > 0 appends a
// NUL byte and n (volumeKey), which no session id holds (validate).

// DefaultVolumeBytes is the volume size when Options.VolumeBytes is 0.
// Sessions under it (all of SciFact and CoSQA, 227 of the 253 coding
// sessions) are indexed as one document. An append costs the analysis of
// the last volume, so a smaller size costs less per append; on the coding
// sessions 256 KiB read nDCG@10 0.8469 against 0.8416 for whole sessions
// and 0.8411 for 1 MiB volumes (bench/results/longsession/README.md).
const DefaultVolumeBytes = 256 << 10

// fieldVolume is stored only, on the volumes of a session of more than
// one: the hash of the volume's content (volumeHash).
const fieldVolume = "volume"

// volumeKey is the document id of volume n of a session.
func volumeKey(userID, sessionID string, n int) string {
	k := docKey(userID, sessionID)
	if n == 0 {
		return k
	}
	return k + "\x00" + strconv.Itoa(n)
}

// sessionOfVolume is the session id of a document's session id part
// (splitKey's), without its volume number.
func sessionOfVolume(id string) string {
	if i := strings.IndexByte(id, 0); i >= 0 {
		return id[:i]
	}
	return id
}

// volumesOf cuts s into its volumes of at most limit bytes of body: s
// itself when its body is not longer, or when its body is not its chunks
// joined by white space (then it cannot be cut at chunk boundaries). A
// volume starts at a chunk that starts at one of s.Cuts (a message, when
// s has no Cuts); its Breaks and Chunks are those within it (the chunks
// keep their ordinals), its Volume its number. Where a volume ends
// depends only on the text from its start on, so the volumes of a
// session's text from the start of its volume n on are the session's
// volumes from n on (what Session.Volume relies on).
func volumesOf(s Session, limit int) []Session {
	if limit <= 0 || len(s.Body) <= limit || len(s.Chunks) < 2 {
		return []Session{s}
	}
	starts := make([]int, len(s.Chunks))
	at := 0
	for i, c := range s.Chunks {
		j := strings.Index(s.Body[at:], c.Text)
		if j < 0 || c.Text == "" {
			return []Session{s}
		}
		starts[i] = at + j
		at += j + len(c.Text)
	}
	cuts := s.Breaks
	if s.Cuts != nil {
		cuts = s.Cuts
	}
	startsMessage := func(off int) bool {
		i := sort.SearchInts(cuts, off)
		return i < len(cuts) && cuts[i] == off
	}
	var out []Session
	first, from := 0, 0 // the volume's first chunk and where its body starts
	cut := func(last, to int) {
		v := Session{UserID: s.UserID, SessionID: s.SessionID, Title: s.Title, Body: s.Body[from:to],
			Chunks: s.Chunks[first : last+1 : last+1], Volume: s.Volume + len(out)}
		for _, b := range s.Breaks {
			if b > from && b < to {
				v.Breaks = append(v.Breaks, b-from)
			}
		}
		out = append(out, v)
	}
	for i := 1; i < len(s.Chunks); i++ {
		end := starts[i] + len(s.Chunks[i].Text)
		if end-from > limit && startsMessage(starts[i]) {
			cut(i-1, starts[i-1]+len(s.Chunks[i-1].Text))
			first, from = i, starts[i]
		}
	}
	cut(len(s.Chunks)-1, len(s.Body))
	return out
}

// volumeHash is the hash of what a volume's document is made of, so that
// Put rewrites only the volumes whose content changed.
func volumeHash(v Session) string {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	ints := func(xs []int) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(xs)))
		h.Write(n[:])
		for _, x := range xs {
			binary.LittleEndian.PutUint64(n[:], uint64(x))
			h.Write(n[:])
		}
	}
	field(v.Title)
	field(v.Body)
	ints(v.Breaks)
	for _, c := range v.Chunks {
		ints([]int{c.Ordinal})
		ints(c.Breaks)
		field(c.Text)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// storedVolumes returns the hashes of the volumes the index holds for a
// session, by volume number; a volume written without a hash (the one
// document of a short session) has "". Volumes are numbered without gaps
// (Put and Delete keep them so), so the look-up stops at the first
// missing one.
func (ix *Index) storedVolumes(userID, sessionID string, from int) ([]string, error) {
	var out []string
	for n := from; ; n++ {
		d, err := ix.sessions.Document(volumeKey(userID, sessionID, n))
		if err != nil {
			return nil, err
		}
		if d == nil {
			return out, nil
		}
		hash := ""
		d.VisitFields(func(f bleveindex.Field) {
			if f.Name() == fieldVolume {
				hash = string(f.Value())
			}
		})
		out = append(out, hash)
	}
}

// A part. The pipeline may give Put a long session a part at a time
// (Session.More: Body stops at a cut, the session goes on): a session
// written faster than the indexer (a bulk import of one long session)
// would otherwise be read and analysed at once, however much was written
// since the last step, and the heap that takes stays with the process
// (issue 29: one step analysed 35 MB of a 50 MiB session). Of a part, Put
// writes the volumes it holds whole, which are the session's own volumes
// (volumesOf: where a volume ends depends only on the text from its start
// up to the next cut), and leaves the rest of the session's volumes, those
// the text after the part makes, for the next part, which begins where
// LastVolume says.

// writtenVolumes returns the volumes Put writes of s (volumesOf), and how
// many of them s holds whole: all, but of a part (s.More) its last volume
// only when its body is longer than the volume size: the text that
// follows begins at a cut, where volumesOf then starts a new volume.
// Shorter, it may go on in the text that follows; Put leaves it out. So a
// part whose body is longer than the volume size has at least one whole
// volume (the first), and a reader that gives parts longer than that
// always moves on.
func (ix *Index) writtenVolumes(s Session) (vols []Session, whole int) {
	vols = volumesOf(s, ix.volumeBytes)
	if s.More && len(vols[len(vols)-1].Body) <= ix.volumeBytes {
		return vols, len(vols) - 1
	}
	return vols, len(vols)
}

// VolumeBytes is the volume size: a part (Session.More) longer than it has
// a volume Put writes.
func (ix *Index) VolumeBytes() int { return ix.volumeBytes }

// LastVolume tells where the next Put of s's session begins: the number of
// the first volume that text written after s may still change, and the
// index in s.Chunks of its first chunk. For a whole session (or its text
// from a volume on) that is its last volume: an append changes only that
// one. For a part (Session.More) it is the first volume Put did not write
// (writtenVolumes); chunk is len(s.Chunks) when Put wrote every volume of
// the part, and the next volume begins after it. Chunk is -1 when s has
// no chunks. A later Put of the session's text from that chunk's start on,
// with Volume set to that number, rewrites what the text after s changed
// (see Session.Volume).
func (ix *Index) LastVolume(s Session) (volume, chunk int) {
	if len(s.Chunks) == 0 {
		return s.Volume, -1
	}
	vols, whole := ix.writtenVolumes(s)
	if s.More && whole == len(vols) {
		return s.Volume + len(vols), len(s.Chunks)
	}
	last := vols[len(vols)-1]
	return last.Volume, len(s.Chunks) - len(last.Chunks)
}
