package dashboard

import (
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Template helpers. Each is a pure function with its own table test.

// formatInt writes n with thousands separators: 1234567 -> "1,234,567".
func formatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatCompact writes a count for an axis: 950, 1.2k, 3.4M, 2B.
func formatCompact(v float64) string {
	a := math.Abs(v)
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "B"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.div {
			return trimZeros(strconv.FormatFloat(v/u.div, 'f', 1, 64)) + u.suffix
		}
	}
	if v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return trimZeros(strconv.FormatFloat(v, 'f', 2, 64))
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// formatMoney writes a USD amount: cents from $1 up; below, at least two
// and up to four decimals (single sessions often cost fractions of a cent).
func formatMoney(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "$0"
	case a >= 1:
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	case a < 0.0001:
		return "<$0.0001"
	}
	s := trimZeros(strconv.FormatFloat(v, 'f', 4, 64))
	if i := strings.IndexByte(s, '.'); i < 0 {
		s += ".00"
	} else if len(s)-i-1 < 2 {
		s += "0"
	}
	return "$" + s
}

// formatDuration writes milliseconds as "850ms", "12s", "3m 05s", "2h 04m".
func formatDuration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms <= 0:
		return "—"
	case d < time.Second:
		return strconv.FormatInt(ms, 10) + "ms"
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d < time.Hour:
		m, s := int64(d/time.Minute), int64(d%time.Minute/time.Second)
		return strconv.FormatInt(m, 10) + "m " + pad2(s) + "s"
	}
	h, m := int64(d/time.Hour), int64(d%time.Hour/time.Minute)
	return strconv.FormatInt(h, 10) + "h " + pad2(m) + "m"
}

func pad2(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// formatTime writes a millisecond timestamp as UTC "2006-01-02 15:04".
func formatTime(ms int64) string {
	if ms == 0 {
		return "—"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04")
}

// isoTime is the datetime attribute of a <time> element.
func isoTime(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// snippetHTML makes a search snippet safe to show: the index marks matches
// with <mark>…</mark> in escaped text. The snippet is rebuilt from its text
// (unescaped, then escaped again) and the marks, so whatever the index
// produced, the page gets text and <mark> elements only.
func snippetHTML(s string) template.HTML {
	var b strings.Builder
	open := false
	for s != "" {
		tag := "<mark>"
		if open {
			tag = "</mark>"
		}
		i := strings.Index(s, tag)
		if i < 0 {
			b.WriteString(template.HTMLEscapeString(html.UnescapeString(s)))
			break
		}
		b.WriteString(template.HTMLEscapeString(html.UnescapeString(s[:i])))
		b.WriteString(tag)
		open = !open
		s = s[i+len(tag):]
	}
	if open {
		b.WriteString("</mark>")
	}
	return template.HTML(b.String())
}

// statusLabel is how an eval status reads on a page.
func statusLabel(s string) string {
	switch s {
	case "golden":
		return "Golden"
	case "correct":
		return "Correct"
	case "incorrect":
		return "Incorrect"
	case "needs_review":
		return "Needs review"
	case "":
		return "—"
	}
	return s
}

// truncateText cuts s to at most n bytes on a rune boundary and reports
// whether it cut.
func truncateText(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n], true
}
