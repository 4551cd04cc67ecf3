// Package weaviatetest runs a real weaviate-server for tests: a thin
// testing wrapper around package localweaviate, which launches it.
//
// Tests of a package share one server ([Shared]) and give each test its own
// collection; the package's TestMain hands control to [Main], which stops
// the server at the end, removes its data and prints its output when a test
// failed:
//
//	func TestMain(m *testing.M) { weaviatetest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		srv := weaviatetest.Shared(t) // skips, or fails under HINDSIGHT_REQUIRE_WEAVIATE=1
//		st, err := weaviate.Open(ctx, weaviate.Config{URL: srv.URL, Collection: "T1"})
//		...
//	}
//
// [Start] gives one test a server of its own (stopped at cleanup). Without a
// weaviate-server binary (see [localweaviate.Binary]) tests skip with a line
// starting "SKIPPING:", and fail instead when HINDSIGHT_REQUIRE_WEAVIATE=1
// (make test sets it).
package weaviatetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/localweaviate"
)

// Environment variables: the binary (read by localweaviate.Binary) and
// whether a missing one fails rather than skips.
const (
	EnvBinary  = localweaviate.EnvBinary
	EnvRequire = "HINDSIGHT_REQUIRE_WEAVIATE" // "1": a missing binary fails instead of skipping
)

// Server is a running weaviate-server.
type Server = localweaviate.Server

// Binary returns the weaviate-server to run (see localweaviate.Binary).
func Binary() (string, error) { return localweaviate.Binary() }

// Start starts a server of t's own, with its data in t.TempDir(), stopped
// at t's cleanup (its output is logged when t failed). Without a binary it
// skips t, or fails it under HINDSIGHT_REQUIRE_WEAVIATE=1. Starting takes
// about 10 seconds; tests of one package should prefer Shared.
func Start(t testing.TB) *localweaviate.Server {
	t.Helper()
	bin := binaryOrSkip(t)
	s, err := localweaviate.Launch(context.Background(), bin, t.TempDir())
	if err != nil {
		t.Fatalf("launch weaviate-server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop weaviate-server: %v", err)
		}
		if t.Failed() {
			t.Logf("weaviate-server output (tail):\n%s", s.Tail(16<<10))
		}
	})
	return s
}

// StartCluster starts a cluster of n nodes of t's own (see
// localweaviate.LaunchCluster), stopped at t's cleanup, with the nodes'
// output logged when t failed. Skips and failures are as for Start.
func StartCluster(t testing.TB, n int, extraEnv ...string) *localweaviate.Cluster {
	t.Helper()
	bin := binaryOrSkip(t)
	c, err := localweaviate.LaunchCluster(context.Background(), bin, t.TempDir(), n, extraEnv...)
	if err != nil {
		t.Fatalf("launch a weaviate cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop weaviate cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("weaviate cluster output (tail):\n%s", c.Tail(8<<10))
		}
	})
	return c
}

func binaryOrSkip(t testing.TB) string {
	t.Helper()
	bin, err := localweaviate.Binary()
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s=1 but: %v", EnvRequire, err)
		}
		t.Skipf("SKIPPING: Weaviate tests need a weaviate-server: %v", err)
	}
	return bin
}

// The package's shared server, started by the first Shared call and stopped
// by Main.
var shared struct {
	mu  sync.Mutex
	srv *localweaviate.Server
	dir string
	err error // a failed start is not retried
}

// Shared returns the test package's server, starting it on first use. The
// package's TestMain must call Main, which stops it. Skips and failures are
// as for Start. Tests sharing it must keep to collections of their own.
func Shared(t testing.TB) *localweaviate.Server {
	t.Helper()
	bin := binaryOrSkip(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil && shared.err == nil {
		dir, err := os.MkdirTemp("", "weaviatetest-")
		if err == nil {
			shared.dir = dir
			shared.srv, err = localweaviate.Launch(context.Background(), bin, dir)
		}
		shared.err = err
	}
	if shared.err != nil {
		t.Fatalf("launch the shared weaviate-server: %v", shared.err)
	}
	return shared.srv
}

// Main runs the package's tests (m.Run), then stops the shared server and
// removes its data, printing the tail of its output to stderr when a test
// failed, and exits with m.Run's code.
func Main(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	srv, dir := shared.srv, shared.dir
	shared.mu.Unlock()
	if srv != nil {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "weaviatetest:", err)
			code = max(code, 1)
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "--- weaviate-server output (tail) ---\n%s--- end of weaviate-server output ---\n", srv.Tail(32<<10))
		}
	}
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}
