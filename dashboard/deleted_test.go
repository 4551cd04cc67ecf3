package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// tombstoned reports whether userID has a tombstone for ext.
func (f *fixture) tombstoned(userID, ext string) bool {
	f.t.Helper()
	var ok bool
	f.store.View(bg, func(tx *kv.Tx) error {
		_, err := tx.Tombstone(userID, ext)
		ok = err == nil
		return nil
	})
	return ok
}

// hasExternal reports whether userID has a live session ext.
func (f *fixture) hasExternal(userID, ext string) bool {
	var ok bool
	f.store.View(bg, func(tx *kv.Tx) error { _, ok = tx.SessionIDByExternal(userID, ext); return nil })
	return ok
}

// deletedIDs lists the external ids on a Deleted sessions page.
func deletedIDs(t *testing.T, p *page) []string {
	t.Helper()
	return texts(t, p.doc, "table.deleted td.mono")
}

// A session deleted from the dashboard stays deleted when the plugin sends
// it again; the Deleted sessions page lists it and allows it to sync again
// (a POST with the CSRF token), for its owner only.
func TestDeletedSessionsPage(t *testing.T) {
	f := newFixture(t, Config{})
	alice, bob := seed(t, f)
	id := f.sessionID(alice, "s1")
	b := f.browser()
	b.signIn("alice")
	b.get("/sessions/"+id+"/delete").want(t, http.StatusOK)
	b.post("/sessions/"+id+"/delete", url.Values{"confirm": {"yes"}}).want(t, http.StatusSeeOther)

	// The plugin's next write is dropped: nothing reappears.
	f.sync(alice, `{"sessions":[{"externalId":"s1","title":"Fix login redirect loop"}],
	  "messages":[{"sessionExternalId":"s1","externalId":"m3","role":"user","textContent":"again"}]}`)
	if f.hasExternal(alice, "s1") || slices.Contains(rowTitles(t, b.get("/sessions")), "Fix login redirect loop") {
		t.Fatal("the deleted session came back with the next sync")
	}

	// Sessions links to the page; it lists s1 without its title.
	if href, _ := attr(one(t, b.get("/sessions").doc, `a[href="/sessions/deleted"]`), "href"); href != "/sessions/deleted" {
		t.Errorf("link %q", href)
	}
	p := b.get("/sessions/deleted").want(t, http.StatusOK)
	if got := deletedIDs(t, p); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("deleted list %q", got)
	}
	if strings.Contains(p.body, "Fix login redirect loop") {
		t.Error("the deleted session's title is shown")
	}
	row := one(t, p.doc, "table.deleted tbody tr")
	if got := texts(t, row, "td"); len(got) != 5 || got[1] != "claude-code" || got[3] != "deleted" {
		t.Errorf("row %q", got)
	}
	form := one(t, row, "form")
	if action, _ := attr(form, "action"); action != "/sessions/deleted/allow" {
		t.Errorf("form action %q", action)
	}
	if v, _ := attr(one(t, form, "input[name=externalId]"), "value"); v != "s1" {
		t.Errorf("externalId field %q", v)
	}
	one(t, form, "input[name=csrf]")

	// bob sees none of it and cannot lift it.
	bb := f.browser()
	bb.signIn("bob")
	if got := deletedIDs(t, bb.get("/sessions/deleted").want(t, http.StatusOK)); len(got) != 0 {
		t.Errorf("bob's deleted list %q", got)
	}
	if p := bb.post("/sessions/deleted/allow", url.Values{"externalId": {"s1"}}).want(t, http.StatusSeeOther); p.location() != "/sessions/deleted?allowed=0" {
		t.Errorf("bob's allow redirects to %q", p.location())
	}
	if !f.tombstoned(alice, "s1") {
		t.Fatal("bob lifted alice's tombstone")
	}
	// Without the CSRF token nothing changes.
	b.post("/sessions/deleted/allow", url.Values{"externalId": {"s1"}, "csrf": {""}}).want(t, http.StatusForbidden)
	b.post("/sessions/deleted/allow", url.Values{"externalId": {"s1"}, "csrf": {bb.csrf}}).want(t, http.StatusForbidden)
	if !f.tombstoned(alice, "s1") {
		t.Fatal("a POST without alice's token lifted the tombstone")
	}
	b.get("/sessions/deleted")
	p = b.post("/sessions/deleted/allow", url.Values{}).want(t, http.StatusBadRequest)
	if got := textOf(one(t, p.doc, "p.alert")); !strings.Contains(got, "Nothing was changed") {
		t.Errorf("allow without an id says %q", got)
	}

	// Allowed: the list empties and the next sync stores a new session.
	p = b.post("/sessions/deleted/allow", url.Values{"externalId": {"s1"}}).want(t, http.StatusSeeOther)
	if p.location() != "/sessions/deleted?allowed=1" {
		t.Fatalf("redirect to %q", p.location())
	}
	p = b.get(p.location()).want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, "p.flash")); !strings.Contains(got, "Sync allowed again for 1 session") {
		t.Errorf("notice %q", got)
	}
	if got := deletedIDs(t, p); len(got) != 0 {
		t.Errorf("still listed: %q", got)
	}
	f.sync(alice, `{"sessions":[{"externalId":"s1","title":"back"}]}`)
	if !f.hasExternal(alice, "s1") || f.stored(alice, f.sessionID(alice, "s1")).ID == id {
		t.Error("after allowing, the next sync did not store a new session")
	}
	_ = bob
}

// Deleted sessions are shown in pages of 50, newest first.
func TestDeletedSessionsPages(t *testing.T) {
	f := newFixture(t, Config{})
	alice := f.user("alice")
	if err := f.store.Commit(bg, func(tx *kv.Tx) error {
		for i := range 60 {
			if err := tx.PutTombstone(alice, kv.Tombstone{ExternalID: fmt.Sprintf("x%02d", i), DeletedAt: int64(1000 + i), Reason: kv.ReasonDeleted}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.signIn("alice")
	p := b.get("/sessions/deleted").want(t, http.StatusOK)
	got := deletedIDs(t, p)
	if len(got) != 50 || got[0] != "x59" || got[49] != "x10" {
		t.Fatalf("first page: %d rows %q…", len(got), got[:min(3, len(got))])
	}
	next, _ := attr(one(t, p.doc, "nav.pager a[rel=next]"), "href")
	p = b.get(next).want(t, http.StatusOK)
	if got := deletedIDs(t, p); len(got) != 10 || got[0] != "x09" || got[9] != "x00" {
		t.Errorf("second page %q", got)
	}
	if len(findAll(t, p.doc, "nav.pager a[rel=next]")) != 0 {
		t.Error("the last page links to a next one")
	}
	b.get("/sessions/deleted?cursor=nonsense").want(t, http.StatusBadRequest)
}

// A session of an excluded project is listed as such, with no button, and
// allowing it anyway is refused.
func TestDeletedSessionsExcluded(t *testing.T) {
	f := newFixture(t, Config{})
	alice := f.user("alice")
	globs, err := ingest.ParseProjectGlobs("/clients/**")
	if err != nil {
		t.Fatal(err)
	}
	f.ingest.ExcludeProjects(globs)
	f.sync(alice, `{"sessions":[{"externalId":"c1","projectPath":"/clients/acme","title":"acme"}]}`)
	b := f.browser()
	b.signIn("alice")
	p := b.get("/sessions/deleted").want(t, http.StatusOK)
	row := one(t, p.doc, "table.deleted tbody tr")
	if got := texts(t, row, "td"); len(got) != 5 || got[0] != "c1" || got[3] != "project excluded" || !strings.Contains(got[4], "excluded by the server") {
		t.Errorf("row %q", got)
	}
	if len(findAll(t, row, "form")) != 0 {
		t.Error("an excluded session has an Allow button")
	}
	p = b.post("/sessions/deleted/allow", url.Values{"externalId": {"c1"}}).want(t, http.StatusBadRequest)
	if got := textOf(one(t, p.doc, "p.alert")); !strings.Contains(got, "excluded on this server") {
		t.Errorf("refusal says %q", got)
	}
	if !f.tombstoned(alice, "c1") {
		t.Error("the refused allow removed the tombstone")
	}
}

// A project's sessions are deleted from the Sessions page's Project filter,
// after a confirmation page, with the CSRF token; they stay deleted.
func TestDeleteProject(t *testing.T) {
	f := newFixture(t, Config{})
	alice, bob := seed(t, f)
	f.sync(bob, `{"sessions":[{"externalId":"bw","title":"Bob's web","projectName":"web"}]}`)
	b := f.browser()
	b.signIn("alice")

	if len(findAll(t, b.get("/sessions").doc, "p.actions a.danger")) != 0 {
		t.Error("the unfiltered list offers a project deletion")
	}
	p := b.get("/sessions?project=web").want(t, http.StatusOK)
	href, _ := attr(one(t, p.doc, "p.actions a.danger"), "href")
	if href != "/sessions/delete-project?project=web" {
		t.Fatalf("project delete link %q", href)
	}
	p = b.get(href).want(t, http.StatusOK)
	if got := strings.Join(texts(t, p.doc, ".confirm p"), " "); !strings.Contains(got, "All 2 sessions of web") || !strings.Contains(got, "with 2 messages, will be deleted") {
		t.Errorf("confirmation says %q", got)
	}
	form := one(t, p.doc, ".confirm form")
	if v, _ := attr(one(t, form, "input[name=project]"), "value"); v != "web" {
		t.Errorf("project field %q", v)
	}
	one(t, form, "input[name=csrf]")
	b.get("/sessions/delete-project?project=nope").want(t, http.StatusNotFound)
	b.get("/sessions/delete-project").want(t, http.StatusBadRequest)

	// Unconfirmed, without the token, or from bob: nothing is deleted.
	b.get(href)
	p = b.post("/sessions/delete-project", url.Values{"project": {"web"}}).want(t, http.StatusBadRequest)
	if got := textOf(one(t, p.doc, "p.alert")); !strings.Contains(got, "Nothing was deleted") {
		t.Errorf("unconfirmed: %q", got)
	}
	b.post("/sessions/delete-project", url.Values{"project": {"web"}, "confirm": {"yes"}, "csrf": {""}}).want(t, http.StatusForbidden)
	bb := f.browser()
	bb.signIn("bob")
	bb.post("/sessions/delete-project", url.Values{"project": {"billing"}, "confirm": {"yes"}}).want(t, http.StatusNotFound)
	if !f.hasExternal(alice, "s1") || !f.hasExternal(alice, "s3") || !f.hasExternal(alice, "s2") {
		t.Fatal("sessions were deleted before a confirmed POST")
	}

	b.get(href)
	p = b.post("/sessions/delete-project", url.Values{"project": {"web"}, "confirm": {"yes"}}).want(t, http.StatusSeeOther)
	if p.location() != "/sessions?deletedProject=2" {
		t.Fatalf("redirect to %q", p.location())
	}
	p = b.get(p.location()).want(t, http.StatusOK)
	if got := textOf(one(t, p.doc, "p.flash")); !strings.Contains(got, "Deleted 2 sessions of the project") {
		t.Errorf("notice %q", got)
	}
	if got := rowTitles(t, p); !slices.Equal(got, []string{"Docs pass", "Refactor billing"}) {
		t.Errorf("sessions left %q", got)
	}
	if !f.tombstoned(alice, "s1") || !f.tombstoned(alice, "s3") || !f.hasExternal(bob, "bw") {
		t.Error("tombstones missing, or bob's session of the same project name was deleted")
	}
	f.sync(alice, `{"sessions":[{"externalId":"s3","title":"Flaky auth test","projectName":"web"}]}`)
	if f.hasExternal(alice, "s3") {
		t.Error("a session of the deleted project came back with the next sync")
	}
	if got := deletedIDs(t, b.get("/sessions/deleted")); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"s1", "s3"}) {
		t.Errorf("deleted list %q", got)
	}
}

// What the deleted list and the project confirmation show comes from
// plugins: it renders as text.
func TestDeletePagesRenderInert(t *testing.T) {
	f := newFixture(t, Config{})
	alice := f.user("alice")
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	f.sync(alice, fmt.Sprintf(`{"sessions":[{"externalId":%q,"source":%q,"projectName":%q},{"externalId":"keep","projectName":%q}]}`,
		"ext"+evil, "src"+evil, "proj"+evil, "proj"+evil))
	b := f.browser()
	b.signIn("alice")
	project := "proj" + evil
	b.post("/sessions/"+f.sessionID(alice, "keep")+"/delete", url.Values{"confirm": {"yes"}})
	for _, path := range []string{"/sessions?project=" + url.QueryEscape(project), "/sessions/delete-project?project=" + url.QueryEscape(project)} {
		p := b.get(path).want(t, http.StatusOK)
		assertNoInjectedScript(t, p.doc)
		if len(findAll(t, p.doc, "img")) != 0 {
			t.Errorf("%s: an <img> was rendered", path)
		}
	}
	b.post("/sessions/delete-project", url.Values{"project": {project}, "confirm": {"yes"}}).want(t, http.StatusSeeOther)
	p := b.get("/sessions/deleted").want(t, http.StatusOK)
	assertNoInjectedScript(t, p.doc)
	if got := deletedIDs(t, p); len(got) != 2 || len(findAll(t, p.doc, "img")) != 0 {
		t.Errorf("deleted list %q", got)
	}
}
