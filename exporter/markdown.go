package exporter

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Message text goes into a markdown export as literal text: whatever a message
// holds (headings, fences, HTML, link definitions, list markers, "## User"),
// it cannot add structure to the document, and a CommonMark reader shows it as
// written. The escaping is the minimum that guarantees this:
//
//   - everywhere: \ ` * [ ] < ~ | (emphasis, code, links, HTML and autolinks,
//     GFM strikethrough and tables), _ unless it is inside a word, and & when
//     it could start an entity;
//   - at the start of every line: # > - + = and the . or ) of "12." (headings,
//     block quotes, lists, thematic breaks, setext underlines);
//   - a line's leading space or tab becomes &#32; or &#9;, so indentation is
//     kept and never makes a code block;
//   - line breaks inside a paragraph are hard breaks (a trailing backslash);
//     blank lines separate paragraphs; trailing spaces are dropped.
//
// Code in tool calls and results goes into fenced blocks whose fence is longer
// than any backtick run in the content, so nothing inside can close them.

// writeMarkdownText writes text as escaped paragraphs, each followed by a
// blank line. It reports whether anything was written.
func writeMarkdownText(w *writer, text string) bool {
	var para []string
	wrote := false
	flush := func() {
		for i, l := range para {
			w.raw(escapeMarkdownLine(l, false))
			if i < len(para)-1 {
				w.raw(`\`)
			}
			w.raw("\n")
		}
		w.raw("\n")
		para = para[:0]
		wrote = true
	}
	for l := range strings.SplitSeq(normalizeNewlines(text), "\n") {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			if len(para) > 0 {
				flush()
			}
			continue
		}
		para = append(para, l)
	}
	if len(para) > 0 {
		flush()
	}
	return wrote
}

// escapeInline escapes a one-line value that follows other text on its line
// (a header list value, a tool name). Newlines become spaces.
func escapeInline(s string) string {
	s = strings.Join(strings.Fields(normalizeNewlines(s)), " ")
	return escapeMarkdownLine(s, true)
}

// escapeMarkdownLine escapes one line of text. heading also escapes every '#'
// (a '#' run at the end of a heading would be read as its closing sequence);
// callers pass it for heading text and inline values.
func escapeMarkdownLine(l string, heading bool) string {
	var b strings.Builder
	b.Grow(len(l) + 8)
	i := 0
	switch {
	case l == "":
		return ""
	case l[0] == ' ':
		b.WriteString("&#32;")
		i = 1
	case l[0] == '\t':
		b.WriteString("&#9;")
		i = 1
	case strings.IndexByte("#>-+=", l[0]) >= 0:
		b.WriteByte('\\')
		b.WriteByte(l[0])
		i = 1
	default:
		// "1." or "1)" starts an ordered list (up to 9 digits).
		j := 0
		for j < len(l) && j < 10 && l[j] >= '0' && l[j] <= '9' {
			j++
		}
		if j > 0 && j <= 9 && j < len(l) && (l[j] == '.' || l[j] == ')') {
			b.WriteString(l[:j])
			b.WriteByte('\\')
			b.WriteByte(l[j])
			i = j + 1
		}
	}
	for ; i < len(l); i++ {
		c := l[i]
		switch c {
		case '\\':
			if i == len(l)-1 {
				// A line ending in \\ followed by the hard-break \ is
				// read by some parsers (goldmark) as a backslash and a
				// soft break; a character reference is unambiguous.
				b.WriteString("&#92;")
				continue
			}
			b.WriteByte('\\')
		case '`', '*', '[', ']', '<', '~', '|':
			b.WriteByte('\\')
		case '_':
			if !intraword(l, i) {
				b.WriteByte('\\')
			}
		case '&':
			if i+1 < len(l) && (l[i+1] == '#' || isASCIILetter(l[i+1])) {
				b.WriteByte('\\')
			}
		case '#':
			if heading {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// intraword reports whether the '_' at l[i] is between two letters or digits,
// where CommonMark never reads it as emphasis.
func intraword(l string, i int) bool {
	if i == 0 || i+1 >= len(l) {
		return false
	}
	prev, _ := utf8.DecodeLastRuneInString(l[:i])
	next, _ := utf8.DecodeRuneInString(l[i+1:])
	return isWordRune(prev) && isWordRune(next)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// writeFenced writes content as a fenced code block with info string info.
func writeFenced(w *writer, info, content string) {
	content = strings.TrimRight(normalizeNewlines(content), "\n")
	fence := strings.Repeat("`", max(3, longestRun(content, '`')+1))
	w.raw(fence + info + "\n")
	if content != "" {
		w.raw(content)
		w.raw("\n")
	}
	w.raw(fence + "\n\n")
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
