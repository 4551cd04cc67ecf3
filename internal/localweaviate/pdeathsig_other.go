//go:build !linux

package localweaviate

import "syscall"

func pdeathsig() *syscall.SysProcAttr { return nil }
