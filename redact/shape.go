package redact

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// shape says where a rule's match lies relative to a keyword occurrence,
// which decides how its expression is run (detect.go). gitleaks runs every
// rule whose keyword occurs anywhere over the whole text; Go's regular
// expressions have no literal prefix to skip ahead with when they start
// with \b or a class, so that would cost most of the time on text full of
// "key" and "token". The shapes below are derived from each expression's
// syntax, so they hold for rules added from a file too.
type shape int

const (
	// led: every match starts with a literal that begins (or is begun by)
	// one of the rule's keywords, at most skip bytes after the match's
	// start. The expression runs anchored there; it stops as soon as it
	// fails.
	led shape = iota
	// assignment: gitleaks' generic form `[\w.-]{0,50}?(?:names)[ \t\w.-]{0,20}
	// [\s'"]{0,3}(?:=|:|...)value`: an identifier holding a name, an
	// operator, a value. It runs anchored at the name, and only when an
	// operator follows it as the form allows.
	assignment
	// window: any other rule: the expression runs unanchored over the text
	// around the keyword occurrences.
	window
)

// lead is a literal, matched ignoring case when fold.
type lead struct {
	lit  string
	fold bool
}

// at reports whether l occurs in s at i.
func (l lead) at(s string, i int) bool {
	if i < 0 || i+len(l.lit) > len(s) || len(l.lit) == 0 {
		return false
	}
	if c, d := s[i], l.lit[0]; c != d && (!l.fold || c|0x20 != d|0x20) {
		return false
	}
	t := s[i : i+len(l.lit)]
	return t == l.lit || l.fold && strings.EqualFold(t, l.lit)
}

// Bounds of the search around a keyword occurrence (bytes).
const (
	lookBack  = 256     // window rules: how far before a keyword a match may start
	lookAhead = 1 << 10 // how far a match is read before reading on (a match that reaches it is read to its end)
	// Expressions that span lines (private keys) need to see that far at once.
	lookAheadBlocks = 64 << 10
	assignBack      = 160 // assignment rules whose keyword is in the value: how far before it the name may start
)

// gitleaks' generated assignment rules all carry this operator group after
// their names.
const assignmentOperator = `(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`

// compile derives the anchored expressions and the shape.
func (x *rule) compile() error {
	for _, k := range x.keywords {
		if len(k) < 2 {
			return fmt.Errorf("rule %s: keyword %q: want at least 2 characters", x.id, k)
		}
	}
	src := x.re.String()
	x.maxLen = lookAhead
	if strings.Contains(src, `[\s\S`) || strings.Contains(src, `(?s`) {
		x.maxLen = lookAheadBlocks
	}
	x.shape = window
	if x.find != nil {
		x.shape = led
		return nil
	}
	if len(x.keywords) == 0 {
		return nil
	}
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return fmt.Errorf("rule %s: %w", x.id, err)
	}
	els := flatten(re)
	if x.assign || strings.Contains(src, assignmentOperator) {
		if x.assignmentShape(els) {
			return nil
		}
	}
	i, skip := 0, 0
	for ; i < len(els) && (emptyWidth(els[i]) || oneChar(els[i])); i++ {
		if !emptyWidth(els[i]) {
			skip += 4 // one character: up to 4 bytes of UTF-8
		}
	}
	lits, next, exact, ok := literals(els, i)
	if !ok || skip > 4 || !x.keywordLed(lits) {
		return nil
	}
	x.shape, x.lits, x.skip = led, lits, skip
	if exact && next < len(els) {
		x.follow, x.followN = classRun(els[next])
	}
	for k := next; k < len(els); k++ {
		if set, _, _, ok := literals(els, k); ok && minLen(set) >= 2 && !slices.ContainsFunc(set, func(l lead) bool { return l.fold }) {
			x.required = set
			break
		}
	}
	return nil
}

// anchor returns the anchored forms of x.re. Both compile: x.re did, and
// wrapping it in a group changes nothing else.
func (x *rule) anchor() (anchored, withCtx *regexp.Regexp) {
	x.once.Do(func() {
		src := x.re.String()
		x.anchored = regexp.MustCompile(`^(?:` + src + `)`)
		x.withCtx = regexp.MustCompile(`^(?s:.)(?:` + src + `)`)
	})
	return x.anchored, x.withCtx
}

// assignmentShape recognises `[\w.-]{0,50}?` repeats, then the names,
// then `[ \t\w.-]{0,20}`: gitleaks' generic assignment.
func (x *rule) assignmentShape(els []*syntax.Regexp) bool {
	i := 0
	for i < len(els) && (els[i].Op == syntax.OpRepeat && els[i].Min == 0 || emptyWidth(els[i])) {
		i++
	}
	var names []lead
	if i < len(els) && els[i].Op == syntax.OpAlternate {
		for _, sub := range els[i].Sub {
			set, _, _, ok := literals(flatten(sub), 0)
			if !ok {
				return false
			}
			names = append(names, set...)
		}
	} else {
		set, _, _, ok := literals(els, i)
		if !ok {
			return false
		}
		names = set
	}
	if len(names) == 0 {
		return false
	}
	x.shape, x.idents, x.identKW = assignment, names, map[string]bool{}
	for _, k := range x.keywords {
		if x.keywordLed([]lead{{k, true}}) && slices.ContainsFunc(names, func(l lead) bool {
			low := strings.ToLower(l.lit)
			return strings.HasPrefix(low, k) || strings.HasPrefix(k, low)
		}) {
			x.identKW[k] = true
		}
	}
	// Keywords in the value (lob's "live_") find the name by looking back
	// for it, which needs names long enough to look for.
	if len(x.identKW) < len(x.keywords) && minLen(names) < 3 {
		x.shape = window
	}
	return true
}

// keywordLed reports whether every literal begins with one of the keywords
// or is the beginning of one: then a match starts where a keyword occurs.
func (x *rule) keywordLed(lits []lead) bool {
	for _, l := range lits {
		low := strings.ToLower(l.lit)
		if !slices.ContainsFunc(x.keywords, func(k string) bool {
			return strings.HasPrefix(low, k) || strings.HasPrefix(k, low)
		}) {
			return false
		}
	}
	return len(lits) > 0
}

// flatten lists the elements of a concatenation, captures opened.
func flatten(re *syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpCapture:
		return flatten(re.Sub[0])
	case syntax.OpConcat:
		var out []*syntax.Regexp
		for _, sub := range re.Sub {
			out = append(out, flatten(sub)...)
		}
		return out
	}
	return []*syntax.Regexp{re}
}

// maxLiterals bounds the literals an alternation expands to.
const maxLiterals = 32

// literals returns the literals one of which every match of els[i:]
// begins with: consecutive literals (a class of one letter in both cases
// counts as that letter ignoring case) and alternations of them, expanded;
// an alternation whose branches only begin with literals ends the list.
// next is the first element after them; exact says whether it follows
// the literals immediately. ok is false when els[i] is not such a literal.
func literals(els []*syntax.Regexp, i int) (set []lead, next int, exact, ok bool) {
	set, exact = []lead{{}}, true
	for next = i; next < len(els) && exact; next++ {
		e := els[next]
		var alts []lead
		switch {
		case e.Op == syntax.OpLiteral:
			alts = []lead{{string(e.Rune), e.Flags&syntax.FoldCase != 0}}
		case casePair(e) != 0:
			alts = []lead{{string(casePair(e)), true}}
		case e.Op == syntax.OpAlternate:
			for _, sub := range e.Sub {
				f := flatten(sub)
				sl, n, ex, ok := literals(f, 0)
				if !ok {
					alts = nil
					break
				}
				// A branch that goes on past its literals ends the list.
				alts, exact = append(alts, sl...), exact && ex && n == len(f)
			}
		}
		if len(alts) == 0 || len(set)*len(alts) > maxLiterals {
			exact = true
			break
		}
		var product []lead
		for _, a := range set {
			for _, b := range alts {
				product = append(product, lead{a.lit + b.lit, a.fold || b.fold})
			}
		}
		set = product
	}
	if next == i {
		return nil, i, false, false
	}
	return set, next, exact, true
}

// casePair returns the lower-case letter of a class [Xx], else 0.
func casePair(re *syntax.Regexp) rune {
	if re.Op != syntax.OpCharClass || len(re.Rune) != 4 {
		return 0
	}
	a, b := re.Rune, re.Rune
	if a[0] == a[1] && b[2] == b[3] && 'A' <= a[0] && a[0] <= 'Z' && b[2] == a[0]+'a'-'A' {
		return b[2]
	}
	return 0
}

func minLen(set []lead) int {
	n := -1
	for _, l := range set {
		if n < 0 || len(l.lit) < n {
			n = len(l.lit)
		}
	}
	return n
}

// classRun returns the ASCII bytes of a class that re repeats at least
// once, and how many of them (at most 8) must follow; nil when re is not a
// repeated class.
func classRun(re *syntax.Regexp) (*[256]bool, int) {
	n := 1
	switch re.Op {
	case syntax.OpPlus:
		re = re.Sub[0]
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, 0
		}
		n, re = min(re.Min, 8), re.Sub[0]
	}
	if re.Op != syntax.OpCharClass {
		return nil, 0
	}
	var set [256]bool
	for i := 128; i < 256; i++ {
		set[i] = true // part of a character the check does not decode
	}
	for i := 0; i+1 < len(re.Rune); i += 2 {
		for c := re.Rune[i]; c <= re.Rune[i+1] && c < 128; c++ {
			set[c] = true
		}
	}
	return &set, n
}

func emptyWidth(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	return false
}

// oneChar: re consumes nothing at the start of the text, or one character.
func oneChar(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpCapture:
		return oneChar(re.Sub[0])
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			if !emptyWidth(sub) && !oneChar(sub) {
				return false
			}
		}
		return true
	}
	return false
}

// assignmentAfter reports whether an assignment operator may follow a name
// that ends at i, as gitleaks' form allows: at most 20 of [ \t\w.-], at
// most 3 of [\s'"], then one of = > : | ? ,
//
// The name may be longer than the keyword that found it (snyk_api_token),
// so up to 32 more name bytes are allowed: this is a filter, the
// expression decides.
func assignmentAfter(s string, i int) bool {
	j := i
	for j < len(s) && j-i < 20+32 && isAssignName(s[j]) {
		j++
	}
	for k := 0; k < 3 && j < len(s) && isAssignQuote(s[j]); k++ {
		j++
	}
	if j >= len(s) {
		return false
	}
	switch s[j] {
	case '=', '>', ':', '|', '?', ',':
		return true
	}
	return false
}

func isAssignName(c byte) bool { return c == ' ' || c == '\t' || isNameByte(c) }

func isAssignQuote(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v', '\'', '"':
		return true
	}
	return false
}
