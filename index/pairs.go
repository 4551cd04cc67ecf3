package index

import (
	"sort"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
)

// Phrases. The index keeps no positions; what it keeps for phrases is, per
// session document, the set of adjacent term pairs of each message (and of
// the title), a keyword field without frequencies (fieldPairs): term x at
// some position and term y at the next, within one message, give the term
// "x y". A message's text is analysed as part of the body, but analysis
// never joins tokens across the white space between messages (see
// compose.go), so its tokens are those of the message alone, and a pair
// whose tokens lie in two messages (Session.Breaks) or two copies of the
// title is not written: no phrase can match across them. The title's pairs
// are written apart (" x y", titlePairTerm), so that a phrase's pairs are
// looked for all in the body or all in the title: a session whose title
// ends "a b" and whose messages hold "b c" is no candidate for "a b c".
//
// A quoted phrase of n positions then finds its candidates with the n-1
// pairs of its adjacent positions (one of each position's alternatives),
// all required: a few documents even when thousands hold its words. For a
// phrase of two positions holding a pair is holding the phrase; a longer
// one (a b c held as "a b" in one place and "b c" in another) is checked
// on the text of the candidates (matchesQuery), each message on its own.

// pairSep joins the two terms of a pair: analysed terms hold no white
// space.
const pairSep = " "

func pairTerm(x, y string) string { return x + pairSep + y }

// titlePairTerm is the term of a pair in the title: the pair's term after
// pairSep, which no analysed term starts with.
func titlePairTerm(x, y string) string { return pairSep + x + pairSep + y }

// pairsField is the fieldPairs field of a session document, computed when
// the document is built (as analyzedText is).
type pairsField struct {
	*document.TextField
	freqs bleveindex.TokenFrequencies
}

// newPairsField returns the pairs of adjacent positions of tokens (the
// scored text's, in any order) whose tokens segOf puts in the same
// segment (segOf maps a token's start offset to its segment).
func newPairsField(tokens analysis.TokenStream, segOf func(int) int) *pairsField {
	f := &pairsField{TextField: document.NewTextFieldCustom(fieldPairs, nil, nil, keywordOpts, nil)}
	order := tokens
	if !sort.SliceIsSorted(order, func(i, j int) bool { return order[i].Position < order[j].Position }) {
		order = append(analysis.TokenStream(nil), tokens...)
		sort.SliceStable(order, func(i, j int) bool { return order[i].Position < order[j].Position })
	}
	segs := make([]int, len(order))
	for i, t := range order {
		segs[i] = segOf(t.Start)
	}
	freqs := make(bleveindex.TokenFrequencies, len(order))
	var key []byte
	next := 0 // the first token after the current position
	for i, t := range order {
		p := t.Position
		for next < len(order) && order[next].Position <= p {
			next++
		}
		for j := next; j < len(order) && order[j].Position == p+1; j++ {
			if segs[j] != segs[i] {
				continue
			}
			key = key[:0]
			if segs[i] < 0 {
				key = append(key, pairSep...)
			}
			key = append(append(append(key, t.Term...), pairSep...), order[j].Term...)
			if _, ok := freqs[string(key)]; !ok {
				k := string(key)
				freqs[k] = &bleveindex.TokenFreq{Term: []byte(k)}
			}
		}
	}
	f.freqs = freqs
	return f
}

// Analyze implements document.Field: the work is done in newPairsField.
func (f *pairsField) Analyze() {}

// AnalyzedLength implements document.Field; the field has no norms.
func (f *pairsField) AnalyzedLength() int { return len(f.freqs) }

// AnalyzedTokenFrequencies implements document.Field.
func (f *pairsField) AnalyzedTokenFrequencies() bleveindex.TokenFrequencies { return f.freqs }

// segmenter returns the segment of a token of s's scored text (sessionText)
// by its start offset: each copy of the title is one (negative), each
// message of the body one (its index).
func (ix *Index) segmenter(s Session) func(int) int {
	bodyAt := 0
	if s.Title != "" {
		bodyAt = ix.repeat*(len(s.Title)+1) + 1
	}
	return func(at int) int {
		if at < bodyAt {
			return -1 - at/(len(s.Title)+1)
		}
		return breakCount(s.Breaks, at-bodyAt)
	}
}

// breakCount returns the number of breaks at or before offset at: the
// index of the message holding it.
func breakCount(breaks []int, at int) int {
	return sort.SearchInts(breaks, at+1)
}

// splitMessages cuts the tokens of a text into those of each message, by
// the text's breaks. The streams share tokens with the input.
func splitMessages(tokens analysis.TokenStream, breaks []int) []analysis.TokenStream {
	if len(breaks) == 0 {
		return []analysis.TokenStream{tokens}
	}
	out := make([]analysis.TokenStream, len(breaks)+1)
	for _, t := range tokens {
		m := breakCount(breaks, t.Start)
		out[m] = append(out[m], t)
	}
	return out
}

func formatBreaks(breaks []int) string {
	var b strings.Builder
	for i, n := range breaks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

func parseBreaks(s string) []int {
	if s == "" {
		return nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// exact reports whether holding the phrase's pair query (pairQuery) is
// holding the phrase: one position (a word), or two, both with a term.
func (ph phrase) exact() bool {
	return len(ph) == 1 || (len(ph) == 2 && len(ph[0]) > 0 && len(ph[1]) > 0)
}

// pairQuery returns the Bleve query of the documents that hold, for each
// two adjacent positions of the phrase, a pair of their alternatives in one
// message, all in the body or all in the title, and the words of any
// position that is in no pair (next to a position without a term, or a
// phrase of one position).
func (ph phrase) pairQuery() query.Query {
	var all []query.Query
	if body := ph.pairsIn(pairTerm); body != nil {
		all = append(all, query.NewDisjunctionQuery([]query.Query{body, ph.pairsIn(titlePairTerm)}))
	}
	all = append(all, ph.unpaired()...)
	if len(all) == 1 {
		return all[0]
	}
	return query.NewConjunctionQuery(all)
}

// pairsIn returns the conjunction of the phrase's adjacent pairs, each a
// disjunction of its alternatives' terms (term makes them); nil when no
// two adjacent positions have terms.
func (ph phrase) pairsIn(term func(x, y string) string) query.Query {
	var all []query.Query
	for i, alts := range ph {
		if len(alts) == 0 || i+1 >= len(ph) || len(ph[i+1]) == 0 {
			continue
		}
		var qs []query.Query
		for _, x := range alts {
			for _, y := range ph[i+1] {
				qs = append(qs, termQuery(fieldPairs, term(x, y)))
			}
		}
		all = append(all, anyOf(qs))
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return query.NewConjunctionQuery(all)
}

// unpaired returns, for each position with terms but no neighbour with
// terms, the disjunction of its alternatives (scored-text words).
func (ph phrase) unpaired() []query.Query {
	var out []query.Query
	for i, alts := range ph {
		if len(alts) == 0 || (i > 0 && len(ph[i-1]) > 0) || (i+1 < len(ph) && len(ph[i+1]) > 0) {
			continue
		}
		qs := make([]query.Query, len(alts))
		for k, t := range alts {
			qs[k] = termQuery(fieldText, t)
		}
		out = append(out, anyOf(qs))
	}
	return out
}

func anyOf(qs []query.Query) query.Query {
	if len(qs) == 1 {
		return qs[0]
	}
	return query.NewDisjunctionQuery(qs)
}
