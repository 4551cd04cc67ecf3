package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"

	"github.com/hindsight-dev/hindsight/kv"
)

// MessageText is the searchable text of one message: its text parts, or its
// textContent when it has no text part (the Claude Code plugin sends text only
// as textContent). Only user and assistant messages have searchable text; tool
// calls, tool results, thinking and every other part type are excluded.
func MessageText(m kv.Message) string {
	if m.Role != "user" && m.Role != "assistant" {
		return ""
	}
	var texts []string
	hasTextPart := false
	for _, p := range m.Parts {
		if p.Type == kv.PartText {
			hasTextPart = true
			if t := strings.TrimSpace(p.Content); t != "" {
				texts = append(texts, t)
			}
		}
	}
	if !hasTextPart && m.TextContent != nil {
		return strings.TrimSpace(*m.TextContent)
	}
	return strings.Join(texts, "\n\n")
}

// Exchange is one user->assistant exchange: the user's turn and the assistant
// text that answered it, as the context endpoint and the chunk index see it.
type Exchange struct {
	User      string
	Assistant string
	// FirstSeq and LastSeq bound the messages it was built from.
	FirstSeq, LastSeq uint64
	// assistantBreaks are the byte offsets in Assistant at which a later
	// assistant message's text begins (Exchanges records them).
	assistantBreaks []int
}

// Text is the exchange as one searchable string.
func (e Exchange) Text() string {
	switch {
	case e.User == "":
		return e.Assistant
	case e.Assistant == "":
		return e.User
	}
	return e.User + "\n\n" + e.Assistant
}

// Breaks returns the byte offsets in Text at which a message other than
// the first begins: the text between two of them is one message's. A
// phrase search matches within one message, never across a break.
func (e Exchange) Breaks() []int {
	var out []int
	base := 0
	if e.User != "" && e.Assistant != "" {
		base = len(e.User) + 2
		out = append(out, base)
	}
	for _, b := range e.assistantBreaks {
		out = append(out, base+b)
	}
	return out
}

// Exchanges groups messages into exchanges: each user message starts one, and
// assistant text up to the next user message joins it. Assistant text before
// any user message forms an exchange of its own. Messages without searchable
// text are skipped.
func Exchanges(msgs []kv.Message) []Exchange {
	var out []Exchange
	for _, m := range msgs {
		t := MessageText(m)
		if t == "" {
			continue
		}
		if m.Role == "user" || len(out) == 0 {
			out = append(out, Exchange{FirstSeq: m.Seq})
		}
		e := &out[len(out)-1]
		e.LastSeq = m.Seq
		if m.Role == "user" {
			e.User = t
			continue
		}
		if e.Assistant != "" {
			e.Assistant += "\n\n"
			e.assistantBreaks = append(e.assistantBreaks, len(e.Assistant))
		}
		e.Assistant += t
	}
	return out
}

// MaxChunkChars bounds a chunk. Long exchanges are split at paragraph or
// sentence boundaries, so one huge answer neither dominates a chunk's BM25
// length normalisation nor exceeds an embedding model's window.
const MaxChunkChars = 2000

// Chunk is a piece of searchable text of a session, addressed by ordinal.
type Chunk struct {
	Ordinal  int
	Exchange int // index into Exchanges
	Text     string
	// Breaks are the byte offsets in Text at which another message's text
	// begins (see Exchange.Breaks); a chunk cut from a long message has
	// none.
	Breaks []int
}

// Chunks splits exchanges into chunks of at most MaxChunkChars.
func Chunks(exchanges []Exchange) []Chunk {
	var out []Chunk
	for i, e := range exchanges {
		text, breaks := e.Text(), e.Breaks()
		for _, sp := range splitSpans(text, MaxChunkChars) {
			c := Chunk{Ordinal: len(out), Exchange: i, Text: text[sp[0]:sp[1]]}
			for _, b := range breaks {
				if b > sp[0] && b < sp[1] {
					c.Breaks = append(c.Breaks, b-sp[0])
				}
			}
			out = append(out, c)
		}
	}
	return out
}

// splitSpans cuts s into pieces of at most max bytes, preferring a
// paragraph break, then a line break, then a sentence end, then a space, in
// the second half of the window; it never cuts inside a UTF-8 sequence. It
// returns where each piece lies in s (start, end), trimmed of white space;
// empty pieces are left out.
func splitSpans(s string, max int) [][2]int {
	var out [][2]int
	add := func(a, b int) { // the piece s[a:b], trimmed
		p := s[a:b]
		lead := len(p) - len(strings.TrimLeftFunc(p, unicode.IsSpace))
		if t := strings.TrimSpace(p); t != "" {
			out = append(out, [2]int{a + lead, a + lead + len(t)})
		}
	}
	at := 0 // s[at:] is left to cut
	for len(s)-at > max {
		rest := s[at:]
		cut := -1
		for _, sep := range []string{"\n\n", "\n", ". ", " "} {
			if i := strings.LastIndex(rest[:max], sep); i >= max/2 {
				cut = i + len(sep)
				break
			}
		}
		if cut < 0 {
			cut = max
			for cut > 0 && !utf8Start(rest[cut]) {
				cut--
			}
			if cut == 0 {
				cut = max
			}
		}
		add(at, at+cut)
		at += cut
	}
	add(at, len(s))
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// SearchableText is the session's body for the index: the searchable text of
// its messages in order (the title is indexed separately).
func SearchableText(msgs []kv.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		if t := MessageText(m); t != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(t)
		}
	}
	return b.String()
}

// TextHash is the SHA-256 of a text, hex: the embedding lifecycle compares it
// to decide whether a chunk needs embedding again.
func TextHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
