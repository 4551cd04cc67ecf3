package mcpd_test

import (
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// TestRecordsUnavailable: while the records' PostgreSQL is down every tool
// answers a tool error saying the records database is unavailable and to
// retry (not an internal error), over both transports; once it is back
// the same calls answer.
func TestRecordsUnavailable(t *testing.T) {
	srv := pgtest.Start(t)
	dsn, err := srv.CreateDatabase(bg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.OpenPostgres(bg, dsn, kv.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackOptions{store: kvtest.Checked(t, st)})
	s.seed()
	id := s.sessionID("alice", "Fix the login redirect loop")
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"search_sessions", map[string]any{"query": "login redirect"}},
		{"get_context", map[string]any{"query": "login redirect"}},
		{"get_session", map[string]any{"id": id}},
		{"list_sessions", map[string]any{}},
	}
	// The key is cached since seed synced with it: the calls pass
	// authentication and reach the records.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, tr := range transports {
		for _, c := range calls {
			res := call(t, s.connect("alice", tr), c.tool, c.args)
			if got := textOf(res); !res.IsError || !strings.Contains(got, "unavailable") || !strings.Contains(got, "retry") || strings.Contains(got, "internal error") {
				t.Errorf("%s %s with the records down: error %v, %q; want a tool error saying the records are unavailable, retry", tr, c.tool, res.IsError, got)
			}
		}
	}
	if err := srv.Start(bg); err != nil {
		t.Fatal(err)
	}
	for _, tr := range transports {
		for _, c := range calls {
			if res := call(t, s.connect("alice", tr), c.tool, c.args); res.IsError {
				t.Errorf("%s %s with the records back: %s", tr, c.tool, textOf(res))
			}
		}
	}
}
