package dashboard

import (
	"testing"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
)

// TestMain stops the PostgreSQL server the tests share when they run
// against it (HINDSIGHT_TEST_RECORDS=postgres: see internal/kvtest).
func TestMain(m *testing.M) { pgtest.Main(m) }
