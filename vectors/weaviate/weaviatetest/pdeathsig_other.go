//go:build !linux

package weaviatetest

import "syscall"

func pdeathsig() *syscall.SysProcAttr { return nil }
