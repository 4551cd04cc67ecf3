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
// (kv.IndexTail.Edits); without a mark a step reads the whole session,
// as it always did. Appends never void a mark, so a session appended to
// faster than the indexer keeps its tail. So
// an append to a session of any length costs the indexer what its last
// volume holds: at most a volume's text (256 KiB) and the message.

// volumeIndex is a text index that cuts sessions into volumes
// (*index.Index).
type volumeIndex interface {
	LastVolume(s index.Session) (volume, chunk int)
}

// titleHash is what a mark keeps of the title its volumes hold.
func titleHash(title string) []byte {
	h := sha256.Sum256([]byte(title))
	return h[:16]
}

// loadTail is LoadDoc from the session's index tail: its messages from the
// mark on, when it has a mark for its current title, else LoadDoc's
// whole session; either way with the count of edits read with the mark
// (kv.IndexTail), for the mark indexTail makes after it.
func loadTail(tx *kv.Tx, userID, sessionID string) (Doc, error) {
	mark := tx.IndexTail(userID, sessionID)
	whole := func() (Doc, error) {
		d, err := LoadDoc(tx, userID, sessionID)
		d.edits = mark.Edits
		return d, err
	}
	if mark.Seq == 0 {
		return whole()
	}
	s, err := tx.Session(userID, sessionID)
	if errors.Is(err, kv.ErrNotFound) {
		return Doc{UserID: userID, SessionID: sessionID, Deleted: true}, nil
	}
	if err != nil {
		return Doc{}, err
	}
	if !bytes.Equal(mark.Title, titleHash(s.Title)) {
		return whole()
	}
	var msgs []kv.Message
	if err := tx.MessagesFrom(userID, sessionID, mark.Seq, func(m kv.Message) error {
		msgs = append(msgs, m)
		return nil
	}); err != nil {
		return Doc{}, err
	}
	// The mark's message starts an exchange (a user message with text):
	// else the whole session's exchanges would not begin there.
	if len(msgs) == 0 || msgs[0].Seq != mark.Seq || msgs[0].Role != "user" || MessageText(msgs[0]) == "" {
		return whole()
	}
	d := Doc{UserID: userID, SessionID: sessionID, Session: s, Volume: int(mark.Volume), edits: mark.Edits}
	d.Exchanges = Exchanges(msgs)
	d.Chunks = Chunks(d.Exchanges)
	for i := range d.Chunks {
		d.Chunks[i].Ordinal += int(mark.Chunk)
	}
	return d, nil
}

// indexTail is the mark to record after s, the index document of d, was
// written: where its last volume begins. Nil when that is not the start
// of an exchange (it always is when the index cuts at s.Cuts) or when d
// has no chunks.
func indexTail(vi volumeIndex, d Doc, s index.Session) *kv.IndexTail {
	volume, ci := vi.LastVolume(s)
	if ci < 0 || ci >= len(d.Chunks) {
		return nil
	}
	c := d.Chunks[ci]
	if ci > 0 && d.Chunks[ci-1].Exchange == c.Exchange {
		return nil
	}
	return &kv.IndexTail{Seq: d.Exchanges[c.Exchange].FirstSeq, Chunk: uint64(c.Ordinal), Volume: uint64(volume),
		Edits: d.edits, Title: titleHash(d.Session.Title)}
}
