package bench

import (
	"bytes"
	"os"
	"strconv"
	"time"
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

// ProcessCPU returns the CPU time (user and system) this process has used,
// read from /proc/self/stat (Linux, assuming the usual 100 clock ticks a
// second); 0 where that is not available. On a machine shared with other
// work, CPU time per unit of work is steadier than wall time.
func ProcessCPU() time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count fields after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 { // utime and stime are fields 14 and 15 of the line
		return 0
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(string(s), 10, 64)
		if err != nil {
			return 0
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100)
}
