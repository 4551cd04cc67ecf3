package bench

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
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
// from getrusage (to the microsecond, where /proc/self/stat counts 10 ms
// ticks); 0 where that is not available. On a machine shared with other
// work, CPU time per unit of work is steadier than wall time.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WatchPeakRSS follows the resident set of the process pid, reading its
// high-water mark (VmHWM in /proc/<pid>/status, Linux) every 20 ms until
// stop is called, and stop returns the last mark read (0 where /proc does
// not say). The mark belongs to the process's own memory since its exec, so
// a child of a large process is measured alone, which getrusage's maxrss
// does not do on Linux: a child started with vfork, as Go starts them,
// inherits its parent's mark. The mark only rises, so a late read misses at
// most the last 20 ms of growth.
func WatchPeakRSS(pid int) (stop func() int64) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	var peak int64
	read := func() {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
				f := bytes.Fields(v)
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil && kb<<10 > peak {
						peak = kb << 10
					}
				}
			}
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		return peak
	}
}

// ResetPeakRSS resets the resident-set high-water mark of the process pid
// (VmHWM, which WatchPeakRSS reads) to its current resident set, by
// writing 5 to /proc/<pid>/clear_refs (Linux 4.0 and later, for a process
// of the caller's own user). It reports whether that worked.
func ResetPeakRSS(pid int) bool {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0) == nil
}

// CurrentRSS returns the resident set of the process pid now (VmRSS in
// /proc/<pid>/status, Linux); 0 where /proc does not say.
func CurrentRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			if f := bytes.Fields(v); len(f) > 0 {
				if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
