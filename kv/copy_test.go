package kv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// populate fills every bucket of st through the store's own API: users and
// their names, keys, sessions with messages (enough of them, when many,
// that a bbolt store takes its compression dictionary), eval labels,
// tombstones, dashboard sessions, both outbox queues in both lanes, a
// deleted session still being purged, redaction counts and metadata.
func populate(t *testing.T, st *kv.Store, messages int) {
	t.Helper()
	var alice, bob kv.User
	err := st.Commit(ctx, func(tx *kv.Tx) error {
		var err error
		if alice, err = tx.CreateUser("alice", 1); err != nil {
			return err
		}
		if bob, err = tx.CreateUser("bob", 2); err != nil {
			return err
		}
		for i, u := range []kv.User{alice, bob} {
			if err := tx.PutKey(kv.APIKey{Hash: fmt.Sprintf("%064x", i+1), Prefix: "hs_" + u.Name, UserID: u.ID, CreatedAt: 3}); err != nil {
				return err
			}
		}
		if err := tx.PutWebSession(strings.Repeat("ab", 32), kv.WebSession{UserID: alice.ID, CSRF: "c", CreatedAt: 4, ExpiresAt: 5}); err != nil {
			return err
		}
		if err := tx.PutTombstone(bob.ID, kv.Tombstone{ExternalID: "gone", DeletedAt: 6, Reason: kv.ReasonDeleted, Source: "claude"}); err != nil {
			return err
		}
		if err := tx.AddRedactions(alice.ID, map[string]int{"aws-key": 2}); err != nil {
			return err
		}
		if err := tx.SetSetupTokenHash("setup"); err != nil {
			return err
		}
		return tx.SetMeta("index.state", []byte("ready"))
	})
	if err != nil {
		t.Fatal(err)
	}
	const perSession = 50
	text := "the quick brown fox refactors the parser and runs go test ./... before the commit; "
	var sessions []kv.Session
	for n := 0; n < messages || len(sessions) < 4; n += perSession {
		u := []kv.User{alice, bob}[len(sessions)%2]
		s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: fmt.Sprintf("ext-%d", len(sessions)), Source: "claude",
			Title: fmt.Sprintf("session %d", len(sessions)), CreatedAt: int64(10 + n), UpdatedAt: int64(20 + n)}
		err := st.Commit(ctx, func(tx *kv.Tx) error {
			s.MessageCount, s.NextSeq = 0, 0
			for i := 0; i < perSession && n+i < messages; i++ {
				body := fmt.Sprintf("%s message %d of %d", strings.Repeat(text, 1+i%3), i, n)
				m := kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: s.ID, Seq: uint64(i), ExternalID: fmt.Sprintf("m%d", i),
					Role: kv.Roles[i%2], TextContent: &body, CreatedAt: int64(n + i), UpdatedAt: int64(n + i)}
				if err := tx.PutMessage(&m); err != nil {
					return err
				}
				s.MessageCount++
				s.NextSeq = uint64(i + 1)
			}
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
			return tx.MarkDirty(u.ID, s.ID)
		})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	err = st.Commit(ctx, func(tx *kv.Tx) error {
		if _, err := tx.PutSessionEval(sessions[0].UserID, sessions[0].ID, kv.Eval{Ready: true, Status: kv.EvalGolden, Tags: []string{"parser"}}); err != nil {
			return err
		}
		if err := tx.MarkLive(sessions[1].UserID, sessions[1].ID); err != nil {
			return err
		}
		if _, err := tx.SetIndexTail(sessions[2].UserID, sessions[2].ID, kv.IndexTail{Seq: 10, Chunk: 4, Volume: 1, Title: []byte("hash")}); err != nil {
			return err
		}
		for _, d := range tx.DirtySessions(kv.SearchQueue, 10) {
			if err := tx.PassOn(d); err != nil {
				return err
			}
		}
		// The last session is deleted: its messages wait in purge.
		return tx.DeleteSession(sessions[len(sessions)-1].UserID, sessions[len(sessions)-1].ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	// One more commit: the committer takes its dictionary (if it is due)
	// after the group before, so it has when this one returns.
	if err := st.Commit(ctx, func(tx *kv.Tx) error { return tx.SetMeta("populated", []byte("yes")) }); err != nil {
		t.Fatal(err)
	}
}

// sumsOf reads st's checksums.
func sumsOf(t *testing.T, st *kv.Store) []kv.BucketSum {
	t.Helper()
	s, err := st.Checksums(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sameSums(t *testing.T, what string, want, got []kv.BucketSum) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d buckets, want %d", what, len(got), len(want))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("%s: %v, want %v", what, got[i], want[i])
		}
	}
}

func openBolt(t *testing.T, dir string) *kv.Store {
	t.Helper()
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openPGStore(t *testing.T) *kv.Store {
	t.Helper()
	st, err := kv.OpenPostgres(ctx, pgtest.Database(t), kv.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestCopyRoundTrip: a bbolt file with every bucket populated and its
// records compressed with a dictionary is copied into PostgreSQL and from
// there into a new bbolt file; all three hold the same keys and logical
// values (checksums per bucket), pass the store's invariant check, read
// the same records, and a session written after the copy gets a number of
// its own (the sequences moved along).
func TestCopyRoundTrip(t *testing.T) {
	src := openBolt(t, t.TempDir())
	populate(t, src, 1500)
	var dict []byte
	_ = src.View(ctx, func(tx *kv.Tx) error { dict = tx.Meta("records.zstd.dict"); return nil })
	if dict == nil {
		t.Fatal("the source took no compression dictionary: the test does not cover records that name one")
	}
	want := sumsOf(t, src)
	for _, b := range want {
		if b.Keys == 0 {
			t.Errorf("bucket %s is empty in the source: populate misses it", b.Bucket)
		}
	}

	pg := openPGStore(t)
	rep, err := kv.Copy(ctx, src, pg, kv.CopyOptions{From: "bbolt", BatchKeys: 200})
	if err != nil {
		t.Fatalf("copy to PostgreSQL: %v", err)
	}
	if rep.Resumed || rep.AlreadyCopied || rep.Emptied {
		t.Errorf("report %+v: a first copy into an empty store", rep)
	}
	sameSums(t, "report, source", want, rep.Source)
	sameSums(t, "report, destination", want, rep.Destination)
	sameSums(t, "PostgreSQL", want, sumsOf(t, pg))

	// A node's claims on outbox entries (claims.go) are not records: they
	// stay behind, and a store holding them copies all the same.
	var dirty []kv.Dirty
	if err := pg.View(ctx, func(tx *kv.Tx) error { dirty = tx.DirtySessions(kv.SearchQueue, 10); return nil }); err != nil {
		t.Fatal(err)
	}
	if claimed, err := pg.Claim(ctx, dirty); err != nil || len(dirty) == 0 || len(claimed) != len(dirty) {
		t.Fatalf("claimed %d of %d outbox entries: %v", len(claimed), len(dirty), err)
	}
	sameSums(t, "PostgreSQL with claims", want, sumsOf(t, pg))

	back := openBolt(t, t.TempDir())
	if _, err := kv.Copy(ctx, pg, back, kv.CopyOptions{From: "postgres"}); err != nil {
		t.Fatalf("copy back to bbolt: %v", err)
	}
	sameSums(t, "bbolt again", want, sumsOf(t, back))

	for name, st := range map[string]*kv.Store{"source": src, "postgres": pg, "back": back} {
		if err := st.Check(); err != nil {
			t.Errorf("%s: check: %v", name, err)
		}
	}
	// The records read the same through the API.
	read := func(st *kv.Store) string {
		var b strings.Builder
		err := st.View(ctx, func(tx *kv.Tx) error {
			users, err := tx.Users()
			if err != nil {
				return err
			}
			for _, u := range users {
				err := tx.Sessions(u.ID, func(s kv.Session) error {
					fmt.Fprintf(&b, "%s %s %q %v\n", u.Name, s.ExternalID, s.Title, s.Eval)
					return tx.Messages(u.ID, s.ID, func(m kv.Message) error {
						fmt.Fprintf(&b, "  %d %s %s\n", m.Seq, m.Role, *m.TextContent)
						return nil
					})
				})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if a, b := read(src), read(back); a != b || !strings.Contains(a, "golden") {
		t.Errorf("the records read differently after the round trip (%d and %d bytes)", len(a), len(b))
	}
	// New writes in both copies get new session numbers and outbox
	// versions: nothing collides with the copied records.
	for name, st := range map[string]*kv.Store{"postgres": pg, "back": back} {
		err := st.Commit(ctx, func(tx *kv.Tx) error {
			u, err := tx.UserByName("alice")
			if err != nil {
				return err
			}
			s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "after", Source: "claude", CreatedAt: 1, UpdatedAt: 1, MessageCount: 1, NextSeq: 1}
			body := "written after the copy"
			if err := tx.PutMessage(&kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: s.ID, ExternalID: "m0", Role: "user", TextContent: &body}); err != nil {
				return err
			}
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
			return tx.MarkDirty(u.ID, s.ID)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Check(); err != nil {
			t.Errorf("%s after a new session: %v", name, err)
		}
		got := sumsOf(t, st)
		for i, b := range got {
			if b.Bucket == "messages" && b.Keys != want[i].Keys+1 {
				t.Errorf("%s: %d messages after one more, want %d", name, b.Keys, want[i].Keys+1)
			}
		}
	}
}

// TestCopyResume: a copy cancelled after a few batches, in either
// direction, continues where it stopped when run again, and ends with the
// source's records exactly (same keys and values, none twice); a third run
// finds nothing to do.
func TestCopyResume(t *testing.T) {
	for _, dir := range []string{"bbolt to postgres", "postgres to bbolt"} {
		t.Run(dir, func(t *testing.T) {
			var src, dst *kv.Store
			if dir == "bbolt to postgres" {
				src, dst = openBolt(t, t.TempDir()), openPGStore(t)
			} else {
				src, dst = openPGStore(t), openBolt(t, t.TempDir())
			}
			populate(t, src, 400)
			want := sumsOf(t, src)

			cctx, cancel := context.WithCancel(ctx)
			batches, messages := 0, 0
			opts := kv.CopyOptions{From: "the source", BatchKeys: 30, Progress: func(bucket string, done, total int) {
				batches++
				if bucket == "messages" {
					messages = done
					if done >= 90 {
						cancel()
					}
				}
			}}
			_, err := kv.Copy(cctx, src, dst, opts)
			cancel()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled copy: %v, want context.Canceled", err)
			}
			if messages == 0 || messages >= 400 {
				t.Fatalf("the copy was cancelled after %d messages: not in the middle", messages)
			}
			// The destination holds part of the messages.
			for _, b := range sumsOf(t, dst) {
				if b.Bucket == "messages" && (b.Keys == 0 || b.Keys != messages) {
					t.Errorf("after the cancel the destination holds %d messages, the copy reported %d", b.Keys, messages)
				}
			}

			first := -1
			opts.Progress = func(bucket string, done, total int) {
				if first < 0 {
					first = done
					if bucket != "messages" || done <= messages {
						t.Errorf("the resumed copy began with %s at %d: not after the %d messages copied", bucket, done, messages)
					}
				}
			}
			rep, err := kv.Copy(ctx, src, dst, opts)
			if err != nil {
				t.Fatalf("resumed copy: %v", err)
			}
			if !rep.Resumed {
				t.Errorf("report %+v: not resumed", rep)
			}
			sameSums(t, "after the resume", want, sumsOf(t, dst))
			if err := dst.Check(); err != nil {
				t.Errorf("check: %v", err)
			}

			opts.Progress = nil
			rep, err = kv.Copy(ctx, src, dst, opts)
			if err != nil || !rep.AlreadyCopied {
				t.Errorf("third run: %+v, %v; want nothing to do", rep, err)
			}
			sameSums(t, "after the third run", want, sumsOf(t, dst))
		})
	}
}

// TestCopyRefuses: a destination holding other records is refused (and
// left as it was) unless Force, which empties it first; so is a
// destination holding another source's unfinished copy, and a source that
// is itself an unfinished copy.
func TestCopyRefuses(t *testing.T) {
	src := openBolt(t, t.TempDir())
	populate(t, src, 100)
	want := sumsOf(t, src)

	t.Run("other records", func(t *testing.T) {
		dst := openPGStore(t)
		if err := dst.Commit(ctx, func(tx *kv.Tx) error { _, err := tx.CreateUser("mallory", 1); return err }); err != nil {
			t.Fatal(err)
		}
		before := sumsOf(t, dst)
		_, err := kv.Copy(ctx, src, dst, kv.CopyOptions{From: "a"})
		if !errors.Is(err, kv.ErrDestinationNotEmpty) || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("copy into a store with other records: %v, want ErrDestinationNotEmpty naming --force", err)
		}
		sameSums(t, "the refused destination", before, sumsOf(t, dst))
		rep, err := kv.Copy(ctx, src, dst, kv.CopyOptions{From: "a", Force: true})
		if err != nil || !rep.Emptied {
			t.Fatalf("forced copy: %+v, %v", rep, err)
		}
		sameSums(t, "after the forced copy", want, sumsOf(t, dst))
		var err2 error
		_ = dst.View(ctx, func(tx *kv.Tx) error { _, err2 = tx.UserByName("mallory"); return nil })
		if !errors.Is(err2, kv.ErrNotFound) {
			t.Errorf("mallory after the forced copy: %v, want not found", err2)
		}
	})

	// A forced copy over a bbolt file that took a compression dictionary
	// keeps the dictionary (the store compresses the copied records with
	// it), so the file reads back whole after a reopen.
	t.Run("over a file with a dictionary", func(t *testing.T) {
		dir := t.TempDir()
		dst := openBolt(t, dir)
		populate(t, dst, 1500)
		if _, err := kv.Copy(ctx, src, dst, kv.CopyOptions{From: "a", Force: true}); err != nil {
			t.Fatalf("forced copy: %v", err)
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
		dst = openBolt(t, dir)
		sameSums(t, "reopened", want, sumsOf(t, dst))
		if err := dst.Check(); err != nil {
			t.Errorf("check: %v", err)
		}
	})

	t.Run("another source's unfinished copy", func(t *testing.T) {
		other := openBolt(t, t.TempDir())
		populate(t, other, 100)
		dst := openBolt(t, t.TempDir())
		cctx, cancel := context.WithCancel(ctx)
		_, err := kv.Copy(cctx, other, dst, kv.CopyOptions{From: "other", BatchKeys: 5, Progress: func(string, int, int) { cancel() }})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled copy: %v", err)
		}
		// The unfinished destination is no source.
		if _, err := kv.Copy(ctx, dst, openBolt(t, t.TempDir()), kv.CopyOptions{From: "dst"}); err == nil || !strings.Contains(err.Error(), "unfinished copy") {
			t.Errorf("copy from an unfinished copy: %v, want a refusal", err)
		}
		_, err = kv.Copy(ctx, src, dst, kv.CopyOptions{From: "src"})
		if !errors.Is(err, kv.ErrDestinationNotEmpty) || !strings.Contains(err.Error(), "other") {
			t.Fatalf("copy into another source's unfinished copy: %v, want a refusal naming it", err)
		}
		if _, err := kv.Copy(ctx, src, dst, kv.CopyOptions{From: "src", Force: true}); err != nil {
			t.Fatalf("forced: %v", err)
		}
		sameSums(t, "after the forced copy", want, sumsOf(t, dst))
	})
}

// TestCopyMismatch: a record written to the source during the copy, in a
// bucket already copied, makes the final check fail (ErrCopyMismatch,
// naming the bucket) rather than pass for a faithful copy; a forced copy
// afterwards starts over and matches.
func TestCopyMismatch(t *testing.T) {
	src := openBolt(t, t.TempDir())
	populate(t, src, 100)
	dst := openPGStore(t)
	wrote := false
	rep, err := kv.Copy(ctx, src, dst, kv.CopyOptions{From: "src", Progress: func(bucket string, _, _ int) {
		if bucket == "messages" && !wrote {
			wrote = true
			if err := src.Commit(ctx, func(tx *kv.Tx) error { _, err := tx.CreateUser("late", 9); return err }); err != nil {
				t.Error(err)
			}
		}
	}})
	if !errors.Is(err, kv.ErrCopyMismatch) || !strings.Contains(err.Error(), "users") {
		t.Fatalf("copy while the source changed: %v, want ErrCopyMismatch naming users", err)
	}
	if bad := rep.Mismatched(); len(bad) == 0 || bad[0] != "users" {
		t.Errorf("mismatched buckets %v, want users first", bad)
	}
	if _, err := kv.Copy(ctx, src, dst, kv.CopyOptions{From: "src"}); !errors.Is(err, kv.ErrCopyMismatch) {
		t.Errorf("resumed copy of a changed source: %v, want ErrCopyMismatch again", err)
	}
	rep, err = kv.Copy(ctx, src, dst, kv.CopyOptions{From: "src", Force: true})
	if err != nil || rep.Resumed || !rep.Emptied {
		t.Fatalf("forced copy: %+v, %v", rep, err)
	}
	sameSums(t, "after the forced copy", sumsOf(t, src), sumsOf(t, dst))
}
