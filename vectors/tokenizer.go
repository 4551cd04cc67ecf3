package vectors

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

const (
	// liteBoundary is SentencePiece's visible space (U+2581): it starts every
	// text and replaces every space.
	liteBoundary = '\u2581'
	// liteUnknownID is the id of the unknown piece; runs of it are collapsed.
	liteUnknownID = 0
	// liteReserved is how many leading vocabulary entries (unknown, <s>,
	// </s>, three spares) are never matched against text.
	liteReserved = 6
	// liteMaxTokens is the model's window: ids past it are dropped, as the
	// graph's ClipToMaxLength does.
	liteMaxTokens = 128
)

// liteTokenizer is the SentencePiece unigram tokenizer of Universal Sentence
// Encoder Lite, reproducing the TF.js implementation bit for bit: NFKC,
// U+2581 word boundaries, Viterbi best path over the piece log-probabilities
// with its tie and zero-score rules, and collapsed unknown runs. It is
// immutable after construction and safe for concurrent use.
type liteTokenizer struct {
	ids    map[string]int32 // piece -> id, reserved pieces excluded; later duplicates win
	scores []float64        // id -> log-probability (null in vocab.json counts as 0)
	units  []int32          // id -> length of the piece in UTF-16 code units
	maxLen int              // longest matchable piece, in runes
}

// newLiteTokenizer parses vocab.json: an array of [piece, logprob] pairs in id
// order, where logprob may be null.
func newLiteTokenizer(vocabJSON []byte) (*liteTokenizer, error) {
	var entries [][]any
	if err := json.Unmarshal(vocabJSON, &entries); err != nil {
		return nil, fmt.Errorf("parse vocabulary: %w", err)
	}
	if len(entries) <= liteReserved {
		return nil, fmt.Errorf("parse vocabulary: %d entries, want more than %d", len(entries), liteReserved)
	}
	t := &liteTokenizer{
		ids:    make(map[string]int32, len(entries)),
		scores: make([]float64, len(entries)),
		units:  make([]int32, len(entries)),
	}
	for id, e := range entries {
		if len(e) != 2 {
			return nil, fmt.Errorf("parse vocabulary entry %d: want [piece, score], got %d elements", id, len(e))
		}
		piece, ok := e[0].(string)
		if !ok {
			return nil, fmt.Errorf("parse vocabulary entry %d: piece is %T, want string", id, e[0])
		}
		switch score := e[1].(type) {
		case float64:
			t.scores[id] = score
		case nil: // TF.js adds null as 0
		default:
			return nil, fmt.Errorf("parse vocabulary entry %d: score is %T, want number or null", id, e[1])
		}
		t.units[id] = int32(jsLength(piece))
		if id < liteReserved || piece == "" {
			continue
		}
		t.ids[piece] = int32(id)
		t.maxLen = max(t.maxLen, utf8.RuneCountInString(piece))
	}
	return t, nil
}

// tokenize returns the ids of text, at most maxTokens of them. Empty text
// has no ids. Invalid UTF-8 is read as U+FFFD, which becomes the unknown id.
//
// The rules follow the TF.js tokenizer exactly, including its quirks:
//   - the text is NFKC-normalised; a non-empty result is prefixed with U+2581
//     and every space (U+0020 only) becomes U+2581;
//   - at every rune position each vocabulary piece that starts there is a
//     candidate; a position no piece matches gets the unknown id with score 0
//     and length one rune;
//   - a position's best path is updated by a candidate when the position's
//     best score is exactly 0 (unset) or the candidate's is >= it, visiting
//     candidates by ascending start, so ties go to the shorter, later piece;
//   - the path is read back from the end stepping by each piece's length in
//     UTF-16 code units (the unknown piece counts 1);
//   - consecutive unknown ids collapse into one.
func (t *liteTokenizer) tokenize(text string) []int {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	s := norm.NFKC.String(text)
	if s == "" {
		return nil
	}
	s = string(liteBoundary) + strings.ReplaceAll(s, " ", string(liteBoundary))

	// offs[i] is the byte offset of rune i; offs[n] = len(s).
	offs := make([]int, 0, len(s)+1)
	for i := range s {
		offs = append(offs, i)
	}
	n := len(offs)
	offs = append(offs, len(s))

	best := make([]float64, n+1)
	words := make([]int32, n+1)
	relax := func(start, end int, id int32) {
		score := t.scores[id] + best[start]
		if best[end] == 0 || score >= best[end] {
			best[end] = score
			words[end] = id
		}
	}
	// Visiting starts in ascending order finalises best[start] before it is
	// used and updates each end in the same order TF.js does.
	for start := 0; start < n; start++ {
		matched := false
		for l := 1; l <= t.maxLen && start+l <= n; l++ {
			if id, ok := t.ids[s[offs[start]:offs[start+l]]]; ok {
				relax(start, start+l, id)
				matched = true
			}
		}
		if !matched {
			relax(start, start+1, liteUnknownID)
		}
	}

	var rev []int
	for pos := n; pos > 0; pos -= int(t.units[words[pos]]) {
		rev = append(rev, int(words[pos]))
	}
	ids := make([]int, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		if rev[i] == liteUnknownID && len(ids) > 0 && ids[len(ids)-1] == liteUnknownID {
			continue
		}
		ids = append(ids, rev[i])
	}
	if len(ids) > liteMaxTokens {
		ids = ids[:liteMaxTokens:liteMaxTokens]
	}
	return ids
}

// jsLength is the length of s in UTF-16 code units, JavaScript's
// String.prototype.length.
func jsLength(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}
