// Package kvtest opens real kv stores for tests: a bbolt file in the test's
// temporary directory, checked for invariant violations when the test ends.
package kvtest

import (
	"testing"

	"github.com/hindsight-dev/hindsight/kv"
)

// Open opens a fresh store in t.TempDir(). At cleanup it runs store.Check()
// and fails the test if any invariant is violated (a key without an owner, a
// stale index entry, an outbox entry naming no session, a messageCount that
// differs from the stored messages), then closes the store.
//
// Cleanups run last-registered first, so anything the test registers after
// Open (an httptest.Server, say) is shut down before the check runs.
func Open(t testing.TB) *kv.Store {
	t.Helper()
	st, err := kv.Open(t.TempDir(), kv.Options{})
	if err != nil {
		t.Fatalf("kvtest: open store: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Check(); err != nil {
			t.Errorf("kvtest: store invariants violated at cleanup:\n%v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("kvtest: close store: %v", err)
		}
	})
	return st
}
