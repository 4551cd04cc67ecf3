package server

import (
	"testing"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
)

// TestMain stops the PostgreSQL server the tests share (pgtest.Shared).
func TestMain(m *testing.M) { pgtest.Main(m) }
