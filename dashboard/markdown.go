package dashboard

import (
	"bytes"
	"html/template"
	"reflect"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdown renders message text: CommonMark with the GFM extensions (tables,
// strikethrough, autolinks, task lists). Message text comes from models,
// tools and web pages, so the output is restricted:
//
//   - Raw HTML is never parsed as HTML: "<b>" is text and reaches the page
//     escaped (the HTML parsers are left out, and the renderer is not
//     WithUnsafe besides, so anything that slipped through would be omitted).
//   - Links go only to http, https and mailto URLs; any other link (relative,
//     javascript:, data:, vbscript:, file:, ...) keeps its text and loses
//     its href. Links get rel="nofollow noopener noreferrer".
//   - Images are never embedded: an image becomes a link to its URL, labelled
//     with its alt text, under the same scheme rule. A remote <img> would
//     tell its host when a session is viewed (and CSP blocks it anyway), and
//     a data: image can draw anything, including fake page furniture.
//   - Headings move down two levels (# is <h3>): the page and the message
//     own <h1> and <h2>.
//   - A line break inside a paragraph is kept (chat text is written that way).
//   - Table cell alignment is an align attribute, as CSP forbids inline styles.
var markdown = goldmark.New(
	goldmark.WithParser(parser.NewParser(
		parser.WithBlockParsers(without(parser.DefaultBlockParsers(), parser.NewHTMLBlockParser())...),
		parser.WithInlineParsers(without(parser.DefaultInlineParsers(), parser.NewRawHTMLParser())...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
		parser.WithASTTransformers(util.Prioritized(restrict{}, 1000)),
	)),
	goldmark.WithExtensions(
		extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
		extension.Strikethrough,
		extension.NewLinkify(extension.WithLinkifyAllowedProtocols([]string{"http:", "https:", "mailto:"})),
		extension.TaskList,
	),
	goldmark.WithRendererOptions(html.WithHardWraps()),
)

// without returns ps minus the parsers of drop's type.
func without(ps []util.PrioritizedValue, drop any) []util.PrioritizedValue {
	out := ps[:0:0]
	for _, p := range ps {
		if reflect.TypeOf(p.Value) != reflect.TypeOf(drop) {
			out = append(out, p)
		}
	}
	return out
}

// renderMarkdown renders message text as safe HTML (see markdown). Text
// built to make the parser slow is shown as plain text instead.
func renderMarkdown(src string) template.HTML {
	if slowToParse(src) {
		return plainText(src)
	}
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		// Rendering into memory does not fail; if it ever did, the text
		// is still shown.
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(b.String())
}

var langRe = regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,30}$`)

// Goldmark's time grows with the square of two things. A link's destination
// and title are scanned ahead to the end of their paragraph (or line) each
// time a "](" or "]:" starts one, so many of them in one long paragraph cost
// their number times its length; and every line re-checks each block quote
// and list it is inside, so one line opening thousands of them costs their
// number squared (and lists nested by indentation, a level deeper on each
// line, cost their depth cubed, as each level re-reads the indentation).
// Prose and code come nowhere near these bounds; text beyond them is shown
// as plain text, so a hostile message cannot stall a page.
const (
	maxLinkScan     = 1 << 24 // the sum over paragraphs of link starts × length
	maxLineNesting  = 16      // block quote and list markers opening one line
	maxMarkerIndent = 100     // columns of indentation before a list or quote marker
)

// slowToParse reports whether src crosses either bound. It is linear in src.
func slowToParse(src string) bool {
	scan := 0
	for para := range strings.SplitSeq(src, "\n\n") {
		if n := strings.Count(para, "](") + strings.Count(para, "]:"); n > 0 {
			if scan += n * len(para); scan > maxLinkScan {
				return true
			}
		}
	}
	for line := range strings.Lines(src) {
		if n := lineNesting(line); n > maxLineNesting || n > 0 && indent(line) > maxMarkerIndent {
			return true
		}
	}
	return false
}

// indent is the width of line's leading white space, a tab counting 4.
func indent(line string) int {
	w := 0
	for _, c := range []byte(line) {
		switch c {
		case ' ':
			w++
		case '\t':
			w += 4
		default:
			return w
		}
	}
	return w
}

// lineNesting counts the block quote and list markers at the start of line.
func lineNesting(line string) int {
	n, i := 0, 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		switch {
		case i < len(line) && line[i] == '>':
			i++
		case i+1 < len(line) && strings.IndexByte("-*+", line[i]) >= 0 && (line[i+1] == ' ' || line[i+1] == '\t'):
			i += 2
		default:
			j := i
			for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j == i || j+1 >= len(line) || line[j] != '.' && line[j] != ')' || line[j+1] != ' ' && line[j+1] != '\t' {
				return n
			}
			i = j + 2
		}
		n++
	}
}

// plainText shows src as escaped paragraphs with its line breaks.
func plainText(src string) template.HTML {
	var b strings.Builder
	for para := range strings.SplitSeq(strings.ReplaceAll(src, "\r\n", "\n"), "\n\n") {
		if strings.TrimSpace(para) == "" {
			continue
		}
		b.WriteString("<p>")
		b.WriteString(strings.ReplaceAll(template.HTMLEscapeString(strings.Trim(para, "\n")), "\n", "<br>\n"))
		b.WriteString("</p>\n")
	}
	return template.HTML(b.String())
}

// linkRel is set on every link: message text is not endorsed, and the
// target learns nothing about the dashboard.
var linkRel = []byte("nofollow noopener noreferrer")

// allowedURL reports whether a link may point at u: an absolute http or
// https URL, or a mailto address. Browsers ignore leading spaces and control
// characters before a scheme; goldmark's destinations have none, and
// anything not starting exactly so is refused.
func allowedURL(u []byte) bool {
	l := strings.ToLower(string(u[:min(len(u), 8)]))
	switch {
	case strings.HasPrefix(l, "https://"):
		return len(u) > len("https://")
	case strings.HasPrefix(l, "http://"):
		return len(u) > len("http://")
	case strings.HasPrefix(l, "mailto:"):
		return len(u) > len("mailto:")
	}
	return false
}

// restrict applies the link, image and heading rules to the parsed tree.
type restrict struct{}

func (restrict) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	source := reader.Source()
	var links []*ast.Link
	var images []*ast.Image
	var autos []*ast.AutoLink
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			n.Level = min(n.Level+2, 6)
		case *ast.FencedCodeBlock:
			// The language becomes a class name: only a plain word. (Not
			// n.Language, which would cache the answer.)
			if n.Info != nil {
				lang, _, _ := bytes.Cut(n.Info.Segment.Value(source), []byte(" "))
				if !langRe.Match(lang) {
					n.Info = nil
				}
			}
		case *ast.Link:
			links = append(links, n)
		case *ast.Image:
			images = append(images, n)
		case *ast.AutoLink:
			autos = append(autos, n)
		}
		return ast.WalkContinue, nil
	})
	// The tree is changed after the walk, which must not see nodes move.
	for _, img := range images {
		link := ast.NewLink()
		link.Destination = img.Destination
		if img.ChildCount() == 0 {
			link.AppendChild(link, ast.NewString([]byte("image")))
		}
		for c := img.FirstChild(); c != nil; {
			next := c.NextSibling()
			link.AppendChild(link, c)
			c = next
		}
		img.Parent().ReplaceChild(img.Parent(), img, link)
		links = append(links, link)
	}
	for _, l := range links {
		l.Title = nil
		if allowedURL(l.Destination) {
			l.SetAttribute([]byte("rel"), linkRel)
			continue
		}
		// Keep the text, drop the link.
		parent := l.Parent()
		for c := l.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, l, c)
			c = next
		}
		parent.RemoveChild(parent, l)
	}
	for _, a := range autos {
		u := a.URL(source)
		if a.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(u), []byte("mailto:")) {
			u = append([]byte("mailto:"), u...)
		}
		if allowedURL(u) {
			a.SetAttribute([]byte("rel"), linkRel)
			continue
		}
		a.Parent().ReplaceChild(a.Parent(), a, ast.NewString(bytes.Clone(a.Label(source))))
	}
}
