package exporter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/kv"
)

type deepevalCase struct {
	Input            string   `json:"input"`
	ActualOutput     string   `json:"actual_output"`
	ExpectedOutput   *string  `json:"expected_output"`
	Context          []string `json:"context"`
	RetrievalContext []string `json:"retrieval_context"`
	Metadata         struct {
		SessionID      string   `json:"session_id"`
		Exchange       int      `json:"exchange"`
		Status         string   `json:"status"`
		Tags           []string `json:"tags"`
		ContextOmitted int      `json:"context_omitted"`
	} `json:"metadata"`
}

func deepeval(t *testing.T, opts exporter.Options, sessions ...exporter.Session) []deepevalCase {
	t.Helper()
	var buf bytes.Buffer
	err := exporter.WriteEval(&buf, exporter.DeepEval, func(yield func(exporter.Session) error) error {
		for _, s := range sessions {
			if err := yield(s); err != nil {
				return err
			}
		}
		return nil
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var cases []deepevalCase
	if err := json.Unmarshal(buf.Bytes(), &cases); err != nil {
		t.Fatalf("deepeval output is not a JSON array of test cases: %v\n%s", err, buf.Bytes())
	}
	return cases
}

// conv builds messages from "role:text" strings ("role:" is a message
// without text).
func conv(lines ...string) []kv.Message {
	var ms []kv.Message
	for _, l := range lines {
		role, body, _ := strings.Cut(l, ":")
		m := kv.Message{Role: role}
		if body != "" {
			m.Parts = []kv.Part{text(body)}
		}
		ms = append(ms, m)
	}
	return msgs("sessp00000000000", ms...)
}

// TestExchangePairing: each user message pairs with the assistant messages
// after it up to the next user message; tool messages between are context.
func TestExchangePairing(t *testing.T) {
	type ex struct{ in, out, ctx string }
	tests := []struct {
		name string
		msgs []kv.Message
		want []ex
	}{
		{"one exchange", conv("user:q", "assistant:a"), []ex{{"q", "a", ""}}},
		{"no reply", conv("user:q"), nil},
		{"only assistant", conv("assistant:hello", "assistant:again"), nil},
		{"greeting first", conv("assistant:hi", "user:q", "assistant:a"), []ex{{"q", "a", "assistant: hi"}}},
		{"assistant messages joined", conv("user:q", "assistant:a1", "assistant:a2"), []ex{{"q", "a1\n\na2", ""}}},
		{"tool between is context", conv("user:q", "assistant:a1", "tool:out", "assistant:a2", "user:q2", "assistant:b"),
			[]ex{{"q", "a1\n\na2", ""}, {"q2", "b", "user: q|assistant: a1|tool: out|assistant: a2"}}},
		{"unanswered user is context", conv("user:q1", "user:q2", "assistant:a"), []ex{{"q2", "a", "user: q1"}}},
		{"trailing unanswered", conv("user:q", "assistant:a", "user:thanks"), []ex{{"q", "a", ""}}},
		{"empty messages skipped", conv("system:s", "user:", "user:q", "assistant:", "tool:", "assistant:a", "user:", "assistant:more"),
			[]ex{{"q", "a\n\nmore", "system: s"}}},
		{"system between exchanges", conv("user:q1", "assistant:a1", "system:note", "user:q2", "assistant:a2"),
			[]ex{{"q1", "a1", ""}, {"q2", "a2", "user: q1|assistant: a1|system: note"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := exporter.Session{Session: kv.Session{ID: "sessp00000000000"}, Messages: exporter.SliceMessages(tt.msgs)}
			cases := deepeval(t, exporter.Options{}, s)
			var got []ex
			for _, c := range cases {
				got = append(got, ex{c.Input, c.ActualOutput, strings.Join(c.Context, "|")})
				if c.RetrievalContext == nil || len(c.RetrievalContext) != 0 {
					t.Errorf("retrieval_context = %v, want []", c.RetrievalContext)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("exchanges\n got %q\nwant %q", got, tt.want)
			}
			n, err := exporter.CountEval(exporter.DeepEval, s, exporter.Options{})
			if err != nil || n != len(tt.want) {
				t.Errorf("CountEval = %d, %v; want %d", n, err, len(tt.want))
			}
		})
	}
}

// TestDeepEvalCaseCount: a session of N exchanges gives N test cases, and the
// expectedOutput lands on the last one only.
func TestDeepEvalCaseCount(t *testing.T) {
	for n := 0; n <= 7; n++ {
		var lines []string
		for i := range n {
			lines = append(lines, fmt.Sprintf("user:question %d", i), "tool:noise", fmt.Sprintf("assistant:answer %d", i))
			if i%2 == 1 {
				lines = append(lines, "assistant:and more", "user:unanswered")
			}
		}
		s := exporter.Session{
			Session:  kv.Session{ID: "sessp00000000000", Eval: kv.Eval{ExpectedOutput: "ideal"}},
			Messages: exporter.SliceMessages(conv(lines...)),
		}
		cases := deepeval(t, exporter.Options{}, s)
		if len(cases) != n {
			t.Fatalf("session of %d exchanges: %d test cases", n, len(cases))
		}
		for i, c := range cases {
			if c.Metadata.Exchange != i {
				t.Errorf("case %d: metadata.exchange = %d", i, c.Metadata.Exchange)
			}
			last := i == n-1
			if (c.ExpectedOutput != nil) != last || last && *c.ExpectedOutput != "ideal" {
				t.Errorf("n=%d case %d: expected_output = %v, want it on the last case only", n, i, c.ExpectedOutput)
			}
		}
	}
}

// TestContextWindow: the context of an exchange is bounded in messages and
// bytes; what is left out is counted, and a long message is cut.
func TestContextWindow(t *testing.T) {
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf("user:q%d", i), fmt.Sprintf("assistant:a%d", i))
	}
	lines = append(lines, "user:"+strings.Repeat("é", 600), "assistant:last")
	s := exporter.Session{Session: kv.Session{ID: "sessp00000000000"}, Messages: exporter.SliceMessages(conv(lines...))}

	cases := deepeval(t, exporter.Options{MaxContextMessages: 3}, s)
	c := cases[9]
	if want := []string{"assistant: a7", "user: q8", "assistant: a8"}; fmt.Sprint(c.Context) != fmt.Sprint(want) {
		t.Errorf("context %q, want %q", c.Context, want)
	}
	if c.Metadata.ContextOmitted != 15 {
		t.Errorf("context_omitted = %d, want 15", c.Metadata.ContextOmitted)
	}
	if cases[0].Metadata.ContextOmitted != 0 || len(cases[0].Context) != 0 {
		t.Errorf("first exchange: context %q omitted %d", cases[0].Context, cases[0].Metadata.ContextOmitted)
	}

	cases = deepeval(t, exporter.Options{MaxContextBytes: 100}, exporter.Session{
		Session:  kv.Session{ID: "sessp00000000000"},
		Messages: exporter.SliceMessages(conv(append(lines, "user:next", "assistant:done")...)),
	})
	last := cases[len(cases)-1]
	ctx, size := last.Context, 0
	for _, c := range ctx {
		_, text, _ := strings.Cut(c, ": ")
		size += len(text)
		if !utf8.ValidString(c) {
			t.Errorf("cut context entry is not valid UTF-8: %q", c)
		}
	}
	if size > 100 || len(ctx)+last.Metadata.ContextOmitted != 22 {
		t.Errorf("context of %d bytes, %d entries + %d omitted; want <= 100 bytes of the 22 prior messages", size, len(ctx), last.Metadata.ContextOmitted)
	}
	if n := len(ctx); n < 2 || !strings.HasSuffix(ctx[n-2], "é [truncated]") || ctx[n-1] != "assistant: last" {
		t.Errorf("context %q, want it to end with the cut long message and the last reply", ctx)
	}
}

// TestJSONStrings: control characters, invalid UTF-8, U+2028 and HTML
// characters survive as valid JSON and come back as sent (invalid bytes as
// U+FFFD).
func TestJSONStrings(t *testing.T) {
	weird := "nul\x00 bell\x07 esc\x1b \"quoted\" back\\slash <b>&amp;</b> \u2028\u2029 bad\xff\xfe end\t\r\n"
	ms := msgs("sessw00000000000",
		kv.Message{Role: "user", Parts: []kv.Part{text(weird)}},
		kv.Message{Role: "assistant", Parts: []kv.Part{text("ok " + weird)}},
	)
	want := strings.TrimSpace(string([]rune(weird))) // each invalid byte becomes U+FFFD
	s := exporter.Session{Session: kv.Session{ID: "sessw00000000000", Eval: kv.Eval{ExpectedOutput: weird}}, Messages: exporter.SliceMessages(ms)}
	for _, f := range []exporter.EvalFormat{exporter.ChatJSONL, exporter.OpenAIEvals} {
		var buf bytes.Buffer
		if err := exporter.WriteEval(&buf, f, func(yield func(exporter.Session) error) error { return yield(s) }, exporter.Options{}); err != nil {
			t.Fatal(err)
		}
		checkJSONLines(t, buf.Bytes())
		if !strings.Contains(buf.String(), `<b>&amp;</b>`) {
			t.Errorf("%s: HTML characters escaped; want them as written", f)
		}
	}
	cases := deepeval(t, exporter.Options{}, s)
	if len(cases) != 1 || cases[0].Input != want || cases[0].ActualOutput != "ok "+want {
		t.Errorf("round trip: %+v\nwant input %q", cases, want)
	}
}

// TestMessageText: the text rule for every role, with and without tools.
func TestMessageText(t *testing.T) {
	tests := []struct {
		name  string
		m     kv.Message
		tools bool
		want  string
	}{
		{"text parts", kv.Message{Role: "assistant", Parts: []kv.Part{text(" a "), text(""), text("b")}}, false, "a\n\nb"},
		{"textContent when no text part", kv.Message{Role: "user", TextContent: ptr(" hi ")}, false, "hi"},
		{"text part wins over textContent", kv.Message{Role: "user", TextContent: ptr("x"), Parts: []kv.Part{text("y")}}, false, "y"},
		{"empty text part still wins", kv.Message{Role: "user", TextContent: ptr("x"), Parts: []kv.Part{text("  ")}}, false, ""},
		{"system and tool roles kept", kv.Message{Role: "tool", Parts: []kv.Part{text("out")}}, false, "out"},
		{"tools left out by default", kv.Message{Role: "assistant", Parts: []kv.Part{call("Bash", `{"c":1}`), result("Bash", "r")}}, false, ""},
		{"tools included", kv.Message{Role: "assistant", TextContent: ptr("t"), Parts: []kv.Part{call("Bash", `{"c":1}`), result("", "r")}}, true,
			"t\n\n[tool-call Bash] {\"c\":1}\n\n[tool-result] r"},
		{"other parts never", kv.Message{Role: "assistant", Parts: []kv.Part{{Type: "thinking", Raw: json.RawMessage(`{}`)}}}, true, ""},
		{"anonymised", kv.Message{Role: "user", TextContent: ptr("see /home/bob/x")}, false, "see /home/user/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exporter.MessageText(tt.m, exporter.Options{IncludeTools: tt.tools}); got != tt.want {
				t.Errorf("MessageText = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAnonymize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/home/alice/proj/main.go", "/home/user/proj/main.go"},
		{"cd /home/alice && ls", "cd /home/user && ls"},
		{"/Users/Alice.Smith/Library", "/Users/user/Library"},
		{"/Users/Shared/x and /home/user/y", "/Users/Shared/x and /home/user/y"},
		{`"path":"/home/bob-2/x"`, `"path":"/home/user/x"`},
		{"file:///home/carol/a.txt", "file:///home/user/a.txt"},
		{"(/home/dave)", "(/home/user)"},
		{"https://example.com/home/about", "https://example.com/home/about"},
		{"/var/home/erin", "/var/home/erin"},
		{`C:\Users\Frank\src`, `C:\Users\user\src`},
		{`c:/users/frank/src`, `c:/users/user/src`},
		{`{"cwd":"D:\\Users\\grace\\x"}`, `{"cwd":"D:\\Users\\user\\x"}`},
		{`C:\Users\Public\x`, `C:\Users\Public\x`},
		{"/home/a /home/b\n/Users/c", "/home/user /home/user\n/Users/user"},
		{"no paths here, users of /homes/", "no paths here, users of /homes/"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := exporter.Anonymize(tt.in); got != tt.want {
			t.Errorf("Anonymize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFileName(t *testing.T) {
	tests := []struct{ title, want string }{
		{"Fix the login redirect bug", "fix-the-login-redirect-bug"},
		{"  ../../etc/passwd  ", "etc-passwd"},
		{`evil"; filename=x.exe`, "evil-filename-x-exe"},
		{"snake_case OK", "snake_case-ok"},
		{"修复登录 🎉", "sess00000000000a"},
		{"", "sess00000000000a"},
		{"--", "sess00000000000a"},
		{"ünïcødé title", "n-c-d-title"},
		{strings.Repeat("word ", 40), strings.TrimSuffix(strings.Repeat("word-", 16), "-")},
		{strings.Repeat("x", 200), strings.Repeat("x", 80)},
	}
	for _, tt := range tests {
		got := exporter.FileName(tt.title, "sess00000000000a")
		if got != tt.want {
			t.Errorf("FileName(%q) = %q, want %q", tt.title, got, tt.want)
		}
		for _, c := range got {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				t.Errorf("FileName(%q) = %q holds %q", tt.title, got, c)
			}
		}
	}
}

func TestParseFormats(t *testing.T) {
	for _, name := range []string{"", "json", "markdown", "jsonl"} {
		if _, err := exporter.ParseSessionFormat(name); err != nil {
			t.Errorf("ParseSessionFormat(%q): %v", name, err)
		}
	}
	for _, name := range []string{"", "deepeval", "chat-jsonl", "text", "openai-evals", "promptfoo"} {
		if _, err := exporter.ParseEvalFormat(name); err != nil {
			t.Errorf("ParseEvalFormat(%q): %v", name, err)
		}
	}
	for _, name := range []string{"csv", "JSON", "deepeval ", "md"} {
		if _, err := exporter.ParseSessionFormat(name); err == nil {
			t.Errorf("ParseSessionFormat(%q): no error", name)
		}
		if _, err := exporter.ParseEvalFormat(name); err == nil {
			t.Errorf("ParseEvalFormat(%q): no error", name)
		}
	}
}
