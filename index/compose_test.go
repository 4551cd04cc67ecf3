package index

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
)

// composeCases are sessions laid out as the pipeline lays them out (body =
// chunks joined by white space), with the pieces analysis could join or
// shift: identifiers and compounds, a dropped blob and a split identifier
// at a chunk's end (positions taken but no token), possessives, numbers,
// non-ASCII text; and layouts composeSession must refuse.
var composeCases = []composeCase{
	{"words", "Fix the login bug", []string{"why does login fail", "the session's token expired."}, []string{"", "\n\n", ""}, true},
	{"identifiers", "parseConfigFile crashes", []string{"see src/parse/config_file.go and HTTPServer", "std::vector<int> v2 3.14 utf8"},
		[]string{"", "\n\n", ""}, true},
	{"dropped blob at end", "t", []string{"before " + strings.Repeat("QUJD", 80), "after it"}, []string{"", "\n\n", ""}, true},
	{"split identifier at end", "", []string{"call getUserNameFromRequest", "then parse-config-file"}, []string{"", "\n\n", "\n"}, true},
	{"lone underscore at end", "x_y", []string{"a _", "_ b"}, []string{"", "\n\n", ""}, true},
	{"split at a space", "title", []string{"first half of a long", "exchange continues here"}, []string{"", " ", ""}, true},
	{"split at a sentence", "title", []string{"One sentence.", "Another one."}, []string{"", " ", ""}, true},
	{"leading white space", "", []string{"alpha", "beta"}, []string{"  ", "\n\n", "  "}, true},
	{"no title", "", []string{"alpha beta", "gamma"}, []string{"", "\n\n", ""}, true},
	{"unicode", "Größe ändern", []string{"日本語のテキスト と English", "émoji 🚀 naïve café"}, []string{"", "\n\n", ""}, true},
	{"non-ASCII after a line break", "t", []string{"one", "\u0301accent"}, []string{"", "\n\n", ""}, true},
	{"mid-word cut", "t", []string{"abcdef", "ghijkl"}, []string{"", "", ""}, false},
	{"combining mark after a space", "t", []string{"one", "\u0301accent"}, []string{"", " ", ""}, false},
	{"text between chunks", "t", []string{"one", "two"}, []string{"", " lost ", ""}, false},
	{"text after the last chunk", "t", []string{"one", "two"}, []string{"", "\n\n", " tail"}, false},
}

type composeCase struct {
	name     string
	title    string
	chunks   []string
	sep      []string // gaps: before the first chunk, between chunks, after the last ("" = none)
	composed bool     // composeSession must accept the layout
}

func (tc composeCase) session() Session {
	s := Session{UserID: "u", SessionID: tc.name, Title: tc.title}
	var b strings.Builder
	b.WriteString(tc.sep[0])
	for i, c := range tc.chunks {
		if i > 0 {
			b.WriteString(tc.sep[1])
		}
		b.WriteString(c)
		s.Chunks = append(s.Chunks, Chunk{Ordinal: i, Text: c})
	}
	b.WriteString(tc.sep[2])
	s.Body = b.String()
	return s
}

// TestComposeSession: where composeSession accepts a layout, its tokens are
// exactly the analysis of the session's text (terms, offsets, positions,
// types); and it accepts the layouts the pipeline makes.
func TestComposeSession(t *testing.T) {
	a, err := newAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range composeCases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.session()
			segs := make([]segmentTokens, len(s.Chunks))
			for i, c := range s.Chunks {
				var ok bool
				if segs[i], ok = analyzeSegment(a, []byte(c.Text)); !ok {
					t.Fatal("analyzeSegment refused the index's analyzer")
				}
				if want := a.Analyze([]byte(c.Text)); tokenString(segs[i].tokens) != tokenString(want) {
					t.Errorf("chunk %d: analyzeSegment\n%s\nwant\n%s", i, tokenString(segs[i].tokens), tokenString(want))
				}
			}
			title, _ := analyzeSegment(a, []byte(s.Title))
			for _, repeat := range []int{1, DefaultTitleBoost, 3} {
				got, ok := composeSession(s, repeat, title, segs)
				if ok != tc.composed {
					t.Fatalf("repeat %d: composed = %v, want %v", repeat, ok, tc.composed)
				}
				if !ok {
					continue
				}
				want := a.Analyze([]byte(sessionText(s, repeat)))
				if g, w := tokenString(got), tokenString(want); g != w {
					t.Errorf("repeat %d: composed tokens\n%s\nwant\n%s", repeat, g, w)
				}
			}
		})
	}
}

func tokenString(ts analysis.TokenStream) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%q@%d[%d:%d]%d ", t.Term, t.Position, t.Start, t.End, t.Type)
	}
	return b.String()
}

// TestPutMatchesIncremental: a rebuild's Put (session tokens composed from
// the chunks') and the live pipeline's PutSessions then PutChunks (each
// text analysed on its own) make indexes that answer every query with the
// same documents and scores.
func TestPutMatchesIncremental(t *testing.T) {
	ctx := context.Background()
	var sessions []Session
	for i := range 40 {
		tc := composeCases[i%len(composeCases)]
		s := tc.session()
		s.SessionID = fmt.Sprintf("s%d", i)
		s.Title += fmt.Sprintf(" topic%d", i%5)
		sessions = append(sessions, s)
	}
	rebuilt, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	live, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := rebuilt.Put(ctx, sessions); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(sessions); i += 7 {
		part := sessions[i:min(i+7, len(sessions))]
		if err := live.PutSessions(ctx, part); err != nil {
			t.Fatal(err)
		}
		if err := live.PutChunks(ctx, part); err != nil {
			t.Fatal(err)
		}
	}
	queries := []string{"login", "parse config file", "getUserName", `"config file"`, "topic3 words", "accent", "English",
		"naïve café", "sentence", "alpha gamma", "after", "HTTP server", "3.14", "x_y"}
	for _, kind := range []Kind{Sessions, Chunks} {
		for _, q := range queries {
			want, err := live.Search(ctx, Query{UserID: "u", Text: q, Kind: kind, Limit: 100, Explain: true})
			if err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			got, err := rebuilt.Search(ctx, Query{UserID: "u", Text: q, Kind: kind, Limit: 100, Explain: true})
			if err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			if len(want) == 0 && kind == Sessions { // (some words are only in titles)
				t.Errorf("kind %v %q: no hits; the query does not test anything", kind, q)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("kind %v %q:\nrebuilt %v\nlive    %v", kind, q, got, want)
			}
		}
	}
}
