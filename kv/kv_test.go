package kv_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

var ctx = context.Background()

func TestNewID(t *testing.T) {
	const n = 20000
	seen := make(map[string]bool, n)
	chars := map[rune]int{}
	for range n {
		id := kv.NewID()
		if len(id) != kv.IDLen {
			t.Fatalf("NewID() = %q: length %d, want %d", id, len(id), kv.IDLen)
		}
		for _, c := range id {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
				t.Fatalf("NewID() = %q: character %q outside [a-z0-9]", id, c)
			}
			chars[c]++
		}
		if seen[id] {
			t.Fatalf("NewID() returned %q twice in %d calls", id, n)
		}
		seen[id] = true
	}
	if len(chars) != 36 {
		t.Errorf("NewID used %d distinct characters in %d ids, want all 36", len(chars), n)
	}
	// Every character is equally likely: expected n*IDLen/36 each (about 8900).
	// A biased generator (plain c%36 favours the first 4 characters by 1/7)
	// would leave the +-5% band.
	want := float64(n*kv.IDLen) / 36
	for c, got := range chars {
		if d := float64(got)/want - 1; d > 0.05 || d < -0.05 {
			t.Errorf("character %q appears %d times, want about %.0f (bias %.1f%%)", c, got, want, 100*d)
		}
	}
}

// mustCommit runs fn in a write transaction and fails the test on error.
func mustCommit(t *testing.T, st *kv.Store, fn func(*kv.Tx) error) {
	t.Helper()
	if err := st.Commit(ctx, fn); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func createUsers(t *testing.T, st *kv.Store, n int) []kv.User {
	t.Helper()
	users := make([]kv.User, n)
	mustCommit(t, st, func(tx *kv.Tx) error {
		for i := range users {
			u, err := tx.CreateUser(fmt.Sprintf("user-%d", i), 1)
			if err != nil {
				return err
			}
			users[i] = u
		}
		return nil
	})
	return users
}

// recent lists a user's sessions from a position, as "externalId" strings.
func recent(t *testing.T, st *kv.Store, userID string, from kv.Position, max int) []kv.Session {
	t.Helper()
	var out []kv.Session
	err := st.View(ctx, func(tx *kv.Tx) error {
		return tx.RecentSessions(userID, from, func(s kv.Session) bool {
			out = append(out, s)
			return len(out) < max
		})
	})
	if err != nil {
		t.Fatalf("RecentSessions: %v", err)
	}
	return out
}

func TestRecentSessionsOrderAndUserBoundaries(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		// Each pattern says, for the users sorted by id (key order), how many
		// sessions each has. The empty users at the first and last key positions
		// exercise the seek past the end of the bucket and before its start.
		tests := []struct {
			name   string
			counts []int
		}{
			{"all users have sessions", []int{3, 1, 4, 2}},
			{"first and last in key order are empty", []int{0, 3, 0, 2, 0}},
			{"only the last has sessions", []int{0, 0, 5}},
			{"only the first has sessions", []int{4, 0, 0}},
			{"single user", []int{6}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				st := open(t)
				users := createUsers(t, st, len(tc.counts))
				sort.Slice(users, func(i, j int) bool { return users[i].ID < users[j].ID })
				want := map[string][]string{} // user id -> session ids, newest first
				mustCommit(t, st, func(tx *kv.Tx) error {
					clear(want)
					for ui, u := range users {
						var ss []kv.Session
						for j := range tc.counts[ui] {
							// Some sessions share an updatedAt: order then falls back to id.
							s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: fmt.Sprintf("ext-%d", j),
								Source: "opencode", CreatedAt: 100, UpdatedAt: int64(1000 + 10*(j/2))}
							if err := tx.PutSession(&s, 0); err != nil {
								return err
							}
							ss = append(ss, s)
						}
						sort.Slice(ss, func(a, b int) bool {
							if ss[a].UpdatedAt != ss[b].UpdatedAt {
								return ss[a].UpdatedAt > ss[b].UpdatedAt
							}
							return ss[a].ID > ss[b].ID
						})
						for _, s := range ss {
							want[u.ID] = append(want[u.ID], s.ID)
						}
					}
					return nil
				})
				for ui, u := range users {
					got := recent(t, st, u.ID, kv.Position{}, 1000)
					var ids []string
					for _, s := range got {
						if s.UserID != u.ID {
							t.Fatalf("user %d (key position %d): listing holds session %s of user %s", ui, ui, s.ID, s.UserID)
						}
						ids = append(ids, s.ID)
					}
					if !slices.Equal(ids, want[u.ID]) {
						t.Errorf("user at key position %d: RecentSessions = %v, want %v", ui, ids, want[u.ID])
					}
					// Resuming after each position yields exactly the rest.
					for i, s := range got {
						rest := recent(t, st, u.ID, kv.Position{UpdatedAt: s.UpdatedAt, ID: s.ID}, 1000)
						var restIDs []string
						for _, r := range rest {
							restIDs = append(restIDs, r.ID)
						}
						if !slices.Equal(restIDs, want[u.ID][i+1:]) {
							t.Errorf("user %d, after position %d: got %v, want %v", ui, i, restIDs, want[u.ID][i+1:])
						}
					}
				}
				// A user id that does not exist, sorting before and after every
				// real one, sees nothing.
				for _, ghost := range []string{strings.Repeat("0", kv.IDLen), strings.Repeat("z", kv.IDLen)} {
					if got := recent(t, st, ghost, kv.Position{}, 1000); len(got) != 0 {
						t.Errorf("unknown user %s sees %d sessions", ghost, len(got))
					}
				}
			})
		}
	})
}

func TestPutSessionMovesOrderEntry(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		a := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "a", Source: "pi", CreatedAt: 1, UpdatedAt: 10}
		b := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "b", Source: "pi", CreatedAt: 1, UpdatedAt: 20}
		mustCommit(t, st, func(tx *kv.Tx) error {
			if err := tx.PutSession(&a, 0); err != nil {
				return err
			}
			return tx.PutSession(&b, 0)
		})
		if got := recent(t, st, u.ID, kv.Position{}, 10); len(got) != 2 || got[0].ExternalID != "b" {
			t.Fatalf("before update: order %v, want b first", got)
		}
		prev := a.UpdatedAt
		a.UpdatedAt = 30
		a.Title = "moved"
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.PutSession(&a, prev) })
		got := recent(t, st, u.ID, kv.Position{}, 10)
		if len(got) != 2 || got[0].ExternalID != "a" || got[0].Title != "moved" || got[1].ExternalID != "b" {
			t.Fatalf("after update: got %+v, want a (moved) then b, each once", got)
		}
		// kvtest's Check at cleanup verifies the old order entry is gone.
	})
}

func TestSessionLookupsAreOwnerScoped(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		users := createUsers(t, st, 2)
		a, b := users[0], users[1]
		sa := kv.Session{ID: kv.NewID(), UserID: a.ID, ExternalID: "same", Source: "pi", CreatedAt: 1, UpdatedAt: 1}
		sb := kv.Session{ID: kv.NewID(), UserID: b.ID, ExternalID: "same", Source: "pi", CreatedAt: 1, UpdatedAt: 1}
		mustCommit(t, st, func(tx *kv.Tx) error {
			if err := tx.PutSession(&sa, 0); err != nil {
				return err
			}
			return tx.PutSession(&sb, 0)
		})
		err := st.View(ctx, func(tx *kv.Tx) error {
			if _, err := tx.Session(b.ID, sa.ID); !errors.Is(err, kv.ErrNotFound) {
				t.Errorf("Session(b, a's id) error = %v, want ErrNotFound", err)
			}
			if _, err := tx.Session(a.ID, "short"); !errors.Is(err, kv.ErrNotFound) {
				t.Errorf("Session(a, malformed id) error = %v, want ErrNotFound", err)
			}
			if s, err := tx.Session(a.ID, sa.ID); err != nil || s.ExternalID != "same" {
				t.Errorf("Session(a, a's id) = %+v, %v", s, err)
			}
			for _, tc := range []struct {
				user kv.User
				want string
			}{{a, sa.ID}, {b, sb.ID}} {
				if id, ok := tx.SessionIDByExternal(tc.user.ID, "same"); !ok || id != tc.want {
					t.Errorf("SessionIDByExternal(%s, same) = %q, %v; want %q", tc.user.Name, id, ok, tc.want)
				}
				if ids := tx.ExternalSessionIDs(tc.user.ID); !slices.Equal(ids, []string{"same"}) {
					t.Errorf("ExternalSessionIDs(%s) = %v, want [same]", tc.user.Name, ids)
				}
				n := 0
				if err := tx.Sessions(tc.user.ID, func(s kv.Session) error {
					if s.UserID != tc.user.ID {
						t.Errorf("Sessions(%s) returned a session of %s", tc.user.ID, s.UserID)
					}
					n++
					return nil
				}); err != nil || n != 1 {
					t.Errorf("Sessions(%s): %d sessions, err %v; want 1", tc.user.Name, n, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestMessagesInSequenceOrder(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "s", Source: "pi", CreatedAt: 1, UpdatedAt: 1}
		// Sequence numbers above 255 check the big-endian key encoding.
		seqs := []uint64{0, 1, 2, 255, 256, 1000}
		mustCommit(t, st, func(tx *kv.Tx) error {
			for i := len(seqs) - 1; i >= 0; i-- { // insert out of order
				m := kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: s.ID, Seq: seqs[i],
					ExternalID: fmt.Sprintf("m%d", seqs[i]), Role: "user"}
				if err := tx.PutMessage(&m); err != nil {
					return err
				}
			}
			s.MessageCount = int64(len(seqs))
			s.NextSeq = 1001
			return tx.PutSession(&s, 0)
		})
		var got []uint64
		err := st.View(ctx, func(tx *kv.Tx) error {
			if seq, ok := tx.MessageSeq(u.ID, s.ID, "m256"); !ok || seq != 256 {
				t.Errorf("MessageSeq(m256) = %d, %v", seq, ok)
			}
			if _, ok := tx.MessageSeq(u.ID, s.ID, "nope"); ok {
				t.Errorf("MessageSeq(nope) found a message")
			}
			return tx.Messages(u.ID, s.ID, func(m kv.Message) error {
				got = append(got, m.Seq)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, seqs) {
			t.Errorf("Messages order = %v, want %v", got, seqs)
		}
	})
}

func TestClearDirtyKeepsEntryRemarkedAfterRead(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "s", Source: "pi", CreatedAt: 1, UpdatedAt: 1}
		before := time.Now()
		mustCommit(t, st, func(tx *kv.Tx) error {
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
			return tx.MarkDirty(u.ID, s.ID)
		})
		marked := time.Now()
		dirty := func() []kv.Dirty {
			var d []kv.Dirty
			_ = st.View(ctx, func(tx *kv.Tx) error { d = tx.DirtySessions(kv.SearchQueue, 0); return nil })
			return d
		}
		read := dirty() // the indexer reads the entry...
		if len(read) != 1 || read[0].UserID != u.ID || read[0].SessionID != s.ID || read[0].Version == 0 {
			t.Fatalf("DirtySessions = %+v, want one entry for the session", read)
		}
		if since := read[0].Since; since.Before(before) || since.After(marked) {
			t.Fatalf("Since = %v, want the time of the first write (between %v and %v)", since, before, marked)
		}
		// ...a new write marks the session again while it is being indexed; the
		// entry still waits for the first write...
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.MarkDirty(u.ID, s.ID) })
		if d := dirty(); len(d) != 1 || !d[0].Since.Equal(read[0].Since) {
			t.Fatalf("after a second write: outbox = %+v, want Since kept at %v", d, read[0].Since)
		}
		// ...so clearing the old version must keep it, now waiting only for
		// the writes after the indexer's read.
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.ClearDirty(read[0]) })
		again := dirty()
		if len(again) != 1 || again[0].Version <= read[0].Version {
			t.Fatalf("after ClearDirty of a stale version: outbox = %+v, want the re-marked entry (version > %d)", again, read[0].Version)
		}
		if !again[0].Since.After(read[0].Since) || again[0].Since.After(time.Now()) {
			t.Errorf("after ClearDirty of a stale version: Since = %v, want when the indexer read the entry (after %v)", again[0].Since, read[0].Since)
		}
		// Clearing the current version removes it.
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.ClearDirty(again[0]) })
		if d := dirty(); len(d) != 0 {
			t.Fatalf("after ClearDirty of the current version: outbox = %+v, want empty", d)
		}
		var n int
		_ = st.View(ctx, func(tx *kv.Tx) error { n = tx.OutboxLen(); return nil })
		if n != 0 {
			t.Errorf("OutboxLen = %d, want 0", n)
		}
	})
}

func TestDirtySessionsLimit(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		mustCommit(t, st, func(tx *kv.Tx) error {
			for i := range 5 {
				s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: fmt.Sprint(i), Source: "pi", CreatedAt: 1, UpdatedAt: 1}
				if err := tx.PutSession(&s, 0); err != nil {
					return err
				}
				if err := tx.MarkDirty(u.ID, s.ID); err != nil {
					return err
				}
			}
			return nil
		})
		_ = st.View(ctx, func(tx *kv.Tx) error {
			if got := len(tx.DirtySessions(kv.SearchQueue, 2)); got != 2 {
				t.Errorf("DirtySessions(2) returned %d entries", got)
			}
			if got := len(tx.DirtySessions(kv.SearchQueue, 0)); got != 5 {
				t.Errorf("DirtySessions(0) returned %d entries, want all 5", got)
			}
			if got := tx.OutboxLen(); got != 5 {
				t.Errorf("OutboxLen = %d, want 5", got)
			}
			return nil
		})
	})
}

// TestDirtySessionsOldestFirst: an indexer that falls behind serves
// sessions in the order they were written, whatever their keys.
func TestDirtySessionsOldestFirst(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		var ids []string
		for i := range 6 {
			id := kv.NewID()
			mustCommit(t, st, func(tx *kv.Tx) error {
				s := kv.Session{ID: id, UserID: u.ID, ExternalID: fmt.Sprint(i), Source: "pi", CreatedAt: 1, UpdatedAt: 1}
				if err := tx.PutSession(&s, 0); err != nil {
					return err
				}
				return tx.MarkDirty(u.ID, id)
			})
			ids = append(ids, id)
			time.Sleep(2 * time.Millisecond) // distinct times whatever the clock's resolution
		}
		// A new write to the first session keeps its place at the front.
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.MarkDirty(u.ID, ids[0]) })
		_ = st.View(ctx, func(tx *kv.Tx) error {
			got := tx.DirtySessions(kv.SearchQueue, 3)
			var gotIDs []string
			for _, d := range got {
				gotIDs = append(gotIDs, d.SessionID)
			}
			if !slices.Equal(gotIDs, ids[:3]) {
				t.Errorf("DirtySessions(3) = %v, want the three written first %v", gotIDs, ids[:3])
			}
			return nil
		})
	})
}

var errBoom = errors.New("boom")

// commitGrouped runs one Commit per fn concurrently, all queued behind a
// Commit that blocks until they are waiting, so the committer takes them as
// one group. It returns each call's error and the transactions each call's
// runs were given, in order.
func commitGrouped(t *testing.T, st *kv.Store, fns []func(*kv.Tx) error) (errs []error, runs [][]*kv.Tx) {
	t.Helper()
	var mu sync.Mutex
	runs = make([][]*kv.Tx, len(fns)) // kept alive so addresses stay distinct
	release := make(chan struct{})
	blockerDone := make(chan error, 1)
	go func() {
		blockerDone <- st.Commit(ctx, func(tx *kv.Tx) error {
			<-release
			return nil
		})
	}()
	errs = make([]error, len(fns))
	var queued, wg sync.WaitGroup
	queued.Add(len(fns))
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			queued.Done()
			errs[i] = st.Commit(ctx, func(tx *kv.Tx) error {
				mu.Lock()
				runs[i] = append(runs[i], tx)
				mu.Unlock()
				return fn(tx)
			})
		}()
	}
	queued.Wait()
	time.Sleep(50 * time.Millisecond) // let every goroutine reach the queue
	close(release)
	wg.Wait()
	if err := <-blockerDone; err != nil {
		t.Fatalf("blocking commit: %v", err)
	}
	return errs, runs
}

// grouped reports whether call i's first run shared its transaction with
// the first run of another call.
func grouped(runs [][]*kv.Tx, i int) bool {
	for j := range runs {
		if j != i && len(runs[i]) > 0 && len(runs[j]) > 0 && runs[j][0] == runs[i][0] {
			return true
		}
	}
	return false
}

// groupCommits reports whether st groups concurrent commits into one
// transaction: bbolt does; PostgreSQL commits each alone (its Path is "").
func groupCommits(st *kv.Store) bool { return st.Path() != "" }

// TestCommitGroupFailureIsolated queues many concurrent Commits so they
// share a transaction, with one of them failing. The failing call gets its
// own error and its write is rolled back; every other call succeeds and its
// write lands exactly once.
func TestCommitGroupFailureIsolated(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		const n = 64
		const failing = n / 2
		for attempt := 1; ; attempt++ {
			fns := make([]func(*kv.Tx) error, n)
			for i := range fns {
				fns[i] = func(tx *kv.Tx) error {
					if err := tx.SetMeta(fmt.Sprintf("a%d/k%d", attempt, i), []byte(fmt.Sprint(i))); err != nil {
						return err
					}
					if i == failing {
						return fmt.Errorf("call %d: %w", i, errBoom)
					}
					return nil
				}
			}
			errs, runs := commitGrouped(t, st, fns)
			for i, err := range errs {
				if i == failing {
					if !errors.Is(err, errBoom) {
						t.Fatalf("failing call returned %v, want its own error", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("call %d failed with %v although only call %d returned an error", i, err, failing)
				}
			}
			_ = st.View(ctx, func(tx *kv.Tx) error {
				for i := range n {
					v := tx.Meta(fmt.Sprintf("a%d/k%d", attempt, i))
					if i == failing && v != nil {
						t.Errorf("the failing call's write was committed: %q", v)
					}
					if i != failing && string(v) != fmt.Sprint(i) {
						t.Errorf("call %d: meta = %q, want %q", i, v, fmt.Sprint(i))
					}
				}
				return nil
			})
			if !groupCommits(st) || grouped(runs, failing) {
				return
			}
			if attempt == 5 {
				t.Fatalf("in %d attempts the failing call never shared a transaction with another call; group commit is not exercised", attempt)
			}
		}
	})
}

// TestCommitPanicIsolated: a Commit callback runs on the committer
// goroutine, out of reach of any HTTP handler's recover, so a panic there
// would end the process. It must instead fail that call alone, with an error
// that names the panic, roll back the call's partial write, let the calls
// grouped with it commit, and leave the committer serving later writes.
func TestCommitPanicIsolated(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		errPoison := errors.New("poisoned write")
		type panicking struct {
			value any    // what the callback panics with
			want  string // what the caller's error must contain
		}
		tests := []struct {
			name   string
			n      int // concurrent writes
			panics map[int]panicking
		}{
			{"string panic mid-group", 32, map[int]panicking{16: {"index out of range [3]", "index out of range [3]"}}},
			{"error panic", 32, map[int]panicking{5: {errPoison, "poisoned write"}}},
			{"nil panic", 32, map[int]panicking{7: {nil, "panic called with nil"}}},
			{"several panics in one group", 32, map[int]panicking{0: {"first", "first"}, 15: {"middle", "middle"}, 31: {"last", "last"}}},
			{"lone write", 1, map[int]panicking{0: {"alone", "alone"}}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				st := open(t)
				u := createUsers(t, st, 1)[0]
				watched := slices.Min(slices.Collect(maps.Keys(tc.panics)))
				for attempt := 1; ; attempt++ {
					ext := func(i int) string { return fmt.Sprintf("a%d-w%d", attempt, i) }
					fns := make([]func(*kv.Tx) error, tc.n)
					for i := range fns {
						fns[i] = func(tx *kv.Tx) error {
							s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: ext(i), Source: "pi", CreatedAt: 1, UpdatedAt: 1, MessageCount: 1, NextSeq: 1}
							if err := tx.PutSession(&s, 0); err != nil {
								return err
							}
							if p, ok := tc.panics[i]; ok {
								// The session claims a message it does not have:
								// if this write leaked, Check would report it.
								panic(p.value)
							}
							return tx.PutMessage(&kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: s.ID, ExternalID: "m", Role: "user", CreatedAt: 1, UpdatedAt: 1})
						}
					}
					errs, runs := commitGrouped(t, st, fns)
					for i, err := range errs {
						p, panicked := tc.panics[i]
						switch {
						case panicked:
							var pe *kv.PanicError
							if !errors.As(err, &pe) || !strings.Contains(err.Error(), p.want) {
								t.Fatalf("write %d panicked with %v: Commit = %v, want a *kv.PanicError naming %q", i, p.value, err, p.want)
							}
							if perr, ok := p.value.(error); ok && !errors.Is(err, perr) {
								t.Errorf("write %d: errors.Is(%v, %v) = false", i, err, perr)
							}
						case err != nil:
							t.Fatalf("write %d failed with %v; only %v panicked", i, err, slices.Collect(maps.Keys(tc.panics)))
						}
					}
					_ = st.View(ctx, func(tx *kv.Tx) error {
						for i := range tc.n {
							id, ok := tx.SessionIDByExternal(u.ID, ext(i))
							if _, panicked := tc.panics[i]; panicked {
								if ok {
									t.Errorf("write %d panicked but its session %s was committed", i, id)
								}
								continue
							}
							s, err := tx.Session(u.ID, id)
							if !ok || err != nil || s.MessageCount != 1 {
								t.Errorf("write %d: session %q: %+v, %v; want it committed with its message", i, id, s, err)
							}
						}
						return nil
					})
					if err := st.Check(); err != nil {
						t.Fatalf("Check after the panic: %v", err)
					}
					if tc.n == 1 || !groupCommits(st) || grouped(runs, watched) {
						break
					}
					if attempt == 5 {
						t.Fatalf("in %d attempts write %d never shared a transaction with another; the group case is not exercised", attempt, watched)
					}
				}
				// The committer survived: later writes, alone and grouped, commit.
				mustCommit(t, st, func(tx *kv.Tx) error { return tx.SetMeta("after", []byte("yes")) })
				errs, _ := commitGrouped(t, st, []func(*kv.Tx) error{
					func(tx *kv.Tx) error { return tx.SetMeta("after1", []byte("1")) },
					func(tx *kv.Tx) error { return tx.SetMeta("after2", []byte("2")) },
				})
				if err := errors.Join(errs...); err != nil {
					t.Fatalf("writes after the panic: %v", err)
				}
				_ = st.View(ctx, func(tx *kv.Tx) error {
					if a, a1, a2 := tx.Meta("after"), tx.Meta("after1"), tx.Meta("after2"); string(a) != "yes" || string(a1) != "1" || string(a2) != "2" {
						t.Errorf("writes after the panic read back %q, %q, %q", a, a1, a2)
					}
					return nil
				})
			})
		}
	})
}

func TestCommitCancelledContextDoesNotRun(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		ran := false
		err := st.Commit(cctx, func(tx *kv.Tx) error { ran = true; return nil })
		if !errors.Is(err, context.Canceled) || ran {
			t.Fatalf("Commit with a cancelled context: err %v, ran %v; want context.Canceled and not run", err, ran)
		}
		if err := st.View(cctx, func(tx *kv.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("View with a cancelled context: %v", err)
		}
	})
}

// TestCommitAfterCloseReturnsErrClosed: a write after Close must fail with
// ErrClosed, never hang waiting for a committer that has exited.
func TestCommitAfterCloseReturnsErrClosed(t *testing.T) {
	st, err := kv.Open(t.TempDir(), kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for i := range 50 {
		done := make(chan error, 1)
		go func() { done <- st.Commit(ctx, func(tx *kv.Tx) error { return nil }) }()
		select {
		case err := <-done:
			if !errors.Is(err, kv.ErrClosed) {
				t.Fatalf("Commit %d after Close = %v, want ErrClosed", i, err)
			}
		case <-time.After(2 * time.Minute): // a bound on liveness, not a timing
			t.Fatalf("Commit %d after Close hung (queued for a committer that has exited)", i)
		}
	}
}

func TestOpenLockedDataFile(t *testing.T) {
	dir := t.TempDir()
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// An Open that ignored LockTimeout would wait for st to close: go
	// test's -timeout would end it, so no clock is read here.
	_, err = kv.Open(dir, kv.Options{LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, kv.ErrLocked) {
		t.Fatalf("second Open of a locked file = %v, want ErrLocked", err)
	}
}

func TestCreateUser(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		mustCommit(t, st, func(tx *kv.Tx) error { _, err := tx.CreateUser("ann", 5); return err })
		err := st.Commit(ctx, func(tx *kv.Tx) error { _, err := tx.CreateUser("ann", 6); return err })
		if !errors.Is(err, kv.ErrExists) {
			t.Fatalf("duplicate CreateUser = %v, want ErrExists", err)
		}
		_ = st.View(ctx, func(tx *kv.Tx) error {
			u, err := tx.UserByName("ann")
			if err != nil || len(u.ID) != kv.IDLen || u.CreatedAt != 5 {
				t.Errorf("UserByName(ann) = %+v, %v", u, err)
			}
			if _, err := tx.UserByName("bob"); !errors.Is(err, kv.ErrNotFound) {
				t.Errorf("UserByName(bob) = %v, want ErrNotFound", err)
			}
			if us, err := tx.Users(); err != nil || len(us) != 1 {
				t.Errorf("Users() = %+v, %v", us, err)
			}
			return nil
		})
		if err := st.Commit(ctx, func(tx *kv.Tx) error {
			return tx.PutUser(kv.User{ID: kv.NewID(), Name: "ghost"})
		}); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("PutUser of an unknown id = %v, want ErrNotFound", err)
		}
	})
}

// TestCheckDetectsViolations shows the invariants kvtest relies on are
// really checked (it uses a plain store: kvtest would fail this test).
func TestCheckDetectsViolations(t *testing.T) {
	tests := []struct {
		name  string
		setup func(tx *kv.Tx, u kv.User) error
		want  string
	}{
		{"messageCount differs from stored messages", func(tx *kv.Tx, u kv.User) error {
			s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "x", CreatedAt: 1, UpdatedAt: 1, MessageCount: 2}
			return tx.PutSession(&s, 0)
		}, "messageCount 2, stored 0"},
		{"session of a user that does not exist", func(tx *kv.Tx, u kv.User) error {
			s := kv.Session{ID: kv.NewID(), UserID: kv.NewID(), ExternalID: "x", CreatedAt: 1, UpdatedAt: 1}
			return tx.PutSession(&s, 0)
		}, "has no owning user"},
		{"stale order entry", func(tx *kv.Tx, u kv.User) error {
			s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "x", CreatedAt: 1, UpdatedAt: 1}
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
			s.UpdatedAt = 2
			return tx.PutSession(&s, 0) // wrong prev: the old order entry stays
		}, "order index has 2 entries for 1"},
		{"stale externalId index", func(tx *kv.Tx, u kv.User) error {
			a := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "x", CreatedAt: 1, UpdatedAt: 1}
			b := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "x", CreatedAt: 1, UpdatedAt: 2}
			if err := tx.PutSession(&a, 0); err != nil {
				return err
			}
			return tx.PutSession(&b, 0) // the index now names b only
		}, "externalId index missing or stale"},
		{"tombstone not on the purge list", func(tx *kv.Tx, u kv.User) error {
			s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "x", CreatedAt: 1, UpdatedAt: 1, Deleted: true}
			return tx.PutSession(&s, 0)
		}, "tombstone not on the purge list"},
		{"deletion tombstone beside a live session", func(tx *kv.Tx, u kv.User) error {
			s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "x", CreatedAt: 1, UpdatedAt: 1}
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
			return tx.PutTombstone(u.ID, kv.Tombstone{ExternalID: "x", Reason: kv.ReasonDeleted, DeletedAt: 2})
		}, "a live session has its external id"},
		{"deletion tombstone of a user that does not exist", func(tx *kv.Tx, u kv.User) error {
			return tx.PutTombstone(kv.NewID(), kv.Tombstone{ExternalID: "x", Reason: kv.ReasonDeleted, DeletedAt: 2})
		}, "tombstones: key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := kv.Open(t.TempDir(), kv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Check(); err != nil {
				t.Fatalf("Check on an empty store: %v", err)
			}
			mustCommit(t, st, func(tx *kv.Tx) error {
				u, err := tx.CreateUser("u", 1)
				if err != nil {
					return err
				}
				return tc.setup(tx, u)
			})
			err = st.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestPassOn: the indexer moves a session from SearchQueue to ChunkQueue in
// one transaction; the entry keeps the time of the write it waits for, and
// the outbox is empty only when both queues are.
func TestPassOn(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		id := kv.NewID()
		mustCommit(t, st, func(tx *kv.Tx) error {
			s := kv.Session{ID: id, UserID: u.ID, ExternalID: "s", Source: "pi", CreatedAt: 1, UpdatedAt: 1}
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
			return tx.MarkDirty(u.ID, id)
		})
		state := func(q kv.Queue) (d []kv.Dirty, busy bool, n int) {
			_ = st.View(ctx, func(tx *kv.Tx) error {
				d, busy, n = tx.DirtySessions(q, 0), tx.HasDirty(), tx.OutboxLen()
				return nil
			})
			return d, busy, n
		}
		search, _, _ := state(kv.SearchQueue)
		if len(search) != 1 || search[0].Queue != kv.SearchQueue {
			t.Fatalf("search queue = %+v, want the written session", search)
		}
		mustCommit(t, st, func(tx *kv.Tx) error {
			if err := tx.ClearDirty(search[0]); err != nil {
				return err
			}
			return tx.PassOn(search[0])
		})
		if d, _, _ := state(kv.SearchQueue); len(d) != 0 {
			t.Errorf("search queue after ClearDirty = %+v, want empty", d)
		}
		chunks, busy, n := state(kv.ChunkQueue)
		if len(chunks) != 1 || chunks[0].SessionID != id || chunks[0].Queue != kv.ChunkQueue || !chunks[0].Since.Equal(search[0].Since) || !busy || n != 1 {
			t.Fatalf("chunk queue = %+v (busy %v, len %d), want the session waiting since %v", chunks, busy, n, search[0].Since)
		}
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.ClearDirty(chunks[0]) })
		if d, busy, n := state(kv.ChunkQueue); len(d) != 0 || busy || n != 0 {
			t.Errorf("after clearing the chunk queue: %+v, busy %v, len %d; want an empty outbox", d, busy, n)
		}
	})
}

// TestLiveLane: entries a live write marked come before older bulk ones
// and a step of them takes no bulk entry; an entry leaves the lane once the
// indexer read its live write, whatever bulk write came after, but not
// when a live write came after the read; the lane passes on to ChunkQueue.
func TestLiveLane(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		ids := make([]string, 4)
		mustCommit(t, st, func(tx *kv.Tx) error {
			for i := range ids {
				ids[i] = kv.NewID()
				s := kv.Session{ID: ids[i], UserID: u.ID, ExternalID: fmt.Sprint(i), Source: "pi", CreatedAt: 1, UpdatedAt: 1}
				if err := tx.PutSession(&s, 0); err != nil {
					return err
				}
			}
			return nil
		})
		// A bulk backlog of three sessions, then a live write to the fourth.
		for _, id := range ids[:3] {
			mustCommit(t, st, func(tx *kv.Tx) error { return tx.MarkDirty(u.ID, id) })
		}
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.MarkLive(u.ID, ids[3]) })
		queue := func(q kv.Queue, limit int) (got []string, live []bool, d []kv.Dirty) {
			_ = st.View(ctx, func(tx *kv.Tx) error { d = tx.DirtySessions(q, limit); return nil })
			for _, e := range d {
				got, live = append(got, e.SessionID), append(live, e.Live)
			}
			return got, live, d
		}
		if got, live, _ := queue(kv.SearchQueue, 2); !slices.Equal(got, ids[3:]) || !slices.Equal(live, []bool{true}) {
			t.Fatalf("DirtySessions(2) = %v (live %v), want only the live entry %v", got, live, ids[3:])
		}

		// The indexer reads the live entry; a bulk write to it follows: the
		// entry stays queued for that write, but off the lane.
		_, _, read := queue(kv.SearchQueue, 0)
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.MarkDirty(u.ID, ids[3]) })
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.ClearDirty(read[0]) })
		if got, live, _ := queue(kv.SearchQueue, 0); len(got) != 4 || slices.Contains(live, true) {
			t.Fatalf("after a bulk write to a live entry being indexed: %v (live %v), want all four as bulk", got, live)
		}

		// A bulk step reads the backlog; a live write to one of them follows:
		// that entry stays, on the lane.
		_, _, read = queue(kv.SearchQueue, 0)
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.MarkLive(u.ID, ids[1]) })
		mustCommit(t, st, func(tx *kv.Tx) error {
			for _, d := range read {
				if err := tx.ClearDirty(d); err != nil {
					return err
				}
				if err := tx.PassOn(d); err != nil {
					return err
				}
			}
			return nil
		})
		got, live, read := queue(kv.SearchQueue, 0)
		if !slices.Equal(got, ids[1:2]) || !slices.Equal(live, []bool{true}) {
			t.Fatalf("after a live write to a bulk entry being indexed: %v (live %v), want %v live", got, live, ids[1:2])
		}
		mustCommit(t, st, func(tx *kv.Tx) error {
			if err := tx.ClearDirty(read[0]); err != nil {
				return err
			}
			return tx.PassOn(read[0])
		})
		// On the chunk queue the live session comes first, alone.
		if got, live, _ := queue(kv.ChunkQueue, 0); !slices.Equal(got, ids[1:2]) || !slices.Equal(live, []bool{true}) {
			t.Errorf("chunk queue = %v (live %v), want %v live", got, live, ids[1:2])
		}
		var hasLive bool
		_ = st.View(ctx, func(tx *kv.Tx) error { hasLive = tx.HasLive(kv.ChunkQueue) && !tx.HasLive(kv.SearchQueue); return nil })
		if !hasLive {
			t.Error("HasLive: want the chunk queue's lane busy and the search queue's empty")
		}
		if err := st.Check(); err != nil {
			t.Error(err)
		}
	})
}

// TestCommitFirst: a CommitFirst call queued behind bulk Commits runs
// before them, in a transaction without them; all of them commit.
func TestCommitFirst(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		const bulk = 8
		// The calls reach the queue in goroutines; on a machine too busy for
		// them to be queued by the time the committer is released, try again.
		for attempt := 1; ; attempt++ {
			var mu sync.Mutex
			var order []string
			var txs []*kv.Tx
			record := func(name string) func(*kv.Tx) error {
				return func(tx *kv.Tx) error {
					mu.Lock()
					order, txs = append(order, name), append(txs, tx)
					mu.Unlock()
					return tx.SetMeta(fmt.Sprintf("a%d/%s", attempt, name), []byte(name))
				}
			}
			release, running := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, bulk+2)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- st.Commit(ctx, func(*kv.Tx) error {
					close(running)
					<-release
					return nil
				})
			}()
			<-running // the committer is busy: what follows queues
			for i := range bulk {
				wg.Add(1)
				go func() { defer wg.Done(); errs <- st.Commit(ctx, record(fmt.Sprint("bulk", i))) }()
			}
			time.Sleep(50 * time.Millisecond)
			wg.Add(1)
			go func() { defer wg.Done(); errs <- st.CommitFirst(ctx, record("first")) }()
			time.Sleep(50 * time.Millisecond)
			close(release)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			// In PostgreSQL a call runs again after a serialization failure.
			if groupCommits(st) && len(order) != bulk+1 {
				t.Fatalf("%d calls ran, want %d", len(order), bulk+1)
			}
			var stored int
			_ = st.View(ctx, func(tx *kv.Tx) error {
				for _, name := range slices.Compact(slices.Sorted(slices.Values(order))) {
					if string(tx.Meta(fmt.Sprintf("a%d/%s", attempt, name))) == name {
						stored++
					}
				}
				return nil
			})
			if stored != bulk+1 {
				t.Fatalf("%d writes stored, want %d", stored, bulk+1)
			}
			if !groupCommits(st) {
				return // each call is a transaction of its own: no queue to jump
			}
			if order[0] == "first" && !slices.Contains(txs[1:], txs[0]) {
				return
			}
			if attempt == 5 {
				t.Fatalf("order %v: want the CommitFirst call first, in a transaction of its own", order)
			}
		}
	})
}

// TestOldestDirty: bulk work's turn takes the entries waiting longest,
// live ones among them (flagged Live), and QueueLen counts the queue.
func TestOldestDirty(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		ids := make([]string, 4)
		for i := range ids {
			ids[i] = kv.NewID()
		}
		// A live write first, then three bulk writes, one transaction each.
		mustCommit(t, st, func(tx *kv.Tx) error { return tx.MarkLive(u.ID, ids[0]) })
		for _, id := range ids[1:] {
			mustCommit(t, st, func(tx *kv.Tx) error { return tx.MarkDirty(u.ID, id) })
		}
		var oldest, all []kv.Dirty
		var n int
		_ = st.View(ctx, func(tx *kv.Tx) error {
			oldest, all, n = tx.OldestDirty(kv.SearchQueue, 2), tx.OldestDirty(kv.SearchQueue, 0), tx.QueueLen(kv.SearchQueue)
			return nil
		})
		got := func(ds []kv.Dirty) (ids []string, live []bool) {
			for _, d := range ds {
				ids, live = append(ids, d.SessionID), append(live, d.Live)
			}
			return ids, live
		}
		if g, live := got(oldest); !slices.Equal(g, ids[:2]) || !slices.Equal(live, []bool{true, false}) {
			t.Errorf("OldestDirty(2) = %v (live %v), want %v (live true, false)", g, live, ids[:2])
		}
		if g, _ := got(all); !slices.Equal(g, ids) || n != 4 {
			t.Errorf("OldestDirty(0) = %v, QueueLen %d; want %v and 4", g, n, ids)
		}
	})
}
