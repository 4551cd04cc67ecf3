package index

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
)

// analyse returns the analyzer output as "term@position" strings.
func analyse(t *testing.T, text string) []string {
	t.Helper()
	a, err := newAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tok := range a.Analyze([]byte(text)) {
		out = append(out, fmt.Sprintf("%s@%d", tok.Term, tok.Position))
	}
	return out
}

func TestAnalyzerIdentifierSplitting(t *testing.T) {
	tests := []struct {
		in   string
		want string // space-separated term@position
	}{
		{"parseConfigFile", "parseconfigfil@1 pars@1 config@2 file@3"},
		{"parse_config_file", "parse_config_fil@1 pars@1 config@2 file@3"},
		{"parse-config-file", "parse-config-fil@1 pars@1 config@2 file@3"},
		{"config.parse.file", "config.parse.fil@1 config@1 pars@2 file@3"},
		{"src/parse/config_file.go", "src/parse/config_file.go@1 src@1 pars@2 config_file.go@3 config@3 file@4 go@5"},
		{"parse config file", "pars@1 config@2 file@3"},
		{"ParseConfigFile()", "parseconfigfil@1 pars@1 config@2 file@3"},
		// later tokens move up by the sub-words added before them
		{"call parseConfigFile now", "call@1 parseconfigfil@2 pars@2 config@3 file@4 now@5"},
		// runs of capitals, digits inside words, leading/trailing underscores
		{"HTTPServer", "httpserver@1 http@1 server@2"},
		{"IOError", "ioerror@1 io@1 error@2"},
		{"base64Encode", "base64encod@1 base64@1 encod@2"},
		{"utf8 sha256 v2", "utf8@1 sha256@2 v2@3"},
		{"__init__", "__init__@1 init@1"},
		{"a _ __ b", "a@1 b@4"},
		{"std::vector", "std::vector@1 std@1 vector@2"},
		// numbers are not split at their decimal point
		{"3.14 v1.2.3", "3.14@1 v1.2.3@2"},
		// stop words inside identifiers are dropped, the whole token stays
		{"get_the_value", "get_the_valu@1 get@1 the@2 valu@3"},
		// English: possessive, lower case, stop words, Porter stems
		{"The Runner's running quickly", "the@1 runner@2 run@3 quickli@4"},
		// punctuation that is not a connector separates
		{"foo(bar) a+b", "foo@1 bar@2 a@3 b@4"},
		// a connector run longer than three characters does not join
		{"foo----bar", "foo@1 bar@2"},
		// non-Latin scripts pass through
		{"日本語 café naïve", "日@1 本@2 語@3 café@4 naïv@5"},
		{"😀 🎉", ""},
		// tokens longer than maxTokenBytes are dropped
		{strings.Repeat("x", maxTokenBytes+1) + " kept", "kept@2"},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			got := strings.Join(analyse(t, tt.in), " ")
			if got != tt.want {
				t.Errorf("analyse(%q)\n got: %s\nwant: %s", tt.in, got, tt.want)
			}
		})
	}
}

// TestAnalyzerSpellingsMeet checks the point of identifier splitting: every
// spelling of the same identifier shares the words of the plain phrase.
func TestAnalyzerSpellingsMeet(t *testing.T) {
	words := []string{"pars", "config", "file"}
	for _, in := range []string{"parseConfigFile", "parse_config_file", "parse-config-file",
		"config.parse.file", "src/parse/config_file.go", "parse config file", "PARSE_CONFIG_FILE"} {
		var terms []string
		for _, s := range analyse(t, in) {
			terms = append(terms, s[:strings.IndexByte(s, '@')])
		}
		for _, w := range words {
			if !slices.Contains(terms, w) {
				t.Errorf("%q: terms %v lack %q", in, terms, w)
			}
		}
	}
}

// TestAnalyzerOffsets checks that every token's offsets cover text that
// analyses to the token itself (snippets rely on this).
func TestAnalyzerOffsets(t *testing.T) {
	a, err := newAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	in := "See src/parse/config_file.go: parseConfigFile() calls HTTPServer.Start, naïve café."
	for _, tok := range a.Analyze([]byte(in)) {
		span := in[tok.Start:tok.End]
		var found bool
		for _, sub := range a.Analyze([]byte(span)) {
			found = found || string(sub.Term) == string(tok.Term)
		}
		if !found {
			t.Errorf("token %q has offsets [%d:%d] = %q, which does not analyse to it", tok.Term, tok.Start, tok.End, span)
		}
	}
}

func TestStemFilterMatchesPorter(t *testing.T) {
	words := []string{"running", "runs", "relational", "conditional", "hopping", "filing", "generalizations",
		"parse", "parsing", "parser", "configuration", "files", "caresses", "ponies", "sky"}
	plain := porter.NewPorterStemmer()
	memo := &stemFilter{inner: porter.NewPorterStemmer(), memo: map[string][]byte{}}
	for pass := 0; pass < 2; pass++ { // the second pass is served from the memo
		for _, w := range words {
			want := plain.Filter(analysis.TokenStream{{Term: []byte(w)}})[0].Term
			got := memo.Filter(analysis.TokenStream{{Term: []byte(w)}})[0].Term
			if string(got) != string(want) {
				t.Errorf("pass %d: stem(%q) = %q, want %q", pass, w, got, want)
			}
		}
	}
	if len(memo.memo) != len(words) {
		t.Errorf("memo holds %d stems, want %d", len(memo.memo), len(words))
	}
}

func TestAnalyzeMatchesIndexTerms(t *testing.T) {
	got, err := Analyze("The parseConfigFile in src/a.go")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"the", "parseconfigfil", "pars", "config", "file", "in", "src/a.go", "src", "a.go", "a", "go"}
	if !slices.Equal(got, want) {
		t.Errorf("Analyze = %q, want %q", got, want)
	}
}

func TestQueryTermsMatchParseQuery(t *testing.T) {
	a, err := NewAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"The parseConfigFile in src/a.go", "IL-6 levels and IL-6 receptors", "parse-config-file config"} {
		pq, err := parseQuery(a.a, text)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.QueryTerms(text); !slices.Equal(got, pq.Terms) {
			t.Errorf("QueryTerms(%q) = %q, parseQuery's terms %q", text, got, pq.Terms)
		}
	}
}
