package importer

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// openCodeSchema is the part of opencode.db's schema (as of opencode 1.17)
// the reader touches, plus the credential table it must never read.
var openCodeSchema = []string{
	"CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL, directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, workspace_id text, model text, cost real DEFAULT 0 NOT NULL)",
	"CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)",
	"CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL)",
	"CREATE TABLE workspace (id text PRIMARY KEY, type text NOT NULL, branch text, directory text, project_id text NOT NULL)",
	"INSERT INTO workspace VALUES ('wrk_1', 'worktree', 'feature/deploy', '/w/svc', 'global')",
	"CREATE TABLE account (id text PRIMARY KEY, email text NOT NULL, access_token text NOT NULL, refresh_token text NOT NULL)",
	"INSERT INTO account VALUES ('acc', 'dev@example.com', 'sk-live-secret-token', 'refresh-secret')",
}

func ocSessionRow(id, slug, title, dir string, created int64) string {
	return "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (" +
		strings.Join([]string{sqlString(id), "'global'", sqlString(slug), sqlString(dir), sqlString(title), "'1.17.3'"}, ", ") +
		", " + itoa(created) + ", " + itoa(created) + ")"
}

func ocMessageRow(id, session string, created int64, data string) string {
	return "INSERT INTO message VALUES (" + sqlString(id) + ", " + sqlString(session) + ", " + itoa(created) + ", " + itoa(created) + ", " + sqlString(data) + ")"
}

func ocPartRow(id, msg, session, data string) string {
	return "INSERT INTO part VALUES (" + sqlString(id) + ", " + sqlString(msg) + ", " + sqlString(session) + ", 0, 0, " + sqlString(data) + ")"
}

func TestImportReadOpenCodeDB(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, ".local", "share", "opencode", "opencode.db")
	stmts := append([]string{}, openCodeSchema...)
	stmts = append(stmts,
		ocSessionRow("ses_b", "brave-otter", "", "/w/api", 5000),
		ocSessionRow("ses_a", "quiet-lynx", "Deploy", "/w/svc", 1000),
		"UPDATE session SET workspace_id = 'wrk_1' WHERE id = 'ses_a'",
		// Same message and part shapes as the JSON layout, without ids.
		ocMessageRow("msg_2", "ses_a", 3000, `{"role":"assistant","modelID":"gpt-5","providerID":"openai","cost":0.5,"tokens":{"input":10,"output":4},"time":{"created":3000,"completed":7000}}`),
		ocMessageRow("msg_1", "ses_a", 2000, `{"role":"user","time":{"created":2000},"model":{"providerID":"openai","modelID":"gpt-5"}}`),
		ocMessageRow("msg_3", "ses_a", 8000, `{"role":"assistant","cost":0.25,"tokens":{"input":5,"output":1},"time":{"created":8000}}`),
		ocMessageRow("msg_bad", "ses_a", 8500, `{"role":`),
		ocPartRow("prt_1", "msg_1", "ses_a", `{"type":"text","text":"deploy the svc"}`),
		ocPartRow("prt_3", "msg_2", "ses_a", `{"type":"reasoning","text":"check the manifest"}`),
		ocPartRow("prt_4", "msg_2", "ses_a", `{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"kubectl apply"},"output":"applied"}}`),
		ocPartRow("prt_5", "msg_2", "ses_a", `{"type":"tool","tool":"read","state":{"status":"running","input":{"path":"a"}}}`),
		ocPartRow("prt_6", "msg_2", "ses_a", `not json`),
		ocPartRow("prt_7", "msg_3", "ses_a", `{"type":"step-finish"}`),
		ocMessageRow("msg_9", "ses_b", 6000, `{"role":"user","time":{"created":6000}}`),
		ocPartRow("prt_9", "msg_9", "ses_b", `{"type":"text","text":"list the routes"}`),
	)
	execSQLite(t, db, "WAL", stmts...)

	// The data directory, the database and a storage directory beside it all work.
	for _, root := range []string{filepath.Dir(db), db} {
		items, err := OpenCode(root, ReadOptions{})
		if err != nil || len(items) != 2 {
			t.Fatalf("OpenCode(%s): %v, %d items", root, err, len(items))
		}
	}
	items, err := OpenCode(filepath.Dir(db), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, probs, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 2 || !strings.Contains(probs[0].String(), "message msg_bad: skipped") || !strings.Contains(probs[1].String(), "part prt_6 of message msg_2: skipped") {
		t.Errorf("problems = %v", probs)
	}
	if s.ExternalID != "ses_a" || s.Source != "opencode" || s.Title != "Deploy" || s.Model != "gpt-5" || s.Provider != "openai" ||
		s.PromptTokens != 15 || s.CompletionTokens != 5 || s.Cost != 0.75 || s.DurationMs != 7000 || s.CreatedAt.UnixMilli() != 1000 ||
		s.ProjectPath != "/w/svc" || s.ProjectName != "svc" || s.GitBranch != "feature/deploy" {
		t.Errorf("session = %+v", s)
	}
	if len(s.Messages) != 2 || s.Messages[0].ExternalID != "msg_1" || s.Messages[1].ExternalID != "msg_2" {
		t.Fatalf("messages = %s", summary(s))
	}
	parts, _ := json.Marshal(s.Messages[1].Parts)
	want := `[{"type":"thinking","text":"check the manifest"},{"type":"tool-call","toolName":"bash","args":{"command":"kubectl apply"}},{"type":"tool-result","content":"applied","toolName":"bash"},{"type":"tool-call","toolName":"read","args":{"path":"a"}}]`
	if string(parts) != want {
		t.Errorf("parts\n%s\nwant\n%s", parts, want)
	}
	s2, _, err := items[1].Read()
	if err != nil || s2.ExternalID != "ses_b" || s2.Title != "brave-otter" || len(s2.Messages) != 1 {
		t.Errorf("second session = %+v, %v", s2, err)
	}
	for _, sess := range []Session{s, s2} {
		b, _ := json.Marshal(sess)
		if strings.Contains(string(b), "secret") {
			t.Errorf("a credential reached session %s", sess.ExternalID)
		}
	}
}

// When both layouts exist (opencode migrated its JSON files into the
// database and left them), a session is read once, from the database.
func TestImportOpenCodeBothLayouts(t *testing.T) {
	dir := t.TempDir()
	stmts := append([]string{}, openCodeSchema...)
	stmts = append(stmts, ocSessionRow("ses_a", "a", "From the database", "/w", 1000),
		ocMessageRow("msg_1", "ses_a", 2000, `{"role":"user","time":{"created":2000}}`),
		ocPartRow("prt_1", "msg_1", "ses_a", `{"type":"text","text":"hi"}`))
	execSQLite(t, filepath.Join(dir, "opencode.db"), "WAL", stmts...)
	writeFiles(t, dir, map[string]string{
		"storage/session/p/ses_a.json":     `{"id":"ses_a","title":"From JSON","time":{"created":1000}}`,
		"storage/session/p/ses_old.json":   `{"id":"ses_old","title":"Only in JSON","time":{"created":500}}`,
		"storage/message/ses_old/m.json":   `{"id":"m","sessionID":"ses_old","role":"user","time":{"created":600}}`,
		"storage/part/m/p.json":            `{"id":"p","type":"text","text":"old"}`,
		"storage/message/ses_a/msg_1.json": `{"id":"msg_1","sessionID":"ses_a","role":"user","time":{"created":2000}}`,
	})
	for _, root := range []string{dir, filepath.Join(dir, "storage")} {
		items, err := OpenCode(root, ReadOptions{})
		if err != nil || len(items) != 2 {
			t.Fatalf("OpenCode(%s): %v, %d items", root, err, len(items))
		}
		var titles []string
		for _, it := range items {
			s, _, err := it.Read()
			if err != nil {
				t.Fatal(err)
			}
			titles = append(titles, s.Title)
		}
		if strings.Join(titles, "|") != "From the database|Only in JSON" {
			t.Errorf("OpenCode(%s) titles = %v", root, titles)
		}
	}
}

// opencode keeps its database open in WAL mode while it runs: a session
// whose rows are only in the WAL, committed while opencode holds another
// transaction open, is read; the uncommitted one is not; neither file is
// written.
func TestImportOpenCodeDBWhileOpenCodeWrites(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "opencode.db")
	stmts := append([]string{}, openCodeSchema...)
	stmts = append(stmts, ocSessionRow("ses_1", "one", "One", "/w", 1000),
		ocMessageRow("m1", "ses_1", 1100, `{"role":"user","time":{"created":1100}}`),
		ocPartRow("p1", "m1", "ses_1", `{"type":"text","text":"first"}`))
	execSQLite(t, db, "WAL", stmts...)
	commit := strings.Join([]string{ocSessionRow("ses_2", "two", "Two", "/w", 2000),
		ocMessageRow("m2", "ses_2", 2100, `{"role":"user","time":{"created":2100}}`),
		ocPartRow("p2", "m2", "ses_2", `{"type":"text","text":"second"}`),
		ocMessageRow("m1b", "ses_1", 1200, `{"role":"assistant","time":{"created":1200}}`),
		ocPartRow("p1b", "m1b", "ses_1", `{"type":"text","text":"answer only in the WAL"}`)}, ";\n")
	pending := strings.Join([]string{ocSessionRow("ses_3", "three", "Three", "/w", 3000),
		ocMessageRow("m1c", "ses_1", 1300, `{"role":"user","time":{"created":1300}}`),
		ocPartRow("p1c", "m1c", "ses_1", `{"type":"text","text":"not committed"}`)}, ";\n")
	startWriter(t, db, "WAL", commit, "IMMEDIATE", pending)
	before := fileSums(t, db, db+"-wal")
	items, err := OpenCode(dir, ReadOptions{})
	if err != nil || len(items) != 2 {
		t.Fatalf("OpenCode: %v, %d items", err, len(items))
	}
	s, _, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Messages) != 2 || s.Messages[1].Text() != "answer only in the WAL" {
		t.Errorf("ses_1 = %s", summary(s))
	}
	if s2, _, err := items[1].Read(); err != nil || s2.ExternalID != "ses_2" || len(s2.Messages) != 1 {
		t.Errorf("ses_2 = %+v, %v", s2, err)
	}
	after := fileSums(t, db, db+"-wal")
	for p := range before {
		if before[p] != after[p] {
			t.Errorf("%s was written", p)
		}
	}
}

func TestImportOpenCodeDBNotOpenCode(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"opencode.db": ""})
	if _, err := OpenCode(dir, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "no session table") {
		t.Errorf("empty opencode.db: %v", err)
	}
}

// The real opencode.db (with its -wal and -shm) from the shared transcripts:
// every session is found, and each message with content is imported with its
// role, as the database holds them (counted here with SQL).
func TestImportRealOpenCodeDB(t *testing.T) {
	src := needTranscripts(t, "opencode")
	dir := filepath.Join(t.TempDir(), ".local", "share", "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(filepath.Join(src, "richardaiand__aiand-portfolio-web__opencode.db"+suffix))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "opencode.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "opencode.db")
	// Independently: sessions, and per session the messages with a non-empty
	// text part, a reasoning part or a tool part, by role.
	want := map[string]map[string]int{}
	var sessions int
	func() {
		raw, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if err := raw.QueryRow(`SELECT count(*) FROM session`).Scan(&sessions); err != nil {
			t.Fatal(err)
		}
		rows, err := raw.Query(`SELECT m.session_id, json_extract(m.data, '$.role'), count(*) FROM message m
			WHERE EXISTS (SELECT 1 FROM part p WHERE p.message_id = m.id AND (
				(json_extract(p.data, '$.type') IN ('text', 'reasoning') AND trim(json_extract(p.data, '$.text')) <> '' AND coalesce(json_extract(p.data, '$.ignored'), 0) = 0)
				OR json_extract(p.data, '$.type') = 'tool'))
			GROUP BY 1, 2`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var sid, role string
			var n int
			rows.Scan(&sid, &role, &n)
			if want[sid] == nil {
				want[sid] = map[string]int{}
			}
			want[sid][role] = n
		}
	}()
	if sessions != 3 {
		t.Fatalf("the dataset's database has %d sessions, want 3 (with its WAL)", sessions)
	}
	readTwice(t, OpenCode, dir)
	items, err := OpenCode(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != sessions {
		t.Fatalf("found %d sessions, the database holds %d", len(items), sessions)
	}
	total := 0
	for _, it := range items {
		s, probs, err := it.Read()
		if err != nil || len(probs) > 0 {
			t.Fatalf("%s: %v %v", it.Path, err, probs)
		}
		got := map[string]int{}
		for _, m := range s.Messages {
			got[m.Role]++
		}
		if !sameCounts(got, want[s.ExternalID]) {
			t.Errorf("%s: messages by role %v, the database holds %v", s.ExternalID, got, want[s.ExternalID])
		}
		total += len(s.Messages)
		if s.Title == "" || s.Model == "" || s.ProjectPath != "/home/build" || s.CreatedAt.IsZero() || s.Cost <= 0 {
			t.Errorf("%s: session = %+v", s.ExternalID, s)
		}
	}
	if total != 91 {
		t.Errorf("imported %d messages, want the 91 the database and its WAL hold", total)
	}
	// The database holds the user's login in table account; the reader
	// cannot even name it.
	err = readSQLite(context.Background(), db, openCodeTables, func(conn *sql.Conn) error {
		_, err := countRows(context.Background(), conn, "account")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "not authorized") {
		t.Errorf("reading table account through the reader's connection: %v, want not authorized", err)
	}
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
