package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A malformed setting stops a bench before it starts, with exit status 2
// and a message naming the variable or flag and what it accepts.
func TestBadConfigurationIsAUsageError(t *testing.T) {
	t.Setenv("HINDSIGHT_RRF_K", "x")
	err := run(context.Background(), []string{"relevance", "--dataset", "d"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "HINDSIGHT_RRF_K") || !strings.Contains(err.Error(), "positive number") {
		t.Errorf("err = %v, want exit 2 naming HINDSIGHT_RRF_K and what it accepts", err)
	}
	if err := run(context.Background(), nil, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || exitCode(err) != 2 {
		t.Errorf("no bench named: err = %v, want a usage error", err)
	}
}
