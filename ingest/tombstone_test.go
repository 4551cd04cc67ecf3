package ingest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// syncSession applies a /sync/session body for user and returns the result.
func (f *fixture) syncSession(user, body string) ingest.Result {
	f.t.Helper()
	in, err := ingest.DecodeSession([]byte(body), ingest.Limits{})
	if err != nil {
		f.t.Fatalf("DecodeSession(%s): %v", body, err)
	}
	res, err := f.svc.Session(ctx, user, in)
	if err != nil {
		f.t.Fatalf("Session: %v", err)
	}
	return res
}

// syncMessage applies a /sync/message body for user and returns the result.
func (f *fixture) syncMessage(user, body string) ingest.Result {
	f.t.Helper()
	in, err := ingest.DecodeMessage([]byte(body), ingest.Limits{})
	if err != nil {
		f.t.Fatalf("DecodeMessage(%s): %v", body, err)
	}
	res, err := f.svc.Message(ctx, user, in)
	if err != nil {
		f.t.Fatalf("Message: %v", err)
	}
	return res
}

// batchFor applies a /sync/batch body for user; invalid entries are allowed.
func (f *fixture) batchFor(user, body string) ingest.BatchResult {
	f.t.Helper()
	b, err := ingest.DecodeBatch([]byte(body), ingest.Limits{})
	if err != nil {
		f.t.Fatalf("DecodeBatch: %v", err)
	}
	res, err := f.svc.Batch(ctx, user, b)
	if err != nil {
		f.t.Fatalf("Batch: %v", err)
	}
	return res
}

// has reports whether user has a live session with this external id.
func (f *fixture) has(user, ext string) bool {
	var ok bool
	f.st.View(ctx, func(tx *kv.Tx) error {
		_, ok = tx.SessionIDByExternal(user, ext)
		return nil
	})
	return ok
}

func (f *fixture) tombstone(user, ext string) (kv.Tombstone, bool) {
	f.t.Helper()
	var t kv.Tombstone
	err := f.st.View(ctx, func(tx *kv.Tx) error {
		var err error
		t, err = tx.Tombstone(user, ext)
		return err
	})
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		f.t.Fatal(err)
	}
	return t, err == nil
}

// sessionCount counts the user's live sessions.
func (f *fixture) sessionCount(user string) int {
	n := 0
	f.st.View(ctx, func(tx *kv.Tx) error {
		return tx.Sessions(user, func(kv.Session) error { n++; return nil })
	})
	return n
}

func (f *fixture) purge() {
	f.t.Helper()
	for {
		n, err := f.st.PurgeStep(ctx, 1000)
		if err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// After a deletion every later write of the session and of its messages is
// acknowledged with "deleted" and stores nothing, puts nothing on the
// outbox, and keeps doing so when sent again.
func TestDeletedSessionWritesAreIgnored(t *testing.T) {
	f := newFixture(t)
	id := f.session(`{"externalId":"s1","source":"opencode","title":"secret plans","projectPath":"/p"}`)
	f.message(`{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"the password is hunter2"}`)
	if err := f.svc.DeleteSession(ctx, f.user, id); err != nil {
		t.Fatal(err)
	}
	ts, ok := f.tombstone(f.user, "s1")
	if !ok || ts.Reason != kv.ReasonDeleted || ts.Source != "opencode" || ts.DeletedAt == 0 || ts.Pattern != "" {
		t.Fatalf("tombstone after delete: %+v %v", ts, ok)
	}
	f.purge()
	f.clearOutbox()

	for round := range 2 { // idempotent: the same answer the second time
		for _, tc := range []struct {
			name string
			res  ingest.Result
		}{
			{"session", f.syncSession(f.user, `{"externalId":"s1","title":"secret plans v2"}`)},
			{"message", f.syncMessage(f.user, `{"sessionExternalId":"s1","externalId":"m2","role":"assistant","textContent":"noted"}`)},
			{"old message", f.syncMessage(f.user, `{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"the password is hunter2"}`)},
		} {
			if tc.res != (ingest.Result{Ignored: kv.ReasonDeleted}) {
				t.Errorf("round %d: %s after delete = %+v, want ignored deleted", round, tc.name, tc.res)
			}
		}
		res := f.batchFor(f.user, `{"sessions":[{"externalId":"s1","title":"again"}],
		  "messages":[{"sessionExternalId":"s1","externalId":"m3","role":"user","textContent":"x"}]}`)
		want := []api.SyncIgnored{{Entry: "sessions[0]", ExternalID: "s1", Reason: "deleted"}, {Entry: "messages[0]", ExternalID: "m3", Reason: "deleted"}}
		if res.Sessions != (ingest.Counts{}) || res.Messages != (ingest.Counts{}) || !slices.Equal(res.Ignored, want) {
			t.Errorf("round %d: batch after delete = %+v", round, res)
		}
	}
	if f.has(f.user, "s1") || f.sessionCount(f.user) != 0 {
		t.Error("a write after the deletion recreated the session")
	}
	if d := f.dirty(); len(d) != 0 {
		t.Errorf("ignored writes put %v on the outbox", d)
	}
	if after, ok := f.tombstone(f.user, "s1"); !ok || after != ts {
		t.Errorf("tombstone changed by ignored writes: %+v, was %+v", after, ts)
	}
}

// A batch mixing entries of deleted sessions with others stores the others,
// counts only them, and names each ignored entry by its place in the
// request, invalid entries included in the numbering.
func TestBatchMixesIgnoredAndStored(t *testing.T) {
	f := newFixture(t)
	f.batch(`{"sessions":[{"externalId":"gone"},{"externalId":"kept"}],
	  "messages":[{"sessionExternalId":"gone","externalId":"g1","role":"user","textContent":"a"}]}`)
	if _, _, err := f.svc.DeleteAll(ctx, f.user, nil); err != nil {
		t.Fatal(err)
	}
	if err := allow(f, f.user, "kept"); err != nil {
		t.Fatal(err)
	}
	res := f.batchFor(f.user, `{"sessions":[{"externalId":"kept","title":"K"},{"title":"no id: invalid"},{"externalId":"gone","title":"G"},{"externalId":"new"}],
	  "messages":[{"sessionExternalId":"kept","externalId":"k1","role":"user","textContent":"k"},
	              {"sessionExternalId":"gone","externalId":"g1","role":"user","textContent":"a"},
	              {"role":"user"},
	              {"sessionExternalId":"gone","externalId":"g2","role":"assistant","textContent":"b"},
	              {"sessionExternalId":"new","externalId":"n1","role":"user","textContent":"n"}]}`)
	wantIgnored := []api.SyncIgnored{
		{Entry: "sessions[2]", ExternalID: "gone", Reason: "deleted"},
		{Entry: "messages[1]", ExternalID: "g1", Reason: "deleted"},
		{Entry: "messages[3]", ExternalID: "g2", Reason: "deleted"},
	}
	if res.Sessions != (ingest.Counts{Inserted: 2}) || res.Messages != (ingest.Counts{Inserted: 2}) || !slices.Equal(res.Ignored, wantIgnored) {
		t.Errorf("batch = %+v\nwant sessions {2 0}, messages {2 0}, ignored %+v", res, wantIgnored)
	}
	if !f.has(f.user, "kept") || !f.has(f.user, "new") || f.has(f.user, "gone") {
		t.Errorf("stored: kept %v new %v gone %v", f.has(f.user, "kept"), f.has(f.user, "new"), f.has(f.user, "gone"))
	}
	// Without ignored entries the list is empty, not nil (the API sends []).
	if res := f.batchFor(f.user, `{"sessions":[{"externalId":"kept"}]}`); res.Ignored == nil || len(res.Ignored) != 0 {
		t.Errorf("ignored without tombstones: %#v", res.Ignored)
	}
}

func allow(f *fixture, user string, ids ...string) error {
	_, err := f.svc.AllowSync(ctx, user, ids)
	return err
}

// Tombstones are per user: another user's session with the same external
// id is unaffected, and another user can neither see nor lift them.
func TestTombstonesArePerUser(t *testing.T) {
	f := newFixture(t)
	bob := f.newUser("bob")
	annID := f.session(`{"externalId":"shared","title":"ann's"}`)
	if r := f.syncSession(bob, `{"externalId":"shared","title":"bob's"}`); r.ID == "" {
		t.Fatalf("bob's session: %+v", r)
	}
	if err := f.svc.DeleteSession(ctx, f.user, annID); err != nil {
		t.Fatal(err)
	}
	// bob's writes of "shared" still land.
	if r := f.syncMessage(bob, `{"sessionExternalId":"shared","externalId":"m","role":"user","textContent":"b"}`); r.ID == "" || r.Ignored != "" {
		t.Errorf("bob's message = %+v", r)
	}
	if r := f.syncMessage(f.user, `{"sessionExternalId":"shared","externalId":"m","role":"user","textContent":"a"}`); r.Ignored != kv.ReasonDeleted {
		t.Errorf("ann's message = %+v", r)
	}
	// bob cannot list or lift ann's.
	list, _, _, err := f.svc.DeletedSessions(ctx, bob, ingest.DeletedPosition{}, 100)
	if err != nil || len(list) != 0 {
		t.Errorf("bob's deleted sessions: %+v %v", list, err)
	}
	if n, err := f.svc.AllowSync(ctx, bob, []string{"shared"}); err != nil || n != 0 {
		t.Errorf("bob allowing ann's tombstone: %d %v", n, err)
	}
	if _, ok := f.tombstone(f.user, "shared"); !ok {
		t.Error("bob's allow removed ann's tombstone")
	}
	// bob deleting his own leaves ann's in place, and ann allowing hers
	// leaves bob's.
	bobID := f.syncSession(bob, `{"externalId":"shared"}`).ID
	if err := f.svc.DeleteSession(ctx, bob, bobID); err != nil {
		t.Fatal(err)
	}
	if n, err := f.svc.AllowSync(ctx, f.user, []string{"shared", "shared", "never-deleted"}); err != nil || n != 1 {
		t.Errorf("ann allowing: %d %v, want 1", n, err)
	}
	if _, ok := f.tombstone(bob, "shared"); !ok {
		t.Error("ann's allow removed bob's tombstone")
	}
}

// Allowing sync again lifts the tombstone: the next write makes a new
// session (nothing of the old one comes back).
func TestAllowSyncAgain(t *testing.T) {
	f := newFixture(t)
	old := f.session(`{"externalId":"s","title":"old"}`)
	f.message(`{"sessionExternalId":"s","externalId":"m1","role":"user","textContent":"old text"}`)
	if err := f.svc.DeleteSession(ctx, f.user, old); err != nil {
		t.Fatal(err)
	}
	f.purge()
	if err := allow(f, f.user, "s"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.tombstone(f.user, "s"); ok {
		t.Fatal("tombstone still there after allowing")
	}
	r := f.syncMessage(f.user, `{"sessionExternalId":"s","externalId":"m2","role":"user","textContent":"new text"}`)
	if r.ID == "" || r.Ignored != "" {
		t.Fatalf("message after allowing: %+v", r)
	}
	s, msgs := f.stored("s")
	if s.ID == old || len(msgs) != 1 || *msgs[0].TextContent != "new text" || s.Title != "" {
		t.Errorf("after allowing: session %+v messages %+v; want a new session with only the new message", s, msgs)
	}

	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{nil, "externalIds is empty"},
		{[]string{}, "externalIds is empty"},
		{[]string{"a", ""}, "externalIds[1] is empty"},
		{make([]string, 10_001), "the limit is 10000"},
	} {
		_, err := f.svc.AllowSync(ctx, f.user, tc.ids)
		if !errors.Is(err, ingest.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AllowSync(%d ids) = %v, want ErrInvalid saying %q", len(tc.ids), err, tc.want)
		}
	}
}

// DeleteAll and DeleteSessions tombstone what they delete, in steps of
// deleteStep sessions, and a project's deletion takes exactly its
// sessions.
func TestDeleteByProjectAndAll(t *testing.T) {
	f := newFixture(t)
	var sessions, messages []string
	for i := range 2300 { // more than two steps of 1000
		proj := "/work/other"
		if i%2 == 0 {
			proj = "/work/target"
		}
		sessions = append(sessions, fmt.Sprintf(`{"externalId":"s%d","projectPath":%q,"projectName":"n%d"}`, i, proj, i%3))
		if i%100 == 0 {
			messages = append(messages, fmt.Sprintf(`{"sessionExternalId":"s%d","externalId":"m","role":"user","textContent":"t"}`, i))
		}
	}
	f.batch(`{"sessions":[` + strings.Join(sessions, ",") + `],"messages":[` + strings.Join(messages, ",") + `]}`)

	var progress []int
	n, m, err := f.svc.DeleteSessions(ctx, f.user, ingest.InProject("/work/target"), func(done int) { progress = append(progress, done) })
	if err != nil || n != 1150 || m != 23 {
		t.Fatalf("DeleteSessions(project) = %d sessions, %d messages, %v; want 1150, 23", n, m, err)
	}
	if !slices.Equal(progress, []int{1000, 1150}) {
		t.Errorf("progress %v", progress)
	}
	for i := range 2300 {
		ext := fmt.Sprintf("s%d", i)
		_, tomb := f.tombstone(f.user, ext)
		if target := i%2 == 0; f.has(f.user, ext) == target || tomb != target {
			t.Fatalf("%s (target %v): live %v, tombstone %v", ext, target, f.has(f.user, ext), tomb)
		}
	}
	// Another project by name; then nothing is left of that project.
	if n, _, err := f.svc.DeleteSessions(ctx, f.user, ingest.NamedProject("n1"), nil); err != nil || n != 384 {
		t.Errorf("DeleteSessions(name n1) = %d, %v; want 384", n, err)
	}
	if n, _, err := f.svc.DeleteSessions(ctx, f.user, ingest.InProject("/work/target"), nil); err != nil || n != 0 {
		t.Errorf("deleting the project again = %d, %v", n, err)
	}
	n, _, err = f.svc.DeleteAll(ctx, f.user, nil)
	if err != nil || n != 2300-1150-384 {
		t.Errorf("DeleteAll = %d, %v; want %d", n, err, 2300-1150-384)
	}
	if got := f.sessionCount(f.user); got != 0 {
		t.Errorf("%d sessions left", got)
	}
	var ids int
	f.st.View(ctx, func(tx *kv.Tx) error { ids = len(tx.TombstoneIDs(f.user)); return nil })
	if ids != 2300 {
		t.Errorf("%d tombstones, want 2300", ids)
	}
	f.purge()
}

// DeletedSessions lists newest first (equal times by descending external id) and
// pages without losing or repeating an entry.
func TestDeletedSessionsOrderAndPages(t *testing.T) {
	f := newFixture(t)
	bob := f.newUser("bob")
	at := map[string]int64{"a": 5, "b": 7, "c": 7, "d": 1, "e": 7, "f": 9}
	if err := f.st.Commit(ctx, func(tx *kv.Tx) error {
		for ext, ts := range at {
			for _, u := range []string{f.user, bob} {
				if err := tx.PutTombstone(u, kv.Tombstone{ExternalID: ext, DeletedAt: ts, Reason: kv.ReasonDeleted}); err != nil {
					return err
				}
			}
		}
		return tx.PutTombstone(bob, kv.Tombstone{ExternalID: "bob-only", DeletedAt: 8, Reason: kv.ReasonDeleted})
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"f", "e", "c", "b", "a", "d"}
	for _, limit := range []int{1, 2, 4, 6, 100} {
		var got []string
		var from ingest.DeletedPosition
		for pages := 0; ; pages++ {
			list, next, more, err := f.svc.DeletedSessions(ctx, f.user, from, limit)
			if err != nil || len(list) > limit || pages > 10 {
				t.Fatalf("limit %d: page of %d, %v", limit, len(list), err)
			}
			for _, ts := range list {
				got = append(got, ts.ExternalID)
			}
			if !more {
				break
			}
			from = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: %q, want %q", limit, got, want)
		}
	}
}

// Sessions of excluded projects are dropped whole: a new one is never
// stored, a stored one is deleted on its next write, and either way its
// tombstone (reason excluded) drops its later messages, which carry no
// project.
func TestExcludedProjects(t *testing.T) {
	f := newFixture(t)
	globs, err := ingest.ParseProjectGlobs("/home/me/clients/**, secret-*")
	if err != nil {
		t.Fatal(err)
	}
	f.svc.ExcludeProjects(globs)

	for _, tc := range []struct {
		ext, body, pattern string
	}{
		{"by-path", `{"externalId":"by-path","projectPath":"/home/me/clients/acme/api","title":"acme"}`, "/home/me/clients/**"},
		{"dir-itself", `{"externalId":"dir-itself","projectPath":"/home/me/clients"}`, "/home/me/clients/**"},
		{"by-name", `{"externalId":"by-name","projectPath":"/src/x","projectName":"secret-x"}`, "secret-*"},
		{"windows", `{"externalId":"windows","projectPath":"\\home\\me\\clients\\w"}`, "/home/me/clients/**"},
	} {
		if r := f.syncSession(f.user, tc.body); r != (ingest.Result{Ignored: kv.ReasonExcluded}) {
			t.Errorf("%s: %+v, want ignored excluded", tc.ext, r)
		}
		ts, ok := f.tombstone(f.user, tc.ext)
		if !ok || ts.Reason != kv.ReasonExcluded || ts.Pattern != tc.pattern {
			t.Errorf("%s: tombstone %+v %v, want excluded by %q", tc.ext, ts, ok, tc.pattern)
		}
		if r := f.syncMessage(f.user, `{"sessionExternalId":"`+tc.ext+`","externalId":"m","role":"user","textContent":"t"}`); r.Ignored != kv.ReasonExcluded {
			t.Errorf("%s: message %+v, want ignored excluded", tc.ext, r)
		}
		if f.has(f.user, tc.ext) {
			t.Errorf("%s was stored", tc.ext)
		}
	}
	for _, body := range []string{
		`{"externalId":"near-path","projectPath":"/home/me/clientsX/a"}`,
		`{"externalId":"name-in-path","projectPath":"/src/secret-api"}`, // secret-* is matched against the whole path
		`{"externalId":"no-project"}`,
	} {
		if r := f.syncSession(f.user, body); r.ID == "" {
			t.Errorf("%s: %+v, want stored", body, r)
		}
	}

	// A session first seen through its messages (no project yet) is
	// deleted when its session write names an excluded project.
	f.message(`{"sessionExternalId":"late","externalId":"m1","role":"user","textContent":"first"}`)
	f.message(`{"sessionExternalId":"late","externalId":"m2","role":"user","textContent":"second"}`)
	res := f.batchFor(f.user, `{"sessions":[{"externalId":"late","projectName":"secret-late"}],"messages":[{"sessionExternalId":"late","externalId":"m3","role":"user"}]}`)
	if want := []api.SyncIgnored{{Entry: "sessions[0]", ExternalID: "late", Reason: "excluded"}, {Entry: "messages[0]", ExternalID: "m3", Reason: "excluded"}}; !slices.Equal(res.Ignored, want) ||
		res.Sessions != (ingest.Counts{}) || res.Messages != (ingest.Counts{}) {
		t.Errorf("excluding a stored session: %+v", res)
	}
	if f.has(f.user, "late") {
		t.Error("the stored session of an excluded project was kept")
	}
	f.purge()

	// A session stored before its project was excluded goes on its next
	// write, a message included.
	f.svc.ExcludeProjects(ingest.ProjectGlobs{})
	f.session(`{"externalId":"before","projectPath":"/home/me/clients/old"}`)
	f.svc.ExcludeProjects(globs)
	if r := f.syncMessage(f.user, `{"sessionExternalId":"before","externalId":"m","role":"user","textContent":"t"}`); r.Ignored != kv.ReasonExcluded {
		t.Errorf("message of a session excluded since: %+v", r)
	}
	if f.has(f.user, "before") {
		t.Error("the session excluded since was kept")
	}
	f.purge()

	// Allowing sync again is refused while the pattern is set, and nothing
	// of the request is applied; it works once the pattern is gone.
	if err := f.st.Commit(ctx, func(tx *kv.Tx) error {
		return tx.PutTombstone(f.user, kv.Tombstone{ExternalID: "plain", DeletedAt: 1, Reason: kv.ReasonDeleted})
	}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.AllowSync(ctx, f.user, []string{"plain", "by-name"})
	if !errors.Is(err, ingest.ErrInvalid) || !strings.Contains(err.Error(), "externalIds[1] (by-name)") || !strings.Contains(err.Error(), `"secret-*"`) {
		t.Errorf("allowing an excluded session: %v", err)
	}
	if _, ok := f.tombstone(f.user, "plain"); !ok {
		t.Error("a refused request still removed a tombstone")
	}
	f.svc.ExcludeProjects(ingest.ProjectGlobs{})
	if n, err := f.svc.AllowSync(ctx, f.user, []string{"plain", "by-name"}); err != nil || n != 2 {
		t.Errorf("allowing once the pattern is gone: %d %v", n, err)
	}
}

func TestParseProjectGlobs(t *testing.T) {
	for _, tc := range []struct {
		list    string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{" , ,", nil, ""},
		{"a,b,a", []string{"a", "b"}, ""},
		{"{x,y}-*,[ab],c", []string{"{x,y}-*", "[ab]", "c"}, ""},
		{`a\,b,c`, []string{`a\,b`, "c"}, ""},
		{"[,],d", []string{"[,]", "d"}, ""},
		{"ok,[a-", nil, `malformed pattern "[a-"`},
		{"{open", nil, `malformed pattern "{open"`},
	} {
		g, err := ingest.ParseProjectGlobs(tc.list)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.list, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(g.Patterns(), tc.want) {
			t.Errorf("%q: %q %v, want %q", tc.list, g.Patterns(), err, tc.want)
		}
	}
	g, _ := ingest.ParseProjectGlobs("**/vendor/**,{alpha,beta}")
	for _, tc := range []struct {
		path, name string
		want       string
	}{
		{"/x/vendor/y", "", "**/vendor/**"},
		{"/x/vendor", "", "**/vendor/**"},
		{"", "alpha", "{alpha,beta}"},
		{"/alpha", "gamma", ""},
		{"", "", ""},
	} {
		if got, ok := g.Match(tc.path, tc.name); got != tc.want || ok != (tc.want != "") {
			t.Errorf("Match(%q, %q) = %q %v, want %q", tc.path, tc.name, got, ok, tc.want)
		}
	}
}

// A backup carries the tombstones: a store restored from it still drops the
// deleted session's syncs.
func TestRestoredStoreKeepsTombstones(t *testing.T) {
	f := newFixture(t)
	id := f.session(`{"externalId":"s1","title":"to delete"}`)
	f.session(`{"externalId":"s2","title":"kept"}`)
	if err := f.svc.DeleteSession(ctx, f.user, id); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "backup.db")
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Backup(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := kv.Restore(file, dir); err != nil {
		t.Fatal(err)
	}
	restored, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	g := &fixture{t: t, st: restored, svc: ingest.NewService(restored, f.clock.Now), user: f.user, clock: f.clock}
	if r := g.syncMessage(f.user, `{"sessionExternalId":"s1","externalId":"m","role":"user","textContent":"back?"}`); r.Ignored != kv.ReasonDeleted {
		t.Errorf("restored store: message of the deleted session = %+v", r)
	}
	if g.has(f.user, "s1") || !g.has(f.user, "s2") {
		t.Errorf("restored store: s1 %v, s2 %v", g.has(f.user, "s1"), g.has(f.user, "s2"))
	}
	if err := restored.Check(); err != nil {
		t.Error(err)
	}
}

// kvtest's check at cleanup covers every test above; this one makes sure
// the invariant it relies on (no tombstone beside a live session) holds
// through a delete and an allow in one store.
func TestTombstoneInvariantHolds(t *testing.T) {
	st := kvtest.Open(t)
	svc := ingest.NewService(st, nil)
	var user string
	st.Commit(ctx, func(tx *kv.Tx) error { u, err := tx.CreateUser("u", 1); user = u.ID; return err })
	in, _ := ingest.DecodeSession([]byte(`{"externalId":"x"}`), ingest.Limits{})
	r, err := svc.Session(ctx, user, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteSession(ctx, user, r.ID); err != nil {
		t.Fatal(err)
	}
	if err := st.Check(); err != nil {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := svc.AllowSync(ctx, user, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if r, err := svc.Session(ctx, user, in); err != nil || r.ID == "" {
		t.Fatalf("after allow: %+v %v", r, err)
	}
	if err := st.Check(); err != nil {
		t.Fatalf("after allow and re-sync: %v", err)
	}
}
