package dashboard

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// A small structural HTML checker in the spirit of pkgsite's htmlcheck:
// pages are parsed with x/net/html and asserted on through CSS-like
// selectors, never by grepping markup.
//
// Selectors: compound selectors separated by spaces (descendant), each an
// optional tag name followed by any of .class, #id, [attr] and [attr=value]
// (the value optionally quoted).

type simpleSel struct {
	child   bool // must be a direct child of what the previous compound matched
	tag     string
	id      string
	classes []string
	attrs   [][2]string // name, value; value "\x00" means "present"
}

func parseSelector(t testing.TB, sel string) []simpleSel {
	t.Helper()
	var out []simpleSel
	child := false
	for _, part := range strings.Fields(strings.ReplaceAll(sel, ">", " > ")) {
		if part == ">" {
			child = true
			continue
		}
		s := simpleSel{child: child}
		child = false
		i := 0
		for i < len(part) && part[i] != '.' && part[i] != '#' && part[i] != '[' {
			i++
		}
		s.tag = part[:i]
		for i < len(part) {
			switch part[i] {
			case '.', '#':
				j := i + 1
				for j < len(part) && part[j] != '.' && part[j] != '#' && part[j] != '[' {
					j++
				}
				if part[i] == '.' {
					s.classes = append(s.classes, part[i+1:j])
				} else {
					s.id = part[i+1 : j]
				}
				i = j
			case '[':
				j := strings.IndexByte(part[i:], ']')
				if j < 0 {
					t.Fatalf("bad selector %q", sel)
				}
				body := part[i+1 : i+j]
				name, val, ok := strings.Cut(body, "=")
				if !ok {
					val = "\x00"
				}
				s.attrs = append(s.attrs, [2]string{name, strings.Trim(val, `"'`)})
				i += j + 1
			default:
				t.Fatalf("bad selector %q", sel)
			}
		}
		out = append(out, s)
	}
	return out
}

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func (s simpleSel) matches(n *html.Node) bool {
	if n.Type != html.ElementNode || s.tag != "" && n.Data != s.tag {
		return false
	}
	if s.id != "" {
		if v, _ := attr(n, "id"); v != s.id {
			return false
		}
	}
	if len(s.classes) > 0 {
		v, _ := attr(n, "class")
		have := strings.Fields(v)
		for _, c := range s.classes {
			found := false
			for _, h := range have {
				found = found || h == c
			}
			if !found {
				return false
			}
		}
	}
	for _, a := range s.attrs {
		v, ok := attr(n, a[0])
		if !ok || a[1] != "\x00" && v != a[1] {
			return false
		}
	}
	return true
}

// findAll returns the nodes under root matching sel, in document order.
func findAll(t testing.TB, root *html.Node, sel string) []*html.Node {
	t.Helper()
	chain := parseSelector(t, sel)
	var out []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if matchChain(n, chain) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

// matchChain reports whether n matches the last compound of chain and its
// ancestors match the rest, by the combinators between them.
func matchChain(n *html.Node, chain []simpleSel) bool {
	last := chain[len(chain)-1]
	if !last.matches(n) {
		return false
	}
	rest := chain[:len(chain)-1]
	if len(rest) == 0 {
		return true
	}
	if last.child {
		return n.Parent != nil && matchChain(n.Parent, rest)
	}
	for a := n.Parent; a != nil; a = a.Parent {
		if matchChain(a, rest) {
			return true
		}
	}
	return false
}

// textOf is the node's text content with whitespace collapsed.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func parseHTML(t testing.TB, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse HTML: %v", err)
	}
	return doc
}

// texts returns the text of every node matching sel.
func texts(t testing.TB, root *html.Node, sel string) []string {
	t.Helper()
	var out []string
	for _, n := range findAll(t, root, sel) {
		out = append(out, textOf(n))
	}
	return out
}

// one returns the single node matching sel, failing the test otherwise.
func one(t testing.TB, root *html.Node, sel string) *html.Node {
	t.Helper()
	ns := findAll(t, root, sel)
	if len(ns) != 1 {
		t.Fatalf("selector %q matched %d nodes, want 1", sel, len(ns))
	}
	return ns[0]
}

func TestSelectors(t *testing.T) {
	doc := parseHTML(t, `<div id="a" class="x y"><p class="y">one</p><span data-k="v">two</span></div><p>three</p>`)
	for _, tc := range []struct {
		sel  string
		want []string
	}{
		{"p", []string{"one", "three"}},
		{"div p", []string{"one"}},
		{"#a .y", []string{"one"}},
		{"div.x.y", []string{"one two"}},
		{"[data-k=v]", []string{"two"}},
		{"span[data-k]", []string{"two"}},
		{"span[data-k=w]", nil},
		{"p.y span", nil},
		{"div > p", []string{"one"}},
		{"body > p", []string{"three"}},
		{"html > p", nil},
		{"#a>span", []string{"two"}},
	} {
		if got := texts(t, doc, tc.sel); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: got %q, want %q", tc.sel, got, tc.want)
		}
	}
}
