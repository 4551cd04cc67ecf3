package index

import (
	"html"
	"math/bits"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Snippet parameters.
const (
	snippetBytes = 240      // length of a snippet's source text, about two lines
	maxScanBytes = 32 << 10 // only this much of a field is analysed for snippets
)

// Snippets are made here rather than by Bleve's highlighter. Bleve's HTML
// formatter does escape the text, but it needs the highlighted field stored
// and its term locations loaded with every hit, and our scored field is not
// stored (it holds the title repeated before the body). Re-analysing the
// stored title and body of the few hits asked for with the same analyzer
// gives exact match offsets, sub-word marks inside identifiers (a query
// "config" marks Config in parseConfigFile) and matchedIn from the same pass.

// match is one analysed token of a text whose term the query contains.
type match struct {
	start, end int
	bit        uint64 // the query term's bit, for counting distinct terms
}

// explain returns the snippet and matchedIn for a hit whose stored title and
// body (or chunk text, with an empty title) are given.
func explain(a analysis.Analyzer, terms map[string]struct{}, title, body string) (string, []string) {
	bitOf := termBits(terms)
	tm := findMatches(a, title, bitOf)
	bm := findMatches(a, body, bitOf)
	var in []string
	if len(tm) > 0 {
		in = append(in, "title")
	}
	// A document matches only when a query term occurs in title or body, so
	// without a title match the body matched (perhaps beyond maxScanBytes).
	if len(bm) > 0 || len(tm) == 0 && body != "" {
		in = append(in, "messages")
	}
	switch {
	case len(bm) > 0:
		return fragment(body, bm), in
	case len(tm) > 0:
		return fragment(title, tm), in
	case body != "":
		return fragment(body, nil), in
	}
	return fragment(title, nil), in
}

// termBits gives each query term a bit; MaxQueryTerms fits in 64 bits.
func termBits(terms map[string]struct{}) map[string]uint64 {
	sorted := make([]string, 0, len(terms))
	for t := range terms {
		sorted = append(sorted, t)
	}
	sort.Strings(sorted)
	m := make(map[string]uint64, len(sorted))
	for i, t := range sorted {
		m[t] = 1 << (uint(i) % 64)
	}
	return m
}

// findMatches analyses (the first maxScanBytes of) text and returns the
// tokens whose term is a query term, ordered by start offset.
func findMatches(a analysis.Analyzer, text string, bitOf map[string]uint64) []match {
	if text == "" || len(bitOf) == 0 {
		return nil
	}
	if len(text) > maxScanBytes {
		text = text[:runeStart(text, maxScanBytes)]
	}
	var ms []match
	for _, tok := range a.Analyze([]byte(text)) {
		if bit, ok := bitOf[string(tok.Term)]; ok {
			ms = append(ms, match{start: tok.Start, end: tok.End, bit: bit})
		}
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].start < ms[j].start })
	return ms
}

// fragment picks the window of snippetBytes with the most distinct matched
// terms (then the most matches), widens it to word boundaries and renders it:
// HTML-escaped, white space collapsed, matches in <mark>, and "…" where text
// was cut. With no matches it renders the beginning of text.
func fragment(text string, ms []match) string {
	if text == "" {
		return ""
	}
	lo, hi := 0, 0 // the chosen matches are ms[lo:hi]
	bestDistinct, bestCount := -1, -1
	for i := range ms {
		var mask uint64
		j := i
		for j < len(ms) && ms[j].end-ms[i].start <= snippetBytes {
			mask |= ms[j].bit
			j++
		}
		if j == i { // a single match longer than the window
			j = i + 1
			mask = ms[i].bit
		}
		if d := bits.OnesCount64(mask); d > bestDistinct || d == bestDistinct && j-i > bestCount {
			bestDistinct, bestCount, lo, hi = d, j-i, i, j
		}
	}
	var from, to int
	if hi > lo {
		first, last := ms[lo].start, 0
		for _, m := range ms[lo:hi] {
			last = max(last, m.end)
		}
		spare := max(snippetBytes-(last-first), 0)
		from, to = max(first-spare/3, 0), min(last+spare-spare/3, len(text))
		if from > 0 {
			from = wordStartAfter(text, from, first)
		}
		if to < len(text) {
			to = wordEndBefore(text, to, last)
		}
	} else {
		to = min(snippetBytes, len(text))
		if to < len(text) {
			to = wordEndBefore(text, to, 0)
		}
	}

	var b strings.Builder
	b.Grow(to - from + 64)
	if from > 0 {
		b.WriteString("… ")
	}
	cur := from
	for _, sp := range mergeSpans(ms[lo:hi]) {
		if sp.start < cur || sp.end > to {
			continue
		}
		writeEscaped(&b, text[cur:sp.start])
		b.WriteString("<mark>")
		writeEscaped(&b, text[sp.start:sp.end])
		b.WriteString("</mark>")
		cur = sp.end
	}
	writeEscaped(&b, text[cur:to])
	if to < len(text) {
		b.WriteString(" …")
	}
	return strings.TrimSpace(b.String())
}

type span struct{ start, end int }

// mergeSpans unions overlapping or touching matches (an identifier and its
// matched sub-words become one mark).
func mergeSpans(ms []match) []span {
	var out []span
	for _, m := range ms { // ms is ordered by start
		if n := len(out); n > 0 && m.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, m.end)
			continue
		}
		out = append(out, span{m.start, m.end})
	}
	return out
}

// writeEscaped writes s HTML-escaped with runs of white space collapsed to
// one space.
func writeEscaped(b *strings.Builder, s string) {
	space := false
	start := 0
	flush := func(end int) { b.WriteString(html.EscapeString(s[start:end])) }
	for i, r := range s {
		isSpace := unicode.IsSpace(r)
		if isSpace && !space {
			flush(i)
			b.WriteByte(' ')
		}
		if isSpace {
			start = i + utf8.RuneLen(r)
		}
		space = isSpace
	}
	flush(len(s))
}

// wordStartAfter moves i forward to just after the next white space, if there
// is one before limit; otherwise to the next rune boundary.
func wordStartAfter(text string, i, limit int) int {
	i = runeStart(text, i)
	if j := strings.IndexFunc(text[i:limit], unicode.IsSpace); j >= 0 {
		return i + j + 1
	}
	return i
}

// wordEndBefore moves i back to the last white space after limit, if there is
// one; otherwise to a rune boundary.
func wordEndBefore(text string, i, limit int) int {
	i = runeStart(text, i)
	if j := strings.LastIndexFunc(text[limit:i], unicode.IsSpace); j >= 0 {
		return limit + j
	}
	return i
}

// runeStart returns the largest rune boundary <= i.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
