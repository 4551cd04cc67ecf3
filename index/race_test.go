//go:build race

package index

// raceEnabled: the race detector slows indexing about tenfold, so the
// largest tests run smaller.
const raceEnabled = true
