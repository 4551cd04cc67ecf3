package index

import (
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// TestPairListsAreTheOwners checks that every pair's posting list holds
// its owner's documents only (ownerPrefix), for ids one of which starts
// another or looks like a prefix itself: a phrase's position check, which
// walks the lists, then reads no other user's postings, and another
// user's documents cannot change what it finds.
func TestPairListsAreTheOwners(t *testing.T) {
	users := []string{"u1", "u12", "1:u", "2:u1"}
	ix, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var sessions []Session
	for i, u := range users {
		for j := range 3 {
			s := conversation(u, "s"+string(rune('a'+j)), "flaky socket timeout",
				[2]string{"the flaky socket timeout again", "retry the socket timeout"},
				[2]string{"u1 flaky", strings.Repeat("socket ", i+1)})
			sessions = append(sessions, s)
		}
	}
	if err := ix.Put(t.Context(), sessions); err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = ix.snapshot(func(snap *scorch.IndexSnapshot) error {
		for _, s := range snap.Segments() {
			seg := s.Segment()
			owned := map[string]*roaring.Bitmap{}
			for _, u := range users {
				if owned[u], err = termDocs(seg, fieldUser, u); err != nil {
					return err
				}
			}
			d, err := seg.Dictionary(fieldPairs)
			if err != nil {
				return err
			}
			err = eachTerm(d, func(term string) error {
				var owner string
				for _, u := range users {
					if strings.HasPrefix(term, ownerPrefix(u)) {
						if owner != "" {
							t.Errorf("pair term %q starts with the prefixes of %q and %q", term, owner, u)
						}
						owner = u
					}
				}
				if owner == "" {
					t.Errorf("pair term %q starts with no user's prefix", term)
					return nil
				}
				docs, err := termDocs(seg, fieldPairs, term)
				if err != nil {
					return err
				}
				if others := roaring.AndNot(docs, owned[owner]); !others.IsEmpty() {
					t.Errorf("pair term %q of %q holds %d documents of other users", term, owner, others.GetCardinality())
				}
				checked++
				return nil
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
	if checked < 4*len(users) {
		t.Fatalf("checked %d pair terms; the sessions hold more", checked)
	}
	for _, u := range users {
		hits, err := ix.Search(t.Context(), Query{UserID: u, Text: `"flaky socket timeout"`, Kind: Sessions, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 3 {
			t.Errorf("user %q: %d hits for the phrase, want its 3 sessions", u, len(hits))
		}
	}
}

// TestPairPositionsKeptByOwner checks the cache of decoded pair positions
// (pairPositions): a phrase asked again is answered from the positions
// the first query decoded, with the same hits, and another user's query
// of the same phrase decodes its own pairs' positions, never the first
// user's (each entry is under its owner).
func TestPairPositionsKeptByOwner(t *testing.T) {
	ix, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var sessions []Session
	for _, u := range []string{"alice", "bob"} {
		sessions = append(sessions,
			conversation(u, "s1", "sockets", [2]string{"the flaky socket timeout again", "ok"}),
			conversation(u, "s2", "sockets", [2]string{"flaky socket and a timeout", "socket timeout flaky"}),
			conversation(u, "s3", "sockets", [2]string{"a flaky socket timeout", "then the flaky socket timeout"}))
	}
	if err := ix.Put(t.Context(), sessions); err != nil {
		t.Fatal(err)
	}
	c := &ix.sessionLengths.blocks
	entries := func() map[string]int {
		c.mu.Lock()
		defer c.mu.Unlock()
		out := map[string]int{}
		for k := range c.entries {
			if k.kind == keyPairs {
				if !strings.HasPrefix(k.name, ownerPrefix(k.user)) {
					t.Errorf("pair positions %q kept under user %q", k.name, k.user)
				}
				out[k.user]++
			}
		}
		return out
	}
	built := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.built[keyPairs]
	}
	search := func(user string) []string {
		t.Helper()
		hits, err := ix.Search(t.Context(), Query{UserID: user, Text: `"flaky socket timeout"`, Kind: Sessions, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.SessionID)
		}
		slices.Sort(ids)
		return ids
	}
	want := []string{"s1", "s3"}
	if got := search("alice"); !slices.Equal(got, want) {
		t.Fatalf("alice: %v, want %v", got, want)
	}
	first := built()
	if first == 0 || entries()["alice"] == 0 || entries()["bob"] != 0 {
		t.Fatalf("after alice's query: %d built, entries %v; want alice's only", first, entries())
	}
	if got := search("alice"); !slices.Equal(got, want) || built() != first {
		t.Fatalf("alice again: %v with %d built, want %v with %d (kept)", got, built(), want, first)
	}
	if got := search("bob"); !slices.Equal(got, want) || entries()["bob"] == 0 {
		t.Fatalf("bob: %v, entries %v; want %v from bob's own pairs", got, entries(), want)
	}
}
