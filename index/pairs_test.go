package index

import (
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// TestPairListsAreTheOwners checks that every pair's posting list holds
// its owner's documents only (pairPrefix), for ids one of which starts
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
					if strings.HasPrefix(term, pairPrefix(u)) {
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
