package dashboard

import (
	"html/template"
	"regexp"
	"strconv"
	"strings"
)

// renderMarkdown renders message text as a small, safe subset of Markdown:
// fenced code blocks, ATX headings, bullet and numbered lists, block quotes,
// thematic breaks and paragraphs (a line break inside a paragraph is kept),
// and inline code, **bold**, *italic*, _italic_, [links](https://...) and
// bare http(s) URLs. Every character of the input reaches the output escaped:
// the only markup is what this function writes itself, links go only to
// http and https URLs, and raw HTML in the text is shown as text. Anything it
// does not recognise is shown literally.
//
// The work is linear in the input apart from small bounded look-aheads, so a
// hostile 1 MiB message cannot stall a page.
func renderMarkdown(src string) template.HTML {
	var b strings.Builder
	renderBlocks(&b, src, 0)
	return template.HTML(b.String())
}

// maxQuoteDepth bounds nested block quotes; deeper ">" are shown as text.
const maxQuoteDepth = 3

func renderBlocks(b *strings.Builder, src string, depth int) {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n"), "\n")
	var para []string
	flushPara := func() {
		if len(para) == 0 {
			return
		}
		b.WriteString("<p>")
		for i, l := range para {
			if i > 0 {
				b.WriteString("<br>\n")
			}
			b.WriteString(inline(strings.TrimSpace(l)))
		}
		b.WriteString("</p>\n")
		para = para[:0]
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			flushPara()
		case fenceOpen(line) != "":
			flushPara()
			fence := fenceOpen(line)
			info := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), fence[:1]))
			var code []string
			i++
			for ; i < len(lines); i++ {
				if isFenceClose(lines[i], fence) {
					break
				}
				code = append(code, lines[i])
			}
			b.WriteString("<pre><code")
			if lang := codeLanguage(info); lang != "" {
				b.WriteString(` class="language-` + lang + `"`)
			}
			b.WriteString(">")
			b.WriteString(template.HTMLEscapeString(strings.Join(code, "\n")))
			b.WriteString("</code></pre>\n")
		case headingRe.MatchString(line):
			flushPara()
			m := headingRe.FindStringSubmatch(line)
			level := min(len(m[1])+2, 6) // the page and the message own h1 and h2
			text := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(m[2]), "#"))
			tag := "h" + strconv.Itoa(level)
			b.WriteString("<" + tag + ">" + inline(text) + "</" + tag + ">\n")
		case ruleRe.MatchString(line):
			flushPara()
			b.WriteString("<hr>\n")
		case listItemRe.MatchString(line):
			flushPara()
			i = renderList(b, lines, i) - 1
		case strings.HasPrefix(trimmed, ">") && depth < maxQuoteDepth:
			flushPara()
			var quote []string
			for ; i < len(lines); i++ {
				t := strings.TrimSpace(lines[i])
				if !strings.HasPrefix(t, ">") {
					break
				}
				quote = append(quote, strings.TrimSpace(strings.TrimPrefix(t, ">")))
			}
			i--
			b.WriteString("<blockquote>")
			renderBlocks(b, strings.Join(quote, "\n"), depth+1)
			b.WriteString("</blockquote>\n")
		default:
			para = append(para, line)
		}
	}
	flushPara()
}

var (
	headingRe  = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*))?$`)
	ruleRe     = regexp.MustCompile(`^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$`)
	listItemRe = regexp.MustCompile(`^([ \t]*)([-*+]|[0-9]{1,9}[.)])[ \t]+(.*)$`)
	langRe     = regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,30}$`)
)

// fenceOpen returns the fence (``` or ~~~, possibly longer) that line opens,
// or "".
func fenceOpen(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return ""
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 || t[0] == '`' && strings.Contains(t[n:], "`") {
		return ""
	}
	return t[:n]
}

func isFenceClose(line, fence string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == ""
}

func codeLanguage(info string) string {
	lang, _, _ := strings.Cut(info, " ")
	if langRe.MatchString(lang) {
		return lang
	}
	return ""
}

// renderList writes the list starting at lines[i] and returns the index of
// the first line after it. Nested items are shown flat; an indented line
// that is not an item continues the item before it.
func renderList(b *strings.Builder, lines []string, i int) int {
	m := listItemRe.FindStringSubmatch(lines[i])
	ordered := m[2][0] >= '0' && m[2][0] <= '9'
	if ordered {
		b.WriteString("<ol")
		if n, _ := strconv.Atoi(m[2][:len(m[2])-1]); n != 1 {
			b.WriteString(` start="` + strconv.Itoa(n) + `"`)
		}
		b.WriteString(">\n")
	} else {
		b.WriteString("<ul>\n")
	}
	var item []string
	flush := func() {
		if item == nil {
			return
		}
		b.WriteString("<li>")
		for j, l := range item {
			if j > 0 {
				b.WriteString("<br>\n")
			}
			b.WriteString(inline(l))
		}
		b.WriteString("</li>\n")
		item = nil
	}
	for ; i < len(lines); i++ {
		line := lines[i]
		if m := listItemRe.FindStringSubmatch(line); m != nil {
			isOrdered := m[2][0] >= '0' && m[2][0] <= '9'
			if isOrdered != ordered && len(m[1]) == 0 {
				break // a top-level item of the other kind starts a new list
			}
			flush()
			item = []string{strings.TrimSpace(m[3])}
			continue
		}
		if strings.TrimSpace(line) == "" || fenceOpen(line) != "" || (line[0] != ' ' && line[0] != '\t') {
			break
		}
		item = append(item, strings.TrimSpace(line))
	}
	flush()
	if ordered {
		b.WriteString("</ol>\n")
	} else {
		b.WriteString("</ul>\n")
	}
	return i
}

// Look-ahead bounds for inline links.
const (
	maxLinkText = 300
	maxLinkURL  = 2000
)

// inline renders one line's inline markup, escaping all text.
func inline(s string) string {
	var b strings.Builder
	p := inlineParser{src: s, noCloser: map[string]bool{}, noCode: map[int]bool{}}
	p.render(&b, 0, len(s), 0)
	return b.String()
}

type inlineParser struct {
	src string
	// noCloser and noCode remember delimiters with no closer after some
	// position: later openers, being further right, cannot have one either.
	// That keeps unmatched delimiters from making the scan quadratic.
	noCloser map[string]bool
	noCode   map[int]bool
}

func isPunct(c byte) bool { return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0 }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

func (p *inlineParser) render(b *strings.Builder, start, end, depth int) {
	s := p.src
	text := start // start of pending plain text
	emit := func(upto int) {
		if upto > text {
			b.WriteString(template.HTMLEscapeString(s[text:upto]))
		}
	}
	for i := start; i < end; {
		c := s[i]
		switch {
		case c == '\\' && i+1 < end && isPunct(s[i+1]):
			emit(i)
			b.WriteString(template.HTMLEscapeString(s[i+1 : i+2]))
			i += 2
			text = i
			continue
		case c == '`':
			n := 1
			for i+n < end && s[i+n] == '`' {
				n++
			}
			if j := p.codeClose(i+n, end, n); j >= 0 {
				emit(i)
				code := s[i+n : j]
				if len(code) >= 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.TrimSpace(code) != "" {
					code = code[1 : len(code)-1]
				}
				b.WriteString("<code>" + template.HTMLEscapeString(code) + "</code>")
				i = j + n
				text = i
				continue
			}
			i += n
			continue
		case c == '[' && depth < 4:
			if textEnd, urlStart, urlEnd, ok := p.link(i, end); ok {
				emit(i)
				b.WriteString(`<a href="` + template.HTMLEscapeString(s[urlStart:urlEnd]) + `" rel="nofollow noopener noreferrer">`)
				p.render(b, i+1, textEnd, depth+1)
				b.WriteString("</a>")
				i = urlEnd + 1
				text = i
				continue
			}
		case (c == 'h' || c == 'H') && (i == start || !isAlnum(s[i-1])):
			if j := bareURL(s[i:end]); j > 0 {
				emit(i)
				u := template.HTMLEscapeString(s[i : i+j])
				b.WriteString(`<a href="` + u + `" rel="nofollow noopener noreferrer">` + u + "</a>")
				i += j
				text = i
				continue
			}
		case (c == '*' || c == '_') && depth < 8:
			delim := string(c)
			if i+1 < end && s[i+1] == c {
				delim += delim
			}
			if j := p.emphClose(i, end, delim); j >= 0 {
				emit(i)
				tag := "em"
				if len(delim) == 2 {
					tag = "strong"
				}
				b.WriteString("<" + tag + ">")
				p.render(b, i+len(delim), j, depth+1)
				b.WriteString("</" + tag + ">")
				i = j + len(delim)
				text = i
				continue
			}
			i += len(delim)
			continue
		}
		i++
	}
	emit(end)
}

// codeClose finds the backtick run of exactly n that closes a code span
// opened before from, or -1.
func (p *inlineParser) codeClose(from, end, n int) int {
	if p.noCode[n] {
		return -1
	}
	s := p.src
	for i := from; i < end; {
		j := strings.IndexByte(s[i:end], '`')
		if j < 0 {
			break
		}
		j += i
		k := j
		for k < end && s[k] == '`' {
			k++
		}
		if k-j == n {
			return j
		}
		i = k
	}
	if end == len(s) {
		p.noCode[n] = true
	}
	return -1
}

// emphClose finds the closer of the emphasis opened by delim at i: the next
// occurrence of delim, which must follow a non-space and (for _) not be inside
// a word; the opener must precede a non-space and (for _) not be inside a
// word either. -1 when there is none.
func (p *inlineParser) emphClose(i, end int, delim string) int {
	s := p.src
	open := i + len(delim)
	if open >= end || isSpace(s[open]) || delim[0] == '_' && i > 0 && isAlnum(s[i-1]) {
		return -1
	}
	key := delim + "@" + strconv.Itoa(end)
	if p.noCloser[key] {
		return -1
	}
	j := strings.Index(s[open+1:end], delim)
	if j < 0 {
		p.noCloser[key] = true
		return -1
	}
	j += open + 1
	if isSpace(s[j-1]) {
		return -1
	}
	after := j + len(delim)
	if after < end && s[after] == delim[0] {
		return -1 // "**a***": leave ambiguous runs alone
	}
	if delim[0] == '_' && after < end && isAlnum(s[after]) {
		return -1
	}
	return j
}

// link recognises [text](http(s)://url) at i, within bounded look-aheads.
func (p *inlineParser) link(i, end int) (textEnd, urlStart, urlEnd int, ok bool) {
	s := p.src
	window := min(end, i+1+maxLinkText)
	j := strings.Index(s[i+1:window], "](")
	if j < 0 {
		return 0, 0, 0, false
	}
	textEnd = i + 1 + j
	if textEnd == i+1 || strings.ContainsAny(s[i+1:textEnd], "[]") {
		return 0, 0, 0, false
	}
	urlStart = textEnd + 2
	k := strings.IndexByte(s[urlStart:min(end, urlStart+maxLinkURL)], ')')
	if k < 0 {
		return 0, 0, 0, false
	}
	urlEnd = urlStart + k
	if !safeURL(s[urlStart:urlEnd]) {
		return 0, 0, 0, false
	}
	return textEnd, urlStart, urlEnd, true
}

// safeURL: an absolute http or https URL with no spaces, quotes, angle
// brackets or control characters.
func safeURL(u string) bool {
	l := strings.ToLower(u)
	if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") || len(u) > maxLinkURL {
		return false
	}
	rest := u[strings.Index(u, "://")+3:]
	if rest == "" {
		return false
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' || c == '\\' {
			return false
		}
	}
	return true
}

// bareURL returns the length of the http(s) URL at the start of s, or 0.
// Trailing punctuation (".", ",", ")" ...) is left out of the link.
func bareURL(s string) int {
	l := strings.ToLower(s[:min(len(s), 8)])
	if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
		return 0
	}
	n := 0
	for n < len(s) && n < maxLinkURL {
		c := s[n]
		if c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`' || c == '\\' {
			break
		}
		n++
	}
	for n > 0 && strings.IndexByte(".,;:!?)]*_", s[n-1]) >= 0 {
		n--
	}
	if !safeURL(s[:n]) || strings.HasSuffix(s[:n], "://") {
		return 0
	}
	return n
}
