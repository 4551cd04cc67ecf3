package kv_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/hindsight-dev/hindsight/kv"
)

// putSession stores a session of user uid with n messages of text(i) and
// returns the session and its messages as written.
func putSession(t *testing.T, st *kv.Store, uid string, n int, text func(i int) string) (kv.Session, []kv.Message) {
	t.Helper()
	s := kv.Session{ID: kv.NewID(), UserID: uid, ExternalID: "ext-" + kv.NewID(), Title: "t", CreatedAt: 1, UpdatedAt: 1,
		MessageCount: int64(n), NextSeq: uint64(n)}
	var msgs []kv.Message
	for i := range n {
		body := text(i)
		msgs = append(msgs, kv.Message{ID: kv.NewID(), UserID: uid, SessionID: s.ID, Seq: uint64(i),
			ExternalID: fmt.Sprintf("m%d", i), Role: kv.Roles[i%2], TextContent: &body,
			Parts: []kv.Part{{Type: kv.PartText, Content: body}}, CreatedAt: int64(i), UpdatedAt: int64(i)})
	}
	mustCommit(t, st, func(tx *kv.Tx) error {
		if err := tx.PutSession(&s, 0); err != nil {
			return err
		}
		for i := range msgs {
			if err := tx.PutMessage(&msgs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return s, msgs
}

func readMessages(t *testing.T, st *kv.Store, uid, sid string) []kv.Message {
	t.Helper()
	var got []kv.Message
	if err := st.View(ctx, func(tx *kv.Tx) error {
		return tx.Messages(uid, sid, func(m kv.Message) error {
			got = append(got, m)
			return nil
		})
	}); err != nil {
		t.Fatalf("Messages: %v", err)
	}
	return got
}

// rawRecords opens the closed store's file with bbolt and calls fn in a
// write transaction on its messages bucket.
func rawRecords(t *testing.T, dir string, fn func(b *bolt.Bucket) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, kv.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { return fn(tx.Bucket([]byte("messages"))) }); err != nil {
		t.Fatal(err)
	}
}

func msgKey(uid, sid string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(uid+sid), seq)
}

func prose(i int) string {
	return strings.Repeat(fmt.Sprintf("step %d: the handler retries the request after a timeout. ", i), 6)
}

// TestRecordFormats: new message records are compressed and smaller than
// their JSON; records of older files (plain JSON, with the owner and
// session ids inside) still read and pass Check; an unknown format is an
// error, not a panic.
func TestRecordFormats(t *testing.T) {
	dir := t.TempDir()
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := createUsers(t, st, 1)[0]
	s, msgs := putSession(t, st, u.ID, 3, prose)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	old := msgs[1]
	old.ExternalID = "m1" // unchanged: the msgext entry stays valid
	oldJSON, _ := json.Marshal(old)
	rawRecords(t, dir, func(b *bolt.Bucket) error {
		v := b.Get(msgKey(u.ID, s.ID, 0))
		if len(v) == 0 || v[0] != 0x01 {
			t.Errorf("new record starts with %#x, want the compressed format 0x01", v[:1])
		}
		full, _ := json.Marshal(msgs[0])
		if len(v) >= len(full) {
			t.Errorf("compressed record is %d bytes, its JSON %d", len(v), len(full))
		}
		return b.Put(msgKey(u.ID, s.ID, 1), oldJSON)
	})

	st, err = kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readMessages(t, st, u.ID, s.ID); !reflect.DeepEqual(got, msgs) {
		t.Errorf("messages read back:\n%+v\nwant\n%+v", got, msgs)
	}
	if err := st.View(ctx, func(tx *kv.Tx) error {
		m, err := tx.Message(u.ID, s.ID, 1)
		if err != nil || !reflect.DeepEqual(m, msgs[1]) {
			t.Errorf("Message(old record) = %+v, %v; want %+v", m, err, msgs[1])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Check(); err != nil {
		t.Errorf("Check with an old-format record: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	for _, bad := range [][]byte{{0x07, 'x'}, {0x01, 0xde, 0xad}} {
		rawRecords(t, dir, func(b *bolt.Bucket) error { return b.Put(msgKey(u.ID, s.ID, 2), bad) })
		st, err = kv.Open(dir, kv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		err := st.View(ctx, func(tx *kv.Tx) error {
			_, err := tx.Message(u.ID, s.ID, 2)
			return err
		})
		if err == nil {
			t.Errorf("record %x: Message returned no error", bad)
		}
		if err := st.Check(); err == nil || !strings.Contains(err.Error(), "decode message") {
			t.Errorf("record %x: Check = %v, want a decode error", bad, err)
		}
		st.Close()
	}
}

// TestDictionary: after enough records the store takes a dictionary, later
// records are smaller for it, and everything (records from before and after
// it) reads back, after a reopen and from a restored backup.
func TestDictionary(t *testing.T) {
	dir := t.TempDir()
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := createUsers(t, st, 1)[0]
	type written struct {
		s    kv.Session
		msgs []kv.Message
	}
	var all []written
	add := func(n int) {
		s, msgs := putSession(t, st, u.ID, n, prose)
		all = append(all, written{s, msgs})
	}
	dict := func() []byte {
		var v []byte
		st.View(ctx, func(tx *kv.Tx) error { v = tx.Meta("records.zstd.dict"); return nil })
		return v
	}
	for range 9 {
		add(100)
	}
	if dict() != nil {
		t.Fatal("a dictionary was taken after 900 records, want it after 1000")
	}
	add(200) // passes 1000: the dictionary is taken after this commit
	add(1)   // so this record is the first to use it
	if d := dict(); len(d) < 16<<10 {
		t.Fatalf("dictionary of %d bytes after 1,201 records, want one", len(d))
	}
	add(1)
	check := func(st *kv.Store, when string) {
		t.Helper()
		for _, w := range all {
			if got := readMessages(t, st, u.ID, w.s.ID); !reflect.DeepEqual(got, w.msgs) {
				t.Errorf("%s: session %s read back differently", when, w.s.ID)
			}
		}
		if err := st.Check(); err != nil {
			t.Errorf("%s: Check: %v", when, err)
		}
	}
	check(st, "after the dictionary")
	backup := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.Create(backup)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Backup(ctx, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// The same message compressed before and after the dictionary.
	first, last := all[0], all[len(all)-1]
	var before, after []byte
	rawRecords(t, dir, func(b *bolt.Bucket) error {
		before = bytes.Clone(b.Get(msgKey(u.ID, first.s.ID, 0)))
		after = bytes.Clone(b.Get(msgKey(u.ID, last.s.ID, 0)))
		return nil
	})
	if len(after) >= len(before) {
		t.Errorf("record with the dictionary is %d bytes, without %d", len(after), len(before))
	}

	st, err = kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check(st, "reopened")
	st.Close()

	restored := t.TempDir()
	if err := kv.Restore(backup, restored); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	st, err = kv.Open(restored, kv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	check(st, "restored")
	st.Close()
}
