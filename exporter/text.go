package exporter

import (
	"strings"

	"github.com/hindsight-dev/hindsight/kv"
)

// MessageText is the exported text of a message of any role: its text parts
// (or its textContent when it has none), then, with IncludeTools, its tool
// calls and results as "[tool-call NAME] ARGS" / "[tool-result NAME] CONTENT",
// in part order, joined by blank lines and anonymised unless KeepHomeDirs.
// Other part types are left out. "" means the message has nothing to export.
func MessageText(m kv.Message, opts Options) string {
	var pieces []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			pieces = append(pieces, s)
		}
	}
	if !hasTextPart(m) && m.TextContent != nil {
		add(*m.TextContent)
	}
	for _, p := range m.Parts {
		switch {
		case p.Type == kv.PartText:
			add(p.Content)
		case opts.IncludeTools && (p.Type == kv.PartToolCall || p.Type == kv.PartToolResult):
			add(toolLine(p))
		}
	}
	return anonymize(strings.Join(pieces, "\n\n"), opts)
}

func toolLine(p kv.Part) string {
	label := "[" + p.Type
	if p.ToolName != "" {
		label += " " + p.ToolName
	}
	label += "]"
	body := p.Content
	if p.Type == kv.PartToolCall {
		body = p.Args
	}
	if body = strings.TrimSpace(body); body != "" {
		label += " " + body
	}
	return label
}

func hasTextPart(m kv.Message) bool {
	for _, p := range m.Parts {
		if p.Type == kv.PartText {
			return true
		}
	}
	return false
}

// hasText reports whether MessageText(m, opts) is non-empty, without building
// it: the first pass of an eval export counts exchanges with it.
func hasText(m kv.Message, opts Options) bool {
	textPart := false
	for _, p := range m.Parts {
		switch {
		case p.Type == kv.PartText:
			textPart = true
			if strings.TrimSpace(p.Content) != "" {
				return true
			}
		case opts.IncludeTools && (p.Type == kv.PartToolCall || p.Type == kv.PartToolResult):
			return true
		}
	}
	return !textPart && m.TextContent != nil && strings.TrimSpace(*m.TextContent) != ""
}

func anonymize(s string, opts Options) string {
	if opts.KeepHomeDirs {
		return s
	}
	return Anonymize(s)
}

// Anonymize replaces the user name in home-directory paths with "user":
// /home/alice/x -> /home/user/x, /Users/alice -> /Users/user and
// C:\Users\alice -> C:\Users\user (any drive, either slash, any case, and the
// JSON-escaped C:\\Users\\alice of tool arguments). A Unix home must follow
// the start of the text or a character that cannot end a host name or path
// word, so https://example.com/home/about is left alone. The name ends at a
// separator, whitespace, a quote or other punctuation, so a Windows name with
// a space is only rewritten up to the space. Shared and system profiles
// (Shared, Public, Default, user) are kept. Everything else is left as it is.
func Anonymize(s string) string {
	var b strings.Builder
	last := 0
	replace := func(start, end int) {
		if end == start || keepHome[strings.ToLower(s[start:end])] {
			return
		}
		b.WriteString(s[last:start])
		b.WriteString("user")
		last = end
	}
	for i := 0; i < len(s); {
		j := strings.IndexAny(s[i:], "/:")
		if j < 0 {
			break
		}
		i += j
		next := i + 1
		switch s[i] {
		case '/':
			if i > 0 && isPathWordByte(s[i-1]) {
				break
			}
			for _, home := range []string{"/home/", "/Users/"} {
				if strings.HasPrefix(s[i:], home) {
					start := i + len(home)
					end := nameEnd(s, start)
					replace(start, end)
					next = max(next, end)
					break
				}
			}
		case ':':
			// A drive letter (not inside a word), a separator, "users", a
			// separator, the name.
			if i < 1 || !isASCIILetter(s[i-1]) || i >= 2 && isASCIIAlnum(s[i-2]) {
				break
			}
			k := i + 1 + sepLen(s[i+1:])
			if k == i+1 || len(s) < k+5 || !strings.EqualFold(s[k:k+5], "users") {
				break
			}
			k += 5
			n := sepLen(s[k:])
			if n == 0 {
				break
			}
			end := nameEnd(s, k+n)
			replace(k+n, end)
			next = max(next, end)
		}
		i = next
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// Shared and system profiles name no person.
var keepHome = map[string]bool{"user": true, "shared": true, "public": true, "default": true}

// sepLen is the length of the path separator s starts with: \\ (JSON-escaped),
// \ or /; 0 if none.
func sepLen(s string) int {
	switch {
	case strings.HasPrefix(s, `\\`):
		return 2
	case strings.HasPrefix(s, `\`), strings.HasPrefix(s, "/"):
		return 1
	}
	return 0
}

// nameEnd is where the user name starting at s[start] ends.
func nameEnd(s string, start int) int {
	i := start
	for i < len(s) && !strings.ContainsRune(nameStop, rune(s[i])) {
		i++
	}
	return i
}

const nameStop = "/\\ \t\n\r\f\v\"'<>:;,|*?`()[]{}"

// isPathWordByte: characters that, before "/home/", make it part of a longer
// word or path (a URL's host or path, /var/home).
func isPathWordByte(c byte) bool {
	return isASCIIAlnum(c) || c == '_' || c == '.' || c == '~' || c == '-'
}

func isASCIIAlnum(c byte) bool { return isASCIILetter(c) || c >= '0' && c <= '9' }

// FileName makes a safe attachment name from a title: ASCII letters and
// digits kept (lower-cased), every other run of characters one '-', at most
// 80 characters, cut at a '-' where possible. A title with nothing usable
// gives fallback, which the caller must make safe (a session id is).
func FileName(title, fallback string) string {
	const maxLen = 80
	var b strings.Builder
	dash := false
	for _, c := range title {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
		case c >= 'A' && c <= 'Z':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c + 'a' - 'A')
		default:
			dash = true
		}
		if b.Len() > maxLen {
			break
		}
	}
	name := b.String()
	if len(name) > maxLen {
		name = name[:maxLen]
		if i := strings.LastIndexByte(name, '-'); i >= maxLen/2 {
			name = name[:i]
		}
	}
	name = strings.Trim(name, "-_")
	if name == "" {
		return fallback
	}
	return name
}
