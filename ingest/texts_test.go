package ingest_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// TestTexts: the index's text source gives what IndexSession builds from the
// records, for the asking user's existing sessions only.
func TestTexts(t *testing.T) {
	f := newFixture(t)
	sid := f.session(`{"externalId":"s1","title":"Flaky auth test"}`)
	f.message(`{"externalId":"m1","sessionExternalId":"s1","role":"user","textContent":"why does the auth test fail"}`)
	f.message(`{"externalId":"m2","sessionExternalId":"s1","role":"assistant","textContent":"the token expires during the retry"}`)
	var want index.Session
	if err := f.st.View(ctx, func(tx *kv.Tx) error {
		d, err := ingest.LoadDoc(tx, f.user, sid)
		want = ingest.IndexSession(d)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want.Title != "Flaky auth test" || want.Body == "" || len(want.Chunks) == 0 {
		t.Fatalf("IndexSession = %+v", want)
	}
	src := ingest.Texts{Store: f.st}
	got, err := src.SessionText(ctx, f.user, []string{sid, "nosuchsession000"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, map[string]index.Session{sid: want}) {
		t.Errorf("SessionText = %+v, want only %+v", got, want)
	}
	other := f.newUser("bob")
	if got, err := src.SessionText(ctx, other, []string{sid}, 0); err != nil || len(got) != 0 {
		t.Errorf("another user's SessionText = %+v, %v; want nothing", got, err)
	}

	// With a body size, a prefix of the body at least that long (while the
	// session has that much), without chunks.
	f.message(`{"externalId":"m3","sessionExternalId":"s1","role":"assistant","textContent":"so refresh it first"}`)
	f.message(`{"externalId":"m4","sessionExternalId":"s1","role":"user","textContent":"and the flaky part?"}`)
	if err := f.st.View(ctx, func(tx *kv.Tx) error {
		d, err := ingest.LoadDoc(tx, f.user, sid)
		want = ingest.IndexSession(d)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 30, 40, 60, len(want.Body), 10 * len(want.Body)} {
		got, err := src.SessionText(ctx, f.user, []string{sid, "nosuchsession000"}, n)
		if err != nil || len(got) != 1 {
			t.Fatalf("SessionText(%d) = %+v, %v", n, got, err)
		}
		s := got[sid]
		if s.Title != want.Title || !strings.HasPrefix(want.Body, s.Body) || len(s.Body) < min(n, len(want.Body)) || s.Chunks != nil {
			t.Errorf("SessionText(%d) = %+v; want a prefix of at least %d of %q, no chunks", n, s, n, want.Body)
		}
		if n < 40 && len(s.Body) == len(want.Body) {
			t.Errorf("SessionText(%d) read the whole body %q", n, s.Body)
		}
	}
}
