// Package kvtest opens real kv stores for tests: a bbolt file in the test's
// temporary directory, or a fresh database on a PostgreSQL server the test
// package shares (internal/pgtest), checked for invariant violations when
// the test ends.
//
// The kv package's behaviour is one contract with two stores: its tests run
// against both through [Each].
package kvtest

import (
	"context"
	"os"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// Backend names a kind of store and opens a fresh one.
type Backend struct {
	Name string
	// Open opens a fresh store, checked and closed at cleanup.
	Open func(t testing.TB) *kv.Store
	// Place makes an empty place for a store (a directory, a database)
	// and returns its name; OpenAt opens the store kept there, again after
	// a close or a crash, and in another process too: a test that kills a
	// process holding a store reopens it with these. OpenAt's store is not
	// checked or closed at cleanup: the test decides.
	Place  func(t testing.TB) string
	OpenAt func(ctx context.Context, place string) (*kv.Store, error)
}

// Backends are the stores the records can be kept in: a bbolt file, and
// PostgreSQL (skipped, loudly, without it; see pgtest).
func Backends() []Backend {
	return []Backend{
		{Name: "bbolt", Open: OpenBolt,
			Place: func(t testing.TB) string { return t.TempDir() },
			OpenAt: func(_ context.Context, dir string) (*kv.Store, error) {
				return kv.Open(dir, kv.Options{})
			}},
		{Name: "postgres", Open: OpenPostgres,
			Place: pgtest.Database,
			OpenAt: func(ctx context.Context, dsn string) (*kv.Store, error) {
				return kv.OpenPostgres(ctx, dsn, kv.PostgresOptions{})
			}},
	}
}

// EachBackend runs fn as a subtest for each backend.
func EachBackend(t *testing.T, fn func(t *testing.T, b Backend)) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// Checked registers st's invariant check and close at t's cleanup, as
// Open does for its stores.
func Checked(t testing.TB, st *kv.Store) *kv.Store {
	cleanup(t, st)
	return st
}

// Each runs fn as a subtest for each backend, with the opener of its stores.
func Each(t *testing.T, fn func(t *testing.T, open func(testing.TB) *kv.Store)) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.Open) })
	}
}

// OpenPostgres opens a store in a fresh database of the test package's
// PostgreSQL (pgtest.Database: the package's TestMain must call
// pgtest.Main), checked and closed at cleanup like Open's.
func OpenPostgres(t testing.TB) *kv.Store {
	t.Helper()
	st, err := kv.OpenPostgres(context.Background(), pgtest.Database(t), kv.PostgresOptions{})
	if err != nil {
		t.Fatalf("kvtest: open store in PostgreSQL: %v", err)
	}
	cleanup(t, st)
	return st
}

// EnvRecords: "postgres" makes Open open its stores in PostgreSQL
// (OpenPostgres), so a package's tests run against that store; the
// package's TestMain must then call pgtest.Main. "bbolt" or nothing: a
// bbolt file; anything else fails the test.
const EnvRecords = "HINDSIGHT_TEST_RECORDS"

// Open opens a fresh store in t.TempDir() (in PostgreSQL when
// HINDSIGHT_TEST_RECORDS=postgres). At cleanup it runs store.Check()
// and fails the test if any invariant is violated (a key without an owner, a
// stale index entry, an outbox entry naming no session, a messageCount that
// differs from the stored messages), then closes the store.
//
// Cleanups run last-registered first, so anything the test registers after
// Open (an httptest.Server, say) is shut down before the check runs.
func Open(t testing.TB) *kv.Store {
	t.Helper()
	return selected(t).Open(t)
}

// OpenUnchecked opens a fresh store where Open would, for a test that
// breaks it (closes it under a running server, say): nothing is checked
// at cleanup, and the store is closed there if the test has not.
func OpenUnchecked(t testing.TB) *kv.Store {
	t.Helper()
	b := selected(t)
	st, err := b.OpenAt(context.Background(), b.Place(t))
	if err != nil {
		t.Fatalf("kvtest: open store (%s): %v", b.Name, err)
	}
	t.Cleanup(func() { st.Close() }) // kv.ErrClosed when the test closed it
	return st
}

// selected is the backend HINDSIGHT_TEST_RECORDS names: "postgres", or
// "bbolt" (also when unset). Any other value fails t: a misspelt name
// must not pass for a run on PostgreSQL.
func selected(t testing.TB) Backend {
	t.Helper()
	name := os.Getenv(EnvRecords)
	if name == "" {
		name = "bbolt"
	}
	for _, b := range Backends() {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("kvtest: %s=%q: want postgres or bbolt", EnvRecords, name)
	return Backend{}
}

// OpenBolt opens a fresh bbolt store in t.TempDir(), checked and closed at
// cleanup like Open's.
func OpenBolt(t testing.TB) *kv.Store {
	t.Helper()
	st, err := kv.Open(t.TempDir(), kv.Options{})
	if err != nil {
		t.Fatalf("kvtest: open store: %v", err)
	}
	cleanup(t, st)
	return st
}

func cleanup(t testing.TB, st *kv.Store) {
	t.Cleanup(func() {
		if err := st.Check(); err != nil {
			t.Errorf("kvtest: store invariants violated at cleanup:\n%v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("kvtest: close store: %v", err)
		}
	})
}
