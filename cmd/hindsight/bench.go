package main

import (
	"context"
	"fmt"
	"io"
)

func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return &usageError{fmt.Sprintf("bench: not built yet %v", args)}
}
