package ingest

import (
	"bytes"
	"crypto/sha256"
	"errors"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/kv"
)

// Long sessions. The full-text index cuts a session longer than its volume
// size into volumes, each a run of whole exchanges (index/volumes.go), and
// rewrites only the volumes whose text changed. An append changes the last
// volume only, so the indexer need not read the whole session either:
// after each search step it records in kv where the session's last volume
// begins (kv.IndexTail: the first message of its first exchange, that
// exchange's first chunk ordinal, the volume's number and the title's
// hash), and the next step reads the session's messages from there
// (loadTail) and gives the index that part, numbered from that volume
// (index.Session.Volume). An edit of a message before the mark drops it
// (kv.Tx.PutMessage), a new title makes it void (the hash differs), and
// a mark is recorded only if no message was edited while the step ran
// (kv.IndexTail.Edits); without a mark a step reads the session from its
// start. Appends never void a mark, so a session appended to faster than
// the indexer keeps its tail. So an append to a session of any length
// costs the indexer what its last volume holds: at most a volume's text
// (256 KiB) and the message.

// A step reads at most about a part's worth of a session's text (the
// search queue's steps; PipelineOptions.TailBytes): a session written
// faster than the indexer is one outbox entry, and without a bound a step
// read and analysed everything written to it since the last (35 MB of a
// 50 MiB session grown in a bulk import, whose heap stayed with the
// process: issue 29). The read stops before the exchange that follows the
// bound; the index is given that part (index.Session.More) and writes the
// volumes it holds whole; the mark moves to the first volume it did not
// write, and the entry stays queued (kv.Tx.KeepDirty) for the next step to
// go on from the mark. The same bound holds without a mark: a long
// session's first read, after an edit of an early message or a new title,
// reads it from the start a part at a time.

// DefaultTailBytes is how much of a session's text one search step reads
// at most (PipelineOptions.TailBytes), past which it stops at the next
// exchange: 2 MiB, the step's own byte budget (PipelineOptions.StepBytes),
// so one long session's part costs a step what a full step of short
// sessions does; eight volumes of 256 KiB, so the per-step costs (the
// claim, the clear, a Bleve batch) are shared by several volumes. At about
// 50 bytes of heap per byte analysed (bench/results/longsession) a part
// takes some 100 MB while it is analysed, a fifth of issue 29's 500 MB.
const DefaultTailBytes = 2 << 20

// volumeIndex is a text index that cuts sessions into volumes
// (*index.Index).
type volumeIndex interface {
	LastVolume(s index.Session) (volume, chunk int)
	// VolumeBytes is the volume size: a part longer than it holds a whole
	// volume, so a step given one always moves on.
	VolumeBytes() int
}

// titleHash is what a mark keeps of the title its volumes hold.
func titleHash(title string) []byte {
	h := sha256.Sum256([]byte(title))
	return h[:16]
}

// loadTail is LoadDoc from the session's index tail: its messages from the
// mark on, when it has a mark for its current title, else from the start;
// either way with the count of edits read with the mark (kv.IndexTail),
// for the mark indexTail makes after it. With limit > 0 it reads a part:
// it stops before the first exchange that begins once limit bytes of
// message text were read (Doc.more), so a part is of whole exchanges.
func loadTail(tx *kv.Tx, userID, sessionID string, limit int) (Doc, error) {
	mark := tx.IndexTail(userID, sessionID)
	s, err := tx.Session(userID, sessionID)
	if errors.Is(err, kv.ErrNotFound) {
		return Doc{UserID: userID, SessionID: sessionID, Deleted: true}, nil
	}
	if err != nil {
		return Doc{}, err
	}
	d := Doc{UserID: userID, SessionID: sessionID, Session: s, edits: mark.Edits}
	if mark.Seq != 0 && bytes.Equal(mark.Title, titleHash(s.Title)) {
		msgs, err := d.readPart(tx, mark.Seq, limit)
		if err != nil {
			return Doc{}, err
		}
		// The mark's message starts an exchange (a user message with
		// text): else the whole session's exchanges would not begin there.
		if len(msgs) > 0 && msgs[0].Seq == mark.Seq && startsExchange(msgs[0]) {
			d.Volume = int(mark.Volume)
			d.Exchanges = Exchanges(msgs)
			d.Chunks = Chunks(d.Exchanges)
			for i := range d.Chunks {
				d.Chunks[i].Ordinal += int(mark.Chunk)
			}
			return d, nil
		}
	}
	msgs, err := d.readPart(tx, 0, limit)
	if err != nil {
		return Doc{}, err
	}
	d.Exchanges = Exchanges(msgs)
	d.Chunks = Chunks(d.Exchanges)
	return d, nil
}

// startsExchange reports whether m begins an exchange (Exchanges).
func startsExchange(m kv.Message) bool {
	return m.Role == "user" && MessageText(m) != ""
}

// errPart stops readPart's scan at the end of a part.
var errPart = errors.New("end of part")

// readPart reads d's session's messages from seq from on: all of them, or
// with limit > 0 those before the first exchange that begins once limit
// bytes of text were read, noting where it stopped (d.more, d.next).
func (d *Doc) readPart(tx *kv.Tx, from uint64, limit int) ([]kv.Message, error) {
	d.more, d.next = false, 0
	var msgs []kv.Message
	read := 0
	err := tx.MessagesFrom(d.UserID, d.SessionID, from, func(m kv.Message) error {
		if limit > 0 && read >= limit && startsExchange(m) {
			d.more, d.next = true, m.Seq
			return errPart
		}
		read += len(MessageText(m))
		msgs = append(msgs, m)
		return nil
	})
	if err != nil && !errors.Is(err, errPart) {
		return nil, err
	}
	return msgs, nil
}

// indexTail is the mark to record after s, the index document of d, was
// written: where the first volume the next step must write begins
// (index's LastVolume: the last volume of d, or of a part the first it
// did not write). Nil when that is not the start of an exchange (it
// always is when the index cuts at s.Cuts) or when d has no chunks.
func indexTail(vi volumeIndex, d Doc, s index.Session) *kv.IndexTail {
	volume, ci := vi.LastVolume(s)
	mark := &kv.IndexTail{Volume: uint64(volume), Edits: d.edits, Title: titleHash(d.Session.Title)}
	switch {
	case ci < 0 || ci > len(d.Chunks):
		return nil
	case ci == len(d.Chunks):
		// Every volume of a part was written: the next begins with the
		// exchange the read stopped at.
		if !d.more || ci == 0 {
			return nil
		}
		mark.Seq, mark.Chunk = d.next, uint64(d.Chunks[ci-1].Ordinal+1)
		return mark
	}
	c := d.Chunks[ci]
	if ci > 0 && d.Chunks[ci-1].Exchange == c.Exchange {
		return nil
	}
	mark.Seq, mark.Chunk = d.Exchanges[c.Exchange].FirstSeq, uint64(c.Ordinal)
	return mark
}
