package vectors

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// userEntries is how many users the store keeps an entry (and maybe a slab)
// for.
func (s *Embedded) userEntries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.users)
}

func freeTestVectors(sid string, n, dim int, seed float32) []Vector {
	vs := make([]Vector, n)
	for i := range vs {
		v := make([]float32, dim)
		v[i%dim] = 1
		v[(i+1)%dim] = seed
		vs[i] = Vector{SessionID: sid, Ordinal: i, TextHash: fmt.Sprint("h", i), Values: v}
	}
	return vs
}

const freeDim = 8

// openFreeTest opens a store of freeDim-dimensional vectors and returns it with
// a query vector.
func openFreeTest(t *testing.T) (*Embedded, []float32) {
	s, err := OpenEmbedded(filepath.Join(t.TempDir(), "v.db"), EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.SetMeta(context.Background(), "m", freeDim); err != nil {
		t.Fatal(err)
	}
	q := make([]float32, freeDim)
	q[0] = 1
	return s, q
}

// TestEmbeddedFreesDeletedUsers: when a user's vectors are all deleted (as
// the indexing pipeline does after DELETE /api/account/data), the user's
// slab and entry leave memory, other users' stay, and the user can store and
// find vectors again afterwards.
func TestEmbeddedFreesDeletedUsers(t *testing.T) {
	ctx := context.Background()
	s, q := openFreeTest(t)
	for _, user := range []string{"ann", "bob"} {
		if err := s.Upsert(ctx, user, map[string][]Vector{
			"s1": freeTestVectors("s1", 5, freeDim, 0.5), "s2": freeTestVectors("s2", 3, freeDim, 0.25)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Nearest(ctx, user, q, 3); err != nil { // loads the slab
			t.Fatal(err)
		}
	}
	// A user never queried has an entry but no slab.
	if err := s.Upsert(ctx, "cy", map[string][]Vector{"s1": freeTestVectors("s1", 2, freeDim, 0.5)}); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Users != 2 || st.Vectors != 16 || s.userEntries() != 3 {
		t.Fatalf("before: %+v with %d entries, want 2 slabs of 8 vectors and 3 entries", st, s.userEntries())
	}
	bobSlab := s.Stats().SlabBytes / 2

	// Deleting some of ann's sessions keeps her slab; deleting the last one
	// frees it.
	if err := s.Delete(ctx, "ann", []string{"s1"}); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Users != 2 || st.Vectors != 11 {
		t.Fatalf("after deleting one of ann's sessions: %+v", st)
	}
	if err := s.Delete(ctx, "ann", []string{"s2", "nosuchsession"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "cy", []string{"s1"}); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Users != 1 || st.Vectors != 8 || st.SlabBytes != bobSlab || s.userEntries() != 1 {
		t.Fatalf("after deleting ann's and cy's data: %+v with %d entries, want only bob's slab (%d bytes) and entry", st, s.userEntries(), bobSlab)
	}
	if hits, err := s.Nearest(ctx, "ann", q, 3); err != nil || len(hits) != 0 {
		t.Fatalf("ann's search after deletion: %v %v", hits, err)
	}
	if hits, err := s.Nearest(ctx, "bob", q, 10); err != nil || len(hits) != 8 {
		t.Fatalf("bob's search after ann's deletion: %d hits, %v; want all 8", len(hits), err)
	}
	if s.userEntries() != 1 {
		t.Fatalf("ann's search without vectors left an entry: %d entries", s.userEntries())
	}
	// Her new vectors are found.
	if err := s.Upsert(ctx, "ann", map[string][]Vector{"s3": freeTestVectors("s3", 2, freeDim, 0.5)}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Nearest(ctx, "ann", q, 10); err != nil || len(hits) != 2 || hits[0].SessionID != "s3" {
		t.Fatalf("ann's search after storing again: %v %v", hits, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddedDropRacesWrites: writes, deletions and searches of one user
// racing each other (the entry dropped and made again many times) leave
// memory equal to the file, and a search finds exactly what is stored.
func TestEmbeddedDropRacesWrites(t *testing.T) {
	ctx := context.Background()
	s, q := openFreeTest(t)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprint("s", w)
			for range 40 {
				if err := s.Upsert(ctx, "ann", map[string][]Vector{sid: freeTestVectors(sid, 3, freeDim, 0.5)}); err != nil {
					t.Error(err)
					return
				}
				if err := s.Delete(ctx, "ann", []string{sid}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 100 {
			if _, err := s.Nearest(ctx, "ann", q, 5); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if s.userEntries() != 0 {
		t.Errorf("%d entries left after every vector was deleted", s.userEntries())
	}
	if err := s.Upsert(ctx, "ann", map[string][]Vector{"s9": freeTestVectors("s9", 4, freeDim, 0.5)}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Nearest(ctx, "ann", q, 10); err != nil || len(hits) != 4 {
		t.Fatalf("after the race: %d hits, %v; want the 4 stored", len(hits), err)
	}
}
