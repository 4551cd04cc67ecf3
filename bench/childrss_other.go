//go:build !unix

package bench

import "os"

// PeakRSS returns 0: the resident set of a child is measured on Unix only.
func PeakRSS(*os.ProcessState) int64 { return 0 }
