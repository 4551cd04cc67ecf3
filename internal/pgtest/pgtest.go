// Package pgtest runs a real PostgreSQL server for tests (package
// localpostgres launches it: Debian's initdb and pg_ctl on a data directory
// in a temporary directory, listening on 127.0.0.1 at a free port).
//
// Tests of a package share one server ([Shared]) and give each test a fresh
// database ([Database]); the package's TestMain hands control to [Main],
// which stops the server at the end and removes its directory:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		dsn := pgtest.Database(t) // skips, or fails under HINDSIGHT_REQUIRE_POSTGRES=1
//		st, err := kv.OpenPostgres(ctx, dsn, kv.PostgresOptions{})
//		...
//	}
//
// [Start] gives a test a server of its own, which it may stop and start
// again (a database going away under a running store).
//
// Without PostgreSQL's binaries tests skip with a line starting
// "SKIPPING:", and fail instead when HINDSIGHT_REQUIRE_POSTGRES=1 (make test
// sets it).
package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/localpostgres"
)

// EnvRequire: "1" makes a missing PostgreSQL fail the tests that need it
// instead of skipping them.
const EnvRequire = "HINDSIGHT_REQUIRE_POSTGRES"

// Server is a running PostgreSQL.
type Server = localpostgres.Server

// Launch initialises a cluster in a new temporary directory and starts it
// (fsync off: see localpostgres.Server.Start).
func Launch(ctx context.Context) (*Server, error) { return localpostgres.Launch(ctx) }

// Binaries returns the directory holding initdb and pg_ctl
// (localpostgres.Binaries).
func Binaries() (string, error) { return localpostgres.Binaries() }

// Start launches a server of t's own, removed at t's cleanup (its log is
// printed when t failed). Without PostgreSQL it skips t, or fails it under
// HINDSIGHT_REQUIRE_POSTGRES=1.
func Start(t testing.TB) *Server {
	t.Helper()
	skipWithout(t)
	s, err := Launch(context.Background())
	if err != nil {
		t.Fatalf("launch PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("PostgreSQL log (tail):\n%s", s.Tail(8<<10))
		}
		if err := s.Remove(); err != nil {
			t.Errorf("remove PostgreSQL: %v", err)
		}
	})
	return s
}

func skipWithout(t testing.TB) {
	t.Helper()
	if _, err := Binaries(); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s=1 but: %v", EnvRequire, err)
		}
		t.Skipf("SKIPPING: PostgreSQL tests need PostgreSQL: %v", err)
	}
}

// The package's shared server, started by the first Shared call and
// removed by Main.
var shared struct {
	mu   sync.Mutex
	main bool // Main (or Run) is running the tests: someone will stop the server
	srv  *Server
	err  error // a failed start is not retried
}

// Shared returns the test package's server, starting it on first use. The
// package's TestMain must call Main, which removes it. Skips and failures
// are as for Start.
func Shared(t testing.TB) *Server {
	t.Helper()
	skipWithout(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.main {
		t.Fatalf("pgtest.Shared: the package's TestMain must call pgtest.Main (or Run), which stops the server; none does")
	}
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = Launch(context.Background())
	}
	if shared.err != nil {
		t.Fatalf("launch the shared PostgreSQL: %v", shared.err)
	}
	return shared.srv
}

// Database returns the address of a fresh database on the package's
// shared server (see Shared).
func Database(t testing.TB) string {
	t.Helper()
	dsn, err := Shared(t).CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Main runs the package's tests (m.Run), then removes the shared server,
// printing the tail of its log to stderr when a test failed, and exits with
// m.Run's code.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit, for a TestMain that has more to stop.
func Run(m *testing.M) int {
	shared.mu.Lock()
	shared.main = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	srv := shared.srv
	shared.mu.Unlock()
	if srv != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "--- PostgreSQL log (tail) ---\n%s--- end of PostgreSQL log ---\n", srv.Tail(16<<10))
		}
		if err := srv.Remove(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			code = max(code, 1)
		}
	}
	return code
}
