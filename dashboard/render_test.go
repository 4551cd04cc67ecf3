package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

func TestRenderMarkdown(t *testing.T) {
	const rel = ` rel="nofollow noopener noreferrer"`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"paragraphs and breaks", "one\ntwo\n\nthree", "<p>one<br>\ntwo</p>\n<p>three</p>\n"},
		{"escapes html", `<script>alert("x")</script> & <b>`, "<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;</p>\n"},
		{"html block is text", "<div onclick=\"x()\">\n<img src=x onerror=alert(1)>\n</div>", "<p>&lt;div onclick=&quot;x()&quot;&gt;<br>\n&lt;img src=x onerror=alert(1)&gt;<br>\n&lt;/div&gt;</p>\n"},
		{"html comment is text", "<!-- hidden -->", "<p>&lt;!-- hidden --&gt;</p>\n"},
		{"inline code", "run `go test <pkg>` now", "<p>run <code>go test &lt;pkg&gt;</code> now</p>\n"},
		{"double backtick code", "``a ` b``", "<p><code>a ` b</code></p>\n"},
		{"unclosed backtick", "a ` b", "<p>a ` b</p>\n"},
		{"bold and italic", "**bold** and *it* and _it_", "<p><strong>bold</strong> and <em>it</em> and <em>it</em></p>\n"},
		{"snake case stays", "call parse_config_file_now and a_b", "<p>call parse_config_file_now and a_b</p>\n"},
		{"spaced stars stay", "2 * 3 * 4", "<p>2 * 3 * 4</p>\n"},
		{"triple run", "**bold `code` *it***", "<p><strong>bold <code>code</code> <em>it</em></strong></p>\n"},
		{"nested emphasis", "**bold *it* more**", "<p><strong>bold <em>it</em> more</strong></p>\n"},
		{"bold with code", "**use `x`**", "<p><strong>use <code>x</code></strong></p>\n"},
		{"strikethrough", "~~old~~ new", "<p><del>old</del> new</p>\n"},
		{"https link", "[docs](https://go.dev/doc?a=1&b=2)", `<p><a href="https://go.dev/doc?a=1&amp;b=2"` + rel + `>docs</a></p>` + "\n"},
		{"link title dropped", `[docs](https://go.dev "Go")`, `<p><a href="https://go.dev"` + rel + `>docs</a></p>` + "\n"},
		{"mailto link", "[mail](mailto:a@example.com)", `<p><a href="mailto:a@example.com"` + rel + `>mail</a></p>` + "\n"},
		{"javascript link is text", "[x](javascript:alert(1))", "<p>x</p>\n"},
		{"javascript autolink is text", "<javascript:alert(1)>", "<p>javascript:alert(1)</p>\n"},
		{"mixed case scheme is text", "[x](JaVaScRiPt:alert(1))", "<p>x</p>\n"},
		{"data link is text", "[x](data:text/html,hi)", "<p>x</p>\n"},
		{"vbscript link is text", "[x](vbscript:msgbox)", "<p>x</p>\n"},
		{"relative link is text", "[main.go](src/main.go)", "<p>main.go</p>\n"},
		{"reference link", "[x][r]\n\n[r]: javascript:alert(1)", "<p>x</p>\n"},
		{"quote in url stays in url", `[x](https://a.b/"onmouseover=alert(1))`, `<p><a href="https://a.b/%22onmouseover=alert(1)"` + rel + `>x</a></p>` + "\n"},
		{"image becomes link", "![diagram](https://example.com/d.png)", `<p><a href="https://example.com/d.png"` + rel + `>diagram</a></p>` + "\n"},
		{"image without alt", "![](https://example.com/d.png)", `<p><a href="https://example.com/d.png"` + rel + `>image</a></p>` + "\n"},
		{"data image is text", "![x](data:image/png;base64,AAAA)", "<p>x</p>\n"},
		{"bare url", "see https://example.com/x.", `<p>see <a href="https://example.com/x"` + rel + `>https://example.com/x</a>.</p>` + "\n"},
		{"www url", "see www.example.com", `<p>see <a href="http://www.example.com"` + rel + `>www.example.com</a></p>` + "\n"},
		{"email", "mail a@example.com", `<p>mail <a href="mailto:a@example.com"` + rel + `>a@example.com</a></p>` + "\n"},
		{"ftp url is text", "get ftp://example.com/f", "<p>get ftp://example.com/f</p>\n"},
		{"bare scheme only", "http:// nothing", "<p>http:// nothing</p>\n"},
		{"backslash escape", `\*not italic\*`, "<p>*not italic*</p>\n"},
		{"fence", "```go\nfunc main() { <x> }\n```\nafter", "<pre><code class=\"language-go\">func main() { &lt;x&gt; }\n</code></pre>\n<p>after</p>\n"},
		{"fence bad language", "```\"><script>\nx\n```", "<pre><code>x\n</code></pre>\n"},
		{"unclosed fence runs to end", "~~~\na\n\nb", "<pre><code>a\n\nb\n</code></pre>\n"},
		{"longer fence", "````\n```\n````", "<pre><code>```\n</code></pre>\n"},
		{"heading", "# Title *x*\n## Sub ##", "<h3>Title <em>x</em></h3>\n<h4>Sub</h4>\n"},
		{"deep heading", "###### six", "<h6>six</h6>\n"},
		{"hashtag is text", "#tag", "<p>#tag</p>\n"},
		{"bullets", "- a\n- **b**\n  more\n- c", "<ul>\n<li>a</li>\n<li><strong>b</strong><br>\nmore</li>\n<li>c</li>\n</ul>\n"},
		{"ordered", "3. x\n4. y", "<ol start=\"3\">\n<li>x</li>\n<li>y</li>\n</ol>\n"},
		{"list then ordered", "- a\n1. b", "<ul>\n<li>a</li>\n</ul>\n<ol>\n<li>b</li>\n</ol>\n"},
		{"nested lists", "- a\n  - b\n    1. c\n- d", "<ul>\n<li>a\n<ul>\n<li>b\n<ol>\n<li>c</li>\n</ol>\n</li>\n</ul>\n</li>\n<li>d</li>\n</ul>\n"},
		{"task list", "- [x] done\n- [ ] todo", "<ul>\n<li><input checked=\"\" disabled=\"\" type=\"checkbox\"> done</li>\n<li><input disabled=\"\" type=\"checkbox\"> todo</li>\n</ul>\n"},
		{"table", "| a | b |\n|:--|--:|\n| `x` | <y> |",
			"<table>\n<thead>\n<tr>\n<th align=\"left\">a</th>\n<th align=\"right\">b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td align=\"left\"><code>x</code></td>\n<td align=\"right\">&lt;y&gt;</td>\n</tr>\n</tbody>\n</table>\n"},
		{"quote", "> quoted <i>\n> more", "<blockquote>\n<p>quoted &lt;i&gt;<br>\nmore</p>\n</blockquote>\n"},
		{"rule", "a\n\n---\nb", "<p>a</p>\n<hr>\n<p>b</p>\n"},
		{"crlf", "a\r\nb", "<p>a<br>\nb</p>\n"},
		{"empty", "", ""},
		{"too deep is plain text", strings.Repeat("> ", 20) + "<b>x</b>\n\nnext", "<p>" + strings.Repeat("&gt; ", 20) + "&lt;b&gt;x&lt;/b&gt;</p>\n<p>next</p>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(renderMarkdown(tc.in))
			if got != tc.want {
				t.Errorf("renderMarkdown(%q)\n got: %q\nwant: %q", tc.in, got, tc.want)
			}
			checkMarkdownSafe(t, tc.in, got)
		})
	}
}

// allowedMarkdownHTML are the only elements renderMarkdown may produce.
var allowedMarkdownHTML = []string{"p", "br", "code", "pre", "strong", "em", "del", "a", "ul", "ol", "li", "input",
	"table", "thead", "tbody", "tr", "th", "td", "h3", "h4", "h5", "h6", "blockquote", "hr"}

// checkMarkdownSafe parses out and fails on any element or attribute the
// renderer must never produce.
func checkMarkdownSafe(t *testing.T, in, out string) {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(out), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if !slices.Contains(allowedMarkdownHTML, n.Data) {
				t.Fatalf("renderMarkdown(%q) produced <%s>: %q", in, n.Data, out)
			}
			for _, a := range n.Attr {
				switch {
				case n.Data == "a" && a.Key == "href":
					if l := strings.ToLower(a.Val); !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") && !strings.HasPrefix(l, "mailto:") {
						t.Fatalf("renderMarkdown(%q) linked to %q", in, a.Val)
					}
				case n.Data == "a" && a.Key == "rel" && a.Val == "nofollow noopener noreferrer",
					n.Data == "code" && a.Key == "class" && langRe.MatchString(strings.TrimPrefix(a.Val, "language-")),
					n.Data == "ol" && a.Key == "start",
					(n.Data == "th" || n.Data == "td") && a.Key == "align" && slices.Contains([]string{"left", "center", "right"}, a.Val),
					n.Data == "input" && (a.Key == "type" && a.Val == "checkbox" || a.Key == "disabled" || a.Key == "checked"):
				default:
					t.Fatalf("renderMarkdown(%q) produced attribute %s=%q on <%s>: %q", in, a.Key, a.Val, n.Data, out)
				}
			}
			if n.Data == "input" {
				if _, disabled := attr(n, "disabled"); !disabled {
					t.Fatalf("renderMarkdown(%q) produced an enabled <input>: %q", in, out)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
}

func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range []string{
		"<script>alert(1)</script>", "[a](https://x.y/\"><img src=x onerror=alert(1)>)", "**_`x`_**",
		"```js\n</code></pre><script>\n```", "> > > deep\n>> x", "- [x](javascript:1)\n1. <b>",
		"https://a.b/<script>", "*a **b** c*", "[`code`](http://x)", "\\<b>", "#### <h1>",
		"![x](javascript:alert(1))", "| a |\n|---|\n| <b> |", "- [ ] <i>x</i>", "<div>\n*x*\n</div>",
		"[x]: data:text/html,1\n\n[y][x]", "<mailto:a@b.c>", "~~<s>~~",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkMarkdownSafe(t, in, string(renderMarkdown(in)))
	})
}

// hostileInputs are 1 MiB each, built to make a Markdown parser slow:
// nesting, unclosed openers, link starts, tables of empty rows. superlinear
// says which shapes goldmark parses in more than linear time, so they must
// take the plain-text fallback (slowToParse).
func hostileInputs() (inputs []string, superlinear map[string]bool) {
	// Lists nested by indentation, a level deeper on each line: without
	// bound, and up to just under the bound again and again.
	var nested, sawtooth, deepText strings.Builder
	for i := 0; nested.Len() < 1<<20; i++ {
		nested.WriteString(strings.Repeat("  ", i) + "- x\n")
		sawtooth.WriteString(strings.Repeat("  ", i%50) + "- x\n")
	}
	for i := 0; deepText.Len() < 1<<20; i++ { // 50 levels, then lines inside the deepest
		if i < 50 {
			deepText.WriteString(strings.Repeat("  ", i) + "- x\n")
		} else {
			deepText.WriteString(strings.Repeat(" ", 100) + "x\n")
		}
	}
	inputs = []string{nested.String(), sawtooth.String(), deepText.String()}
	superlinear = map[string]bool{nested.String(): true}
	for _, unit := range []string{"*", "**a ", "_", "`", "``` ", "[", "[a](", "[a](javascript:", "https://", "> ", "- ", "\\", "*a `b ", "**x*",
		"![a](", "[](", "[a](<", "[a](x '\n", "[a](x \"\n", "[a]: x \"\n", "[a]:\n", "- > ", "> - ", "1. ", "a|b\n-|-\n", "|\n", "~~", "www.", "a@b.c ", "- [ ] "} {
		in := strings.Repeat(unit, (1<<20)/len(unit))
		inputs = append(inputs, in)
		switch unit {
		case "[a](", "[a](javascript:", "![a](", "[](", "[a](<", "[a](x '\n", "[a](x \"\n", "[a]: x \"\n", "[a]:\n", // link starts: quadratic
			"> ", "- > ", "> - ", "- ", "1. ": // one line opening thousands of blocks: quadratic
			superlinear[in] = true
		}
	}
	return inputs, superlinear
}

// Hostile input renders to safe, non-empty output, and every shape goldmark
// would parse in more than linear time takes the plain-text fallback. How
// long each takes is BenchmarkRenderMarkdownHostile's to report (a unit test
// asserts no wall-clock time).
func TestRenderMarkdownHostile(t *testing.T) {
	inputs, superlinear := hostileInputs()
	for _, in := range inputs {
		name := fmt.Sprintf("%.16q", in)
		if got := slowToParse(in); got != superlinear[in] {
			t.Errorf("slowToParse(1 MiB of %s) = %v, want %v", name, got, superlinear[in])
		}
		out := string(renderMarkdown(in))
		if out == "" {
			t.Errorf("1 MiB of %s rendered nothing", name)
		}
		checkMarkdownSafe(t, in[:min(len(in), 4096)], string(renderMarkdown(in[:min(len(in), 4096)])))
	}
	// Ordinary text of the same size stays Markdown.
	prose := strings.Repeat("Fix the *login* redirect: see [the docs](https://example.com/a) and `main.go`.\n\n- one\n  - two\n\n", 1<<20/100)
	if slowToParse(prose) {
		t.Error("1 MiB of ordinary Markdown took the plain-text fallback")
	}
}

// BenchmarkRenderMarkdownHostile reports the time of each hostile input:
// go test -run '^$' -bench RenderMarkdownHostile -benchtime 1x ./dashboard/
func BenchmarkRenderMarkdownHostile(b *testing.B) {
	inputs, _ := hostileInputs()
	for _, in := range inputs {
		b.Run(fmt.Sprintf("%.16q", in), func(b *testing.B) {
			for b.Loop() {
				renderMarkdown(in)
			}
		})
	}
}

// One renderer serves every request: rendering in parallel must give each
// caller its own output (run with -race).
func TestRenderMarkdownConcurrent(t *testing.T) {
	inputs := []string{"# a\n\n- [x] b\n  - c", "| a |\n|---|\n| b |", "see https://x.example and [y](https://y.example)", "![i](https://i.example/p.png) ~~d~~"}
	want := make([]template.HTML, len(inputs))
	for i, in := range inputs {
		want[i] = renderMarkdown(in)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := (g + i) % len(inputs)
				if got := renderMarkdown(inputs[k]); got != want[k] {
					t.Errorf("parallel render of %q: %q, want %q", inputs[k], got, want[k])
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkRenderMarkdown renders a long, ordinary assistant message: prose,
// lists, a table, links and code, about 1 MiB.
func BenchmarkRenderMarkdown(b *testing.B) {
	const unit = "## Step\n\nThe handler reads the **session** from `kv` and checks [the spec](https://example.com/spec#s) first; see https://go.dev/doc.\n\n" +
		"- one item\n  - nested *item*\n- [x] done\n\n| file | lines |\n|---|--:|\n| a.go | 12 |\n\n```go\nfunc f(a []int) int { return a[0](1) }\n```\n\n> quoted text\n\n"
	in := strings.Repeat(unit, (1<<20)/len(unit))
	if slowToParse(in) {
		b.Fatal("an ordinary message is taken for a hostile one")
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		renderMarkdown(in)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		max  float64
		want []float64
	}{
		{0, []float64{0, 1}},
		{math.NaN(), []float64{0, 1}},
		{1, []float64{0, 0.5, 1}},
		{7, []float64{0, 2, 4, 6, 8}},
		{10, []float64{0, 5, 10}},
		{95, []float64{0, 50, 100}},
		{1234, []float64{0, 500, 1000, 1500}},
		{0.3, []float64{0, 0.1, 0.2, 0.3}},
		{0.0042, []float64{0, 0.002, 0.004, 0.006}},
		{2_000_001, []float64{0, 1e6, 2e6, 3e6}},
	} {
		got := niceTicks(tc.max, 4)
		if !slices.Equal(got, tc.want) {
			t.Errorf("niceTicks(%v) = %v, want %v", tc.max, got, tc.want)
		}
	}
}

func TestBarChart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chart     barChart
		wantBars  int
		wantLabel []string // x labels shown
		wantTitle string   // first bar's tooltip
		empty     bool
	}{
		{name: "basic", chart: barChart{ID: "c", Title: "T", Labels: []string{"a", "b", "c"}, Values: []float64{1, 0, 3}},
			wantBars: 3, wantLabel: []string{"a", "b", "c"}, wantTitle: "a: 1"},
		{name: "escapes labels", chart: barChart{ID: "c", Title: "<T>", Labels: []string{`<script>x</script>`}, Values: []float64{2}},
			wantBars: 1, wantLabel: []string{"<script>x</script>"}, wantTitle: "<script>x</script>: 2"},
		{name: "thins labels", chart: barChart{ID: "c", Title: "T", Labels: strings.Fields(strings.Repeat("2026-03-01 ", 60)), Values: slices.Repeat([]float64{1}, 60)},
			wantBars: 60},
		{name: "money", chart: barChart{ID: "c", Title: "T", Labels: []string{"d"}, Values: []float64{0.5}, Format: formatMoney},
			wantBars: 1, wantLabel: []string{"d"}, wantTitle: "d: $0.50"},
		{name: "no data", chart: barChart{ID: "c", Title: "T"}, empty: true},
		{name: "all zero", chart: barChart{ID: "c", Title: "T", Labels: []string{"a"}, Values: []float64{0}}, empty: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := string(tc.chart.SVG())
			doc := parseHTML(t, "<div>"+out+"</div>")
			if got := texts(t, doc, "svg title"); len(got) == 0 || got[0] != tc.chart.Title {
				t.Errorf("chart title = %q, want %q", got, tc.chart.Title)
			}
			if strings.Contains(out, "<script") {
				t.Errorf("unescaped label in %s", out)
			}
			if len(findAll(t, doc, "svg[role=img]")) != 1 {
				t.Errorf("svg must be role=img")
			}
			if tc.empty {
				if len(findAll(t, doc, "text.chart-empty")) != 1 || len(findAll(t, doc, "rect")) != 0 {
					t.Errorf("empty chart: %s", out)
				}
				return
			}
			bars := findAll(t, doc, "rect.bar")
			if len(bars) != tc.wantBars {
				t.Errorf("%d bars, want %d", len(bars), tc.wantBars)
			}
			labels := texts(t, doc, "text.label")
			if tc.wantLabel != nil && !slices.Equal(labels, tc.wantLabel) {
				t.Errorf("labels %q, want %q", labels, tc.wantLabel)
			}
			if tc.name == "thins labels" && (len(labels) >= 60 || len(labels) < 5) {
				t.Errorf("60 long labels should be thinned, got %d", len(labels))
			}
			if tc.wantTitle != "" && textOf(one(t, bars[0], "title")) != tc.wantTitle {
				t.Errorf("tooltip %q, want %q", textOf(one(t, bars[0], "title")), tc.wantTitle)
			}
			// The tallest bar reaches the top tick; a zero bar has no height.
			if tc.name == "basic" {
				h := func(n int) string { v, _ := attr(bars[n], "height"); return v }
				if h(1) != "0" || h(0) == "0" {
					t.Errorf("heights %s %s %s", h(0), h(1), h(2))
				}
			}
		})
	}
}

func TestHBarChart(t *testing.T) {
	long := strings.Repeat("m", 40)
	c := hbarChart{ID: "m", Title: "Tokens per model", Labels: []string{long, "<b>x</b>"}, Values: []float64{10, 5}}
	doc := parseHTML(t, "<div>"+string(c.SVG())+"</div>")
	labels := texts(t, doc, "text.label")
	if len(labels) != 2 || len([]rune(labels[0])) != hbarMaxCh || labels[1] != "<b>x</b>" {
		t.Errorf("labels %q", labels)
	}
	if got := texts(t, doc, "rect.bar title"); got[0] != long+": 10" {
		t.Errorf("tooltip keeps the whole label: %q", got)
	}
	if len(findAll(t, doc, "b")) != 0 {
		t.Errorf("label markup rendered")
	}
}

func TestFormatters(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{formatInt(0), "0"}, {formatInt(999), "999"}, {formatInt(1000), "1,000"}, {formatInt(1234567), "1,234,567"}, {formatInt(-12345), "-12,345"},
		{formatCompact(0), "0"}, {formatCompact(950), "950"}, {formatCompact(1200), "1.2k"}, {formatCompact(1000), "1k"},
		{formatCompact(3_400_000), "3.4M"}, {formatCompact(2e9), "2B"}, {formatCompact(0.25), "0.25"},
		{formatMoney(0), "$0"}, {formatMoney(12.5), "$12.50"}, {formatMoney(0.123), "$0.123"}, {formatMoney(0.00123), "$0.0012"},
		{formatMoney(0.5), "$0.50"}, {formatMoney(0.0123), "$0.0123"}, {formatMoney(0.01234567), "$0.0123"}, {formatMoney(0.001), "$0.001"},
		{formatMoney(0.00001), "<$0.0001"}, {formatMoney(1), "$1.00"},
		{formatDuration(0), "—"}, {formatDuration(850), "850ms"}, {formatDuration(12_400), "12s"},
		{formatDuration(185_000), "3m 05s"}, {formatDuration(2*3600_000 + 4*60_000), "2h 04m"},
		{formatTime(0), "—"}, {formatTime(time.Date(2026, 3, 1, 14, 5, 0, 0, time.UTC).UnixMilli()), "2026-03-01 14:05"},
		{statusLabel("needs_review"), "Needs review"}, {statusLabel("golden"), "Golden"}, {statusLabel(""), "—"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestSnippetHTML(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a <mark>login</mark> b", "a <mark>login</mark> b"},
		{"&lt;script&gt; <mark>x</mark>", "&lt;script&gt; <mark>x</mark>"},
		{"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"<mark>unclosed", "<mark>unclosed</mark>"},
		{"<mark><img src=x onerror=1></mark>", "<mark>&lt;img src=x onerror=1&gt;</mark>"},
		{"&amp;quot; &#39;", "&amp;quot; &#39;"},
	} {
		if got := string(snippetHTML(tc.in)); got != tc.want {
			t.Errorf("snippetHTML(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLoginLimiter(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	l := newLoginLimiter(3, 5, 6, time.Minute, func() time.Time { return now })
	for range 3 {
		if l.wait("1.1.1.1", "alice") != 0 {
			t.Fatal("limited too early")
		}
		l.fail("1.1.1.1", "alice")
		now = now.Add(time.Second)
	}
	if w := l.wait("1.1.1.1", "Alice"); w <= 0 || w > time.Minute {
		t.Fatalf("name and client limit: wait %v", w)
	}
	if w := l.wait("2.2.2.2", "alice"); w != 0 {
		t.Fatalf("another client is limited on alice by 1.1.1.1's failures: %v", w)
	}
	if l.wait("2.2.2.2", "bob") != 0 {
		t.Fatal("another name from another address is limited")
	}
	// The address limit catches one client trying many names.
	l.fail("1.1.1.1", "bob")
	l.fail("1.1.1.1", "carol")
	if l.wait("1.1.1.1", "dave") <= 0 {
		t.Fatal("address limit not applied")
	}
	// A name failed from many clients is under attack: a client that has
	// failed on it must wait, one that has not may still try.
	for _, ip := range []string{"3.3.3.3", "4.4.4.4", "5.5.5.5"} {
		l.fail(ip, "alice")
	}
	if l.wait("3.3.3.3", "alice") <= 0 {
		t.Fatal("a failing client may keep trying a name under attack")
	}
	if l.wait("6.6.6.6", "alice") != 0 || l.wait("3.3.3.3", "bob") != 0 {
		t.Fatal("a clean client, or another name, is limited by an attack on alice")
	}
	// IPv6 clients are counted by /64, what one host usually holds.
	for range 3 {
		l.fail("2001:db8:1:2::1", "erin")
	}
	if l.wait("2001:db8:1:2:ffff::9", "erin") <= 0 {
		t.Fatal("another address in the same /64 escapes the limit")
	}
	if l.wait("2001:db8:1:3::1", "erin") != 0 {
		t.Fatal("another /64 is limited")
	}
	now = now.Add(time.Minute)
	if w := l.wait("1.1.1.1", "alice"); w != 0 {
		t.Fatalf("still limited after the window: %v", w)
	}
	l.fail("9.9.9.9", "x")
	if len(l.failures) > 3 {
		t.Errorf("old entries not swept: %d", len(l.failures))
	}
}
