package index

import (
	"testing"

	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// TestWarmerBuildsNewSegments checks that the warmer builds, for a segment
// a later Put wrote, the blocks of the words users asked for, so that their
// next query builds nothing, and only those: a word nobody asked for is
// built by its first query, and the warmer's builds keep the recency of
// the blocks they copy.
func TestWarmerBuildsNewSegments(t *testing.T) {
	ix, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ix.warm.stop() // the test warms by hand, every segment (the corpus is small)
	ctx := t.Context()
	put := func(ids ...string) {
		t.Helper()
		var ss []Session
		for _, id := range ids {
			for _, u := range []string{"alice", "bob"} {
				ss = append(ss, conversation(u, id, "flaky socket",
					[2]string{"the flaky socket timeout", "retry the websocket handshake"}))
			}
		}
		if err := ix.Put(ctx, ss); err != nil {
			t.Fatal(err)
		}
	}
	search := func(user, q string) int {
		t.Helper()
		hits, err := ix.Search(ctx, Query{UserID: user, Text: q, Kind: Sessions, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	c := &ix.sessionLengths.blocks
	built := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.built[keyTerm]
	}
	seen := map[segment.Segment]bool{}
	put("s1", "s2")
	if err := ix.warmNew(ctx, seen, 1); err != nil {
		t.Fatal(err)
	}
	if n := search("alice", "flaky"); n != 2 {
		t.Fatalf("alice: %d hits, want 2", n)
	}
	before := c.recentTerms(warmTerms)
	if len(before) != 1 || before[0].user != "alice" {
		t.Fatalf("recent blocks %+v, want alice's flaky", before)
	}

	put("s3", "s4")
	if err := ix.warmNew(ctx, seen, 1); err != nil {
		t.Fatal(err)
	}
	b := built()
	if n := search("alice", "flaky"); n != 4 {
		t.Fatalf("alice: %d hits after the second put, want 4", n)
	}
	if got := built() - b; got != 0 {
		t.Errorf("alice's query of a warmed word built %d blocks, want 0", got)
	}
	aliceUsed := c.recentTerms(warmTerms)[0].used
	b = built()
	if n := search("bob", "flaky"); n != 4 {
		t.Fatalf("bob: %d hits, want 4", n)
	}
	if got := built() - b; got == 0 {
		t.Error("bob's first query of flaky built no blocks: the warmer built words nobody asked for")
	}

	// The warmer's builds do not refresh alice's recency: with bob's
	// query since, alice's blocks are the older ones.
	put("s5")
	if err := ix.warmNew(ctx, seen, 1); err != nil {
		t.Fatal(err)
	}
	after := c.recentTerms(warmTerms)
	if len(after) != 2 || after[0].user != "bob" || after[1].user != "alice" || after[1].used != aliceUsed {
		t.Errorf("recent blocks after warming %+v, want bob's, then alice's at %d", after, aliceUsed)
	}
}
