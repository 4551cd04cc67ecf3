package index

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSnippet(t *testing.T) {
	a, err := newAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	terms := func(text string) map[string]struct{} {
		p, err := parseQuery(a, text)
		if err != nil {
			t.Fatal(err)
		}
		return p.matchTerms()
	}
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 20) // 540 bytes
	tests := []struct {
		name, query, body string
		want              []string // substrings the snippet must contain
		notWant           []string
		exact             string
	}{
		{name: "short text is shown whole", query: "config", body: "load the config now",
			exact: "load the <mark>config</mark> now"},
		{name: "identifier and its sub-words are one mark", query: "parseConfigFile", body: "call parseConfigFile()",
			exact: "call <mark>parseConfigFile</mark>()"},
		{name: "sub-word match marks inside the identifier", query: "file", body: "call parseConfigFile()",
			exact: "call parseConfig<mark>File</mark>()"},
		{name: "stemmed match", query: "running tests", body: "we ran the tests while running CI",
			exact: "we ran the <mark>tests</mark> while <mark>running</mark> CI"},
		{name: "escaped and white space collapsed", query: "script", body: "a  \n\n b <script>x & y</script>",
			exact: "a b &lt;<mark>script</mark>&gt;x &amp; y&lt;/<mark>script</mark>&gt;"},
		{name: "long text is cut around the match", query: "needle", body: filler + "the needle is here " + filler,
			want: []string{"… ", "<mark>needle</mark> is here", " …"}},
		{name: "window with most distinct terms wins", query: "alpha bravo",
			body: "alpha " + filler + "alpha alpha alpha " + filler + "here alpha and bravo together " + filler,
			want: []string{"<mark>alpha</mark> and <mark>bravo</mark> together"}},
		{name: "no match shows the beginning", query: "zzz", body: filler,
			want: []string{"lorem ipsum"}, notWant: []string{"<mark>", "… lorem"}},
		{name: "multi-byte text cut on rune boundaries", query: "needle",
			body: strings.Repeat("日本語のテキスト ", 40) + "needle" + strings.Repeat(" café naïve", 40),
			want: []string{"<mark>needle</mark>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := explain(a, terms(tt.query), "", tt.body)
			if !utf8.ValidString(got) {
				t.Errorf("snippet is not valid UTF-8: %q", got)
			}
			if tt.exact != "" && got != tt.exact {
				t.Errorf("snippet\n got %q\nwant %q", got, tt.exact)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("snippet %q lacks %q", got, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("snippet %q contains %q", got, w)
				}
			}
			if plain := strings.NewReplacer("<mark>", "", "</mark>", "").Replace(got); len(plain) > snippetBytes+2*len("… ")+16 {
				t.Errorf("snippet is %d bytes long: %q", len(plain), got)
			}
		})
	}
}
