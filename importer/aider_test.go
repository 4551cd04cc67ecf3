package importer

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const aiderFixture = `stray text
# aider chat started at 2025-10-20 21:49:17

> You can skip this check with --no-gitignore  

# aider chat started at 2025-10-20 21:50:00

> /home/dev/.local/bin/aider --model gemini/gemini-2.5-pro  
> Aider v0.86.1  
> Main model: gemini/gemini-2.5-pro with diff-fenced edit format, 32k think tokens  
> Weak model: gemini/gemini-2.5-flash  

#### /add src/app.py  
> Added src/app.py to the chat  

#### Fix the crash when the config  
#### 
#### file is missing.  

The crash comes from ` + "`load()`" + `.

> quoted? no: this is aider's output
src/app.py
<<<<<<< SEARCH
    cfg = open(path)
=======
    cfg = open(path) if os.path.exists(path) else None
>>>>>>> REPLACE

> Tokens: 2.4k sent, 91 received. Cost: $0.0085 message, $0.0085 session.  
> Applied edit to src/app.py  

#### thanks  

You're welcome.

> Tokens: 2.5k sent, 1.2k cache write, 119 received. Cost: $0.0092 message, $0.02 session.  

# aider chat started at 2023-07-06 99:18:00

> Model: gpt-4  

#### what does main do?  

It starts the server.
`

func TestImportReadAider(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, home, map[string]string{
		"code/app/" + aiderHistory:                  aiderFixture,
		"code/old/" + aiderHistory:                  strings.ReplaceAll("# aider chat started at 2024-01-02 03:04:05\n\n> Model: gpt-4  \n\n#### hello  \n\nhi\n", "\n", "\r\n"),
		aiderHistory:                                "# aider chat started at 2024-05-05 10:00:00\n\n#### from home  \n\nok\n",
		"code/app/node_modules/dep/" + aiderHistory: "# aider chat started at 2024-05-05 10:00:00\n\n#### dependency  \n",
		".cache/x/" + aiderHistory:                  "# aider chat started at 2024-05-05 10:00:00\n\n#### hidden  \n",
		"a/b/c/d/e/" + aiderHistory:                 "# aider chat started at 2024-05-05 10:00:00\n\n#### too deep  \n",
	})
	items, err := Aider(home, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, it := range items {
		paths = append(paths, strings.TrimPrefix(it.Path, home+string(filepath.Separator)))
	}
	// Runs without a prompt are not sessions; dependencies, hidden and too deep directories are not searched.
	want := []string{aiderHistory, "code/app/" + aiderHistory, "code/app/" + aiderHistory, "code/old/" + aiderHistory}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Fatalf("items = %v, want %v", paths, want)
	}

	s, probs, err := items[1].Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || probs[0].Line != 1 || !strings.Contains(probs[0].String(), "text before the first") {
		t.Errorf("problems = %v", probs)
	}
	wantAt := time.Date(2025, 10, 20, 21, 50, 0, 0, time.Local)
	if !s.CreatedAt.Equal(wantAt) || s.Source != "aider" || s.Model != "gemini/gemini-2.5-pro" || s.Provider != "gemini" ||
		s.PromptTokens != 4900 || s.CompletionTokens != 210 || s.Cost != 0.02 || s.Title != "Fix the crash when the config\n\nfile is missing." ||
		s.ProjectPath != filepath.Join(home, "code", "app") || s.ProjectName != "app" || !strings.HasPrefix(s.ExternalID, "aider-") {
		t.Errorf("session = %+v", s)
	}
	var roles []string
	for _, m := range s.Messages {
		roles = append(roles, m.Role)
		if !m.CreatedAt.Equal(wantAt) {
			t.Errorf("%s at %v, want the run's start", m.ExternalID, m.CreatedAt)
		}
	}
	if got := strings.Join(roles, " "); got != "user tool user assistant tool assistant tool user assistant tool" {
		t.Fatalf("roles = %s\n%s", got, summary(s))
	}
	if got := s.Messages[2].Text(); got != "Fix the crash when the config\n\nfile is missing." {
		t.Errorf("multi-line prompt = %q", got)
	}
	ans := s.Messages[5]
	if !strings.Contains(ans.Text(), ">>>>>>> REPLACE") || ans.Model != "gemini/gemini-2.5-pro" || *ans.PromptTokens != 2400 || *ans.CompletionTokens != 91 {
		t.Errorf("answer = %+v %q", ans, ans.Text())
	}
	if p := s.Messages[6].Parts[0]; p.Type != PartToolResult || p.Content != "Tokens: 2.4k sent, 91 received. Cost: $0.0085 message, $0.0085 session.\nApplied edit to src/app.py" {
		t.Errorf("aider's output = %+v", p)
	}

	bad, probs, err := items[2].Read()
	if err != nil || len(probs) != 1 || probs[0].Line != 39 || !bad.CreatedAt.IsZero() || bad.Model != "gpt-4" || len(bad.Messages) != 2 {
		t.Errorf("run with a bad start: %+v %v %v", bad, probs, err)
	}
	crlf, _, err := items[3].Read()
	if err != nil || len(crlf.Messages) != 2 || crlf.Messages[0].Text() != "hello" || crlf.Messages[1].Text() != "hi" {
		t.Errorf("CRLF history: %v %s", err, summary(crlf))
	}

	// Appending a run keeps the earlier runs' ids and messages.
	f, err := os.OpenFile(filepath.Join(home, "code", "app", aiderHistory), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n# aider chat started at 2025-10-21 08:00:00\n\n#### next day  \n\nsure\n")
	f.Close()
	again, err := Aider(home, ReadOptions{})
	if err != nil || len(again) != 5 {
		t.Fatalf("after appending: %v, %d items", err, len(again))
	}
	s2, _, _ := again[1].Read()
	if s2.ExternalID != s.ExternalID || summary(s2) != summary(s) {
		t.Errorf("re-read changed the run:\n%s\n%s", summary(s), summary(s2))
	}
	if last, _, _ := again[3].Read(); last.ExternalID == s.ExternalID || len(last.Messages) != 2 {
		t.Errorf("appended run = %s", summary(last))
	}
}

// The real aider histories: every run with a prompt is a session, and its
// prompts are the groups of consecutive "####" lines the run holds.
func TestImportRealAider(t *testing.T) {
	src := needTranscripts(t, "aider")
	files, _ := filepath.Glob(filepath.Join(src, "*"+aiderHistory))
	if len(files) == 0 {
		t.Fatal("no aider histories in " + src)
	}
	for _, f := range files {
		readTwice(t, Aider, f)
		// Independently: prompts per run, in order.
		var prompts []int
		inRun, prev := false, false
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			l := strings.TrimSuffix(sc.Text(), "\r")
			if strings.HasPrefix(l, "# aider chat started at ") {
				prompts, inRun = append(prompts, 0), true
			}
			u := strings.HasPrefix(l, "#### ") || strings.TrimRight(l, " ") == "####"
			if u && !prev && inRun {
				prompts[len(prompts)-1]++
			}
			prev = u
		}
		fh.Close()
		var want []int
		for _, n := range prompts {
			if n > 0 {
				want = append(want, n)
			}
		}
		items, err := Aider(f, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != len(want) {
			t.Errorf("%s: %d sessions, the file has %d runs with prompts", filepath.Base(f), len(items), len(want))
			continue
		}
		ids := map[string]bool{}
		for i, it := range items {
			s, probs, err := it.Read()
			if err != nil || len(probs) > 0 {
				t.Errorf("%s run %d: %v %v", filepath.Base(f), i, err, probs)
			}
			users := 0
			for _, m := range s.Messages {
				if m.Role == "user" {
					users++
				}
				if ids[s.ExternalID+m.ExternalID] {
					t.Errorf("%s: message id %s twice", filepath.Base(f), m.ExternalID)
				}
				ids[s.ExternalID+m.ExternalID] = true
			}
			if users != want[i] || s.CreatedAt.IsZero() || s.Title == "" {
				t.Errorf("%s run %d: %d prompts (want %d), created %v, title %q", filepath.Base(f), i, users, want[i], s.CreatedAt, s.Title)
			}
		}
	}
}
