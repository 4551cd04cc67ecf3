package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/server"
)

// adversarialRoutes is the attack on every route of the server's router.
// The run walks the assembled router (server.Server.Routes) and fails on a
// route+method that no case names, and on a case naming a route that no
// longer exists.
//
// To add a route: add a routeCase naming "METHOD /path/template" exactly as
// the router registers it (the failure message prints it). Give it
//   - writes, when the attacker can legitimately change its own data
//     through it: run in phase 1, in table order, before the victim's
//     second snapshot (so the attacker's data is settled when oracle 2
//     compares scores), with colliding externalIds, projects and words;
//   - attack, the attempts on the victim's data: run in phase 2, they must
//     change nothing and leak nothing (use a.sameAsGuess for anything that
//     takes an id, a.ownOnly for anything that lists sessions);
//   - csrf, for a dashboard POST route: the form that would change its
//     owner's state if a forged post were accepted (adversarial_csrf_test.go).
//
// Cases run in table order; phase 1 depends on it (syncs first, then
// labels, then deletions).
var adversarialRoutes = []routeCase{
	{routes: []string{"POST /sync/batch"}, writes: writeBatches},
	{routes: []string{"POST /sync/session"}, writes: writeSessions},
	{routes: []string{"POST /sync/message"}, writes: writeMessages},
	{routes: []string{"PATCH /api/sessions/eval"}, writes: writeLabels, attack: attackLabels},
	{routes: []string{"POST /sessions/{id}/eval"}, writes: webWriteEval, attack: webAttackEval, csrf: csrfSessionEval},
	{routes: []string{"POST /evals/label"}, writes: webWriteLabel, attack: webAttackLabel, csrf: csrfEvalsLabel},
	{routes: []string{"POST /sessions/delete-project"}, writes: webWriteDeleteProject, attack: webAttackDeleteProject, csrf: csrfDeleteProject},
	{routes: []string{"POST /sessions/{id}/delete"}, writes: webWriteDelete, attack: webAttackDelete, csrf: csrfDeleteSession},
	{routes: []string{"DELETE /api/sessions"}, writes: writeDeletes, attack: attackDeletes},
	{routes: []string{"POST /api/sessions/deleted/allow"}, writes: writeAllow, attack: attackAllow},
	{routes: []string{"POST /sessions/deleted/allow"}, writes: webWriteAllow, attack: webAttackAllow, csrf: csrfAllow},
	{routes: []string{"DELETE /api/account/data"}, writes: writeAccountData},
	{routes: []string{"POST /settings/delete-all"}, writes: webWriteDeleteAll, csrf: csrfDeleteAll},
	{routes: []string{"POST /settings/keys"}, writes: webWriteKeys, csrf: csrfCreateKey},
	{routes: []string{"POST /settings/keys/revoke"}, writes: webWriteRevoke, attack: webAttackRevoke, csrf: csrfRevoke},
	{routes: []string{"POST /settings/password"}, writes: webWritePassword, attack: webAttackPassword, csrf: csrfPassword},

	{routes: []string{"GET /health", "HEAD /health", "GET /ready", "HEAD /ready", "GET /metrics"}, attack: attackPublic},
	{routes: []string{"GET /sync/sessions/list"}, attack: attackSyncList},
	{routes: []string{"GET /api/sessions"}, attack: attackList},
	{routes: []string{"GET /api/sessions/get"}, attack: attackGet},
	{routes: []string{"GET /api/sessions/deleted"}, attack: attackDeletedList},
	{routes: []string{"GET /api/stats"}, attack: attackStats},
	{routes: []string{"GET /api/search"}, attack: attackSearch},
	{routes: []string{"GET /api/context"}, attack: attackContext},
	{routes: []string{"GET /api/export"}, attack: attackExport},
	{routes: []string{"GET /api/export/evals"}, attack: attackExportEvals},
	{routes: []string{"GET /api/evals"}, attack: attackEvals},
	{routes: []string{"ANY /mcp"}, attack: attackMCPRaw},

	{routes: []string{"GET /", "HEAD /"}, attack: webGets("/", "/?next=/sessions/{victim}")},
	{routes: []string{"GET /login", "HEAD /login"}, attack: webAttackLoginPage},
	{routes: []string{"POST /login"}, attack: webAttackLogin, csrf: csrfLogin},
	{routes: []string{"POST /logout"}, attack: webAttackLogout, csrf: csrfLogout},
	{routes: []string{"GET /setup", "HEAD /setup"}, attack: webGets("/setup", "/setup?token={guess}", "/setup?token={victim}")},
	{routes: []string{"POST /setup"}, attack: webAttackSetup, csrf: csrfSetup},
	{routes: []string{"GET /sessions", "HEAD /sessions"}, attack: webAttackSessions},
	{routes: []string{"GET /sessions/deleted", "HEAD /sessions/deleted"}, attack: webAttackDeletedPage},
	{routes: []string{"GET /sessions/delete-project", "HEAD /sessions/delete-project"}, attack: webAttackDeleteProjectPage},
	{routes: []string{"GET /sessions/{id}", "HEAD /sessions/{id}"}, attack: webAttackIDPage("/sessions/%s")},
	{routes: []string{"GET /sessions/{id}/export", "HEAD /sessions/{id}/export"}, attack: webAttackExport},
	{routes: []string{"GET /sessions/{id}/delete", "HEAD /sessions/{id}/delete"}, attack: webAttackIDPage("/sessions/%s/delete")},
	{routes: []string{"GET /evals", "HEAD /evals"}, attack: webAttackEvalsPage},
	{routes: []string{"POST /evals/export"}, attack: webAttackEvalsExport, csrf: csrfEvalsExport},
	{routes: []string{"GET /settings", "HEAD /settings"}, attack: webGets("/settings", "/settings?revoked={victimPrefix}", "/settings?deleted=1&messages=1")},
	{routes: []string{"GET /usage", "HEAD /usage"}, attack: webGets("/usage", "/usage?days=3650")},
	{routes: []string{"GET /static/", "HEAD /static/"}, attack: attackStatic},
}

type routeCase struct {
	routes []string // "METHOD /path/template" (ANY for a route without a method matcher)
	writes func(a *adv)
	attack func(a *adv)
	csrf   func(c *csrfRun) csrfForm
}

// routeKeys lists the router's routes as "METHOD /path" strings.
func routeKeys(routes []server.Route) []string {
	var keys []string
	for _, r := range routes {
		if len(r.Methods) == 0 {
			keys = append(keys, "ANY "+r.Path)
		}
		for _, m := range r.Methods {
			keys = append(keys, m+" "+r.Path)
		}
	}
	return keys
}

// checkRouteCoverage fails for every route+method of the router without a
// case, every case naming a route the router lacks, every case that does
// nothing, and every dashboard POST without a CSRF case.
func checkRouteCoverage(t *testing.T, routes []server.Route) []routeCase {
	t.Helper()
	have := map[string]bool{}
	for _, k := range routeKeys(routes) {
		have[k] = true
	}
	covered := map[string]bool{}
	for _, c := range adversarialRoutes {
		for _, k := range c.routes {
			if covered[k] {
				t.Errorf("adversarialRoutes names %s twice", k)
			}
			covered[k] = true
			if !have[k] {
				t.Errorf("adversarialRoutes has a case for %s, which the router no longer has: remove or rename it", k)
			}
			if c.writes == nil && c.attack == nil {
				t.Errorf("adversarialRoutes: the case for %s attacks nothing", k)
			}
			if strings.HasPrefix(k, "POST /") && isDashboard(k) && c.csrf == nil {
				t.Errorf("adversarialRoutes: the dashboard form %s has no CSRF case", k)
			}
		}
	}
	for _, k := range routeKeys(routes) {
		if !covered[k] {
			t.Errorf("route %s has no adversarial case: add one to adversarialRoutes (cmd/hindsight/adversarial_routes_test.go)", k)
		}
	}
	if len(routes) < 40 {
		t.Errorf("the router walk found only %d routes", len(routes))
	}
	return adversarialRoutes
}

// isDashboard tells the dashboard's routes from the API's (the API owns
// /health, /ready, /metrics, /mcp, /sync/* and /api/*).
func isDashboard(key string) bool {
	_, p, _ := strings.Cut(key, " ")
	for _, api := range []string{"/health", "/ready", "/metrics", "/mcp", "/sync/", "/api/"} {
		if p == api || strings.HasPrefix(p, api) {
			return false
		}
	}
	return true
}

// --- requests as the attacker ---

func (a *adv) rest(method, target string, body any) reply {
	a.t.Helper()
	return a.sendJSON(a.attacker.api, method, target, body)
}

// web sends a dashboard request as the attacker (with its CSRF token on a
// POST unless form has one) and checks the page a redirect leads to.
func (a *adv) web(method, target string, form url.Values) reply {
	a.t.Helper()
	return a.webAs(a.attacker, method, target, form)
}

func (a *adv) webAs(tn *tenant, method, target string, form url.Values) reply {
	a.t.Helper()
	var body []byte
	ct := ""
	if method == http.MethodPost {
		if form == nil {
			form = url.Values{}
		}
		if _, ok := form["csrf"]; !ok {
			form.Set("csrf", tn.csrf)
		}
		body, ct = []byte(form.Encode()), formType
	}
	r := a.send(tn.web, method, target, body, ct)
	a.follow(tn.web, r)
	return r
}

// victimIDs are the ids the attacker tries everywhere: the victim's live
// and deleted sessions (from the victim's own responses), one of its
// messages and its user id.
func (a *adv) victimIDs() []string {
	var ids []string
	for _, s := range a.victimSessions {
		ids = append(ids, s.id)
	}
	ids = append(ids, a.victimDeleted...)
	return append(ids, a.victimMessages[0], a.victim.id)
}

// variant is an id as it goes on the wire.
type variant struct {
	raw   string
	exact bool // decodes to the id itself
}

// idVariants are the encodings, case variants, neighbours and path tricks
// of id, as raw URL text.
func (a *adv) idVariants(id string) []variant {
	pct := func(s string, format string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, format, s[i])
		}
		return b.String()
	}
	fullwidth := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			b.WriteRune(r - 0x21 + 0xFF01)
		}
		return url.PathEscape(b.String())
	}
	homoglyph := strings.NewReplacer("a", "а", "e", "е", "o", "о", "c", "с", "p", "р", "x", "х").Replace(id) // Cyrillic
	if homoglyph == id {
		homoglyph = id[:8] + "\u200b" + id[8:]
	}
	vs := []variant{
		{id, true}, {pct(id, "%%%02x"), true}, {pct(id, "%%%02X"), true},
		{pct(id, "%%25%02x"), false}, {strings.ToUpper(id), false}, {strings.ToUpper(id[:1]) + id[1:], false},
		{id + "%20", false}, {"%20" + id, false}, {id + "%00", false}, {id + "%0a", false}, {id + "%09", false},
		{id + "/", false}, {id + "%2F", false}, {"..%2F" + id, false}, {"../" + id, false}, {"./" + id, false},
		{id + "/..", false}, {id + "%2F..", false}, {"%2e%2e%2f" + id, false},
		{fullwidth(id), false}, {url.PathEscape(homoglyph), false}, {id + "%E2%80%8B", false},
		{id[:kv.IDLen-1], false}, {id + "0", false}, {a.victim.id + id, false}, {id + a.victim.id, false},
		{"*", false}, {"%25", false}, {"%2A", false}, {id + "%3B", false}, {id + ",", false},
	}
	return vs
}

// variantCodes are the acceptable answers to a variant of a foreign id:
// 404, or 400 for what is not an id at all; a variant with a slash or dot
// segment may also miss the route (404), be cleaned by the router (301 to
// the cleaned path, which is then followed) or land on a route of another
// method (405).
func variantCodes(v variant) []int {
	if v.exact {
		return []int{http.StatusNotFound}
	}
	if strings.Contains(strings.ToLower(v.raw), "%2f") || strings.Contains(v.raw, "/") || strings.Contains(v.raw, ".") {
		return []int{http.StatusNotFound, http.StatusBadRequest, http.StatusMovedPermanently, http.StatusPermanentRedirect, http.StatusMethodNotAllowed}
	}
	return []int{http.StatusNotFound, http.StatusBadRequest}
}

// sameAsGuess sends a request naming the victim's id, and the same request
// naming a random id that exists nowhere: both must be 404 and read alike
// (besides the id and request ids), so nothing tells the attacker that the
// victim's id exists (oracle 3).
func (a *adv) sameAsGuess(what string, send func(id string) reply, victimID string) {
	a.t.Helper()
	guess := a.guessID()
	rv, rg := send(victimID), send(guess)
	if rv.status != http.StatusNotFound {
		a.t.Errorf("%s with the victim's id: %s, want 404", what, rv)
	}
	norm := func(r reply, id string) string {
		b := strings.ReplaceAll(string(r.body), id, "<id>")
		if rid := r.header.Get("X-Request-Id"); rid != "" {
			b = strings.ReplaceAll(b, rid, "<request-id>")
		}
		return fmt.Sprintf("%d %s %s", r.status, r.header.Get("Content-Type"), b)
	}
	if nv, ng := norm(rv, victimID), norm(rg, guess); nv != ng {
		a.t.Errorf("%s: the victim's id is answered unlike an id that exists nowhere (an existence oracle):\n  victim's: %.400s\n  guessed:  %.400s", what, nv, ng)
	}
}

// ownOnly fails for every id that is not one of the attacker's sessions.
func (a *adv) ownOnly(what string, ids []string) {
	a.t.Helper()
	for _, id := range ids {
		if _, ok := a.attackerOwn[id]; !ok {
			a.t.Errorf("%s lists session %s, which is not the attacker's (%s)", what, id, a.sec.what(id))
		}
	}
}

// refreshOwn reads the attacker's own sessions.
func (a *adv) refreshOwn() {
	a.t.Helper()
	a.attackerOwn = map[string]string{}
	for _, s := range a.listAll(a.attacker) {
		a.attackerOwn[s.ID] = s.ExternalID
	}
}

func (a *adv) ownID(ext string) string {
	for id, e := range a.attackerOwn {
		if e == ext {
			return id
		}
	}
	a.t.Fatalf("the attacker has no session %q", ext)
	return ""
}

func sessionIDsOf(t *testing.T, what string, body []byte, list string) []string {
	t.Helper()
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("%s: not JSON: %.200s", what, body)
		return nil
	}
	var items []struct{ ID string }
	if err := json.Unmarshal(v[list], &items); err != nil {
		t.Errorf("%s: no %s list: %.200s", what, list, body)
	}
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

var sessionLink = regexp.MustCompile(`/sessions/([a-z0-9]{16})`)

func pageSessionIDs(body []byte) []string {
	var ids []string
	for _, m := range sessionLink.FindAllSubmatch(body, -1) {
		ids = append(ids, string(m[1]))
	}
	return ids
}

// fill replaces {victim}, {guess}, {victimPrefix} and {victimTag} in a
// target.
func (a *adv) fill(target string) string {
	return strings.NewReplacer("{victim}", a.victimSessions[0].id, "{guess}", a.guessID(),
		"{victimPrefix}", a.victim.key[:10], "{victimTag}", a.victimProject.tag).Replace(target)
}

// --- phase 1: the attacker's own writes ---

// attackerSession is one of the attacker's sessions: its title carries an
// attacker word and the words the victim's sessions have, so that the
// attacker's data moves the statistics of the victim's queries.
func (a *adv) attackerSession(ext string, extra map[string]any) map[string]any {
	s := map[string]any{"externalId": ext, "source": "claude-code", "model": "claude-sonnet-4",
		"title": a.word("acnry") + " deployment rollback kubernetes timeout migration cache", "projectName": "mallory-app"}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

func (a *adv) attackerMessages(ext string) []any {
	return []any{
		msg(ext, "m1", "user", map[string]any{"textContent": a.word("acnry") + " the deployment rollback hangs on the kubernetes timeout"}),
		msg(ext, "m2", "assistant", map[string]any{"parts": []any{map[string]any{"type": "text", "content": "clear the cache, redeploy, rerun the migration " + a.word("acnry")}}}),
		msg(ext, "m3", "system", map[string]any{"textContent": "system"}),
		msg(ext, "m4", "tool", map[string]any{"textContent": "tool output"}),
	}
}

// batchReply is /sync/batch's answer.
type batchReply struct {
	Sessions, Messages struct{ Inserted, Updated int }
	Errors             []string
	Ignored            []any
}

func (a *adv) batchAs(tn *tenant, target string, body map[string]any) batchReply {
	a.t.Helper()
	r := a.sendJSON(tn.api, http.MethodPost, target, body)
	var br batchReply
	if r.status != http.StatusOK || json.Unmarshal(r.body, &br) != nil || len(br.Errors) != 0 {
		a.t.Fatalf("%s's batch: %s", tn.name, r)
	}
	if len(br.Ignored) != 0 {
		a.t.Errorf("%s's batch was ignored in part (another user's tombstone?): %s", tn.name, r)
	}
	return br
}

// writeBatches: batches whose externalIds collide with the victim's
// sessions (shared-1, shared-2), the victim's deleted session (shared-3),
// their case and unicode neighbours, and the victim's message externalIds;
// and filler sessions with the victim's words. All must be the attacker's
// own new sessions.
func writeBatches(a *adv) {
	exts := []string{"shared-1", "shared-2", "shared-3", "SHARED-1", "shared\u20101", "shared-1 ", "Shared-2"}
	var sessions, messages []any
	for _, ext := range exts {
		extra := map[string]any{}
		if ext == "shared-2" {
			extra["projectName"] = "shared-project"
		}
		sessions = append(sessions, a.attackerSession(ext, extra))
		messages = append(messages, a.attackerMessages(ext)...)
	}
	for i := range 24 {
		ext := fmt.Sprintf("filler-%d", i)
		s := a.attackerSession(ext, nil)
		switch {
		case i < 3:
			s["projectName"] = "shared-project" // the victim's project name
		case i < 6:
			s["projectPath"] = "/home/dev/shared" // the victim's project path
			delete(s, "projectName")
		}
		sessions = append(sessions, s)
		messages = append(messages, a.attackerMessages(ext)...)
	}
	br := a.batchAs(a.attacker, "/sync/batch", map[string]any{"sessions": sessions, "messages": messages})
	if br.Sessions.Inserted != len(sessions) || br.Messages.Inserted != len(messages) {
		a.t.Errorf("colliding batch: %+v, want %d sessions and %d messages inserted (all the attacker's own)", br, len(sessions), len(messages))
	}
	// An update of the colliding sessions updates the attacker's only.
	br = a.batchAs(a.attacker, "/sync/batch", map[string]any{"sessions": []any{
		map[string]any{"externalId": "shared-1", "title": a.word("acnry") + " deployment rollback retitled"},
		map[string]any{"sessionId": "shared-2", "model": "mallory-model"}}})
	if br.Sessions.Updated != 2 || br.Sessions.Inserted != 0 {
		a.t.Errorf("colliding update: %+v, want 2 of the attacker's sessions updated", br)
	}
	// An import (keepDates) of the same externalIds, and of the victim's
	// deleted one with an old date.
	br = a.batchAs(a.attacker, "/sync/batch?keepDates=1", map[string]any{
		"sessions": []any{a.attackerSession("shared-4", map[string]any{"createdAt": 1600000000000}),
			map[string]any{"externalId": "shared-3", "createdAt": 1500000000000, "title": a.word("acnry") + " deployment rollback imported"}},
		"messages": a.attackerMessages("shared-4")})
	if br.Sessions.Inserted != 1 || br.Sessions.Updated != 1 {
		a.t.Errorf("keepDates batch: %+v", br)
	}
	// attacker2 collides too, before its account data is deleted.
	a.batchAs(a.attacker2, "/sync/batch", map[string]any{
		"sessions": []any{a.attackerSession("shared-1", nil), a.attackerSession("shared-3", map[string]any{"projectName": "shared-project"})},
		"messages": append(a.attackerMessages("shared-1"), a.attackerMessages("shared-3")...)})
}

// writeSessions: the single endpoint, by externalId and by its sessionId
// alias, with the victim's ids in fields it ignores.
func writeSessions(a *adv) {
	for _, body := range []map[string]any{
		{"sessionId": "shared-2", "title": a.word("acnry") + " deployment rollback via alias"},
		{"externalId": "shared-5", "id": a.victimSessions[0].id, "userId": a.victim.id, "title": a.word("acnry") + " deployment", "projectPath": "/home/dev/shared"},
		{"externalId": "shared-3", "promptTokens": 5, "completionTokens": 5},
	} {
		r := a.rest(http.MethodPost, "/sync/session", body)
		if r.status != http.StatusOK || strings.Contains(string(r.body), "ignored") {
			a.t.Errorf("POST /sync/session %v: %s", body, r)
		}
	}
}

// writeMessages: messages into the colliding sessions, under the victim's
// message externalIds, and a new session named only by a message.
func writeMessages(a *adv) {
	for _, body := range []map[string]any{
		{"sessionExternalId": "shared-1", "externalId": "m2", "role": "assistant", "textContent": a.word("acnry") + " replaced"},
		{"sessionExternalId": "shared-3", "externalId": "m1", "role": "user", "textContent": a.word("acnry") + " deployment"},
		{"sessionExternalId": "shared-6", "sessionId": a.victimSessions[1].id, "externalId": "m1", "role": "user", "source": "claude-code",
			"textContent": a.word("acnry") + " kubernetes"},
	} {
		r := a.rest(http.MethodPost, "/sync/message", body)
		if r.status != http.StatusOK || strings.Contains(string(r.body), "ignored") {
			a.t.Errorf("POST /sync/message %v: %s", body, r)
		}
	}
}

// writeLabels labels the attacker's own colliding sessions with the
// victim's shared tag.
func writeLabels(a *adv) {
	a.refreshOwn()
	r := a.rest(http.MethodPatch, "/api/sessions/eval", map[string]any{"ids": []string{a.ownID("shared-1"), a.ownID("shared-3")},
		"evalReady": true, "evalStatus": "golden", "evalTags": []string{"shared-tag"}, "evalNotes": a.word("acnry")})
	if r.status != http.StatusOK || r.count("updated") != 2 {
		a.t.Errorf("the attacker labels its own sessions: %s", r)
	}
}

func webWriteEval(a *adv) {
	a.want("eval-ready from the attacker's own session page", a.web(http.MethodPost, "/sessions/"+a.ownID("filler-10")+"/eval",
		url.Values{"action": {"ready"}}), http.StatusSeeOther)
}

func webWriteLabel(a *adv) {
	a.want("label on the attacker's Evals page", a.web(http.MethodPost, "/evals/label",
		url.Values{"id": {a.ownID("filler-10")}, "status": {"correct"}, "tags": {"shared-tag"}}), http.StatusSeeOther)
}

// webWriteDeleteProject deletes the attacker's sessions under the victim's
// project name: the attacker's only.
func webWriteDeleteProject(a *adv) {
	r := a.want("delete the attacker's shared-project from the dashboard",
		a.web(http.MethodPost, "/sessions/delete-project", url.Values{"project": {"shared-project"}, "confirm": {"yes"}}), http.StatusSeeOther)
	// shared-2 and filler-0..2 are the attacker's under that name.
	if loc := r.header.Get("Location"); loc != "/sessions?deletedProject=4" {
		a.t.Errorf("the attacker deleted the project shared-project: redirected to %q, want 4 sessions deleted", loc)
	}
	a.refreshOwn()
}

func webWriteDelete(a *adv) {
	a.want("delete one of the attacker's sessions from the dashboard",
		a.web(http.MethodPost, "/sessions/"+a.ownID("filler-11")+"/delete", url.Values{"confirm": {"yes"}}), http.StatusSeeOther)
	a.refreshOwn()
}

// writeDeletes deletes the attacker's own shared-3 by id, and its sessions
// under the victim's project path: the attacker's only.
func writeDeletes(a *adv) {
	a.want("the attacker deletes its shared-3", a.rest(http.MethodDelete, "/api/sessions?id="+a.ownID("shared-3"), nil), http.StatusOK)
	n := 0
	var list struct {
		Sessions []struct{ ProjectPath string }
	}
	json.Unmarshal(a.rest(http.MethodGet, "/api/sessions?limit=500", nil).body, &list)
	for _, s := range list.Sessions {
		if s.ProjectPath == "/home/dev/shared" {
			n++
		}
	}
	r := a.rest(http.MethodDelete, "/api/sessions?project=%2Fhome%2Fdev%2Fshared", nil)
	if r.status != http.StatusOK || r.count("deleted") != n || n == 0 {
		a.t.Errorf("the attacker deletes its %d sessions under /home/dev/shared: %s", n, r)
	}
	a.refreshOwn()
}

// writeAllow lets the attacker's own shared-3 sync again (the victim's
// shared-3 tombstone stays) and syncs it.
func writeAllow(a *adv) {
	r := a.rest(http.MethodPost, "/api/sessions/deleted/allow", map[string]any{"externalIds": []string{"shared-3"}})
	if r.status != http.StatusOK || r.count("allowed") != 1 {
		a.t.Errorf("the attacker allows its own shared-3: %s", r)
	}
	a.batchAs(a.attacker, "/sync/batch", map[string]any{"sessions": []any{a.attackerSession("shared-3", nil)}})
}

func webWriteAllow(a *adv) {
	r := a.want("the attacker allows its shared-2 again from the dashboard",
		a.web(http.MethodPost, "/sessions/deleted/allow", url.Values{"externalId": {"shared-2"}}), http.StatusSeeOther)
	if loc := r.header.Get("Location"); loc != "/sessions/deleted?allowed=1" {
		a.t.Errorf("allow shared-2: redirected to %q", loc)
	}
	a.batchAs(a.attacker, "/sync/batch", map[string]any{"sessions": []any{a.attackerSession("shared-2", nil)}})
}

// writeAccountData: attacker2 deletes all its data (its colliding
// sessions), allows them again and syncs them.
func writeAccountData(a *adv) {
	r := a.sendJSON(a.attacker2.api, http.MethodDelete, "/api/account/data", nil)
	if r.status != http.StatusOK || r.count("deletedSessions") != 2 {
		a.t.Errorf("attacker2 deletes its account data: %s, want its 2 sessions deleted", r)
	}
	r = a.sendJSON(a.attacker2.api, http.MethodPost, "/api/sessions/deleted/allow", map[string]any{"externalIds": []string{"shared-1", "shared-3"}})
	if r.status != http.StatusOK || r.count("allowed") != 2 {
		a.t.Errorf("attacker2 allows its sessions: %s", r)
	}
	a.batchAs(a.attacker2, "/sync/batch", map[string]any{"sessions": []any{a.attackerSession("shared-1", nil)}})
}

// webWriteDeleteAll: attacker2 deletes all its sessions from Settings.
func webWriteDeleteAll(a *adv) {
	r := a.want("attacker2 deletes all from Settings", a.webAs(a.attacker2, http.MethodPost, "/settings/delete-all", url.Values{"confirm": {"delete all"}}), http.StatusSeeOther)
	if loc := r.header.Get("Location"); !strings.HasPrefix(loc, "/settings?deleted=1&") {
		a.t.Errorf("attacker2's delete all: redirected to %q, want its one session deleted", loc)
	}
}

func webWriteKeys(a *adv) {
	r := a.want("the attacker creates a key", a.web(http.MethodPost, "/settings/keys", url.Values{"label": {"mallory ci"}}), http.StatusOK)
	if !strings.Contains(string(r.body), "osk_") {
		a.t.Errorf("no new key shown")
	}
}

func webWriteRevoke(a *adv) {
	keys, _ := a.ta.app.Accounts.Keys(context.Background(), a.attacker.id)
	for _, k := range keys {
		if k.Label == "mallory ci" {
			a.want("the attacker revokes its key", a.web(http.MethodPost, "/settings/keys/revoke", url.Values{"prefix": {k.Prefix}}), http.StatusSeeOther)
			return
		}
	}
	a.t.Error("the attacker's new key is missing")
}

// webWritePassword changes the attacker's own password; its browser gets
// a new session.
func webWritePassword(a *adv) {
	newPW := "pw-" + a.word("p")
	r := a.web(http.MethodPost, "/settings/password", url.Values{"current": {a.attacker.password}, "password": {newPW}, "password2": {newPW}})
	a.want("the attacker changes its password", r, http.StatusSeeOther)
	a.attacker.password = newPW
	a.refreshCSRF(a.attacker)
}

// checkAttackerWrites: after phase 1 every session of the attackers is
// theirs (an attacker word in its title), the colliding externalIds are
// theirs, and attacker2 holds exactly what it synced last.
func (a *adv) checkAttackerWrites() {
	a.t.Helper()
	a.refreshOwn()
	exts := map[string]bool{}
	for _, s := range a.listAll(a.attacker) {
		exts[s.ExternalID] = true
		if !strings.Contains(s.Title, "acnry") && s.Title != "" {
			a.t.Errorf("the attacker's session %s has a title it did not write: %q", s.ExternalID, s.Title)
		}
	}
	for _, ext := range []string{"shared-1", "shared-2", "shared-3", "shared-4", "shared-6", "SHARED-1", "shared\u20101", "shared-1 ", "Shared-2"} {
		if !exts[ext] {
			a.t.Errorf("the attacker's colliding session %q is missing", ext)
		}
	}
	if got := a.listAll(a.attacker2); len(got) != 0 {
		a.t.Errorf("attacker2 has %d sessions after deleting all", len(got))
	}
	if len(a.attackerOwn) < 20 {
		a.t.Errorf("the attacker has %d sessions", len(a.attackerOwn))
	}
}

// --- phase 2: attacks on the victim's data ---

func attackLabels(a *adv) {
	own := a.ownID("shared-1")
	for _, id := range a.victimIDs() {
		for _, ids := range [][]string{{id}, {own, id}, {id, own}} {
			a.sameAsGuess("PATCH /api/sessions/eval "+strings.Join(ids, ","), func(x string) reply {
				list := slices.Clone(ids)
				list[slices.Index(list, id)] = x
				return a.rest(http.MethodPatch, "/api/sessions/eval", map[string]any{"ids": list, "evalReady": true, "evalStatus": "incorrect",
					"evalNotes": "mallory was here", "evalTags": []string{"pwned"}, "expectedOutput": "pwned"})
			}, id)
		}
	}
	id := a.victimSessions[0].id
	for _, v := range a.idVariants(id) {
		raw, err := url.PathUnescape(v.raw)
		if err != nil {
			raw = v.raw
		}
		b, _ := json.Marshal(map[string]any{"ids": []string{raw}, "evalReady": false})
		a.want("PATCH /api/sessions/eval variant "+v.raw, a.rest(http.MethodPatch, "/api/sessions/eval", b), variantCodes(v)...)
	}
	// The id as JSON unicode escapes: the same id to the server.
	var esc strings.Builder
	for _, c := range id {
		fmt.Fprintf(&esc, `\u%04x`, c)
	}
	a.want("PATCH /api/sessions/eval with an escaped id", a.rest(http.MethodPatch, "/api/sessions/eval", `{"ids":["`+esc.String()+`"],"evalReady":false}`), http.StatusNotFound)
	a.want("PATCH /api/sessions/eval with ids as a string", a.rest(http.MethodPatch, "/api/sessions/eval", `{"ids":"`+id+`","evalReady":false}`), http.StatusBadRequest)
	a.want("PATCH /api/sessions/eval with an id object", a.rest(http.MethodPatch, "/api/sessions/eval", `{"ids":[{"id":"`+id+`"}],"evalReady":false}`), http.StatusBadRequest)
}

func attackDeletes(a *adv) {
	for _, id := range a.victimIDs() {
		a.sameAsGuess("DELETE /api/sessions?id=", func(x string) reply { return a.rest(http.MethodDelete, "/api/sessions?id="+x, nil) }, id)
		a.sameAsGuess("DELETE /api/sessions?id=&id=", func(x string) reply {
			return a.rest(http.MethodDelete, "/api/sessions?id="+x+"&id="+a.ownID("filler-12"), nil)
		}, id)
	}
	for _, v := range a.idVariants(a.victimSessions[1].id) {
		a.want("DELETE /api/sessions variant "+v.raw, a.rest(http.MethodDelete, "/api/sessions?id="+v.raw, nil), variantCodes(v)...)
	}
	p := a.victimProject
	for _, q := range []string{
		"project=" + url.QueryEscape(p.path), "project=%2Fhome%2Fvictim", "project=" + url.QueryEscape(strings.ToUpper(p.path)),
		"project=" + url.QueryEscape(p.path+"/"), "project=%2Fhome%2Fdev%2Fshared", "project=%2Fhome%2Fdev%2Fshared%2F", "project=%2Fhome%2Fdev%2F%2A",
		"project=*", "projectName=" + p.name, "projectName=shared-project", "projectName=SHARED-PROJECT", "projectName=shared-project%20",
		"projectName=shared%2A", "projectName=*", "projectName=" + strings.ToUpper(p.name),
	} {
		a.want("DELETE /api/sessions?"+q, a.rest(http.MethodDelete, "/api/sessions?"+q, nil), http.StatusNotFound)
	}
	a.want("DELETE /api/sessions with id and project", a.rest(http.MethodDelete, "/api/sessions?id="+a.victimSessions[0].id+"&projectName=shared-project", nil), http.StatusBadRequest)
	a.want("DELETE /api/sessions with a body", a.rest(http.MethodDelete, "/api/sessions", map[string]any{"id": a.victimSessions[0].id}), http.StatusBadRequest)
}

func attackAllow(a *adv) {
	var victimExts []string
	var del struct{ Deleted []struct{ ExternalID string } }
	json.Unmarshal(a.send(a.victim.api, http.MethodGet, "/api/sessions/deleted", nil, "").body, &del)
	for _, d := range del.Deleted {
		victimExts = append(victimExts, d.ExternalID)
	}
	if len(victimExts) != 2 {
		a.t.Fatalf("the victim's tombstones: %v", victimExts)
	}
	for _, body := range []any{
		map[string]any{"externalIds": victimExts},
		map[string]any{"externalIds": []string{strings.ToUpper(victimExts[0]), victimExts[0] + " ", "SHARED-3", "shared-3 "}},
		map[string]any{"externalIds": []string{a.victimSessions[0].ext, a.victimSessions[0].id, a.victimDeleted[0], a.victimDeleted[1]}},
	} {
		r := a.rest(http.MethodPost, "/api/sessions/deleted/allow", body)
		if r.status != http.StatusOK || r.count("allowed") != 0 {
			a.t.Errorf("allow the victim's tombstones %v: %s, want 200 and none allowed", body, r)
		}
	}
	a.want("allow with a string", a.rest(http.MethodPost, "/api/sessions/deleted/allow", `{"externalIds":"shared-3"}`), http.StatusBadRequest)
	a.want("allow with user", a.rest(http.MethodPost, "/api/sessions/deleted/allow", map[string]any{"externalIds": victimExts, "userId": a.victim.id}), http.StatusOK)
}

func attackPublic(a *adv) {
	anon := &http.Client{Transport: &probe{t: a.t, cat: catREST, tally: a.tally, sec: a.sec}, CheckRedirect: noFollow}
	for _, c := range []*http.Client{anon, a.attacker.api} {
		for _, p := range []string{"/health", "/ready", "/metrics", "/health?id={victim}", "/metrics?name[]={victim}"} {
			a.send(c, http.MethodGet, a.fill(p), nil, "")
		}
		for _, p := range []string{"/health", "/ready"} {
			a.send(c, http.MethodHead, p, nil, "")
		}
	}
}

func attackSyncList(a *adv) {
	for _, q := range []string{"", "?userId={victim}", "?user={victim}", "?limit=100000", "?source=claude-code"} {
		r := a.want("GET /sync/sessions/list"+q, a.rest(http.MethodGet, "/sync/sessions/list"+a.fill(q), nil), http.StatusOK)
		var ids struct{ SessionIDs, DeletedIDs []string }
		json.Unmarshal(r.body, &ids)
		own := map[string]bool{}
		for _, ext := range a.attackerOwn {
			own[ext] = true
		}
		for _, ext := range ids.SessionIDs {
			if !own[ext] {
				a.t.Errorf("/sync/sessions/list names %q, which is not the attacker's", ext)
			}
		}
		if len(ids.SessionIDs) != len(a.attackerOwn) {
			a.t.Errorf("/sync/sessions/list: %d ids, the attacker has %d sessions", len(ids.SessionIDs), len(a.attackerOwn))
		}
	}
}

func attackList(a *adv) {
	last := a.victimSessions[0]
	for _, q := range []string{"", "limit=500", "limit=100000", "source=" + a.victimProject.source, "source=claude-code",
		"cursor=9999999999999." + last.id, "cursor=0." + last.id, "cursor=9999999999999." + a.victim.id, "userId=" + a.victim.id,
		"limit=500&source=", "cursor=9999999999999.%2e%2e%2f" + last.id[:10]} {
		r := a.rest(http.MethodGet, "/api/sessions?"+q, nil)
		if r.status == http.StatusOK {
			a.ownOnly("GET /api/sessions?"+q, sessionIDsOf(a.t, "list", r.body, "sessions"))
		} else {
			a.want("GET /api/sessions?"+q, r, http.StatusBadRequest)
		}
	}
}

func attackGet(a *adv) {
	own := a.ownID("shared-1")
	for _, id := range a.victimIDs() {
		a.sameAsGuess("GET /api/sessions/get", func(x string) reply { return a.rest(http.MethodGet, "/api/sessions/get?id="+x, nil) }, id)
		a.sameAsGuess("GET /api/sessions/get (victim's first)", func(x string) reply {
			return a.rest(http.MethodGet, "/api/sessions/get?id="+x+"&id="+own, nil)
		}, id)
		r := a.want("GET /api/sessions/get (own first)", a.rest(http.MethodGet, "/api/sessions/get?id="+own+"&id="+id, nil), http.StatusOK)
		if !strings.Contains(string(r.body), `"id":"`+own+`"`) {
			a.t.Errorf("GET /api/sessions/get?id=own&id=victim: %.200s", r.body)
		}
	}
	for _, v := range a.idVariants(a.victimSessions[0].id) {
		a.want("GET /api/sessions/get variant "+v.raw, a.rest(http.MethodGet, "/api/sessions/get?id="+v.raw, nil), variantCodes(v)...)
	}
	for _, q := range []string{"ID=" + a.victimSessions[0].id, "id[]=" + a.victimSessions[0].id, "sessionId=" + a.victimSessions[0].id,
		"externalId=" + a.victimSessions[2].ext, "id=" + a.victimSessions[2].ext, "id=shared-1"} {
		r := a.rest(http.MethodGet, "/api/sessions/get?"+q, nil)
		a.want("GET /api/sessions/get?"+q, r, http.StatusBadRequest, http.StatusNotFound)
	}
}

func attackDeletedList(a *adv) {
	var del struct {
		Deleted []struct {
			ExternalID string
			DeletedAt  int64
		}
	}
	json.Unmarshal(a.send(a.victim.api, http.MethodGet, "/api/sessions/deleted", nil, "").body, &del)
	var qs []string
	for _, d := range del.Deleted {
		enc := base64.RawURLEncoding.EncodeToString([]byte(d.ExternalID))
		qs = append(qs, fmt.Sprintf("cursor=%d.%s", d.DeletedAt+1, enc), fmt.Sprintf("cursor=%d.%s&limit=1000", d.DeletedAt, enc))
	}
	for _, q := range append(qs, "", "limit=1000", "userId="+a.victim.id, "cursor=9999999999999.c2hhcmVkLTM") {
		r := a.want("GET /api/sessions/deleted?"+q, a.rest(http.MethodGet, "/api/sessions/deleted?"+q, nil), http.StatusOK)
		if strings.Contains(string(r.body), `"shared-3"`) {
			a.t.Errorf("GET /api/sessions/deleted?%s lists shared-3, which only the victim has deleted: %s", q, r.body)
		}
	}
}

func attackStats(a *adv) {
	for _, q := range []string{"", "?userId={victim}", "?user=" + a.victim.name} {
		r := a.want("GET /api/stats"+q, a.rest(http.MethodGet, "/api/stats"+a.fill(q), nil), http.StatusOK)
		var st struct{ SessionCount int }
		json.Unmarshal(r.body, &st)
		if st.SessionCount != len(a.attackerOwn) {
			a.t.Errorf("GET /api/stats: %d sessions, the attacker has %d", st.SessionCount, len(a.attackerOwn))
		}
	}
}

// probeQueries are what the attacker searches for: the victim's canaries
// (as if guessed), the words both users write, and (the control) its own.
func (a *adv) probeQueries() []string {
	var qs []string
	for w, what := range a.sec.words {
		if strings.HasPrefix(what, "session ") || strings.HasPrefix(what, "deleted") || strings.HasPrefix(what, "eval") ||
			strings.HasPrefix(what, "project") || strings.HasPrefix(what, "expected") {
			qs = append(qs, w)
		}
	}
	slices.Sort(qs)
	return append(qs, "deployment rollback", "kubernetes timeout migration", "shared-project", "shared-1", a.victimSessions[0].id)
}

func attackSearch(a *adv) {
	own := a.ownID("shared-4")
	var control string
	for _, s := range a.listAll(a.attacker) {
		if s.ID == own {
			control = strings.Fields(s.Title)[0]
		}
	}
	r := a.want("search for the attacker's own word", a.rest(http.MethodGet, "/api/search?q="+control, nil), http.StatusOK)
	if ids := sessionIDsOf(a.t, "control search", r.body, "results"); !slices.Equal(ids, []string{own}) {
		a.t.Errorf("the control search for the attacker's own title word finds %v, want its session %s: the search attacks would prove nothing", ids, own)
	}
	for _, q := range a.probeQueries() {
		for _, m := range []string{"type=fulltext", "type=semantic", "type=hybrid", "mode=hybrid"} {
			target := "/api/search?explain=true&limit=100&" + m + "&q=" + url.QueryEscape(q)
			r := a.want("GET "+target, a.rest(http.MethodGet, target, nil), http.StatusOK)
			a.ownOnly("GET "+target, sessionIDsOf(a.t, target, r.body, "results"))
		}
	}
	for _, q := range []string{"userId:" + a.victim.id, "user:" + a.victim.id, "_id:" + a.victimSessions[0].id, "id:" + a.victimSessions[0].id,
		"title:" + a.victimTitleWord(), "*", "deployment OR *", "+userId:*", "\"" + a.victimTitleWord() + "\"", a.victimTitleWord() + "*",
		strings.ToUpper(a.victimTitleWord()), a.victimTitleWord()[:10] + "*"} {
		for _, m := range []string{"fulltext", "hybrid"} {
			target := "/api/search?explain=true&type=" + m + "&q=" + url.QueryEscape(q)
			r := a.rest(http.MethodGet, target, nil)
			if r.status == http.StatusOK {
				a.ownOnly("GET "+target, sessionIDsOf(a.t, target, r.body, "results"))
			} else {
				a.want("GET "+target, r, http.StatusBadRequest)
			}
		}
	}
}

func attackContext(a *adv) {
	for i, q := range a.probeQueries() {
		f := []string{"text", "messages"}[i%2]
		target := "/api/context?limit=50&maxChars=200000&format=" + f + "&q=" + url.QueryEscape(q)
		r := a.want("GET "+target, a.rest(http.MethodGet, target, nil), http.StatusOK)
		if f == "messages" {
			var out struct {
				Messages []struct{ Metadata struct{ SessionID string } }
			}
			json.Unmarshal(r.body, &out)
			for _, m := range out.Messages {
				a.ownOnly("GET "+target, []string{m.Metadata.SessionID})
			}
		}
	}
}

func attackExport(a *adv) {
	for _, id := range a.victimIDs() {
		for _, f := range []string{"json", "markdown", "jsonl"} {
			a.sameAsGuess("GET /api/export "+f, func(x string) reply {
				return a.rest(http.MethodGet, "/api/export?anonymize=false&include_tools=true&format="+f+"&id="+x, nil)
			}, id)
		}
	}
	for _, v := range a.idVariants(a.victimSessions[2].id) {
		a.want("GET /api/export variant "+v.raw, a.rest(http.MethodGet, "/api/export?format=markdown&id="+v.raw, nil), variantCodes(v)...)
	}
}

func attackExportEvals(a *adv) {
	own := a.ownID("shared-1")
	formats := []string{"deepeval", "chat-jsonl", "text", "openai-evals", "promptfoo"}
	for _, s := range a.victimSessions {
		for _, f := range formats {
			a.sameAsGuess("GET /api/export/evals ids "+f, func(x string) reply {
				return a.rest(http.MethodGet, "/api/export/evals?format="+f+"&ids="+x, nil)
			}, s.id)
		}
		a.sameAsGuess("GET /api/export/evals ids own,victim", func(x string) reply {
			return a.rest(http.MethodGet, "/api/export/evals?ids="+own+","+x, nil)
		}, s.id)
	}
	p := a.victimProject
	for _, q := range []string{"tags=" + p.tag, "tag=" + p.tag, "source=" + p.source, "model=" + p.model, "status=golden&tags=" + p.tag,
		"ids=" + a.victimDeleted[0], "ids=" + a.victim.id} {
		for _, f := range formats {
			a.want("GET /api/export/evals?"+q, a.rest(http.MethodGet, "/api/export/evals?format="+f+"&"+q, nil), http.StatusNotFound)
		}
	}
	// The attacker's own eval sessions under the victim's tag: its own only.
	r := a.want("GET /api/export/evals?tags=shared-tag", a.rest(http.MethodGet, "/api/export/evals?format=chat-jsonl&tags=shared-tag", nil), http.StatusOK)
	if got := r.header.Get("X-Export-Sessions"); got != "2" {
		a.t.Errorf("the attacker's eval export under shared-tag holds %s sessions, want its own 2 (shared-1, filler-10)", got)
	}
}

func attackEvals(a *adv) {
	p := a.victimProject
	for _, q := range []string{"", "tag=" + p.tag, "tag=shared-tag", "source=" + p.source, "model=" + p.model, "status=golden", "limit=5000", "userId=" + a.victim.id} {
		r := a.want("GET /api/evals?"+q, a.rest(http.MethodGet, "/api/evals?"+q, nil), http.StatusOK)
		a.ownOnly("GET /api/evals?"+q, sessionIDsOf(a.t, "evals", r.body, "sessions"))
	}
}

// attackMCPRaw: /mcp without the SDK: no key, other methods, a bare tool
// call with the victim's id, a batch; then every tool through the SDK.
func attackMCPRaw(a *adv) {
	mc := &http.Client{Transport: &probe{t: a.t, cat: catMCP, tally: a.tally, sec: a.sec, bearer: a.attacker.key}, CheckRedirect: noFollow}
	anon := &http.Client{Transport: &probe{t: a.t, cat: catMCP, tally: a.tally, sec: a.sec}, CheckRedirect: noFollow}
	call := func(c *http.Client, method string, body string, want ...int) {
		a.t.Helper()
		req, _ := http.NewRequest(method, a.base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := c.Do(req)
		if err != nil {
			a.t.Fatalf("%s /mcp: %v", method, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.want(method+" /mcp "+body, reply{status: resp.StatusCode, header: resp.Header, body: b}, want...)
	}
	id := a.victimSessions[0].id
	getSession := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_session","arguments":{"id":"` + id + `"}}}`
	call(anon, http.MethodPost, getSession, http.StatusUnauthorized)
	call(mc, http.MethodPost, getSession, http.StatusOK)
	call(mc, http.MethodPost, `[`+getSession+`,{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_sessions","arguments":{"project":"shared"}}}]`,
		http.StatusOK, http.StatusBadRequest)
	call(mc, http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"hindsight://sessions/`+id+`"}}`, http.StatusOK, http.StatusBadRequest)
	call(mc, http.MethodGet, "", http.StatusMethodNotAllowed, http.StatusBadRequest, http.StatusNotFound)
	call(mc, http.MethodDelete, "", http.StatusMethodNotAllowed, http.StatusBadRequest, http.StatusNotFound)
	call(mc, http.MethodPut, getSession, http.StatusMethodNotAllowed, http.StatusBadRequest, http.StatusNotFound)
	a.attackMCP()
}

// mcpSession connects to /mcp as tn; an attacker's session goes through
// the probe.
func (a *adv) mcpSession(tn *tenant, attacker bool) *mcp.ClientSession {
	a.t.Helper()
	var tr http.RoundTripper = bearerTransport{tn.key}
	if attacker {
		tr = &probe{t: a.t, cat: catMCP, tally: a.tally, sec: a.sec, bearer: tn.key}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "adversary", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: a.base + "/mcp", MaxRetries: -1,
		DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		a.t.Fatalf("MCP connect as %s: %v", tn.name, err)
	}
	a.t.Cleanup(func() { cs.Close() })
	return cs
}

func (a *adv) mcpCall(cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	a.t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		a.t.Fatalf("MCP %s(%v): %v", tool, args, err)
	}
	return res
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// mcpIDs are the session ids in a tool's structured result.
func mcpIDs(res *mcp.CallToolResult, list string) []string {
	b, _ := json.Marshal(res.StructuredContent)
	var v map[string][]struct{ ID string }
	json.Unmarshal(b, &v)
	var ids []string
	for _, it := range v[list] {
		ids = append(ids, it.ID)
	}
	return ids
}

// mcpToolCases attack each tool the server lists; a tool without a case
// fails the run.
var mcpToolCases = map[string]func(a *adv, cs *mcp.ClientSession){
	"search_sessions": func(a *adv, cs *mcp.ClientSession) {
		p := a.victimProject
		for i, q := range a.probeQueries() {
			for _, mode := range []string{"fulltext", "semantic", "hybrid"} {
				args := map[string]any{"query": q, "mode": mode, "limit": 50}
				switch i % 4 {
				case 1:
					args["project"] = []string{p.name, "shared", "/home/victim", "/home/dev/shared"}[i/4%4]
				case 2:
					args["source"] = p.source
				}
				res := a.mcpCall(cs, "search_sessions", args)
				a.ownOnly(fmt.Sprintf("MCP search_sessions %v", args), mcpIDs(res, "results"))
			}
		}
	},
	"get_context": func(a *adv, cs *mcp.ClientSession) {
		for _, q := range a.probeQueries() {
			a.mcpCall(cs, "get_context", map[string]any{"query": q, "limit": 20, "maxChars": 50000})
		}
	},
	"get_session": func(a *adv, cs *mcp.ClientSession) {
		read := func(id string, from int) reply {
			res := a.mcpCall(cs, "get_session", map[string]any{"id": id, "fromMessage": from})
			status := http.StatusOK
			if res.IsError {
				status = http.StatusNotFound
			}
			return reply{status: status, body: []byte(mcpText(res))}
		}
		for _, id := range a.victimIDs() {
			a.sameAsGuess("MCP get_session", func(x string) reply { return read(x, 0) }, id)
			a.sameAsGuess("MCP get_session page 2", func(x string) reply { return read(x, 2) }, id)
		}
		for _, v := range a.idVariants(a.victimSessions[0].id) {
			raw, err := url.PathUnescape(v.raw)
			if err != nil {
				raw = v.raw
			}
			if r := read(raw, 0); r.status != http.StatusNotFound {
				a.t.Errorf("MCP get_session %q: %s", raw, r)
			}
		}
	},
	"list_sessions": func(a *adv, cs *mcp.ClientSession) {
		p := a.victimProject
		for _, args := range []map[string]any{{}, {"limit": 100}, {"project": p.name}, {"project": p.path}, {"project": "shared"},
			{"project": "/home/victim"}, {"project": "/home/dev/shared"}, {"source": p.source}, {"source": "claude-code", "limit": 100}, {"project": ""}} {
			res := a.mcpCall(cs, "list_sessions", args)
			a.ownOnly(fmt.Sprintf("MCP list_sessions %v", args), mcpIDs(res, "sessions"))
		}
	},
}

// attackMCP lists the tools /mcp offers the attacker and runs each tool's
// case.
func (a *adv) attackMCP() {
	a.t.Helper()
	cs := a.mcpSession(a.attacker, true)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		a.t.Fatalf("MCP tools/list: %v", err)
	}
	listed := map[string]bool{}
	for _, tool := range tools.Tools {
		listed[tool.Name] = true
		run, ok := mcpToolCases[tool.Name]
		if !ok {
			a.t.Errorf("MCP tool %s has no adversarial case: add one to mcpToolCases (cmd/hindsight/adversarial_routes_test.go)", tool.Name)
			continue
		}
		run(a, cs)
	}
	for name := range mcpToolCases {
		if !listed[name] {
			a.t.Errorf("mcpToolCases has a case for %s, which /mcp no longer lists", name)
		}
	}
	a.tally.figure("mcp tools attacked: %d", len(tools.Tools))
}

// mcpSnapshot adds what the victim reads over MCP to its snapshot.
func (a *adv) mcpSnapshot(cs *mcp.ClientSession) func(data, ranking map[string]string) {
	return func(data, ranking map[string]string) {
		keep := func(m map[string]string, tool string, args map[string]any) {
			res := a.mcpCall(cs, tool, args)
			b, _ := json.Marshal(res.StructuredContent)
			m[fmt.Sprintf("MCP %s %v", tool, args)] = fmt.Sprintf("%v\n%s\n%s", res.IsError, mcpText(res), b)
		}
		keep(data, "list_sessions", map[string]any{"limit": 100})
		for _, s := range a.victimSessions {
			keep(data, "get_session", map[string]any{"id": s.id})
		}
		for _, q := range a.snapshotQueries() {
			for _, mode := range []string{"fulltext", "semantic", "hybrid"} {
				keep(ranking, "search_sessions", map[string]any{"query": q, "mode": mode, "limit": 50})
			}
			keep(ranking, "get_context", map[string]any{"query": q})
		}
	}
}

// attackRouteVariants sends every route of the router, with the victim's
// id in its path and query, in neighbouring spellings (upper case, a
// trailing slash, a doubled slash, an encoded slash, a path parameter) and
// with a method no route has, as the attacker's API client and its signed-in
// browser: whatever they answer (a miss, a redirect to the cleaned path, a
// 405), the probe checks that nothing leaks and nothing fails.
func (a *adv) attackRouteVariants(routes []server.Route) {
	a.t.Helper()
	id := a.victimSessions[0].id
	for _, r := range routes {
		path := strings.ReplaceAll(r.Path, "{id}", id)
		query := "?id=" + id + "&ids=" + id + "&project=" + url.QueryEscape(a.victimProject.name)
		for _, c := range []*http.Client{a.attacker.api, a.attacker.web} {
			for _, v := range []string{strings.ToUpper(path), path + "/", "/" + path, strings.TrimSuffix(path, "/") + "%2F", path + ";id=" + id} {
				a.follow(c, a.send(c, http.MethodGet, v+query, nil, ""))
			}
			a.send(c, http.MethodPut, path+query, []byte(`{"ids":["`+id+`"]}`), "application/json")
		}
	}
}

// --- the dashboard ---

// webGets loads each target (after fill) as the attacker, with GET and
// HEAD.
func webGets(targets ...string) func(a *adv) {
	return func(a *adv) {
		for _, p := range targets {
			p = a.fill(p)
			for _, m := range []string{http.MethodGet, http.MethodHead} {
				r := a.web(m, p, nil)
				if r.status != http.StatusOK && (r.status < 300 || r.status > 399) && r.status != http.StatusNotFound {
					a.t.Errorf("%s %s: %s", m, p, r)
				}
			}
		}
	}
}

func webAttackLoginPage(a *adv) {
	id := a.victimSessions[0].id
	for _, p := range []string{"/login", "/login?next=/sessions/" + id, "/login?next=%2Fsessions%2F" + id + "%2Fexport%3Fformat%3Djson",
		"/login?next=/api/sessions/get%3Fid%3D" + id, "/login?out=1"} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			r := a.web(m, p, nil)
			a.want(m+" "+p, r, http.StatusOK, http.StatusSeeOther)
		}
	}
}

// webAttackLogin: the attacker signs in as the victim with a wrong
// password (once: the limit is per client and name, and the victim's
// sign-in is checked afterwards), and as itself with next set to the
// victim's session.
func webAttackLogin(a *adv) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: &probe{t: a.t, cat: catDashboard, tally: a.tally, sec: a.sec}, CheckRedirect: noFollow}
	page := a.send(c, http.MethodGet, "/login", nil, "")
	tok := string(csrfField.FindSubmatch(page.body)[1])
	post := func(name, pw, next string) reply {
		return a.send(c, http.MethodPost, "/login", []byte(url.Values{"csrf": {tok}, "name": {name}, "password": {pw}, "next": {next}}.Encode()), formType)
	}
	a.want("sign in as the victim with a wrong password", post(a.victim.name, "guess", ""), http.StatusUnauthorized)
	a.want("sign in as the victim's upper-case name", post(strings.ToUpper(a.victim.name), a.attacker.password, ""), http.StatusUnauthorized)
	for _, next := range []string{"/sessions/" + a.victimSessions[0].id, "/sessions/" + a.victimSessions[0].id + "/export?format=json"} {
		r := a.want("sign in with next "+next, post(a.attacker.name, a.attacker.password, next), http.StatusSeeOther)
		a.want("the page after sign-in", a.follow(c, r), http.StatusNotFound)
	}
}

// webAttackLogout: a second browser of the attacker signs out; the
// victim's session is untouched (checked at the end of the run).
func webAttackLogout(a *adv) {
	second := &tenant{name: a.attacker.name, password: a.attacker.password}
	a.signIn(second, &probe{t: a.t, cat: catDashboard, tally: a.tally, sec: a.sec})
	a.want("the attacker's second browser signs out", a.webAs(second, http.MethodPost, "/logout", nil), http.StatusSeeOther)
	a.want("the attacker's first browser is still in", a.web(http.MethodGet, "/settings", nil), http.StatusOK)
}

func webAttackSetup(a *adv) {
	u, _ := url.Parse(a.base)
	var tok string
	for _, c := range a.attacker.web.Jar.Cookies(u) {
		if c.Name == "hindsight_csrf" {
			tok = c.Value
		}
	}
	users, _ := a.ta.app.Accounts.Users(context.Background())
	for _, token := range []string{a.guessID(), "", a.victimSessions[0].id, a.victim.id} {
		r := a.web(http.MethodPost, "/setup", url.Values{"csrf": {tok}, "token": {token}, "name": {"mallory3"}, "password": {"long enough password"}, "password2": {"long enough password"}})
		a.want("POST /setup with token "+token, r, http.StatusNotFound)
	}
	after, _ := a.ta.app.Accounts.Users(context.Background())
	if len(after) != len(users) {
		a.t.Errorf("POST /setup created a user: %d users, were %d", len(after), len(users))
	}
}

func webAttackSessions(a *adv) {
	p := a.victimProject
	last := a.victimSessions[0]
	var targets []string
	for _, q := range []string{"project=" + url.QueryEscape(p.name), "project=" + url.QueryEscape(p.path), "project=shared-project",
		"project=%2Fhome%2Fdev%2Fshared", "source=" + p.source, "model=" + p.model, "cursor=9999999999999." + last.id,
		"cursor=0." + last.id, "page=2", "deleted=1", "deletedProject=5", ""} {
		targets = append(targets, "/sessions?"+q)
	}
	for i, q := range a.probeQueries() {
		targets = append(targets, "/sessions?mode="+[]string{"fulltext", "semantic", "hybrid"}[i%3]+"&q="+url.QueryEscape(q))
	}
	for _, target := range targets {
		r := a.web(http.MethodGet, target, nil)
		if r.status == http.StatusOK {
			a.ownOnly("GET "+target, pageSessionIDs(r.body))
		} else {
			a.want("GET "+target, r, http.StatusBadRequest)
		}
	}
	for _, target := range targets[:6] {
		a.web(http.MethodHead, target, nil)
	}
}

func webAttackDeletedPage(a *adv) {
	var del struct {
		Deleted []struct {
			ExternalID string
			DeletedAt  int64
		}
	}
	json.Unmarshal(a.send(a.victim.api, http.MethodGet, "/api/sessions/deleted", nil, "").body, &del)
	targets := []string{"/sessions/deleted", "/sessions/deleted?allowed=3"}
	for _, d := range del.Deleted {
		targets = append(targets, fmt.Sprintf("/sessions/deleted?cursor=%d.%s", d.DeletedAt+1, base64.RawURLEncoding.EncodeToString([]byte(d.ExternalID))))
	}
	for _, target := range targets {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			r := a.want(m+" "+target, a.web(m, target, nil), http.StatusOK)
			if strings.Contains(string(r.body), ">shared-3<") {
				a.t.Errorf("%s lists shared-3, which only the victim has deleted", target)
			}
		}
	}
}

func webAttackDeleteProjectPage(a *adv) {
	p := a.victimProject
	for _, q := range []string{url.QueryEscape(p.name), url.QueryEscape(p.path), "shared-project", "%2Fhome%2Fdev%2Fshared", url.QueryEscape(strings.ToUpper(p.name))} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			a.want(m+" /sessions/delete-project?project="+q, a.web(m, "/sessions/delete-project?project="+q, nil), http.StatusNotFound)
		}
	}
}

// webAttackIDPage tries every victim id and the variants of one in a page
// path (format has one %s).
func webAttackIDPage(format string) func(a *adv) {
	return func(a *adv) {
		for _, id := range a.victimIDs() {
			for _, m := range []string{http.MethodGet, http.MethodHead} {
				a.sameAsGuess(m+" "+format, func(x string) reply { return a.web(m, fmt.Sprintf(format, x), nil) }, id)
			}
		}
		for _, v := range a.idVariants(a.victimSessions[3].id) {
			a.want("GET "+format+" variant "+v.raw, a.web(http.MethodGet, fmt.Sprintf(format, v.raw), nil), variantCodes(v)...)
		}
	}
}

func webAttackExport(a *adv) {
	for _, id := range a.victimIDs() {
		for _, f := range []string{"json", "markdown", "jsonl"} {
			a.sameAsGuess("GET /sessions/{id}/export "+f, func(x string) reply { return a.web(http.MethodGet, "/sessions/"+x+"/export?format="+f, nil) }, id)
		}
		a.sameAsGuess("HEAD /sessions/{id}/export", func(x string) reply { return a.web(http.MethodHead, "/sessions/"+x+"/export", nil) }, id)
	}
	for _, v := range a.idVariants(a.victimSessions[4].id) {
		a.want("GET /sessions/{id}/export variant "+v.raw, a.web(http.MethodGet, "/sessions/"+v.raw+"/export?format=json", nil), variantCodes(v)...)
	}
}

func webAttackEval(a *adv) {
	for _, id := range a.victimIDs() {
		for _, form := range []url.Values{{"action": {"ready"}}, {"action": {"unready"}},
			{"action": {"label"}, "status": {"incorrect"}, "notes": {"pwned"}, "tags": {"pwned"}, "expected": {"pwned"}}} {
			a.sameAsGuess("POST /sessions/{id}/eval "+form.Get("action"), func(x string) reply {
				return a.web(http.MethodPost, "/sessions/"+x+"/eval", form)
			}, id)
		}
	}
	for _, v := range a.idVariants(a.victimSessions[5].id) {
		a.want("POST /sessions/{id}/eval variant "+v.raw, a.web(http.MethodPost, "/sessions/"+v.raw+"/eval", url.Values{"action": {"ready"}}), variantCodes(v)...)
	}
}

func webAttackLabel(a *adv) {
	own := a.ownID("shared-1")
	for _, id := range a.victimIDs() {
		for _, form := range []func(x string) url.Values{
			func(x string) url.Values { return url.Values{"id": {x}, "status": {"incorrect"}, "notes": {"pwned"}} },
			func(x string) url.Values { return url.Values{"id": {own, x}, "status": {"incorrect"}} },
			func(x string) url.Values { return url.Values{"id": {x}, "action": {"remove"}} },
		} {
			a.sameAsGuess("POST /evals/label", func(x string) reply { return a.web(http.MethodPost, "/evals/label", form(x)) }, id)
		}
	}
	p := a.victimProject
	for _, form := range []url.Values{{"all": {"1"}, "f_tag": {p.tag}, "status": {"incorrect"}}, {"all": {"1"}, "f_source": {p.source}, "action": {"remove"}},
		{"all": {"1"}, "f_model": {p.model}, "notes": {"pwned"}}} {
		a.want("POST /evals/label all in the victim's filter", a.web(http.MethodPost, "/evals/label", form), http.StatusBadRequest)
	}
}

func webAttackEvalsExport(a *adv) {
	own := a.ownID("shared-1")
	for _, id := range a.victimIDs() {
		for _, f := range []string{"deepeval", "chat-jsonl", "text", "openai-evals", "promptfoo"} {
			a.sameAsGuess("POST /evals/export "+f, func(x string) reply {
				return a.web(http.MethodPost, "/evals/export", url.Values{"format": {f}, "id": {x}})
			}, id)
		}
		a.sameAsGuess("POST /evals/export own,victim", func(x string) reply {
			return a.web(http.MethodPost, "/evals/export", url.Values{"format": {"deepeval"}, "id": {own, x}})
		}, id)
	}
	p := a.victimProject
	for _, form := range []url.Values{{"format": {"deepeval"}, "all": {"1"}, "f_tag": {p.tag}}, {"format": {"text"}, "all": {"1"}, "f_source": {p.source}}} {
		a.want("POST /evals/export all in the victim's filter", a.web(http.MethodPost, "/evals/export", form), http.StatusBadRequest)
	}
}

func webAttackEvalsPage(a *adv) {
	p := a.victimProject
	for _, q := range []string{"", "tag=" + p.tag, "tag=shared-tag", "source=" + p.source, "model=" + p.model, "status=golden", "saved=3"} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			r := a.want(m+" /evals?"+q, a.web(m, "/evals?"+q, nil), http.StatusOK)
			a.ownOnly(m+" /evals?"+q, pageSessionIDs(r.body))
		}
	}
}

func webAttackDeleteProject(a *adv) {
	p := a.victimProject
	for _, project := range []string{p.name, p.path, "shared-project", "/home/dev/shared", strings.ToUpper(p.name), p.name + " "} {
		for _, confirm := range []string{"yes", ""} {
			a.want("POST /sessions/delete-project "+project, a.web(http.MethodPost, "/sessions/delete-project",
				url.Values{"project": {project}, "confirm": {confirm}}), http.StatusNotFound)
		}
	}
}

func webAttackDelete(a *adv) {
	for _, id := range a.victimIDs() {
		for _, confirm := range []string{"yes", ""} {
			a.sameAsGuess("POST /sessions/{id}/delete", func(x string) reply {
				return a.web(http.MethodPost, "/sessions/"+x+"/delete", url.Values{"confirm": {confirm}})
			}, id)
		}
	}
	for _, v := range a.idVariants(a.victimSessions[1].id) {
		a.want("POST /sessions/{id}/delete variant "+v.raw, a.web(http.MethodPost, "/sessions/"+v.raw+"/delete", url.Values{"confirm": {"yes"}}), variantCodes(v)...)
	}
}

func webAttackAllow(a *adv) {
	var del struct{ Deleted []struct{ ExternalID string } }
	json.Unmarshal(a.send(a.victim.api, http.MethodGet, "/api/sessions/deleted", nil, "").body, &del)
	for _, d := range del.Deleted {
		for _, ext := range []string{d.ExternalID, strings.ToUpper(d.ExternalID), d.ExternalID + " "} {
			r := a.want("POST /sessions/deleted/allow "+ext, a.web(http.MethodPost, "/sessions/deleted/allow", url.Values{"externalId": {ext}}), http.StatusSeeOther)
			if loc := r.header.Get("Location"); loc != "/sessions/deleted?allowed=0" {
				a.t.Errorf("allowing the victim's tombstone %q from the dashboard: redirected to %q", ext, loc)
			}
		}
	}
}

func webAttackRevoke(a *adv) {
	for _, prefix := range []string{a.victim.key[:10], a.victim.key, strings.ToUpper(a.victim.key[:10]), a.victim.key[:8]} {
		a.want("POST /settings/keys/revoke "+prefix, a.web(http.MethodPost, "/settings/keys/revoke", url.Values{"prefix": {prefix}}), http.StatusNotFound)
	}
	// Too short to name one key (these were 500s).
	for _, prefix := range []string{"osk_", ""} {
		a.want("POST /settings/keys/revoke "+prefix, a.web(http.MethodPost, "/settings/keys/revoke", url.Values{"prefix": {prefix}}), http.StatusBadRequest)
	}
}

func webAttackPassword(a *adv) {
	r := a.web(http.MethodPost, "/settings/password", url.Values{"current": {a.victim.password}, "password": {"pwned-pwned-pwned"}, "password2": {"pwned-pwned-pwned"}})
	a.want("POST /settings/password with the victim's password as current", r, http.StatusBadRequest)
}

func attackStatic(a *adv) {
	for _, p := range []string{"/static/style.css", "/static/../hindsight.db", "/static/%2e%2e/hindsight.db", "/static/%2e%2e%2fhindsight.db",
		"/static/..%2f..%2fhindsight.db", "/static/%252e%252e%252fhindsight.db", "/static/", "/static/templates/session.html",
		"/static/app.js?v=" + a.victimSessions[0].id, "/static//etc/passwd", "/static/%00", "/static/" + a.victimSessions[0].id} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			r := a.web(m, p, nil)
			if r.status == http.StatusOK && !strings.HasPrefix(p, "/static/style.css") && !strings.HasPrefix(p, "/static/app.js") && p != "/static/" {
				a.t.Errorf("%s %s: %s", m, p, r)
			}
		}
	}
}
