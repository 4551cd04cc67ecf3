package bench

import (
	"bytes"
	"os"
	"strconv"
)

// residentBytes returns the resident set size of this process, read from
// /proc/self/statm (Linux); 0 where that is not available.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
