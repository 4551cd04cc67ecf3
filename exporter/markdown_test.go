package exporter_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/kv"
)

// block is one block of a parsed markdown document, reduced to what the
// exporter promises: "h1:title", "item:...", "h2:Role", "p:text",
// "label:Tool call: NAME", "code[info]:content".
type block string

// parseMarkdown parses out with goldmark (plain CommonMark) and reduces it to
// blocks. Any node the exporter never writes (a third heading level, a block
// quote, HTML, a link, emphasis outside a tool label, a thematic break, an
// indented code block, a nested list, ...) is stray structure: the test fails.
func parseMarkdown(t *testing.T, out []byte) []block {
	t.Helper()
	doc := goldmark.New().Parser().Parse(gmtext.NewReader(out))
	var blocks []block
	stray := func(n ast.Node) {
		t.Errorf("stray %s in markdown export:\n%s", n.Kind(), out)
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			if n.Level > 2 {
				stray(n)
			}
			blocks = append(blocks, block(fmt.Sprintf("h%d:%s", n.Level, inlineText(t, n, out, stray))))
		case *ast.List:
			if len(blocks) != 1 {
				stray(n) // only the header list, right after the title
			}
			for item := n.FirstChild(); item != nil; item = item.NextSibling() {
				p := item.FirstChild()
				if p == nil || p.NextSibling() != nil || (p.Kind() != ast.KindParagraph && p.Kind() != ast.KindTextBlock) {
					stray(item)
					continue
				}
				blocks = append(blocks, block("item:"+inlineText(t, p, out, stray)))
			}
		case *ast.Paragraph:
			if e, ok := n.FirstChild().(*ast.Emphasis); ok && e.Level == 2 {
				label := inlineText(t, e, out, stray)
				if label != "Tool call:" && label != "Tool result:" {
					stray(e)
				}
				rest := &ast.Paragraph{}
				for c := e.NextSibling(); c != nil; {
					next := c.NextSibling()
					rest.AppendChild(rest, c)
					c = next
				}
				blocks = append(blocks, block("label:"+label+inlineText(t, rest, out, stray)))
				continue
			}
			blocks = append(blocks, block("p:"+inlineText(t, n, out, stray)))
		case *ast.FencedCodeBlock:
			var b bytes.Buffer
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				b.Write(seg.Value(out))
			}
			blocks = append(blocks, block(fmt.Sprintf("code[%s]:%s", n.Language(out), strings.TrimSuffix(b.String(), "\n"))))
		default:
			stray(n)
		}
	}
	return blocks
}

// inlineText is the text a reader sees: escapes and character references
// resolved, line breaks as "\n". Only plain text and breaks are allowed.
func inlineText(t *testing.T, n ast.Node, src []byte, stray func(ast.Node)) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Segment.Value(src)
			if c.IsRaw() {
				b.Write(v)
			} else {
				b.WriteString(unescape(v))
			}
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte('\n')
			}
		case *ast.String:
			b.Write(c.Value)
		default:
			stray(c)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// unescape resolves backslash escapes and character references in one pass,
// as a CommonMark renderer does.
func unescape(v []byte) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]) {
			b.WriteByte(v[i+1])
			i++
			continue
		}
		if c == '&' {
			if j := bytes.IndexByte(v[i:], ';'); j > 1 && j < 40 {
				tok := v[i : i+j+1]
				if r := util.ResolveEntityNames(util.ResolveNumericReferences(tok)); !bytes.Equal(r, tok) {
					b.Write(r)
					i += j
					continue
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// wantBlocks is what a reader of the markdown export of msgs must see.
func wantBlocks(msgs []kv.Message, opts exporter.Options) []block {
	anon := func(s string) string {
		if opts.KeepHomeDirs {
			return s
		}
		return exporter.Anonymize(s)
	}
	var out []block
	for _, m := range msgs {
		role := map[string]string{"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool", "unknown": "Unknown"}[m.Role]
		out = append(out, block("h2:"+role))
		n := len(out)
		hasTextPart := false
		for _, p := range m.Parts {
			hasTextPart = hasTextPart || p.Type == kv.PartText
		}
		if !hasTextPart && m.TextContent != nil {
			out = append(out, paragraphs(anon(*m.TextContent))...)
		}
		for _, p := range m.Parts {
			switch {
			case p.Type == kv.PartText:
				out = append(out, paragraphs(anon(p.Content))...)
			case opts.IncludeTools && p.Type == kv.PartToolCall:
				var pretty bytes.Buffer
				args, info := strings.TrimSpace(p.Args), "json"
				if err := json.Indent(&pretty, []byte(args), "", "  "); err != nil {
					info = "text"
					pretty.Reset()
					pretty.WriteString(normalize(args))
				}
				out = append(out, block("label:Tool call: "+p.ToolName), block("code["+info+"]:"+anon(pretty.String())))
			case opts.IncludeTools && p.Type == kv.PartToolResult:
				out = append(out, block("label:Tool result: "+p.ToolName), block("code[text]:"+anon(normalize(p.Content))))
			}
		}
		if len(out) == n {
			out = append(out, "p:(no text)")
		}
	}
	return out
}

func normalize(s string) string {
	return strings.TrimRight(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n")
}

// paragraphs splits text the way a reader sees it: trailing spaces dropped,
// runs of blank lines one paragraph break, leading indentation kept.
func paragraphs(s string) []block {
	var out []block
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, block("p:"+strings.Join(cur, "\n")))
			cur = nil
		}
	}
	for _, l := range strings.Split(normalize(s), "\n") {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			flush()
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return out
}

// checkMarkdown: the export of msgs parses to exactly the title, the header
// list and one section per message holding exactly the message's content.
func checkMarkdown(t *testing.T, out []byte, msgs []kv.Message, opts exporter.Options) {
	t.Helper()
	got := parseMarkdown(t, out)
	var body []block
	for i, b := range got {
		if i == 0 && !strings.HasPrefix(string(b), "h1:") {
			t.Fatalf("first block %q, want the title heading", b)
		}
		if strings.HasPrefix(string(b), "h2:") {
			body = got[i:]
			break
		}
	}
	want := wantBlocks(msgs, opts)
	if strings.Join(blocksStrings(body), "\n\x00\n") != strings.Join(blocksStrings(want), "\n\x00\n") {
		t.Errorf("markdown does not round-trip:\n got: %q\nwant: %q\n--- markdown:\n%s", body, want, out)
	}
}

func blocksStrings(bs []block) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// TestMarkdownRoundTrip feeds text built to break markdown structure through
// the exporter and a CommonMark parser: each must come back as exactly its
// own text, in its own section, with no structure of its own.
func TestMarkdownRoundTrip(t *testing.T) {
	nasty := []string{
		"# heading", "## User", "###### six", "#hashtag", "# ", "#",
		"```", "```go\nfunc open() {", "~~~\nfenced", "````\n```\n````",
		"    indented code", "\tTabbed code", "  two spaces", "   \tmixed",
		"> quote", ">", "- item", "* item", "+ item", "-", "+1", "-1 degrees",
		"1. item", "1) item", "2024. was a year", "1.5 is a number", "1234567890. long number",
		"---", "***", "___", "- - -", "* * *", "_ _ _", "===", "text\n===", "text\n---", "text\n- item",
		"<div>html block</div>", "<!-- comment -->", "<script>alert(1)</script>", "<", ">", "a < b > c",
		"[ref]: http://example.com", "[link](http://x)", "![img](x.png)", "<http://auto.link>", "[", "]",
		"`code`", "``double``", "**bold**", "*em*", "_em_", "__init__", "snake_case_name", "a_b_c", "x_", "_x",
		"a * b * c", "*", "&amp; &#35; &copy; &", "AT&T", "&&", "back\\slash\\", "\\", "foo\\\nbar", "C:\\Users\\user\\x",
		"trailing  \nspaces", "line1\nline2\n\n\n\npara2", "a\r\nb\rc", "| a | b |\n|---|---|\n| 1 | 2 |",
		"~~strike~~", "💥 unicode — ü 日本語", "\u3000ideographic space", "tab\tinside", "=", "a = b",
		"* [ ] task", "1. one\n2. two", "line\n    indented continuation", "line\n# heading after line",
		"line\n> quote after line", "line\n```\nfence after line", "line\n<div>", "***bold italic***",
	}
	for i, s := range nasty {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			ms := msgs("sessn00000000000",
				kv.Message{Role: "user", Parts: []kv.Part{text(s)}},
				kv.Message{Role: "assistant", TextContent: ptr(s)},
				kv.Message{Role: "tool", Parts: []kv.Part{result("Bash", s), call("Bash", s)}},
			)
			sess := kv.Session{ID: "sessn00000000000", Title: s, ProjectName: s, Model: s}
			var buf bytes.Buffer
			opts := exporter.Options{IncludeTools: true, KeepHomeDirs: true}
			if err := exporter.WriteSession(&buf, exporter.Markdown, sess, exporter.SliceMessages(ms), opts); err != nil {
				t.Fatal(err)
			}
			checkMarkdown(t, buf.Bytes(), ms, opts)
			blocks := parseMarkdown(t, buf.Bytes())
			title := strings.Join(strings.Fields(normalize(s)), " ")
			if title == "" {
				title = "Untitled session"
			}
			if string(blocks[0]) != "h1:"+title {
				t.Errorf("title block %q, want %q", blocks[0], "h1:"+title)
			}
		})
	}
}
