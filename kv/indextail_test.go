package kv_test

import (
	"testing"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// TestIndexTail: the indexer's mark of where a long session's last volume
// begins survives appends, is dropped by an edit of a message before it,
// is not recorded over an edit made after the indexer read the session,
// and goes with the session.
func TestIndexTail(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		var uid string
		mustCommit(t, st, func(tx *kv.Tx) error {
			u, err := tx.CreateUser("ann", 1)
			uid = u.ID
			return err
		})
		s := newSession(t, st, uid, "long", 10, 10)
		read := func() kv.IndexTail {
			t.Helper()
			var tail kv.IndexTail
			if err := st.View(ctx, func(tx *kv.Tx) error { tail = tx.IndexTail(uid, s.ID); return nil }); err != nil {
				t.Fatal(err)
			}
			return tail
		}
		set := func(tail kv.IndexTail) bool {
			t.Helper()
			var ok bool
			mustCommit(t, st, func(tx *kv.Tx) (err error) { ok, err = tx.SetIndexTail(uid, s.ID, tail); return err })
			return ok
		}
		putMessage := func(seq uint64, text string) {
			t.Helper()
			mustCommit(t, st, func(tx *kv.Tx) error {
				return tx.PutMessage(&kv.Message{ID: kv.NewID(), UserID: uid, SessionID: s.ID, Seq: seq,
					ExternalID: "m" + string(rune('a'+seq)), Role: "user", TextContent: &text})
			})
		}
		if got := read(); got.Seq != 0 || got.Edits != 0 {
			t.Fatalf("a new session has the mark %+v", got)
		}
		mark := kv.IndexTail{Seq: 6, Chunk: 9, Volume: 2, Title: []byte("title hash")}
		if !set(mark) {
			t.Fatal("the mark was not recorded")
		}
		if got := read(); got.Seq != 6 || got.Chunk != 9 || got.Volume != 2 || string(got.Title) != "title hash" {
			t.Fatalf("read %+v, want %+v", got, mark)
		}
		putMessage(10, "appended") // a new message: not an edit
		if got := read(); got.Seq != 6 || got.Edits != 0 {
			t.Fatalf("after an append: %+v", got)
		}
		seen := read()
		putMessage(8, "edited after the mark")
		if got := read(); got.Seq != 6 || got.Edits != 1 {
			t.Fatalf("after an edit past the mark: %+v, want the mark with 1 edit", got)
		}
		if set(kv.IndexTail{Seq: 9, Volume: 3, Edits: seen.Edits}) {
			t.Fatal("a mark computed before an edit was recorded after it")
		}
		// A mark before the edited message is recorded all the same: the
		// volumes before it do not hold the message (a session read a part
		// at a time while its later messages are edited). It keeps the
		// current count, and a later edit past it is judged from there.
		if !set(kv.IndexTail{Seq: 8, Volume: 3, Edits: seen.Edits, Title: []byte("title hash")}) {
			t.Fatal("a mark before the only message edited since the read was not recorded")
		}
		if got := read(); got.Seq != 8 || got.Edits != 1 || string(got.Title) != "title hash" {
			t.Fatalf("after the mark before the edit: %+v, want seq 8 with 1 edit", got)
		}
		seen = read()
		putMessage(9, "edited after the new mark")
		if set(kv.IndexTail{Seq: 10, Volume: 4, Edits: seen.Edits}) {
			t.Fatal("a mark past a message edited after the read was recorded")
		}
		if !set(kv.IndexTail{Seq: 9, Volume: 3, Edits: seen.Edits, Title: []byte("title hash")}) {
			t.Fatal("a mark at the message edited after the read was not recorded")
		}
		putMessage(8, "edited at the mark")
		if got := read(); got.Seq != 0 || got.Edits != 3 {
			t.Fatalf("after an edit at seq 8, before the mark at 9: %+v, want the mark dropped", got)
		}
		if set(kv.IndexTail{Seq: 9, Volume: 3, Edits: 2}) {
			t.Fatal("a mark read before an edit of a message before it was recorded")
		}
		putMessage(2, "edited before the mark")
		if got := read(); got.Seq != 0 || got.Edits != 4 {
			t.Fatalf("after an edit before the mark: %+v, want no mark and 4 edits", got)
		}
		if !set(kv.IndexTail{Seq: 7, Volume: 2, Edits: 4}) {
			t.Fatal("a mark read with the current edits was not recorded")
		}
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.DeleteSession(uid, s.ID) })
		if got := read(); got.Seq != 0 || got.Edits != 0 {
			t.Fatalf("a deleted session keeps %+v", got)
		}
	})
}
