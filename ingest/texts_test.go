package ingest_test

import (
	"reflect"
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
	got, err := src.SessionText(ctx, f.user, []string{sid, "nosuchsession000"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, map[string]index.Session{sid: want}) {
		t.Errorf("SessionText = %+v, want only %+v", got, want)
	}
	other := f.newUser("bob")
	if got, err := src.SessionText(ctx, other, []string{sid}); err != nil || len(got) != 0 {
		t.Errorf("another user's SessionText = %+v, %v; want nothing", got, err)
	}
}
