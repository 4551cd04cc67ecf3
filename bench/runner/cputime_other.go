//go:build !linux

package runner

import "time"

// threadCPU is not available here: callers fall back to wall time.
func threadCPU() (time.Duration, bool) { return 0, false }

// processCPU is not available here: callers report no CPU figure.
func processCPU() (time.Duration, bool) { return 0, false }
