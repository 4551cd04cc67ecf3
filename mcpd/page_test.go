package mcpd

import (
	"strings"
	"testing"
)

func TestReadPage(t *testing.T) {
	const doc = "# Title\n\n- Source: x\n\n" +
		"## User\n\nfirst\n\n" +
		"## Tool\n\n````text\n## inside a fence\n```\n````\n\n" +
		"## Assistant\n\nthird\n\n"
	cases := []struct {
		name      string
		doc       string
		from, max int
		want      page
		contains  []string
		absent    []string
	}{
		{"all", doc, 1, 1000, page{from: 1, to: 3, total: 3}, []string{"- Source: x", "## inside a fence", "third"}, nil},
		{"from 2", doc, 2, 1000, page{from: 2, to: 3, total: 3}, []string{"# Title\n\n(continued from message 2)", "## Tool"}, []string{"first", "Source"}},
		{"two fit", doc, 1, 90, page{from: 1, to: 2, total: 3}, []string{"## inside a fence"}, []string{"third"}},
		{"cut in a fence", doc, 2, 60, page{from: 2, to: 2, total: 3, cut: true}, []string{"````text\n", "[… message cut here]"}, []string{"third"}},
		{"no messages", "# Title\n\n- Source: x\n\n", 1, 1000, page{from: 1, to: 0, total: 0, headerOnly: true}, []string{"# Title"}, nil},
		{"past the end", doc, 5, 1000, page{from: 5, to: 4, total: 3}, nil, []string{"third"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := readPage(strings.NewReader(c.doc), c.from, c.max)
			if err != nil {
				t.Fatal(err)
			}
			text := p.text
			p.text = ""
			if p != c.want {
				t.Errorf("page %+v, want %+v", p, c.want)
			}
			for _, s := range c.contains {
				if !strings.Contains(text, s) {
					t.Errorf("page lacks %q:\n%s", s, text)
				}
			}
			for _, s := range c.absent {
				if strings.Contains(text, s) {
					t.Errorf("page has %q:\n%s", s, text)
				}
			}
			if strings.Count(text, "````")%2 != 0 {
				t.Errorf("a fence is left open:\n%s", text)
			}
		})
	}
}
