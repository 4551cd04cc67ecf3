package kv_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// clock is a settable clock for leases: tests move it instead of sleeping.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func (c *clock) set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *clock) opts(node string) kv.PostgresOptions {
	return kv.PostgresOptions{Node: node, Lease: 30 * time.Second, Now: c.now}
}

func openNode(t *testing.T, dsn string, opts kv.PostgresOptions) *kv.Store {
	t.Helper()
	st, err := kv.OpenPostgres(ctx, dsn, opts)
	if err != nil {
		t.Fatalf("open node %s: %v", opts.Node, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// markN puts n sessions (ids only: the claims read nothing else) on the
// search queue and returns their outbox keys.
func markN(t *testing.T, st *kv.Store, n int) []string {
	t.Helper()
	uid := kv.NewID()
	keys := make([]string, n)
	mustCommit(t, st, func(tx *kv.Tx) error {
		for i := range keys {
			sid := kv.NewID()
			keys[i] = uid + sid
			if err := tx.MarkDirty(uid, sid); err != nil {
				return err
			}
		}
		return nil
	})
	return keys
}

func readDirty(t *testing.T, st *kv.Store, limit int) []kv.Dirty {
	t.Helper()
	var d []kv.Dirty
	if err := st.View(ctx, func(tx *kv.Tx) error { d = tx.DirtySessions(kv.SearchQueue, limit); return nil }); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestClaimsAcrossNodes: two nodes on one database drain a shared outbox
// of N entries at once, as their indexers do (read a step, claim it, clear
// what they claimed); every entry is claimed by exactly one node, and none
// is left queued or claimed.
func TestClaimsAcrossNodes(t *testing.T) {
	dsn := pgtest.Database(t)
	c := newClock()
	nodes := []*kv.Store{openNode(t, dsn, c.opts("node-a")), openNode(t, dsn, c.opts("node-b"))}
	const n = 300
	keys := markN(t, nodes[0], n)

	claimed := make([][]string, len(nodes)) // by node: the keys it claimed
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for i, st := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var dirty []kv.Dirty
				if err := st.View(ctx, func(tx *kv.Tx) error { dirty = tx.DirtySessions(kv.SearchQueue, 16); return nil }); err != nil {
					errs <- err
					return
				}
				if len(dirty) == 0 {
					return
				}
				kept, err := st.Claim(ctx, dirty)
				if err != nil {
					errs <- err
					return
				}
				for _, d := range kept {
					claimed[i] = append(claimed[i], d.UserID+d.SessionID)
				}
				if err := st.CommitFirst(ctx, func(tx *kv.Tx) error {
					for _, d := range kept {
						if err := tx.ClearDirty(d); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	times := map[string]int{}
	for _, ks := range claimed {
		for _, k := range ks {
			times[k]++
		}
	}
	for _, k := range keys {
		if times[k] != 1 {
			t.Errorf("entry %s claimed %d times, want exactly once", k, times[k])
		}
	}
	if len(times) != n {
		t.Errorf("%d entries claimed, want the %d queued", len(times), n)
	}
	t.Logf("claimed: node a %d, node b %d", len(claimed[0]), len(claimed[1]))
	if d := readDirty(t, nodes[1], 0); len(d) != 0 {
		t.Errorf("outbox after draining: %d entries, want none", len(d))
	}
	if left := query[int64](t, dsn, `SELECT count(*) FROM kv_entries WHERE bucket = 'outbox.claims'`); left != 0 {
		t.Errorf("%d claims left after every entry was cleared, want none", left)
	}
}

// TestClaimsConflict: two nodes that read the same entries claim them at
// the same moment; the database lets one claim each entry (the other's
// transaction conflicts, runs again and sees the claims), never both.
func TestClaimsConflict(t *testing.T) {
	dsn := pgtest.Database(t)
	c := newClock()
	nodes := []*kv.Store{openNode(t, dsn, c.opts("node-a")), openNode(t, dsn, c.opts("node-b"))}
	for round := range 10 {
		keys := markN(t, nodes[0], 20)
		read := readDirty(t, nodes[0], 0) // both nodes read the same step
		if len(read) != 20 {
			t.Fatalf("round %d: read %d entries, want 20", round, len(read))
		}
		kept := make([][]kv.Dirty, 2)
		errs := make([]error, 2)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, st := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				kept[i], errs[i] = st.Claim(ctx, read)
			}()
		}
		close(start)
		wg.Wait()
		times := map[string]int{}
		for i := range nodes {
			if errs[i] != nil {
				t.Fatalf("round %d: node %d: %v", round, i, errs[i])
			}
			for _, d := range kept[i] {
				times[d.UserID+d.SessionID]++
			}
		}
		for _, k := range keys {
			if times[k] != 1 {
				t.Fatalf("round %d: entry claimed by %d nodes, want exactly one (node a %d, node b %d claimed)", round, times[k], len(kept[0]), len(kept[1]))
			}
		}
		for i, st := range nodes { // done: clear, as the indexer does
			mustCommit(t, st, func(tx *kv.Tx) error {
				for _, d := range kept[i] {
					if err := tx.ClearDirty(d); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
}

// TestClaimLeaseExpires: a node's claims hide its entries from another
// node until their lease runs out (no renewal: the node died); then the
// other node claims them, and the first, should it come back, finds them
// lost when it renews.
func TestClaimLeaseExpires(t *testing.T) {
	dsn := pgtest.Database(t)
	ca, cb := newClock(), newClock()
	a, b := openNode(t, dsn, ca.opts("node-a")), openNode(t, dsn, cb.opts("node-b"))
	markN(t, a, 5)

	got, err := a.Claim(ctx, readDirty(t, a, 0))
	if err != nil || len(got) != 5 {
		t.Fatalf("node a claimed %d of 5 (%v)", len(got), err)
	}
	if d := readDirty(t, b, 0); len(d) != 0 {
		t.Fatalf("node b reads %d entries node a holds, want none", len(d))
	}
	if kept, err := b.Claim(ctx, got); err != nil || len(kept) != 0 {
		t.Fatalf("node b claimed %d entries node a holds (%v), want none", len(kept), err)
	}
	// Node a renews once (its work runs long), then dies. Within the
	// renewed lease the entries stay node a's...
	ca.advance(20 * time.Second)
	if lost, err := a.RenewClaims(ctx, got); err != nil || lost != 0 {
		t.Fatalf("renewing: lost %d (%v), want 0", lost, err)
	}
	cb.set(ca.now().Add(29 * time.Second))
	if d := readDirty(t, b, 0); len(d) != 0 {
		t.Fatalf("within the renewed lease node b reads %d entries, want none", len(d))
	}
	// ...past it, node b takes them.
	cb.advance(2 * time.Second)
	d := readDirty(t, b, 0)
	if len(d) != 5 {
		t.Fatalf("after the lease node b reads %d entries, want 5", len(d))
	}
	kept, err := b.Claim(ctx, d)
	if err != nil || len(kept) != 5 {
		t.Fatalf("after the lease node b claimed %d of 5 (%v)", len(kept), err)
	}
	if lost, err := a.RenewClaims(ctx, got); err != nil || lost != 5 {
		t.Errorf("node a renewing after node b took over: lost %d (%v), want 5", lost, err)
	}
	if d := readDirty(t, a, 0); len(d) != 0 {
		t.Errorf("node a reads %d entries node b now holds, want none", len(d))
	}
}

// TestClaimVersionChecked: clearing a claimed entry stays version-checked
// (a write during indexing keeps the session queued) and drops the claim,
// so another node takes the newer write; a claim of an entry marked again
// since it was read takes nothing (the next read has the newer write).
func TestClaimVersionChecked(t *testing.T) {
	dsn := pgtest.Database(t)
	c := newClock()
	a, b := openNode(t, dsn, c.opts("node-a")), openNode(t, dsn, c.opts("node-b"))
	markN(t, a, 1)
	read := readDirty(t, a, 0)
	kept, err := a.Claim(ctx, read)
	if err != nil || len(kept) != 1 {
		t.Fatalf("claimed %d of 1 (%v)", len(kept), err)
	}
	d := kept[0]
	mustCommit(t, b, func(tx *kv.Tx) error { return tx.MarkDirty(d.UserID, d.SessionID) }) // a write while node a indexes
	mustCommit(t, a, func(tx *kv.Tx) error { return tx.ClearDirty(d) })
	again := readDirty(t, b, 0)
	if len(again) != 1 || again[0].Version <= d.Version {
		t.Fatalf("after clearing a stale version node b reads %+v, want the newer write", again)
	}
	if kept, err := a.Claim(ctx, read); err != nil || len(kept) != 0 {
		t.Errorf("claiming an entry marked again since it was read took %d (%v), want none", len(kept), err)
	}
	if kept, err := b.Claim(ctx, again); err != nil || len(kept) != 1 {
		t.Fatalf("node b claimed %d of the newer write (%v), want it", len(kept), err)
	}
	mustCommit(t, b, func(tx *kv.Tx) error { return tx.ClearDirty(again[0]) })
	if d := readDirty(t, a, 0); len(d) != 0 {
		t.Errorf("outbox after node b cleared the newer write: %+v, want empty", d)
	}
	if left := query[int64](t, dsn, `SELECT count(*) FROM kv_entries WHERE bucket = 'outbox.claims'`); left != 0 {
		t.Errorf("%d claims left, want none", left)
	}
}

// TestClaimsInBolt: a bbolt file has one process: Claim hands back the
// entries it is given, writes nothing, and the store has no node or lease.
func TestClaimsInBolt(t *testing.T) {
	st := kvtest.OpenBolt(t)
	markN(t, st, 3)
	d := readDirty(t, st, 0)
	kept, err := st.Claim(ctx, d)
	if err != nil || len(kept) != 3 || &kept[0] != &d[0] {
		t.Fatalf("Claim in bbolt = %d entries (%v), want the 3 given, the same slice", len(kept), err)
	}
	if st.Node() != "" || st.ClaimLease() != 0 {
		t.Errorf("bbolt store: node %q, lease %v; want none", st.Node(), st.ClaimLease())
	}
	if again := readDirty(t, st, 0); len(again) != 3 {
		t.Errorf("after Claim DirtySessions reads %d, want 3 (claims hide nothing in bbolt)", len(again))
	}
	if lost, err := st.RenewClaims(ctx, d); err != nil || lost != 0 {
		t.Errorf("RenewClaims in bbolt: lost %d (%v)", lost, err)
	}
	mustCommit(t, st, func(tx *kv.Tx) error {
		for _, x := range d {
			if err := tx.ClearDirty(x); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestClaimsListed: Claims lists each node's claims with its lease's end,
// and Waiting follows the entry until the node that claimed it clears it;
// a bbolt file has neither claims nor a claims bucket.
func TestClaimsListed(t *testing.T) {
	dsn := pgtest.Database(t)
	c := newClock()
	a, b := openNode(t, dsn, c.opts("node-a")), openNode(t, dsn, c.opts("node-b"))
	markN(t, a, 3)
	dirty := readDirty(t, a, 0)
	mine, err := a.Claim(ctx, dirty[:2])
	if err != nil || len(mine) != 2 {
		t.Fatalf("node-a claims 2: %d, %v", len(mine), err)
	}
	var got []kv.Claimed
	var waiting int
	view := func() {
		t.Helper()
		if err := b.View(ctx, func(tx *kv.Tx) error {
			got, waiting = tx.Claims(), 0
			for _, d := range dirty {
				if tx.Waiting(kv.SearchQueue, d.UserID, d.SessionID) {
					waiting++
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	view()
	if len(got) != 2 || waiting != 3 {
		t.Fatalf("claims %+v, %d waiting: want node-a's 2, all 3 waiting", got, waiting)
	}
	for i, cl := range got {
		if cl.Node != "node-a" || cl.Queue != kv.SearchQueue || !cl.Expiry.Equal(c.now().Add(30*time.Second)) ||
			!slicesContain(dirty[:2], cl.UserID, cl.SessionID) {
			t.Errorf("claim %d: %+v", i, cl)
		}
	}
	mustCommit(t, a, func(tx *kv.Tx) error { return tx.ClearDirty(mine[0]) })
	view()
	if len(got) != 1 || waiting != 2 {
		t.Errorf("after node-a cleared one: claims %+v, %d waiting; want 1 claim, 2 waiting", got, waiting)
	}

	st := kvtest.OpenBolt(t)
	if err := st.View(ctx, func(tx *kv.Tx) error {
		if cl := tx.Claims(); cl != nil {
			t.Errorf("bbolt file: claims %+v", cl)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func slicesContain(ds []kv.Dirty, uid, sid string) bool {
	for _, d := range ds {
		if d.UserID == uid && d.SessionID == sid {
			return true
		}
	}
	return false
}

// TestKeepDirty: a step that did part of an entry's work (KeepDirty) leaves
// the entry queued as it was, the same version, and drops its claim, so
// another node may take the rest at once, not after the lease; in a bbolt
// file it leaves the entry as it was.
func TestKeepDirty(t *testing.T) {
	keep := func(t *testing.T, st *kv.Store, d []kv.Dirty) {
		t.Helper()
		mustCommit(t, st, func(tx *kv.Tx) error {
			for _, x := range d {
				if err := tx.KeepDirty(x); err != nil {
					return err
				}
			}
			return nil
		})
	}
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.Database(t)
		c := newClock()
		a, b := openNode(t, dsn, c.opts("node-a")), openNode(t, dsn, c.opts("node-b"))
		markN(t, a, 2)
		dirty := readDirty(t, a, 0)
		kept, err := a.Claim(ctx, dirty)
		if err != nil || len(kept) != 2 {
			t.Fatalf("node a claimed %d of 2 (%v)", len(kept), err)
		}
		if got := readDirty(t, b, 0); len(got) != 0 {
			t.Fatalf("node b reads %d entries node a holds, want none", len(got))
		}
		keep(t, a, kept[:1])
		got := readDirty(t, b, 0)
		if len(got) != 1 || got[0].SessionID != kept[0].SessionID || got[0].Version != kept[0].Version {
			t.Fatalf("after node a kept one entry, node b reads %+v, want that entry as it was (%+v)", got, kept[0])
		}
		if taken, err := b.Claim(ctx, got); err != nil || len(taken) != 1 {
			t.Fatalf("node b claimed %d of the kept entry (%v), want it, within the lease", len(taken), err)
		}
	})
	t.Run("bbolt", func(t *testing.T) {
		st := kvtest.OpenBolt(t)
		markN(t, st, 2)
		d := readDirty(t, st, 0)
		keep(t, st, d)
		same := func(a, b kv.Dirty) bool {
			return a.SessionID == b.SessionID && a.Version == b.Version && a.Since.Equal(b.Since) && a.Live == b.Live
		}
		if got := readDirty(t, st, 0); len(got) != 2 || !same(got[0], d[0]) || !same(got[1], d[1]) {
			t.Errorf("after KeepDirty the outbox reads %+v, want %+v", got, d)
		}
		mustCommit(t, st, func(tx *kv.Tx) error {
			for _, x := range d {
				if err := tx.ClearDirty(x); err != nil {
					return err
				}
			}
			return nil
		})
	})
}
