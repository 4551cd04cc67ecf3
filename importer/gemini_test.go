package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
)

// The JSONL form: metadata, a $set after every message, a message rewritten
// under its id as it streams, a $rewindTo dropping a message and what
// followed, Gemini's notices as system messages, tool calls with their
// results, thoughts, tokens, a summary; a sub-agent's session in
// chats/<parent>/; a malformed line.
func TestImportGeminiJSONL(t *testing.T) {
	home := t.TempDir()
	const sid = "3494a697-74ae-4441-a15b-0d9c80154b8b"
	writeFile(t, home, ".gemini/projects.json", `{"projects":{"/home/u/ticketing":"ticketing-vc"}}`)
	writeFile(t, home, ".gemini/tmp/ticketing-vc/chats/session-2026-04-25T08-41-3494a697.jsonl", strings.Join([]string{
		`{"sessionId":"` + sid + `","projectHash":"d5ee","startTime":"2026-04-25T08:41:35.150Z","lastUpdated":"2026-04-25T08:41:35.150Z","kind":"main"}`,
		`{"id":"u1","timestamp":"2026-04-25T08:42:51.457Z","type":"user","content":[{"text":"test the db connection"}]}`,
		`{"$set":{"lastUpdated":"2026-04-25T08:42:51.458Z"}}`,
		`{"id":"g1","timestamp":"2026-04-25T08:42:54.558Z","type":"gemini","content":"I will test","thoughts":[],"tokens":{"input":100,"output":6,"cached":0,"thoughts":4,"tool":0,"total":110},"model":"gemini-3-flash-preview"}`,
		`{"$set":{"lastUpdated":"2026-04-25T08:42:54.559Z"}}`,
		`{"id":"g1","timestamp":"2026-04-25T08:42:54.558Z","type":"gemini","content":"I will test the database connection.","thoughts":[{"subject":"Planning","description":"check the schema","timestamp":"2026-04-25T08:42:53Z"}],"tokens":{"input":100,"output":6,"cached":0,"thoughts":4,"tool":0,"total":110},"model":"gemini-3-flash-preview","toolCalls":[{"id":"t1","name":"db_overview","args":{"db":"pg"},"result":[{"functionResponse":{"id":"t1","name":"db_overview","response":{"output":"pg 16.2, up 6 days"}}}],"status":"success","resultDisplay":"ok"}]}`,
		`{"id":"g2","timestamp":"2026-04-25T08:43:00.000Z","type":"gemini","content":"This answer is rewound","model":"gemini-3-flash-preview"}`,
		`{"id":"u2","timestamp":"2026-04-25T08:43:05.000Z","type":"user","content":[{"text":"and this prompt too"}]}`,
		`{"$rewindTo":"g2"}`,
		`{broken`,
		`{"id":"u3","timestamp":"2026-04-25T08:44:47.000Z","type":"user","content":[{"text":"create the schema"}]}`,
		`{"id":"i1","timestamp":"2026-04-25T08:44:49.099Z","type":"info","content":"Request cancelled."}`,
		`{"id":"e1","timestamp":"2026-04-25T08:44:50.000Z","type":"error","content":""}`,
		`{"$set":{"lastUpdated":"2026-04-25T08:45:00.000Z","summary":"Check the ticketing database"}}`,
	}, "\n")+"\n")
	writeFile(t, home, ".gemini/tmp/ticketing-vc/chats/"+sid+"/sub-1.jsonl", strings.Join([]string{
		`{"sessionId":"sub-1","projectHash":"d5ee","startTime":"2026-04-25T08:43:01.000Z","lastUpdated":"2026-04-25T08:43:02.000Z","kind":"subagent","summary":"not the session's"}`,
		`{"id":"s1","timestamp":"2026-04-25T08:43:01.000Z","type":"user","content":[{"text":"look at the schema"}]}`,
		`{"id":"s2","timestamp":"2026-04-25T08:43:02.000Z","type":"gemini","content":"it has 3 tables","tokens":{"input":50,"output":5}}`,
	}, "\n")+"\n")
	items, err := Gemini(filepath.Join(home, ".gemini"), ReadOptions{})
	if err != nil || len(items) != 1 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	s, probs, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	want := `u1 user 08:42:51 [text]
g1 assistant 08:42:54 [thinking,text,tool-call,tool-result] 100/10
s1 user 08:43:01 [text] @sub-1
s2 assistant 08:43:02 [text] 50/5 @sub-1
u3 user 08:44:47 [text]
i1 system 08:44:49 [text]
`
	if got := describe(s); got != want {
		t.Errorf("messages:\n%s\nwant:\n%s", got, want)
	}
	if got := problems(probs); got != "session-2026-04-25T08-41-3494a697.jsonl:10: skipped: not a session line: invalid character 'b' looking for beginning of object key string (byte 2)" {
		t.Errorf("problems: %s", got)
	}
	if got := fmtSession(s); got != sid+"|gemini-cli|Check the ticketing database|/home/u/ticketing|ticketing||gemini-3-flash-preview||100|10|2026-04-25T08:41:35.15Z|204850" {
		t.Errorf("session: %s", got)
	}
	g1 := s.Messages[1].Parts
	if g1[0].Text != "Planning: check the schema" || g1[1].Content != "I will test the database connection." ||
		string(g1[2].Args) != `{"db":"pg"}` || g1[3].Content != "pg 16.2, up 6 days" {
		t.Errorf("g1 parts = %+v", g1)
	}
}

// The JSON form, a session resumed into a second file with the same id,
// and the copies left in the hash-named project directory after the
// migration to names: one session, each message once.
func TestImportGeminiLegacyAndCopies(t *testing.T) {
	home := t.TempDir()
	const sid = "17593cc4-f6e3-4018-9031-e339848ce6f8"
	sum := sha256.Sum256([]byte("/home/u/dashboard"))
	hash := hex.EncodeToString(sum[:])
	part1 := `{"sessionId":"` + sid + `","projectHash":"` + hash + `","startTime":"2026-01-27T20:23:00.000Z","lastUpdated":"2026-01-27T20:24:00.000Z","messages":[
  {"id":"a","timestamp":"2026-01-27T20:23:10.000Z","type":"user","content":"set up the dashboard"},
  {"id":"b","timestamp":"2026-01-27T20:23:20.000Z","type":"gemini","content":"Done.","model":"gemini-2.5-pro","tokens":{"input":10,"output":2,"thoughts":1}},
  {"id":"c","timestamp":"2026-01-27T20:23:30.000Z","type":"info","content":"Switched model"}]}`
	part2 := `{"sessionId":"` + sid + `","projectHash":"` + hash + `","startTime":"2026-01-27T20:25:00.000Z","lastUpdated":"2026-01-27T20:26:00.000Z","kind":"main","summary":"Dashboard setup","messages":[
  {"id":"d","timestamp":"2026-01-27T20:25:10.000Z","type":"user","content":[{"text":"now the login"}]},
  "garbage",
  {"id":"e","timestamp":"2026-01-27T20:25:20.000Z","type":"gemini","content":"","toolCalls":[{"id":"x","name":"write_file","args":{"file_path":"login.ts"},"result":[{"functionResponse":{"response":{"error":"denied"}}}],"status":"error"}]}]}`
	writeFile(t, home, ".gemini/tmp/"+hash+"/chats/session-2026-01-27T20-23-17593cc4.json", part1)
	writeFile(t, home, ".gemini/tmp/dashboard/chats/session-2026-01-27T20-23-17593cc4.json", part1)
	writeFile(t, home, ".gemini/tmp/dashboard/chats/session-2026-01-27T20-25-17593cc4.json", part2)
	writeFile(t, home, ".gemini/tmp/dashboard/.project_root", "/home/u/dashboard\n")
	writeFile(t, home, ".gemini/tmp/dashboard/logs.json", `[]`)
	items, err := Gemini(filepath.Join(home, ".gemini"), ReadOptions{})
	if err != nil || len(items) != 1 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	s, probs, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	want := `a user 20:23:10 [text]
b assistant 20:23:20 [text] 10/3
c system 20:23:30 [text]
d user 20:25:10 [text]
e assistant 20:25:20 [tool-call,tool-result]
`
	if got := describe(s); got != want {
		t.Errorf("messages:\n%s\nwant:\n%s", got, want)
	}
	if got := problems(probs); got != "session-2026-01-27T20-25-17593cc4.json: skipped messages[1]: a JSON string, want importer.gmRecord" {
		t.Errorf("problems: %s", got)
	}
	if got := fmtSession(s); got != sid+"|gemini-cli|Dashboard setup|/home/u/dashboard|dashboard||gemini-2.5-pro||10|3|2026-01-27T20:23:00Z|180000" {
		t.Errorf("session: %s", got)
	}
	if r := s.Messages[4].Parts[1].Content; r != "Error: denied" {
		t.Errorf("failed tool call result = %q", r)
	}
	// Without .project_root, projects.json names the root of a hash directory.
	writeFile(t, home, ".gemini/projects.json", `{"projects":{"/home/u/dashboard":"dashboard"}}`)
	items, _ = Gemini(filepath.Join(home, ".gemini", "tmp", hash), ReadOptions{})
	if s, _, _ := items[0].Read(); len(items) != 1 || s.ProjectPath != "/home/u/dashboard" || len(s.Messages) != 3 {
		t.Errorf("hash directory alone: %d items, project %q, %d messages", len(items), s.ProjectPath, len(s.Messages))
	}
}
