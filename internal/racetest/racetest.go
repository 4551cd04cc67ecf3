// Package racetest says whether the test binary runs under the race
// detector, and skips there the data-correctness tests that make test runs
// in a build without it.
//
// Such a test checks what the detector cannot change (recall, scores,
// what is stored, how much memory stays live) at three to ten times its
// cost under it, and the code it reaches is run concurrently, under the
// detector, by smaller tests of its package. make test lists it in
// NORACE_TESTS and runs it beside the race step; go test without -race,
// -short or not, runs it as any other test.
package racetest

import "testing"

// SkipUnderRace skips t, saying why, when the race detector is on.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if Enabled {
		t.Skip("SKIPPING under the race detector: a data-correctness test, which make test runs in a build without it " +
			"(the Makefile's NORACE_TESTS; see internal/racetest)")
	}
}
