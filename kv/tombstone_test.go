package kv_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// tombstones lists a user's tombstones in key order.
func tombstones(t *testing.T, st *kv.Store, userID string) []kv.Tombstone {
	t.Helper()
	var out []kv.Tombstone
	err := st.View(ctx, func(tx *kv.Tx) error {
		return tx.Tombstones(userID, func(ts kv.Tombstone) error { out = append(out, ts); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Tombstones are per user: the same external id of two users is two
// tombstones, and nothing of one user's is visible through the other's id.
func TestTombstonesPerUser(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		users := createUsers(t, st, 3)
		ann, bob, cyd := users[0].ID, users[1].ID, users[2].ID
		mustCommit(t, st, func(tx *kv.Tx) error {
			for _, ts := range []struct {
				user string
				t    kv.Tombstone
			}{
				{ann, kv.Tombstone{ExternalID: "shared", DeletedAt: 10, Reason: kv.ReasonDeleted, Source: "opencode"}},
				{ann, kv.Tombstone{ExternalID: "a-only", DeletedAt: 11, Reason: kv.ReasonExcluded, Source: "codex", Pattern: "/secret/**"}},
				{bob, kv.Tombstone{ExternalID: "shared", DeletedAt: 20, Reason: kv.ReasonDeleted, Source: "claude-code"}},
			} {
				if err := tx.PutTombstone(ts.user, ts.t); err != nil {
					return err
				}
			}
			return nil
		})

		want := map[string][]kv.Tombstone{
			ann: {{ExternalID: "a-only", DeletedAt: 11, Reason: kv.ReasonExcluded, Source: "codex", Pattern: "/secret/**"},
				{ExternalID: "shared", DeletedAt: 10, Reason: kv.ReasonDeleted, Source: "opencode"}},
			bob: {{ExternalID: "shared", DeletedAt: 20, Reason: kv.ReasonDeleted, Source: "claude-code"}},
			cyd: nil,
		}
		for user, w := range want {
			if got := tombstones(t, st, user); !slices.Equal(got, w) {
				t.Errorf("user %s: tombstones %+v, want %+v", user, got, w)
			}
		}
		st.View(ctx, func(tx *kv.Tx) error {
			for _, tc := range []struct {
				user, ext string
				found     bool
				source    string
			}{
				{ann, "shared", true, "opencode"},
				{bob, "shared", true, "claude-code"},
				{bob, "a-only", false, ""},
				{cyd, "shared", false, ""},
				{ann, "share", false, ""}, // a prefix is not the id
				{"", "shared", false, ""},
			} {
				got, err := tx.Tombstone(tc.user, tc.ext)
				if (err == nil) != tc.found || tc.found && got.Source != tc.source || !tc.found && !errors.Is(err, kv.ErrNotFound) {
					t.Errorf("Tombstone(%q, %q) = %+v, %v; want found %v, source %q", tc.user, tc.ext, got, err, tc.found, tc.source)
				}
			}
			if ids := tx.TombstoneIDs(ann); !slices.Equal(ids, []string{"a-only", "shared"}) {
				t.Errorf("ann's TombstoneIDs %q", ids)
			}
			if ids := tx.TombstoneIDs(cyd); ids == nil || len(ids) != 0 {
				t.Errorf("cyd's TombstoneIDs %#v, want an empty list", ids)
			}
			return nil
		})

		// Removing bob's leaves ann's; removing a missing one reports false.
		mustCommit(t, st, func(tx *kv.Tx) error {
			for _, tc := range []struct {
				user, ext string
				want      bool
			}{{bob, "shared", true}, {bob, "shared", false}, {cyd, "a-only", false}, {bob, "a-only", false}} {
				if got, err := tx.RemoveTombstone(tc.user, tc.ext); err != nil || got != tc.want {
					t.Errorf("RemoveTombstone(%s, %q) = %v, %v; want %v", tc.user, tc.ext, got, err, tc.want)
				}
			}
			return nil
		})
		if got := tombstones(t, st, bob); len(got) != 0 {
			t.Errorf("bob's tombstones after removal: %+v", got)
		}
		if got := tombstones(t, st, ann); len(got) != 2 {
			t.Errorf("ann's tombstones after bob's removal: %+v", got)
		}
	})
}

func TestPutTombstoneRejectsMalformed(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		u := createUsers(t, st, 1)[0]
		for _, tc := range []struct {
			name string
			user string
			t    kv.Tombstone
		}{
			{"unknown reason", u.ID, kv.Tombstone{ExternalID: "x", Reason: "gone"}},
			{"no reason", u.ID, kv.Tombstone{ExternalID: "x"}},
			{"empty external id", u.ID, kv.Tombstone{Reason: kv.ReasonDeleted}},
			{"malformed user id", "short", kv.Tombstone{ExternalID: "x", Reason: kv.ReasonDeleted}},
		} {
			err := st.Commit(ctx, func(tx *kv.Tx) error { return tx.PutTombstone(tc.user, tc.t) })
			if err == nil {
				t.Errorf("%s: PutTombstone accepted %+v", tc.name, tc.t)
			}
		}
		if got := tombstones(t, st, u.ID); len(got) != 0 {
			t.Errorf("tombstones stored: %+v", got)
		}
	})
}

// A tombstone holds when and why, never content: these are all its fields.
func TestTombstoneKeepsNoContent(t *testing.T) {
	want := []string{"ExternalID", "DeletedAt", "Reason", "Source", "Pattern"}
	var got []string
	typ := reflect.TypeFor[kv.Tombstone]()
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Tombstone fields %q, want exactly %q: a tombstone must not keep a title, project or text", got, want)
	}
}

// SessionsAfter resumes after an id, in id order, within one user.
func TestSessionsAfter(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		users := createUsers(t, st, 2)
		var ids []string
		mustCommit(t, st, func(tx *kv.Tx) error {
			for i := range 5 {
				for _, u := range users {
					s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: string(rune('a' + i)), CreatedAt: 1, UpdatedAt: int64(i + 1)}
					if err := tx.PutSession(&s, 0); err != nil {
						return err
					}
					if u.ID == users[0].ID {
						ids = append(ids, s.ID)
					}
				}
			}
			return nil
		})
		slices.Sort(ids)
		after := func(from string) []string {
			var out []string
			st.View(ctx, func(tx *kv.Tx) error {
				return tx.SessionsAfter(users[0].ID, from, func(s kv.Session) error {
					if s.UserID != users[0].ID {
						t.Errorf("another user's session %s", s.ID)
					}
					out = append(out, s.ID)
					return nil
				})
			})
			return out
		}
		for _, tc := range []struct {
			from string
			want []string
		}{
			{"", ids},
			{ids[0], ids[1:]},
			{ids[2], ids[3:]},
			{ids[4], nil},
			{ids[1][:8], ids[1:]}, // not an id: from the first one after it
		} {
			if got := after(tc.from); !slices.Equal(got, tc.want) {
				t.Errorf("SessionsAfter(%q) = %q, want %q", tc.from, got, tc.want)
			}
		}
	})
}

// RecentTombstones lists newest first from any position, follows a
// replaced tombstone to its new time, and forgets a removed one.
func TestRecentTombstones(t *testing.T) {
	kvtest.Each(t, func(t *testing.T, open func(testing.TB) *kv.Store) {
		st := open(t)
		users := createUsers(t, st, 2)
		ann, bob := users[0].ID, users[1].ID
		put := func(user, ext string, at int64) {
			t.Helper()
			mustCommit(t, st, func(tx *kv.Tx) error {
				return tx.PutTombstone(user, kv.Tombstone{ExternalID: ext, DeletedAt: at, Reason: kv.ReasonDeleted})
			})
		}
		for ext, at := range map[string]int64{"a": 5, "b": 7, "c": 7, "d": 1, "e": 9} {
			put(ann, ext, at)
			put(bob, ext+"-bob", at)
		}
		recent := func(from kv.TombstonePosition, max int) []string {
			var out []string
			st.View(ctx, func(tx *kv.Tx) error {
				return tx.RecentTombstones(ann, from, func(ts kv.Tombstone) bool {
					out = append(out, ts.ExternalID)
					return len(out) < max
				})
			})
			return out
		}
		for _, tc := range []struct {
			from kv.TombstonePosition
			max  int
			want []string
		}{
			{kv.TombstonePosition{}, 100, []string{"e", "c", "b", "a", "d"}},
			{kv.TombstonePosition{}, 2, []string{"e", "c"}},
			{kv.TombstonePosition{DeletedAt: 7, ExternalID: "c"}, 100, []string{"b", "a", "d"}},
			{kv.TombstonePosition{DeletedAt: 7, ExternalID: "b"}, 100, []string{"a", "d"}},
			{kv.TombstonePosition{DeletedAt: 6, ExternalID: "zzz"}, 100, []string{"a", "d"}}, // not a tombstone: from where it would be
			{kv.TombstonePosition{DeletedAt: 1, ExternalID: "d"}, 100, nil},
		} {
			if got := recent(tc.from, tc.max); !slices.Equal(got, tc.want) {
				t.Errorf("RecentTombstones(%+v) = %q, want %q", tc.from, got, tc.want)
			}
		}
		put(ann, "d", 10) // deleted again later: it moves to the front
		mustCommit(t, st, func(tx *kv.Tx) error { _, err := tx.RemoveTombstone(ann, "c"); return err })
		if got := recent(kv.TombstonePosition{}, 100); !slices.Equal(got, []string{"d", "e", "b", "a"}) {
			t.Errorf("after replacing d and removing c: %q", got)
		}
	})
}
