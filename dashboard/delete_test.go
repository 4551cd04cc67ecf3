package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/kv"
)

// exists reports whether userID still has session id.
func (f *fixture) exists(userID, id string) bool {
	f.t.Helper()
	err := f.store.View(bg, func(tx *kv.Tx) error {
		_, err := tx.Session(userID, id)
		return err
	})
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		f.t.Fatal(err)
	}
	return err == nil
}

func TestDeleteSession(t *testing.T) {
	f := newFixture(t, Config{})
	alice, bob := seed(t, f)
	id, bobs := f.sessionID(alice, "s1"), f.sessionID(bob, "b1")
	b := f.browser()
	b.signIn("alice")

	// The session page links to a confirmation page; GET deletes nothing.
	p := b.get("/sessions/"+id).want(t, http.StatusOK)
	if href, _ := attr(one(t, p.doc, ".actions a.button.danger"), "href"); href != "/sessions/"+id+"/delete" {
		t.Fatalf("delete link %q", href)
	}
	p = b.get("/sessions/"+id+"/delete").want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, "h1")); got != "Delete this session?" {
		t.Errorf("confirmation heading %q", got)
	}
	if got := textOf(one(t, p.doc, ".confirm p strong")); got != "Fix login redirect loop" {
		t.Errorf("confirmation names %q", got)
	}
	form := one(t, p.doc, ".confirm form")
	if action, _ := attr(form, "action"); action != "/sessions/"+id+"/delete" {
		t.Errorf("form action %q", action)
	}
	if v, _ := attr(one(t, form, "input[name=confirm]"), "value"); v != "yes" {
		t.Errorf("confirm field %q", v)
	}
	one(t, form, "input[name=csrf]")
	if !f.exists(alice, id) {
		t.Fatal("showing the confirmation deleted the session")
	}

	// A POST without the confirmation deletes nothing.
	for _, confirm := range []string{"", "no"} {
		p = b.post("/sessions/"+id+"/delete", url.Values{"confirm": {confirm}}).want(t, http.StatusBadRequest)
		if got := textOf(one(t, p.doc, "p.alert")); !strings.Contains(got, "Nothing was deleted") {
			t.Errorf("unconfirmed delete says %q", got)
		}
	}
	if !f.exists(alice, id) {
		t.Fatal("an unconfirmed POST deleted the session")
	}

	// Another user's session is not found, and stays.
	b.get("/sessions/"+bobs+"/delete").want(t, http.StatusNotFound)
	b.post("/sessions/"+bobs+"/delete", url.Values{"confirm": {"yes"}}).want(t, http.StatusNotFound)
	if !f.exists(bob, bobs) {
		t.Fatal("alice deleted bob's session")
	}

	// Confirmed: gone from the page, the list and search, with a notice.
	p = b.post("/sessions/"+id+"/delete", url.Values{"confirm": {"yes"}}).want(t, http.StatusSeeOther)
	if p.location() != "/sessions?deleted=1" {
		t.Fatalf("redirect to %q", p.location())
	}
	p = b.get(p.location()).want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, "p.flash")); !strings.Contains(got, "Session deleted") {
		t.Errorf("notice %q", got)
	}
	if got := rowTitles(t, p); slices.Contains(got, "Fix login redirect loop") || len(got) != 3 {
		t.Errorf("list after deleting: %q", got)
	}
	f.index()
	if got := rowTitles(t, b.get("/sessions?q=redirect").want(t, http.StatusOK)); len(got) != 0 {
		t.Errorf("search still finds %q", got)
	}
	b.get("/sessions/"+id).want(t, http.StatusNotFound)
	b.post("/sessions/"+id+"/delete", url.Values{"confirm": {"yes"}}).want(t, http.StatusNotFound)
	if f.exists(alice, id) || !f.exists(alice, f.sessionID(alice, "s2")) {
		t.Errorf("the wrong sessions were deleted")
	}
}

func TestDeleteAllSessions(t *testing.T) {
	f := newFixture(t, Config{})
	_, bob := seed(t, f)
	bobs := f.sessionID(bob, "b1")
	b := f.browser()
	b.signIn("alice")
	b.post("/settings/keys", url.Values{"label": {"laptop"}}).want(t, http.StatusOK)

	p := b.get("/settings").want(t, http.StatusOK)
	zone := one(t, p.doc, "section.danger-zone")
	if got := textOf(one(t, zone, "p")); !strings.Contains(got, "4 sessions with 3 messages") {
		t.Errorf("delete-all block says %q", got)
	}
	if action, _ := attr(one(t, zone, "form"), "action"); action != "/settings/delete-all" {
		t.Errorf("form action %q", action)
	}

	// Without the typed word nothing is deleted.
	for _, confirm := range []string{"", "delete", "yes", "delete everything"} {
		p = b.post("/settings/delete-all", url.Values{"confirm": {confirm}}).want(t, http.StatusBadRequest)
		if got := textOf(one(t, p.doc, "p.alert")); !strings.Contains(got, "Nothing was deleted") {
			t.Errorf("confirm %q: %q", confirm, got)
		}
	}
	if got := rowTitles(t, b.get("/sessions")); len(got) != 4 {
		t.Fatalf("sessions after unconfirmed delete-all: %q", got)
	}

	// Typed (case and spacing do not matter): every session goes, the
	// account and its key stay, other users are untouched.
	p = b.post("/settings/delete-all", url.Values{"confirm": {" Delete  ALL "}}).want(t, http.StatusSeeOther)
	if p.location() != "/settings?deleted=4&messages=3" {
		t.Fatalf("redirect to %q", p.location())
	}
	p = b.get(p.location()).want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, "p.flash")); !strings.Contains(got, "Deleted 4 sessions (3 messages)") {
		t.Errorf("notice %q", got)
	}
	if got := textOf(one(t, p.doc, "section.danger-zone p")); got != "You have no sessions." {
		t.Errorf("after deleting, the block says %q", got)
	}
	if got := texts(t, p.doc, "table.keys td.mono"); len(got) != 1 {
		t.Errorf("keys after delete-all: %q", got)
	}
	if got := rowTitles(t, b.get("/sessions").want(t, http.StatusOK)); len(got) != 0 {
		t.Errorf("sessions left: %q", got)
	}
	f.index()
	if got := rowTitles(t, b.get("/sessions?q=login").want(t, http.StatusOK)); len(got) != 0 {
		t.Errorf("search still finds %q", got)
	}
	if !f.exists(bob, bobs) {
		t.Error("bob's session was deleted")
	}
}
