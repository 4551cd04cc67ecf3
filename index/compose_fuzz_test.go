package index

import (
	"strings"
	"testing"
)

// FuzzComposeSession checks the composed rebuild path (composeSession) on
// arbitrary text: wherever it accepts a session's layout, its tokens are
// exactly the analysis of the session's scored text (terms, offsets,
// positions, types), for every title repeat; and it accepts the layout the
// pipeline makes (non-empty chunks, not starting or ending in white space,
// joined by a blank line). chunks is cut into chunks at each '|'; gap
// joins them, lead and trail go before the first and after the last. The
// seed corpus (composeCases and the cases below) runs under go test.
func FuzzComposeSession(f *testing.F) {
	for _, tc := range composeCases {
		f.Add(tc.title, strings.Join(tc.chunks, "|"), tc.sep[1], tc.sep[0], tc.sep[2])
	}
	f.Add("t", "a|a|a", "\n\n", "", "")
	f.Add("", "x\u200dy|\u200dz", " ", "", "")
	f.Add("title\nwith a break", "one's|two's", "\t", " ", "\n")
	f.Add("QUJD", "QUJDQUJDQUJDQUJDQUJDQUJDQUJDQUJD|end", "\n", "", "")
	a, err := newAnalyzer()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, title, chunks, gap, lead, trail string) {
		s := Session{UserID: "u", SessionID: "s", Title: title}
		pieces := strings.Split(chunks, "|")
		for i, c := range pieces {
			s.Chunks = append(s.Chunks, Chunk{Ordinal: i, Text: c})
		}
		s.Body = lead + strings.Join(pieces, gap) + trail
		segs := make([]segmentTokens, len(s.Chunks))
		for i, c := range s.Chunks {
			var ok bool
			if segs[i], ok = analyzeSegment(a, []byte(c.Text)); !ok {
				t.Fatalf("analyzeSegment refused chunk %q", c.Text)
			}
		}
		titleTokens, ok := analyzeSegment(a, []byte(s.Title))
		if !ok {
			t.Fatalf("analyzeSegment refused title %q", s.Title)
		}
		const space = " \t\n\r\v\f"
		pipeline := gap == "\n\n" && lead == "" && strings.Trim(trail, space) == ""
		for _, c := range pieces {
			pipeline = pipeline && c != "" && strings.Trim(c, space) == c
		}
		for _, repeat := range []int{1, DefaultTitleBoost} {
			got, ok := composeSession(s, repeat, titleTokens, segs)
			if pipeline && !ok {
				t.Fatalf("repeat %d: the pipeline's layout was refused: %q", repeat, s.Body)
			}
			if !ok {
				continue
			}
			want := a.Analyze([]byte(sessionText(s, repeat)))
			if g, w := tokenString(got), tokenString(want); g != w {
				t.Fatalf("repeat %d: composed tokens\n%s\nwant\n%s", repeat, g, w)
			}
		}
	})
}
