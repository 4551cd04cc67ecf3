package vectors

import (
	"slices"
	"strings"
	"testing"
)

// testVocab is a tiny vocabulary in the vocab.json format that exercises the
// tokenizer's rules without the real model.
const liteTestVocab = `[
	["\ufffd", 0], ["<s>", 0], ["</s>", 0],
	["extra_token_id_1", 0], ["extra_token_id_2", 0], ["extra_token_id_3", 0],
	["\u2581", -2],
	["a", -3],
	["b", -3],
	["\u2581ab", -4],
	["ab", -5],
	["\u2581c", null],
	["\u2581a", -1],
	["e", -3],
	["e", -3.5],
	["c", -1],
	["\ud83d\ude00", -1]
]`

func TestTokenize(t *testing.T) {
	tok, err := newLiteTokenizer([]byte(liteTestVocab))
	if err != nil {
		t.Fatal(err)
	}
	const (
		space = 6  // ▁
		a     = 7  // a
		b     = 8  // b
		spA   = 12 // ▁a
		c     = 15 // c
		e     = 14 // the second "e": later duplicates win
		smile = 16 // an astral piece
	)
	tests := []struct {
		name string
		in   string
		want []int
	}{
		{name: "empty text has no tokens", in: "", want: nil},
		{name: "tie goes to the later start", in: "ab", want: []int{spA, b}},        // ▁ab and ▁a+b both score -4
		{name: "a best score of 0 counts as unset", in: "c", want: []int{space, c}}, // ▁c (null → 0) loses to ▁+c (-3)
		{name: "unknown run collapses", in: "xyz", want: []int{space, liteUnknownID}},
		{name: "separate unknown runs stay", in: "x a y", want: []int{space, liteUnknownID, spA, space, liteUnknownID}},
		{name: "every space is a boundary", in: "a  b", want: []int{spA, space, space, b}},
		{name: "NFKC folds full-width letters", in: "ａｂ", want: []int{spA, b}},
		{name: "NFKC composes and folds ligatures", in: "\ufb00", want: []int{space, liteUnknownID}}, // ﬀ → ff, unknown
		{name: "tabs are not spaces", in: "a\tb", want: []int{spA, liteUnknownID, b}},
		{name: "invalid UTF-8 is unknown", in: "a\xffb", want: []int{spA, liteUnknownID, b}},
		{name: "later duplicate piece wins", in: "e", want: []int{space, e}},
		// TF.js steps back by UTF-16 length, so an astral piece swallows the
		// piece before it; the real vocabulary has no astral pieces.
		{name: "astral piece steps back two code units", in: "😀", want: []int{smile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tok.tokenize(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("tokenize(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestTokenizeKeepsFirst128(t *testing.T) {
	tok, err := newLiteTokenizer([]byte(liteTestVocab))
	if err != nil {
		t.Fatal(err)
	}
	got := tok.tokenize(strings.Repeat("a b ", 100)) // 200 words, ~300 ids
	if len(got) != liteMaxTokens {
		t.Fatalf("got %d ids, want %d", len(got), liteMaxTokens)
	}
	if got[0] != 12 || got[1] != 6 || got[2] != 8 {
		t.Errorf("ids start %v, want the start of the text [12 6 8 ...]", got[:3])
	}
}

func TestNewTokenizerErrors(t *testing.T) {
	tests := []struct {
		name, vocab, wantErr string
	}{
		{name: "not JSON", vocab: "{", wantErr: "parse vocabulary"},
		{name: "too short", vocab: `[["a", 0]]`, wantErr: "want more than 6"},
		{name: "bad pair", vocab: `[["a"],["b",0],["c",0],["d",0],["e",0],["f",0],["g",0]]`, wantErr: "entry 0"},
		{name: "bad score", vocab: `[["a","x"],["b",0],["c",0],["d",0],["e",0],["f",0],["g",0]]`, wantErr: "score is string"},
		{name: "bad piece", vocab: `[[1,0],["b",0],["c",0],["d",0],["e",0],["f",0],["g",0]]`, wantErr: "piece is float64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newLiteTokenizer([]byte(tt.vocab))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("newTokenizer error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
