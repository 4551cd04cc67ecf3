package index

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestLex(t *testing.T) {
	w := func(s string) clause { return clause{Text: s} }
	p := func(s string) clause { return clause{Text: s, Phrase: true} }
	nw := func(s string) clause { return clause{Text: s, Negated: true} }
	np := func(s string) clause { return clause{Text: s, Phrase: true, Negated: true} }
	tests := []struct {
		in   string
		want []clause
	}{
		{"", nil},
		{"   \t\n ", nil},
		{"flaky auth test", []clause{w("flaky"), w("auth"), w("test")}},
		{`fix "race condition" now`, []clause{w("fix"), p("race condition"), w("now")}},
		{`-vendor -"generated code" keep`, []clause{nw("vendor"), np("generated code"), w("keep")}},
		{`“curly quotes”`, []clause{p("curly quotes")}},
		{`a"b c"d`, []clause{w("a"), p("b c"), w("d")}},
		// a '-' negates only at the start of a word, before a word or a quote
		{"--dry-run - x-y", []clause{w("--dry-run"), w("-"), w("x-y")}},
		// unmatched quote: ignored, the rest is words
		{`fix "race condition`, []clause{w("fix"), w("race"), w("condition")}},
		{`-"open phrase`, []clause{w("open"), w("phrase")}},
		{`""  "  "`, nil},
		// invalid UTF-8 after '-' advances one byte
		{"-\xffab c", []clause{nw("\xffab"), w("c")}},
		// Bleve syntax is just text
		{"title:foo +bar ~baz^2 (a OR b) *:*", []clause{w("title:foo"), w("+bar"), w("~baz^2"), w("(a"), w("OR"), w("b)"), w("*:*")}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := lex(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("lex(%q)\n got %#v\nwant %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseQuery(t *testing.T) {
	a, err := newAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		want    parsedQuery
		wantErr bool // ErrBadQuery
	}{
		{in: "flaky auth tests", want: parsedQuery{Terms: []string{"flaki", "auth", "test"}}},
		{in: "test tests testing", want: parsedQuery{Terms: []string{"test"}}},
		{in: "parseConfigFile", want: parsedQuery{Terms: []string{"parseconfigfil", "pars", "config", "file"}}},
		{in: `"race condition" fix`, want: parsedQuery{
			Terms:   []string{"fix"},
			Phrases: []phrase{{{"race"}, {"condit"}}},
		}},
		// a stop word inside a phrase leaves an empty position
		{in: `"parse the config"`, want: parsedQuery{Phrases: []phrase{{{"pars"}, {"the"}, {"config"}}}}},
		// no stop words: "if", "not", "in" are code
		{in: "the and of", want: parsedQuery{Terms: []string{"the", "and", "of"}}},
		// a quoted identifier is a multi-phrase with alternatives at a position
		{in: `"parse_config"`, want: parsedQuery{Phrases: []phrase{{{"parse_config", "pars"}, {"config"}}}}},
		{in: `auth -mock -"fake server"`, want: parsedQuery{
			Terms:   []string{"auth"},
			Exclude: []phrase{{{"mock"}}, {{"fake"}, {"server"}}},
		}},
		// Bleve syntax is not interpreted
		{in: "title:foo", want: parsedQuery{Terms: []string{"title:foo", "titl", "foo"}}},
		{in: "+required ~fuzzy^3 wild*", want: parsedQuery{Terms: []string{"requir", "fuzzi", "3", "wild"}}},
		{in: "café 日本", want: parsedQuery{Terms: []string{"café", "日", "本"}}},
		// nothing to search for
		{in: "*:*", wantErr: true},
		{in: "", wantErr: true},
		{in: `!!! ??? && || () [] {} \ / ^ ~`, wantErr: true},
		{in: "-secret", wantErr: true},
		{in: "😀", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseQuery(a, tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrBadQuery) {
					t.Fatalf("parseQuery(%q) error = %v, want ErrBadQuery", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseQuery(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseQuery(%q)\n got %#v\nwant %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseQueryCapsTerms(t *testing.T) {
	a, err := newAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; b.Len() < 10<<10; i++ {
		b.WriteString("word")
		for n := i; ; n /= 26 {
			b.WriteByte(byte('a' + n%26))
			if n < 26 {
				break
			}
		}
		b.WriteString(` "phrase of words" -mock `)
	}
	got, err := parseQuery(a, b.String())
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for _, t := range got.Terms {
		distinct[t] = true
	}
	for _, ph := range append(got.Phrases, got.Exclude...) {
		for _, alts := range ph {
			for _, t := range alts {
				distinct[t] = true
			}
		}
	}
	if n := len(distinct); n != MaxQueryTerms {
		t.Errorf("parsed %d distinct terms from 10 KiB, want %d", n, MaxQueryTerms)
	}
	if len(got.Phrases) != 1 || len(got.Exclude) != 1 {
		t.Errorf("repeated phrases and exclusions were kept: %d phrases, %d exclusions", len(got.Phrases), len(got.Exclude))
	}
}

func TestParseQueryReadsOnlyMaxQueryBytes(t *testing.T) {
	a, err := newAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat(". ", MaxQueryBytes/2) + "needle"
	if _, err := parseQuery(a, text); !errors.Is(err, ErrBadQuery) {
		t.Errorf("a word after MaxQueryBytes was read: err = %v", err)
	}
	text = "needle " + strings.Repeat("日", MaxQueryBytes) // cut inside a rune
	got, err := parseQuery(a, text)
	if err != nil || got.Terms[0] != "needl" {
		t.Errorf("parseQuery = %+v, %v", got, err)
	}
}
