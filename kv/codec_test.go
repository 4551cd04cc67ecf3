package kv_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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

// rawFile is a write transaction on a closed store's file, opened with
// bbolt itself, to read and write records as stored.
type rawFile struct{ tx *bolt.Tx }

func (r rawFile) bucket(name string) *bolt.Bucket { return r.tx.Bucket([]byte(name)) }

// msgKey is the key of a message: uid + the session's number + seq, or
// uid + sid + seq for a session without a number (older files).
func (r rawFile) msgKey(uid, sid string, seq uint64) []byte {
	if n := r.bucket("sessnum").Get([]byte(uid + sid)); len(n) == 8 {
		return binary.BigEndian.AppendUint64(append([]byte(uid), n...), seq)
	}
	return binary.BigEndian.AppendUint64([]byte(uid+sid), seq)
}

// rawRecords opens the closed store's file with bbolt and calls fn with its
// messages bucket in a write transaction.
func rawRecords(t *testing.T, dir string, fn func(r rawFile, b *bolt.Bucket) error) {
	t.Helper()
	rawUpdate(t, dir, func(r rawFile) error { return fn(r, r.bucket("messages")) })
}

func rawUpdate(t *testing.T, dir string, fn func(r rawFile) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, kv.FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { return fn(rawFile{tx}) }); err != nil {
		t.Fatal(err)
	}
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
	rawRecords(t, dir, func(r rawFile, b *bolt.Bucket) error {
		v := b.Get(r.msgKey(u.ID, s.ID, 0))
		if len(v) == 0 || v[0] != 0x01 {
			t.Errorf("new record starts with %#x, want the compressed format 0x01", v[:1])
		}
		full, _ := json.Marshal(msgs[0])
		if len(v) >= len(full) {
			t.Errorf("compressed record is %d bytes, its JSON %d", len(v), len(full))
		}
		return b.Put(r.msgKey(u.ID, s.ID, 1), oldJSON)
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
		rawRecords(t, dir, func(r rawFile, b *bolt.Bucket) error { return b.Put(r.msgKey(u.ID, s.ID, 2), bad) })
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
	rawRecords(t, dir, func(r rawFile, b *bolt.Bucket) error {
		before = bytes.Clone(b.Get(r.msgKey(u.ID, first.s.ID, 0)))
		after = bytes.Clone(b.Get(r.msgKey(u.ID, last.s.ID, 0)))
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

// TestOlderKeyLayout: a session written by an older version (messages keyed
// by uid + sid + seq, no session number) reads back, takes new messages
// under its old keys, passes Check, and is deleted and purged completely,
// beside a session of this version; a read-only file without the
// session-number bucket reads too.
func TestOlderKeyLayout(t *testing.T) {
	dir := t.TempDir()
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := createUsers(t, st, 1)[0]
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// The older layout, written as an older version wrote it: plain JSON
	// records with the ids inside, keys starting with uid + sid.
	old := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "old", Title: "older", CreatedAt: 1, UpdatedAt: 1,
		MessageCount: 2, NextSeq: 2}
	var oldMsgs []kv.Message
	for i := range 2 {
		body := prose(i)
		oldMsgs = append(oldMsgs, kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: old.ID, Seq: uint64(i),
			ExternalID: fmt.Sprintf("m%d", i), Role: kv.Roles[i%2], TextContent: &body, CreatedAt: int64(i), UpdatedAt: int64(i)})
	}
	rawUpdate(t, dir, func(r rawFile) error {
		key := []byte(u.ID + old.ID)
		type record struct {
			bucket string
			k, v   []byte
		}
		sv, _ := json.Marshal(old)
		records := []record{
			{"sessions", key, sv},
			{"sessext", []byte(u.ID + old.ExternalID), []byte(old.ID)},
			{"sessorder", append(binary.BigEndian.AppendUint64([]byte(u.ID), 1), old.ID...), nil},
		}
		for _, m := range oldMsgs {
			mv, _ := json.Marshal(m)
			records = append(records,
				record{"messages", binary.BigEndian.AppendUint64(bytes.Clone(key), m.Seq), mv},
				record{"msgext", append(bytes.Clone(key), m.ExternalID...), binary.BigEndian.AppendUint64(nil, m.Seq)})
		}
		for _, rec := range records {
			if err := r.bucket(rec.bucket).Put(rec.k, rec.v); err != nil {
				return err
			}
		}
		return nil
	})

	st, err = kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readMessages(t, st, u.ID, old.ID); !reflect.DeepEqual(got, oldMsgs) {
		t.Errorf("older session read back:\n%+v\nwant\n%+v", got, oldMsgs)
	}
	sessionIs := func(st *kv.Store, want kv.Session, when string) {
		t.Helper()
		var listed []kv.Session
		if err := st.View(ctx, func(tx *kv.Tx) error {
			if got, err := tx.Session(want.UserID, want.ID); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Session = %+v, %v; want %+v", when, got, err, want)
			}
			return tx.Sessions(want.UserID, func(s kv.Session) error { listed = append(listed, s); return nil })
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(listed, func(s kv.Session) bool { return reflect.DeepEqual(s, want) }) {
			t.Errorf("%s: Sessions lists %+v, want it to hold %+v", when, listed, want)
		}
	}
	sessionIs(st, old, "older record")
	// A message added to the older session, and a session of this version.
	body := prose(2)
	added := kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: old.ID, Seq: 2, ExternalID: "m2", Role: "user",
		TextContent: &body, CreatedAt: 2, UpdatedAt: 2}
	old.MessageCount, old.NextSeq, old.UpdatedAt = 3, 3, 2
	mustCommit(t, st, func(tx *kv.Tx) error {
		if seq, ok := tx.MessageSeq(u.ID, old.ID, "m1"); !ok || seq != 1 {
			t.Errorf("MessageSeq(m1) of the older session = %d, %v; want 1", seq, ok)
		}
		if err := tx.PutMessage(&added); err != nil {
			return err
		}
		return tx.PutSession(&old, 1)
	})
	oldMsgs = append(oldMsgs, added)
	// A new session written as ingest writes one: its messages are looked
	// up, then written, before the session record.
	cur := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "new", CreatedAt: 3, UpdatedAt: 3, MessageCount: 2, NextSeq: 2}
	var curMsgs []kv.Message
	for i := range 2 {
		body := prose(i)
		curMsgs = append(curMsgs, kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: cur.ID, Seq: uint64(i),
			ExternalID: fmt.Sprintf("m%d", i), Role: "user", TextContent: &body, CreatedAt: 3, UpdatedAt: 3})
	}
	mustCommit(t, st, func(tx *kv.Tx) error {
		for i := range curMsgs {
			if _, ok := tx.MessageSeq(u.ID, cur.ID, curMsgs[i].ExternalID); ok {
				t.Errorf("MessageSeq found %s before it was written", curMsgs[i].ExternalID)
			}
			if err := tx.PutMessage(&curMsgs[i]); err != nil {
				return err
			}
		}
		return tx.PutSession(&cur, 0)
	})
	if got := readMessages(t, st, u.ID, old.ID); !reflect.DeepEqual(got, oldMsgs) {
		t.Errorf("older session after an added message:\n%+v\nwant\n%+v", got, oldMsgs)
	}
	if got := readMessages(t, st, u.ID, cur.ID); !reflect.DeepEqual(got, curMsgs) {
		t.Errorf("new session read back differently")
	}
	sessionIs(st, old, "older session rewritten")
	sessionIs(st, cur, "new session")
	if err := st.Check(); err != nil {
		t.Errorf("Check with both layouts: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	rawUpdate(t, dir, func(r rawFile) error {
		if v := r.bucket("messages").Get(binary.BigEndian.AppendUint64([]byte(u.ID+old.ID), 2)); v == nil {
			t.Error("the message added to an older session is not under the older key")
		}
		if n := r.bucket("sessnum").Get([]byte(u.ID + old.ID)); n != nil {
			t.Errorf("the older session was given a number %x", n)
		}
		if k := r.msgKey(u.ID, cur.ID, 0); len(k) != kv.IDLen+16 || r.bucket("messages").Get(k) == nil {
			t.Errorf("new session's first message is not under uid + number + seq (%x)", k)
		}
		// Session records are stored without the ids their key holds.
		for _, id := range []string{old.ID, cur.ID} {
			if v := r.bucket("sessions").Get([]byte(u.ID + id)); len(v) == 0 || bytes.Contains(v, []byte(id)) || bytes.Contains(v, []byte(u.ID)) {
				t.Errorf("session record %q holds its ids (or is missing)", v)
			}
		}
		return nil
	})

	// An older version's file has no session-number bucket at all.
	legacy := t.TempDir()
	if err := os.WriteFile(filepath.Join(legacy, kv.FileName), mustRead(t, filepath.Join(dir, kv.FileName)), 0o600); err != nil {
		t.Fatal(err)
	}
	rawUpdate(t, legacy, func(r rawFile) error {
		// Only the older session remains, as an older version would have it.
		for _, b := range []string{"messages", "msgext"} {
			c := r.bucket(b).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if !bytes.HasPrefix(k, []byte(u.ID+old.ID)) {
					if err := c.Delete(); err != nil {
						return err
					}
				}
			}
		}
		for _, b := range []string{"sessions", "sessext", "sessorder"} {
			c := r.bucket(b).Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if !bytes.Contains(k, []byte(old.ID)) && !bytes.HasSuffix(k, []byte("old")) {
					if err := c.Delete(); err != nil {
						return err
					}
				}
			}
		}
		return r.tx.DeleteBucket([]byte("sessnum"))
	})
	ro, err := kv.Open(legacy, kv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := readMessages(t, ro, u.ID, old.ID); !reflect.DeepEqual(got, oldMsgs) {
		t.Errorf("older file without session numbers, read-only:\n%+v\nwant\n%+v", got, oldMsgs)
	}
	if err := ro.Check(); err != nil {
		t.Errorf("Check of an older file, read-only: %v", err)
	}
	ro.Close()

	// Deleting and purging both sessions leaves nothing behind.
	st, err = kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mustCommit(t, st, func(tx *kv.Tx) error {
		if err := tx.DeleteSession(u.ID, old.ID); err != nil {
			return err
		}
		return tx.DeleteSession(u.ID, cur.ID)
	})
	for {
		n, err := st.PurgeStep(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if err := st.Check(); err != nil {
		t.Errorf("Check after purging: %v", err)
	}
	st.Close()
	rawUpdate(t, dir, func(r rawFile) error {
		for _, b := range []string{"sessions", "sessnum", "messages", "msgext", "purge"} {
			if k, _ := r.bucket(b).Cursor().First(); k != nil {
				t.Errorf("bucket %s keeps %x after both sessions were purged", b, k)
			}
		}
		return nil
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
