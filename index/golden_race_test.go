//go:build race

package index_test

// raceBuild: the race detector is on. The ranking goldens, which check what
// the detector cannot change (scores and order), take ten times as long
// under it, so they run in a build without it (make test does).
const raceBuild = true
