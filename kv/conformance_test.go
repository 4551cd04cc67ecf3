package kv_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// The behaviours the API relies on, each run on bbolt and PostgreSQL
// (issue 30: one contract, two stores). The other kv tests that run
// through kvtest.Each belong to the same suite: ordering and user
// boundaries, the outbox's order and lanes, group-commit isolation,
// tombstones.

// newSession writes a session of user uid with n messages and returns it.
func newSession(t *testing.T, st *kv.Store, uid, ext string, updatedAt int64, n int) kv.Session {
	t.Helper()
	s := kv.Session{ID: kv.NewID(), UserID: uid, ExternalID: ext, Source: "pi", Title: "t " + ext,
		CreatedAt: 1, UpdatedAt: updatedAt, MessageCount: int64(n), NextSeq: uint64(n)}
	mustCommit(t, st, func(tx *kv.Tx) error {
		if err := tx.PutSession(&s, 0); err != nil {
			return err
		}
		for i := range n {
			text := fmt.Sprintf("message %d of %s", i, ext)
			m := kv.Message{ID: kv.NewID(), UserID: uid, SessionID: s.ID, Seq: uint64(i), ExternalID: fmt.Sprintf("m%d", i),
				Role: "user", TextContent: &text, CreatedAt: int64(i), UpdatedAt: int64(i)}
			if err := tx.PutMessage(&m); err != nil {
				return err
			}
		}
		return tx.MarkDirty(uid, s.ID)
	})
	return s
}

// messageTexts reads the session's messages from seq from, as "seq:text".
func messageTexts(t *testing.T, st *kv.Store, uid, sid string, from uint64) []string {
	t.Helper()
	var out []string
	err := st.View(ctx, func(tx *kv.Tx) error {
		out = out[:0]
		return tx.MessagesFrom(uid, sid, from, func(m kv.Message) error {
			text := ""
			if m.TextContent != nil {
				text = *m.TextContent
			}
			out = append(out, fmt.Sprintf("%d:%s", m.Seq, text))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUpserts: writing a session or a message again under its id (a
// plugin syncing the same session twice) replaces it: one record, the new
// content, its lookups by external id unchanged, nothing left of the old.
func TestUpserts(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		s := newSession(t, st, u.ID, "ext", 100, 3)
		mustCommit(t, st, func(tx *kv.Tx) error {
			s2 := s
			s2.Title, s2.UpdatedAt, s2.MessageCount, s2.NextSeq = "renamed", 200, 3, 3
			if err := tx.PutSession(&s2, s.UpdatedAt); err != nil {
				return err
			}
			text := "replaced"
			m := kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: s.ID, Seq: 1, ExternalID: "m1",
				Role: "assistant", TextContent: &text, CreatedAt: 1, UpdatedAt: 2}
			return tx.PutMessage(&m)
		})
		err := st.View(ctx, func(tx *kv.Tx) error {
			got, err := tx.Session(u.ID, s.ID)
			if err != nil {
				return err
			}
			if got.Title != "renamed" || got.UpdatedAt != 200 {
				t.Errorf("session after upsert: title %q updatedAt %d, want renamed 200", got.Title, got.UpdatedAt)
			}
			if id, ok := tx.SessionIDByExternal(u.ID, "ext"); !ok || id != s.ID {
				t.Errorf("SessionIDByExternal after upsert = %q %v, want %s", id, ok, s.ID)
			}
			if seq, ok := tx.MessageSeq(u.ID, s.ID, "m1"); !ok || seq != 1 {
				t.Errorf("MessageSeq(m1) after upsert = %d %v, want 1", seq, ok)
			}
			if ids := tx.ExternalSessionIDs(u.ID); !slices.Equal(ids, []string{"ext"}) {
				t.Errorf("ExternalSessionIDs = %v, want [ext]", ids)
			}
			m, err := tx.Message(u.ID, s.ID, 1)
			if err != nil {
				return err
			}
			if m.Role != "assistant" || m.TextContent == nil || *m.TextContent != "replaced" {
				t.Errorf("message 1 after upsert: %s %v", m.Role, m.TextContent)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := recent(t, st, u.ID, kv.Position{}, 10); len(got) != 1 || got[0].UpdatedAt != 200 {
			t.Errorf("RecentSessions after upsert: %d sessions %v, want the one at 200", len(got), got)
		}
		want := []string{"0:message 0 of ext", "1:replaced", "2:message 2 of ext"}
		if got := messageTexts(t, st, u.ID, s.ID, 0); !slices.Equal(got, want) {
			t.Errorf("messages after upsert = %q, want %q", got, want)
		}
	})
}

// TestCommitIsAllOrNothing: a Commit whose function fails leaves nothing
// behind (records, lookups, outbox entries), and within a Commit reads see
// the transaction's own writes, cursors included (a walk that deletes
// behind itself, as purging does, and one that writes ahead of itself).
func TestCommitIsAllOrNothing(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		before := newSession(t, st, u.ID, "kept", 100, 2)
		err := st.Commit(ctx, func(tx *kv.Tx) error {
			s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "lost", Source: "pi", CreatedAt: 1, UpdatedAt: 300}
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
			text := "lost"
			m := kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: before.ID, Seq: 0, ExternalID: "m0", Role: "user", TextContent: &text}
			if err := tx.PutMessage(&m); err != nil {
				return err
			}
			if err := tx.MarkDirty(u.ID, s.ID); err != nil {
				return err
			}
			if _, ok := tx.SessionIDByExternal(u.ID, "lost"); !ok {
				t.Error("a Commit does not see its own session write")
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("Commit = %v, want the function's error", err)
		}
		_ = st.View(ctx, func(tx *kv.Tx) error {
			if _, ok := tx.SessionIDByExternal(u.ID, "lost"); ok {
				t.Error("the failed Commit's session was kept")
			}
			if n := tx.QueueLen(kv.SearchQueue); n != 1 {
				t.Errorf("outbox holds %d entries after a failed Commit, want 1 (the kept session's)", n)
			}
			return nil
		})
		if got := messageTexts(t, st, u.ID, before.ID, 0); !slices.Equal(got, []string{"0:message 0 of kept", "1:message 1 of kept"}) {
			t.Errorf("the failed Commit's message overwrote a kept one: %q", got)
		}

		// Cursors in a writing transaction read its writes: 40 messages
		// (past PostgreSQL's first cursor batch) written, then walked.
		s := newSession(t, st, u.ID, "walk", 400, 0)
		mustCommit(t, st, func(tx *kv.Tx) error {
			prev := s.UpdatedAt
			s.MessageCount, s.NextSeq, s.UpdatedAt = 40, 40, 401
			if err := tx.PutSession(&s, prev); err != nil {
				return err
			}
			for i := range 40 {
				text := fmt.Sprintf("new %d", i)
				m := kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: s.ID, Seq: uint64(i), ExternalID: fmt.Sprint(i), Role: "user", TextContent: &text}
				if err := tx.PutMessage(&m); err != nil {
					return err
				}
			}
			var seen []string
			err := tx.Messages(u.ID, s.ID, func(m kv.Message) error {
				seen = append(seen, *m.TextContent)
				return nil
			})
			if len(seen) != 40 || seen[0] != "new 0" || seen[39] != "new 39" {
				t.Errorf("in the Commit that wrote them, its 40 messages read as %d: %q...", len(seen), seen[:min(3, len(seen))])
			}
			return err
		})
	})
}

// TestCursorsAcrossBatches walks more records than a PostgreSQL cursor
// reads at once (16, growing to 256), forwards and backwards, between
// neighbouring users: every record once, in order, and resuming from any
// place yields exactly the rest.
func TestCursorsAcrossBatches(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		users := createUsers(t, st, 3)
		slices.SortFunc(users, func(a, b kv.User) int { return strings.Compare(a.ID, b.ID) })
		const sessions = 70
		want := map[string][]string{} // user -> session ids, most recent first
		for _, u := range users {
			mustCommit(t, st, func(tx *kv.Tx) error {
				for i := range sessions {
					s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: fmt.Sprint(i), Source: "pi", CreatedAt: 1, UpdatedAt: int64(1000 + i)}
					if err := tx.PutSession(&s, 0); err != nil {
						return err
					}
					want[u.ID] = append([]string{s.ID}, want[u.ID]...)
				}
				return nil
			})
		}
		u := users[1] // a user with neighbours on both sides in key order
		ids := func(ss []kv.Session) []string {
			var out []string
			for _, s := range ss {
				out = append(out, s.ID)
			}
			return out
		}
		all := recent(t, st, u.ID, kv.Position{}, 1000)
		if got := ids(all); !slices.Equal(got, want[u.ID]) {
			t.Fatalf("RecentSessions: %d sessions, want %d in order (first %v)", len(got), len(want[u.ID]), got[:min(3, len(got))])
		}
		// Pages of 9 from each page's last position.
		var paged []string
		for pos := (kv.Position{}); ; {
			page := recent(t, st, u.ID, pos, 9)
			if len(page) == 0 {
				break
			}
			paged = append(paged, ids(page)...)
			last := page[len(page)-1]
			pos = kv.Position{UpdatedAt: last.UpdatedAt, ID: last.ID}
		}
		if !slices.Equal(paged, want[u.ID]) {
			t.Errorf("paging RecentSessions by 9 gave %d sessions, want the %d in order", len(paged), len(want[u.ID]))
		}
		// SessionsAfter, in id order, resumed from every 13th.
		byID := slices.Sorted(slices.Values(want[u.ID]))
		for i := 0; i < len(byID); i += 13 {
			var got []string
			_ = st.View(ctx, func(tx *kv.Tx) error {
				got = got[:0]
				return tx.SessionsAfter(u.ID, byID[i], func(s kv.Session) error {
					got = append(got, s.ID)
					return nil
				})
			})
			if !slices.Equal(got, byID[i+1:]) {
				t.Errorf("SessionsAfter(#%d) gave %d sessions, want the %d after it in id order", i, len(got), len(byID)-i-1)
			}
		}
		// A long session read from several places.
		s := newSession(t, st, u.ID, "long", 5000, 600)
		for _, from := range []uint64{0, 1, 15, 16, 17, 300, 599, 600, 1000} {
			got := messageTexts(t, st, u.ID, s.ID, from)
			if n := max(0, 600-int(from)); len(got) != n {
				t.Errorf("MessagesFrom(%d): %d messages, want %d", from, len(got), n)
				continue
			}
			for i, g := range got {
				if w := fmt.Sprintf("%d:message %d of long", int(from)+i, int(from)+i); g != w {
					t.Errorf("MessagesFrom(%d)[%d] = %q, want %q", from, i, g, w)
					break
				}
			}
		}
	})
}

// TestDeleteAndPurge: a deleted session is gone for every reader at once
// (lookups, listings, its messages), is on the outbox for the index, and
// PurgeStep removes its records in bounded steps; another user's session
// cannot be deleted by id.
func TestDeleteAndPurge(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		users := createUsers(t, st, 2)
		ann, bob := users[0], users[1]
		gone := newSession(t, st, ann.ID, "gone", 100, 30)
		kept := newSession(t, st, ann.ID, "kept", 200, 5)
		bobs := newSession(t, st, bob.ID, "bobs", 300, 5)
		mustCommit(t, st, func(tx *kv.Tx) error {
			for _, d := range tx.DirtySessions(kv.SearchQueue, 10) {
				if err := tx.ClearDirty(d); err != nil {
					return err
				}
			}
			return nil
		})
		if err := st.Commit(ctx, func(tx *kv.Tx) error { return tx.DeleteSession(ann.ID, bobs.ID) }); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("deleting another user's session: %v, want ErrNotFound", err)
		}
		mustCommit(t, st, func(tx *kv.Tx) error {
			if err := tx.DeleteSession(ann.ID, gone.ID); err != nil {
				return err
			}
			return tx.PutTombstone(ann.ID, kv.Tombstone{ExternalID: "gone", Reason: kv.ReasonDeleted, DeletedAt: 1})
		})
		_ = st.View(ctx, func(tx *kv.Tx) error {
			if _, err := tx.Session(ann.ID, gone.ID); !errors.Is(err, kv.ErrNotFound) {
				t.Errorf("Session(deleted) = %v, want ErrNotFound", err)
			}
			if _, ok := tx.SessionIDByExternal(ann.ID, "gone"); ok {
				t.Error("the deleted session's external id still resolves")
			}
			if _, err := tx.Tombstone(ann.ID, "gone"); err != nil {
				t.Errorf("tombstone of the deleted session: %v", err)
			}
			var dirty []string
			for _, d := range tx.DirtySessions(kv.SearchQueue, 10) {
				dirty = append(dirty, d.SessionID)
			}
			if !slices.Equal(dirty, []string{gone.ID}) {
				t.Errorf("outbox after the delete = %v, want the deleted session %s", dirty, gone.ID)
			}
			if n := tx.PendingPurges(); n != 1 {
				t.Errorf("PendingPurges = %d, want 1", n)
			}
			var listed []string
			_ = tx.Sessions(ann.ID, func(s kv.Session) error { listed = append(listed, s.ID); return nil })
			if !slices.Equal(listed, []string{kept.ID}) {
				t.Errorf("Sessions after the delete = %v, want only %s", listed, kept.ID)
			}
			return nil
		})
		if got := recent(t, st, ann.ID, kv.Position{}, 10); len(got) != 1 || got[0].ID != kept.ID {
			t.Errorf("RecentSessions after the delete: %d sessions, want only the kept one", len(got))
		}
		steps, removed := 0, 0
		for {
			n, err := st.PurgeStep(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			if n > 7 {
				t.Errorf("PurgeStep(7) removed %d records", n)
			}
			if n == 0 {
				break
			}
			steps, removed = steps+1, removed+n
			if steps > 20 {
				t.Fatal("PurgeStep never finishes")
			}
		}
		if removed < 30 || steps < 5 {
			t.Errorf("purging removed %d records in %d steps, want the 30 messages and more in at least 5 steps", removed, steps)
		}
		_ = st.View(ctx, func(tx *kv.Tx) error {
			if n := tx.PendingPurges(); n != 0 {
				t.Errorf("PendingPurges after purging = %d", n)
			}
			if _, err := tx.Tombstone(ann.ID, "gone"); err != nil {
				t.Errorf("purging removed the tombstone: %v", err)
			}
			return nil
		})
		if got := messageTexts(t, st, ann.ID, gone.ID, 0); len(got) != 0 {
			t.Errorf("%d messages of the purged session remain", len(got))
		}
		if got := messageTexts(t, st, ann.ID, kept.ID, 0); len(got) != 5 {
			t.Errorf("the kept session has %d messages after the purge, want 5", len(got))
		}
		if got := messageTexts(t, st, bob.ID, bobs.ID, 0); len(got) != 5 {
			t.Errorf("bob's session has %d messages after ann's purge, want 5", len(got))
		}
	})
}

// TestEvalLabels: an eval label is stored and read back whole, replaced
// by the next, leaves the session's place in the list and the outbox
// alone, and only the owner can set one.
func TestEvalLabels(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		users := createUsers(t, st, 2)
		ann, bob := users[0], users[1]
		s := newSession(t, st, ann.ID, "s", 100, 2)
		newer := newSession(t, st, ann.ID, "newer", 200, 1)
		mustCommit(t, st, func(tx *kv.Tx) error {
			for _, d := range tx.DirtySessions(kv.SearchQueue, 10) {
				if err := tx.ClearDirty(d); err != nil {
					return err
				}
			}
			return nil
		})
		label := kv.Eval{Ready: true, Status: kv.EvalGolden, Notes: "good", Tags: []string{"parser", "go"}, ExpectedOutput: "ideal", ReviewedAt: 42}
		for _, e := range []kv.Eval{label, {Ready: false, Status: kv.EvalGolden, Tags: []string{"other"}, ReviewedAt: 43}} {
			mustCommit(t, st, func(tx *kv.Tx) error {
				got, err := tx.PutSessionEval(ann.ID, s.ID, e)
				if err != nil {
					return err
				}
				if got.ID != s.ID || got.Title != s.Title {
					t.Errorf("PutSessionEval returned session %s %q, want %s %q", got.ID, got.Title, s.ID, s.Title)
				}
				return nil
			})
			_ = st.View(ctx, func(tx *kv.Tx) error {
				got, err := tx.Session(ann.ID, s.ID)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got.Eval) != fmt.Sprint(e) {
					t.Errorf("eval read back %+v, want %+v", got.Eval, e)
				}
				if got.UpdatedAt != 100 {
					t.Errorf("labelling moved UpdatedAt to %d", got.UpdatedAt)
				}
				if n := tx.QueueLen(kv.SearchQueue); n != 0 {
					t.Errorf("labelling put %d entries on the outbox", n)
				}
				return nil
			})
		}
		if got := recent(t, st, ann.ID, kv.Position{}, 10); len(got) != 2 || got[0].ID != newer.ID || got[1].ID != s.ID {
			t.Errorf("labelling changed the session order")
		}
		if err := st.Commit(ctx, func(tx *kv.Tx) error {
			_, err := tx.PutSessionEval(bob.ID, s.ID, label)
			return err
		}); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("labelling another user's session: %v, want ErrNotFound", err)
		}
		if got := messageTexts(t, st, ann.ID, s.ID, 0); len(got) != 2 {
			t.Errorf("labelling left %d messages, want 2", len(got))
		}
	})
}

// envCrashChild: set for the child process of TestReopenAfterKill, naming
// its backend and the place of its store ("backend place").
const envCrashChild = "HINDSIGHT_TEST_KV_CRASH_CHILD"

// TestReopenAfterKill kills a process holding a store, without closing
// it, in the middle of a write, and opens the store again: every write
// committed before the kill is there whole (records, lookups, outbox
// entries in their order), the interrupted one left nothing, the
// invariants hold, and the store takes new writes.
func TestReopenAfterKill(t *testing.T) {
	if spec := os.Getenv(envCrashChild); spec != "" {
		crashChild(t, spec)
		return
	}
	const committed = 12
	kvtest.EachBackend(t, func(t *testing.T, b kvtest.Backend) {
		place := b.Place(t)
		var uid string
		{
			st, err := b.OpenAt(ctx, place)
			if err != nil {
				t.Fatal(err)
			}
			uid = createUsers(t, st, 1)[0].ID
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestReopenAfterKill$", "-test.count=1")
		cmd.Env = append(os.Environ(), envCrashChild+"="+b.Name+" "+uid+" "+place)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var ids []string // session ids in the order committed
		sc := bufio.NewScanner(out)
		inflight := false
		for !inflight && sc.Scan() {
			switch f := strings.Fields(sc.Text()); {
			case len(f) == 2 && f[0] == "committed":
				ids = append(ids, f[1])
			case len(f) == 1 && f[0] == "inflight":
				inflight = true
			}
		}
		if !inflight {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child ended before its last write (%d committed); stderr:\n%s", len(ids), stderr.String())
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if len(ids) != committed {
			t.Fatalf("the child reported %d commits, want %d", len(ids), committed)
		}

		st, err := b.OpenAt(ctx, place)
		if err != nil {
			t.Fatalf("reopen after the kill: %v", err)
		}
		kvtest.Checked(t, st)
		_ = st.View(ctx, func(tx *kv.Tx) error {
			for i, id := range ids {
				s, err := tx.Session(uid, id)
				if err != nil {
					t.Errorf("committed session %d: %v", i, err)
					continue
				}
				if got, ok := tx.SessionIDByExternal(uid, fmt.Sprint(i)); !ok || got != id {
					t.Errorf("committed session %d: external id resolves to %q %v", i, got, ok)
				}
				if s.MessageCount != 3 {
					t.Errorf("committed session %d: messageCount %d", i, s.MessageCount)
				}
			}
			if _, ok := tx.SessionIDByExternal(uid, "interrupted"); ok {
				t.Error("the write interrupted by the kill left its session")
			}
			var dirty []string
			for _, d := range tx.DirtySessions(kv.SearchQueue, 100) {
				dirty = append(dirty, d.SessionID)
			}
			if !slices.Equal(dirty, ids) {
				t.Errorf("outbox after the kill: %d entries %v, want the %d committed in order", len(dirty), dirty, len(ids))
			}
			return nil
		})
		for i, id := range ids {
			if got := messageTexts(t, st, uid, id, 0); len(got) != 3 {
				t.Errorf("committed session %d has %d messages, want 3", i, len(got))
			}
		}
		after := newSession(t, st, uid, "after", 10_000, 2)
		if slices.Contains(ids, after.ID) {
			t.Error("a write after the reopen reused an id")
		}
		if got := messageTexts(t, st, uid, after.ID, 0); len(got) != 2 {
			t.Errorf("a session written after the reopen reads %d messages, want 2", len(got))
		}
	})
}

// crashChild is TestReopenAfterKill's child: it commits sessions of three
// messages one by one, printing each id once its Commit returned, then
// begins one more and, with its writes made, blocks until killed.
func crashChild(t *testing.T, spec string) {
	f := strings.SplitN(spec, " ", 3)
	if len(f) != 3 {
		t.Fatalf("%s=%q: want backend, user id and place", envCrashChild, spec)
	}
	var b kvtest.Backend
	for _, c := range kvtest.Backends() {
		if c.Name == f[0] {
			b = c
		}
	}
	if b.OpenAt == nil {
		t.Fatalf("%s: no backend %q", envCrashChild, f[0])
	}
	uid := f[1]
	st, err := b.OpenAt(ctx, f[2])
	if err != nil {
		t.Fatal(err)
	}
	write := func(tx *kv.Tx, ext string) (string, error) {
		s := kv.Session{ID: kv.NewID(), UserID: uid, ExternalID: ext, Source: "pi", CreatedAt: 1, UpdatedAt: 1, MessageCount: 3, NextSeq: 3}
		if err := tx.PutSession(&s, 0); err != nil {
			return "", err
		}
		for i := range 3 {
			text := fmt.Sprint("message ", i)
			m := kv.Message{ID: kv.NewID(), UserID: uid, SessionID: s.ID, Seq: uint64(i), ExternalID: fmt.Sprint(i), Role: "user", TextContent: &text}
			if err := tx.PutMessage(&m); err != nil {
				return "", err
			}
		}
		return s.ID, tx.MarkDirty(uid, s.ID)
	}
	for i := range 12 {
		var id string
		if err := st.Commit(ctx, func(tx *kv.Tx) (err error) {
			id, err = write(tx, fmt.Sprint(i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("committed %s\n", id)
		time.Sleep(time.Millisecond) // outbox entries ranked by a distinct time each
	}
	err = st.Commit(ctx, func(tx *kv.Tx) error {
		if _, err := write(tx, "interrupted"); err != nil {
			return err
		}
		fmt.Println("inflight")
		for {
			time.Sleep(time.Hour) // until killed
		}
	})
	t.Fatalf("the interrupted write returned: %v", err)
}
