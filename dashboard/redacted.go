package dashboard

import (
	"html"
	"html/template"
	"strings"

	xhtml "golang.org/x/net/html"

	"github.com/hindsight-dev/hindsight/redact"
)

// The session page shows where text was redacted: each [redacted:<rule>]
// marker becomes <span class="redacted">, styled apart from the text
// around it. Only text is touched, never a tag or an attribute, and every
// piece is escaped again, so a marker cannot open markup.

// redactedText escapes s and marks its redactions.
func redactedText(s string) template.HTML {
	var b strings.Builder
	writeMarked(&b, s)
	return template.HTML(b.String())
}

// markRedactions marks the redactions in the text of rendered HTML h.
func markRedactions(h template.HTML) template.HTML {
	if !strings.Contains(string(h), "[redacted:") {
		return h
	}
	z := xhtml.NewTokenizer(strings.NewReader(string(h)))
	var b strings.Builder
	b.Grow(len(h) + 64)
	for {
		tt := z.Next()
		if tt == xhtml.ErrorToken {
			break
		}
		if tt == xhtml.TextToken {
			if text := string(z.Text()); strings.Contains(text, "[redacted:") {
				writeMarked(&b, text)
				continue
			}
		}
		b.Write(z.Raw())
	}
	return template.HTML(b.String())
}

// writeMarked writes text, escaped, with its markers in spans.
func writeMarked(b *strings.Builder, text string) {
	at := 0
	for _, m := range redact.Markers(text) {
		b.WriteString(html.EscapeString(text[at:m.Start]))
		b.WriteString(`<span class="redacted" title="redacted: `)
		b.WriteString(html.EscapeString(m.Rule))
		b.WriteString(`">`)
		b.WriteString(html.EscapeString(text[m.Start:m.End]))
		b.WriteString(`</span>`)
		at = m.End
	}
	b.WriteString(html.EscapeString(text[at:]))
}
