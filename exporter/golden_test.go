package exporter_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/exporter"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./exporter -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./exporter -update rewrites it after review)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestGolden pins every format on the fixture. Each output is also checked
// for being the format it claims to be, so a golden file cannot pin a broken
// file.
func TestGolden(t *testing.T) {
	withTools := exporter.Options{IncludeTools: true}
	fx := fixture()
	session := []struct {
		file   string
		format exporter.SessionFormat
		opts   exporter.Options
		check  func(t *testing.T, out []byte)
	}{
		{"session.json", exporter.JSON, withTools, checkJSON},
		{"session-raw.json", exporter.JSON, exporter.Options{KeepHomeDirs: true}, checkJSON},
		{"session.jsonl", exporter.JSONL, withTools, checkJSONLines},
		{"session.md", exporter.Markdown, withTools, func(t *testing.T, out []byte) { checkMarkdown(t, out, fx[0].msgs, withTools) }},
		{"session-notools.md", exporter.Markdown, exporter.Options{}, func(t *testing.T, out []byte) {
			checkMarkdown(t, out, fx[0].msgs, exporter.Options{})
		}},
		{"session-untitled.md", exporter.Markdown, withTools, func(t *testing.T, out []byte) { checkMarkdown(t, out, fx[1].msgs, withTools) }},
	}
	// covered collects the golden files the cases compared, so a golden file
	// that no case checks any more (a dropped or renamed case) fails the test.
	covered := map[string]bool{}
	for _, c := range session {
		t.Run(c.file, func(t *testing.T) {
			f := fx[0]
			if strings.Contains(c.file, "untitled") {
				f = fx[1]
			}
			var buf bytes.Buffer
			if err := exporter.WriteSession(&buf, c.format, f.session, exporter.SliceMessages(f.msgs), c.opts); err != nil {
				t.Fatal(err)
			}
			c.check(t, buf.Bytes())
			golden(t, c.file, buf.Bytes())
		})
		covered[c.file] = true
	}
	evals := []struct {
		file   string
		format exporter.EvalFormat
		opts   exporter.Options
		check  func(t *testing.T, out []byte)
	}{
		{"evals-deepeval.json", exporter.DeepEval, exporter.Options{}, checkJSON},
		{"evals-deepeval-tools.json", exporter.DeepEval, withTools, checkJSON},
		{"evals-chat.jsonl", exporter.ChatJSONL, exporter.Options{}, checkJSONLines},
		{"evals-chat-tools.jsonl", exporter.ChatJSONL, withTools, checkJSONLines},
		{"evals-text.txt", exporter.Text, exporter.Options{}, checkText},
		{"evals-openai.jsonl", exporter.OpenAIEvals, exporter.Options{}, checkJSONLines},
		{"evals-promptfoo.json", exporter.Promptfoo, exporter.Options{}, checkJSON},
	}
	for _, c := range evals {
		t.Run(c.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := exporter.WriteEval(&buf, c.format, fixtureSessions(), c.opts); err != nil {
				t.Fatal(err)
			}
			c.check(t, buf.Bytes())
			golden(t, c.file, buf.Bytes())
		})
		covered[c.file] = true
	}
	files, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !f.IsDir() && !covered[f.Name()] {
			t.Errorf("testdata/%s is a golden file no case checks: add a case or delete it", f.Name())
		}
	}
}

// checkText checks the plain-text eval format: valid UTF-8 and one header
// block per fixture session, each naming the session's id.
func checkText(t *testing.T, out []byte) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Fatal("text output is not valid UTF-8")
	}
	for _, f := range fixture() {
		if !bytes.Contains(out, []byte("ID: "+f.session.ID)) {
			t.Errorf("text output has no header for session %s:\n%s", f.session.ID, out)
		}
	}
}

func checkJSON(t *testing.T, out []byte) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("output is not valid JSON:\n%s", out)
	}
}

// checkJSONLines: every line is one JSON object and the file ends with a newline.
func checkJSONLines(t *testing.T, out []byte) {
	t.Helper()
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Errorf("output does not end with a newline")
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Errorf("line %d is not a JSON object: %v\n%s", n, err, sc.Bytes())
		}
	}
	if n == 0 {
		t.Errorf("no lines")
	}
}
