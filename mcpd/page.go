package mcpd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Pages of a session are cut from the markdown export. Its format makes
// message boundaries unambiguous (exporter/markdown.go): message text is
// escaped so no line of it starts with '#' or '`', and code goes into fenced
// blocks whose fence is longer than any backtick run inside. So a line
// starting with "## " outside a fence is a message heading, and a fence is
// closed only by a line of at least as many backticks.

// page is one page of a session.
type page struct {
	text       string
	from, to   int  // messages shown, 1-based; to < from when none fit
	total      int  // messages in the session
	cut        bool // message to was cut to fit
	headerOnly bool // the session has no messages
}

// readPage reads a session's markdown export and keeps the messages from
// from (1-based) that fit in maxChars bytes, whole, except that a first
// message too long for the page is cut (with its fence closed). It reads to
// the end to count the messages. The header (title and metadata list) leads
// the first page; later pages repeat only the title line.
func readPage(r io.Reader, from, maxChars int) (page, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	p := page{from: from, to: from - 1}
	var (
		out     strings.Builder
		cur     strings.Builder // the message being read, up to room+1 bytes
		msg     int             // 0 while in the header
		fence   int             // length of the open fence, 0 outside one
		full    bool            // nothing more goes on the page
		started bool            // cur holds a message of the page
	)
	room := func() int { return max(maxChars-out.Len(), maxChars/4) }
	// flush decides whether the message in cur goes on the page.
	flush := func() {
		if !started || full {
			return
		}
		started = false
		switch {
		case cur.Len() <= maxChars-out.Len():
			out.WriteString(cur.String())
			p.to = msg
		case p.to < p.from: // the page's first message: cut it
			text := cutRunes(cur.String(), room())
			out.WriteString(text)
			if !strings.HasSuffix(text, "\n") {
				out.WriteString("\n")
			}
			if n := openFence(text); n > 0 {
				out.WriteString(strings.Repeat("`", n) + "\n")
			}
			out.WriteString("\n[… message cut here]\n")
			p.to, p.cut, full = msg, true, true
		default:
			full = true
		}
		cur.Reset()
	}
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			heading := fence == 0 && strings.HasPrefix(line, "## ")
			if fence == 0 {
				if n := leadingRun(line, '`'); n >= 3 {
					fence = n
				}
			} else if closesFence(line, fence) {
				fence = 0
			}
			switch {
			case heading:
				flush()
				msg++
				if msg >= from && !full {
					started = true
					cur.WriteString(line)
				}
			case msg == 0:
				if from == 1 {
					out.WriteString(line)
				} else if out.Len() == 0 {
					out.WriteString(line) // the title
					fmt.Fprintf(&out, "\n(continued from message %d)\n\n", from)
				}
			case started && cur.Len() <= room():
				cur.WriteString(line)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return p, err
		}
	}
	flush()
	p.total = msg
	p.headerOnly = msg == 0
	p.text = out.String()
	return p, nil
}

// leadingRun counts the c bytes that start s.
func leadingRun(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// closesFence reports whether line closes a fence of n backticks.
func closesFence(line string, n int) bool {
	t := strings.TrimRight(line, " \t\r\n")
	return len(t) >= n && leadingRun(t, '`') == len(t)
}

// openFence returns the length of the fence left open at the end of text
// (0 when none is).
func openFence(text string) int {
	fence := 0
	for line := range strings.Lines(text) {
		if fence == 0 {
			if n := leadingRun(line, '`'); n >= 3 {
				fence = n
			}
		} else if closesFence(line, fence) {
			fence = 0
		}
	}
	return fence
}

// cutRunes returns the longest prefix of s of at most n bytes that ends on a
// rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// note is what follows a page: where it sits in the session and how to read on.
func (p page) note(id string) string {
	switch {
	case p.headerOnly:
		return "---\nThis session has no messages."
	case p.cut && p.to < p.total:
		return fmt.Sprintf("---\nMessage %d of %d is longer than maxChars and was cut. To read all of it, call get_session with id %q, fromMessage %d and a larger maxChars (up to %d); to skip to the next message, fromMessage %d.",
			p.to, p.total, id, p.to, maxPageChars, p.to+1)
	case p.cut:
		return fmt.Sprintf("---\nMessage %d of %d (the last) is longer than maxChars and was cut. To read all of it, call get_session with id %q, fromMessage %d and a larger maxChars (up to %d).",
			p.to, p.total, id, p.to, maxPageChars)
	case p.to < p.total:
		return fmt.Sprintf("---\nShowing messages %d–%d of %d. To read on, call get_session with id %q and fromMessage %d.",
			p.from, p.to, p.total, id, p.to+1)
	}
	return fmt.Sprintf("---\nEnd of session: messages %d–%d of %d.", p.from, p.to, p.total)
}
