package index

import (
	"sort"
	"strconv"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/document"
	bleveindex "github.com/blevesearch/bleve_index_api"
)

// Phrases. The scored text keeps no positions; what the index keeps for
// phrases is, per session document, the adjacent term pairs of each
// message (and of the title) with the positions where they occur, a field
// that is never scored (fieldPairs): term x at position p and term y at
// p+1, within one message, give the pair "x y" at p. The pair's term
// starts with its owner (ownerPrefix): a phrase is only ever looked for in
// one user's documents, and its position check walks each pair's posting
// list, so a list of the owner's documents alone keeps that walk to the
// owner's postings, whatever other users hold. A message's text is analysed as part of the body, but analysis
// never joins tokens across the white space between messages (see
// compose.go), so its tokens are those of the message alone, and a pair
// whose tokens lie in two messages (Session.Breaks) or two copies of the
// title is not written: no phrase can match across them. The title's pairs
// are written apart (" x y", titlePairTerm), so that a phrase's pairs are
// looked for all in the body or all in the title: a session whose title
// ends "a b" and whose messages hold "b c" is no candidate for "a b c".
//
// A quoted phrase of n positions is then the n-1 pairs of its adjacent
// positions (one of each position's alternatives) at consecutive
// positions: "a b" at p and "b c" at p+1 is "a b c" at p, and since no
// pair crosses a message, the chain lies within one (phrases.go). The
// documents holding all the pairs are found with their bitmaps, and only
// those are checked, on the pairs' positions: no text is read.

// pairSep joins the two terms of a pair: analysed terms hold no white
// space.
const pairSep = " "

// pairTerm is the term of userID's pair "x y" in a message.
func pairTerm(userID, x, y string) string { return ownerPrefix(userID) + x + pairSep + y }

// titlePairTerm is the term of a pair in the title: pairSep before the
// pair, which no analysed term starts with.
func titlePairTerm(userID, x, y string) string {
	return ownerPrefix(userID) + pairSep + x + pairSep + y
}

// pairsField is the fieldPairs field of a session document, computed when
// the document is built (as analyzedText is).
type pairsField struct {
	*document.TextField
	freqs bleveindex.TokenFrequencies
}

// newPairsField returns userID's pairs of adjacent positions of tokens (the
// scored text's, in any order) whose tokens segOf puts in the same
// segment (segOf maps a token's start offset to its segment), but for the
// title's later copies, which hold what its first does. The field is
// never scored, so its frequencies are free to carry positions: a pair
// found once has no location and the frequency position+1; a pair found
// more often has one location, its first position, with the gaps to its
// later ones as the location's array positions, and the frequency 1
// (decodePairPositions reads both back). Zap spends about six bytes on a location,
// one or two on a frequency and one on a gap (docs/index.md).
func newPairsField(userID string, tokens analysis.TokenStream, segOf func(int) int) *pairsField {
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
	prefix := ownerPrefix(userID)
	var key []byte
	last := make(map[*bleveindex.TokenFreq]int) // a pair's last position
	next := 0                                   // the first token after the current position
	for i, t := range order {
		p := t.Position
		for next < len(order) && order[next].Position <= p {
			next++
		}
		for j := next; j < len(order) && order[j].Position == p+1; j++ {
			if segs[j] != segs[i] || segs[i] < -1 {
				continue // across two texts, or a later copy of the title
			}
			key = append(key[:0], prefix...)
			if segs[i] < 0 {
				key = append(key, pairSep...)
			}
			key = append(append(append(key, t.Term...), pairSep...), order[j].Term...)
			tf, ok := freqs[string(key)]
			if !ok {
				k := string(key)
				tf = &bleveindex.TokenFreq{Term: []byte(k)}
				freqs[k] = tf
			}
			if len(tf.Locations) == 0 {
				tf.Locations = []*bleveindex.TokenLocation{{Position: p}}
			} else if at := last[tf]; at != p {
				l := tf.Locations[0]
				l.ArrayPositions = append(l.ArrayPositions, uint64(p-at))
			}
			last[tf] = p
		}
	}
	for _, tf := range freqs {
		if l := tf.Locations[0]; len(l.ArrayPositions) == 0 {
			// Once: the position rides in the frequency (decodePairPositions).
			tf.Locations = nil
			tf.SetFrequency(l.Position + 1)
			continue
		}
		tf.SetFrequency(1)
	}
	f.freqs = freqs
	return f
}

// Analyze implements document.Field: the work is done in newPairsField.
func (f *pairsField) Analyze() {}

// AnalyzedLength implements document.Field. The field is never scored: a
// length of 0 makes zap store each posting's norm in one byte.
func (f *pairsField) AnalyzedLength() int { return 0 }

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
