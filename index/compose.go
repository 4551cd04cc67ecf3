package index

import (
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
)

// A session document's scored text is its title (repeated) and its body,
// and the body is, as the pipeline builds it, the session's chunks joined
// by white space. Analysis never joins tokens across white space (UAX #29
// breaks at it, codeTokenizer joins only across connector characters, the
// filters see one token at a time), so the session's tokens are its
// title's and its chunks' tokens, moved to where each piece sits in the
// text. Put analyses the chunks anyway; composing the session's tokens from
// theirs saves analysing the same text twice, half of a rebuild's
// analysis. composeSession checks the layout and returns false when it
// cannot vouch for the result (the caller then analyses the text); the
// composed stream is identical to the analysed one (TestComposeSession).

// segmentTokens is the analysis of one piece of text and the positions it
// takes up: a dropped token (see identSplitFilter) still takes its
// position, so the last token's position does not tell.
type segmentTokens struct {
	tokens    analysis.TokenStream
	positions int
}

// analyzeSegment analyses text as a.Analyze does, also counting the
// positions it takes up. ok is false when a is not an analyzer it can
// look inside.
func analyzeSegment(a analysis.Analyzer, text []byte) (st segmentTokens, ok bool) {
	da, ok := a.(*analysis.DefaultAnalyzer)
	if !ok || len(da.CharFilters) > 0 {
		return segmentTokens{}, false
	}
	tokens := da.Tokenizer.Tokenize(text)
	last := 0
	for _, t := range tokens {
		last = max(last, t.Position)
	}
	// A sentinel token after the last tells the position after it: every
	// filter leaves "x" as it is, but for moving its position as it moves
	// those of later tokens.
	tokens = append(tokens, &analysis.Token{Term: []byte{'x'}, Start: len(text), End: len(text),
		Position: last + 1, Type: analysis.AlphaNumeric})
	for _, f := range da.TokenFilters {
		tokens = f.Filter(tokens)
	}
	if len(tokens) == 0 {
		return segmentTokens{}, false
	}
	s := tokens[len(tokens)-1]
	if string(s.Term) != "x" || s.Start != len(text) {
		return segmentTokens{}, false
	}
	return segmentTokens{tokens: tokens[:len(tokens)-1], positions: s.Position - 1}, true
}

// composeSession returns the tokens of sessionText(s, repeat) from the
// title's and the chunks' (chunks[i] is s.Chunks[i]'s), or false when the
// body is not the chunks joined by white space that safely separates them.
func composeSession(s Session, repeat int, title segmentTokens, chunks []segmentTokens) (analysis.TokenStream, bool) {
	n := 0
	for _, c := range chunks {
		n += len(c.tokens)
	}
	offset := 0 // of the body in the scored text
	if s.Title != "" {
		n += repeat * len(title.tokens)
		offset = repeat*(len(s.Title)+1) + 1
	}
	slab := make([]analysis.Token, 0, n)
	out := make(analysis.TokenStream, 0, n)
	pos := 0
	add := func(seg segmentTokens, at int) {
		for _, t := range seg.tokens {
			slab = append(slab, *t)
			c := &slab[len(slab)-1]
			c.Start += at
			c.End += at
			c.Position += pos
			out = append(out, c)
		}
		pos += seg.positions
	}
	if s.Title != "" {
		// Each title is followed by a line break: a break on both sides.
		for r := range repeat {
			add(title, r*(len(s.Title)+1))
		}
	}
	at := 0 // in the body
	for i, c := range s.Chunks {
		j := strings.Index(s.Body[at:], c.Text)
		if j < 0 || c.Text == "" || !safeGap(s.Body[at:at+j], at == 0, c.Text[0]) {
			return nil, false
		}
		add(chunks[i], offset+at+j)
		at += j + len(c.Text)
	}
	if strings.TrimLeft(s.Body[at:], " \t\n\r\v\f") != "" {
		return nil, false
	}
	return out, true
}

// safeGap reports whether the white space gap before a piece starting with
// the byte next separates it from what comes before, in UAX #29 word
// segmentation. After a line break anything starts a new word; after
// spaces or tabs a following extending or formatting character would join
// them, so the piece must start with an ASCII byte. An empty gap is safe
// only at the start of the body (atStart): the start of the text, or right
// after the title's line break.
func safeGap(gap string, atStart bool, next byte) bool {
	if gap == "" {
		return atStart
	}
	if strings.TrimLeft(gap, " \t\n\r\v\f") != "" {
		return false
	}
	return strings.ContainsAny(gap, "\n\r\v\f") || next < 0x80
}
