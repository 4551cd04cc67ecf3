package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name -> content under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImportReadOpenCode(t *testing.T) {
	home := t.TempDir()
	st := "opencode/storage/"
	writeFiles(t, home, map[string]string{
		st + "session/p1/ses_a.json": `{"id":"ses_a","slug":"quiet-lynx","title":"","directory":"/w/svc","time":{"created":1000,"updated":9000}}`,
		// Sorted by time.created, not by file name.
		st + "message/ses_a/msg_2.json": `{"id":"msg_2","sessionID":"ses_a","role":"assistant","modelID":"gpt-5","providerID":"openai","cost":0.5,"tokens":{"input":10,"output":4,"reasoning":2,"cache":{"read":1,"write":0}},"time":{"created":3000,"completed":7000}}`,
		st + "message/ses_a/msg_1.json": `{"id":"msg_1","sessionID":"ses_a","role":"user","time":{"created":2000}}`,
		st + "message/ses_a/msg_3.json": `{"id":"msg_3","sessionID":"ses_a","role":"assistant","cost":0.25,"tokens":{"input":5,"output":1},"time":{"created":8000}}`,
		st + "message/ses_a/msg_x.json": `{"id":"msg_x","sessionID":"ses_other","role":"user","time":{"created":2500}}`,
		st + "part/msg_1/prt_1.json":    `{"id":"prt_1","type":"text","text":"deploy the svc"}`,
		st + "part/msg_1/prt_2.json":    `{"id":"prt_2","type":"file","url":"file:///w/svc/main.go"}`,
		st + "part/msg_2/prt_3.json":    `{"id":"prt_3","type":"reasoning","text":"check the manifest"}`,
		st + "part/msg_2/prt_4.json":    `{"id":"prt_4","type":"tool","tool":"bash","state":{"status":"error","input":{"command":"kubectl apply"},"error":"forbidden"}}`,
		st + "part/msg_2/prt_5.json":    `{"id":"prt_5","type":"tool","tool":"read","state":{"status":"completed","input":{"path":"a"},"output":{"lines":3}}}`,
		st + "part/msg_2/prt_6.json":    `{"id":"prt_6","type":"text","text":"ignored","ignored":true}`,
		// msg_3 has only a step marker: nothing to import, but its tokens count.
		st + "part/msg_3/prt_7.json": `{"id":"prt_7","type":"step-finish"}`,
	})
	items, err := OpenCode(filepath.Join(home, "opencode"), ReadOptions{})
	if err != nil || len(items) != 1 {
		t.Fatalf("OpenCode: %v, %d items", err, len(items))
	}
	// The storage directory itself works too.
	if again, err := OpenCode(filepath.Join(home, "opencode", "storage"), ReadOptions{}); err != nil || len(again) != 1 {
		t.Fatalf("OpenCode(storage): %v, %d items", err, len(again))
	}
	s, probs, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || !strings.Contains(probs[0].String(), "msg_x.json: skipped message: no id, or it belongs to another session") {
		t.Errorf("problems = %v", probs)
	}
	if s.Title != "quiet-lynx" || s.Model != "gpt-5" || s.Provider != "openai" || s.PromptTokens != 15 ||
		s.CompletionTokens != 5 || s.Cost != 0.75 || s.DurationMs != 7000 || s.CreatedAt.UnixMilli() != 1000 || s.ProjectName != "svc" {
		t.Errorf("session = %+v", s)
	}
	if len(s.Messages) != 2 || s.Messages[0].ExternalID != "msg_1" || s.Messages[1].ExternalID != "msg_2" {
		t.Fatalf("messages = %s", summary(s))
	}
	parts, _ := json.Marshal(s.Messages[1].Parts)
	want := `[{"type":"thinking","text":"check the manifest"},{"type":"tool-call","toolName":"bash","args":{"command":"kubectl apply"}},{"type":"tool-result","content":"Error: forbidden","toolName":"bash"},{"type":"tool-call","toolName":"read","args":{"path":"a"}},{"type":"tool-result","content":"{\"lines\":3}","toolName":"read"}]`
	if string(parts) != want {
		t.Errorf("parts\n%s\nwant\n%s", parts, want)
	}
	m := s.Messages[1]
	if *m.PromptTokens != 10 || *m.CompletionTokens != 4 || *m.DurationMs != 4000 || m.CreatedAt.UnixMilli() != 3000 {
		t.Errorf("message = %+v", m)
	}
}

func TestImportOpenCodeMissingStorage(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenCode(dir, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "no session directory") {
		t.Errorf("empty dir: %v", err)
	}
	writeFiles(t, dir, map[string]string{"opencode.db": ""})
	if _, err := OpenCode(dir, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "SQLite") {
		t.Errorf("dir with opencode.db: %v", err)
	}
	writeFiles(t, dir, map[string]string{"storage/session/p/bad.json": `{"id":`})
	items, err := OpenCode(dir, ReadOptions{})
	if err != nil || len(items) != 1 {
		t.Fatalf("%v, %d items", err, len(items))
	}
	if _, _, err := items[0].Read(); err == nil || !strings.Contains(err.Error(), "session file: unexpected end of JSON input") {
		t.Errorf("malformed session file: %v", err)
	}
}
