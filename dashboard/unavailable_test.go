package dashboard

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// TestRecordsUnavailable: while the records' PostgreSQL is down the
// dashboard's pages answer a 503 page with Retry-After that says the
// database is unavailable (not a 500, not a sign-in form); once it is back
// the same pages answer.
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
	f := newFixture(t, Config{Store: kvtest.Checked(t, st)})
	alice := f.user("alice")
	f.sync(alice, `{"sessions":[{"externalId":"s1","title":"kept in postgres"}],"messages":[{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"hello"}]}`)
	id := f.sessionID(alice, "s1")
	b := f.browser()
	b.signIn("alice")
	pages := []string{"/sessions", "/sessions/" + id, "/evals", "/settings"}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, path := range pages {
		p := b.get(path)
		if p.status != http.StatusServiceUnavailable || p.header.Get("Retry-After") == "" || !strings.Contains(p.body, "database is unavailable") {
			t.Errorf("GET %s with the records down: %d, Retry-After %q; want a 503 page saying the database is unavailable\n%.400s",
				path, p.status, p.header.Get("Retry-After"), p.body)
		}
	}
	if err := srv.Start(bg); err != nil {
		t.Fatal(err)
	}
	for _, path := range pages {
		if p := b.get(path); p.status != http.StatusOK {
			t.Errorf("GET %s with the records back: %d", path, p.status)
		}
	}
}
