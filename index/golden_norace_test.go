//go:build !race

package index_test

// raceBuild: the race detector is off (see golden_race_test.go).
const raceBuild = false
