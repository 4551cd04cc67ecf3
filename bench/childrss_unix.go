//go:build unix

package bench

import (
	"os"
	"runtime"
	"syscall"
)

// PeakRSS returns the high-water mark of the resident set of an exited
// child process, as getrusage reports it; 0 when the system does not say.
func PeakRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes on macOS
	}
	return int64(ru.Maxrss) << 10 // kilobytes on Linux and the BSDs
}
