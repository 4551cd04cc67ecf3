// Package redact finds secrets in text and replaces each with a marker,
// [redacted:<rule>], before Hindsight stores, indexes, embeds or exports
// anything. It is built on gitleaks' rules (its default configuration,
// used as a library: the expressions, keywords, entropy thresholds and
// allowlists), plus Hindsight's own rules for passwords assigned in
// configuration, connection URLs with credentials and Authorization headers
// (own.go). <private>...</private> spans are removed the same way, as
// [redacted:private].
//
// A [Redactor] is built once and is safe for concurrent use. A rule runs
// only where one of its keywords occurs (one Aho-Corasick pass over the
// text finds them all), and then only near the occurrence; see detect.go.
// The Redactor never logs, and never keeps what it removed.
package redact

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/zricethezav/gitleaks/v8/config"
)

// Options configures New.
type Options struct {
	// ExtraRules holds rules in gitleaks' TOML format ([[rules]] with id,
	// regex, secretGroup, entropy, keywords and allowlists), added to the
	// defaults; a rule with a default rule's id replaces it. Rule ids may
	// hold letters, digits, '-', '_' and '.'.
	ExtraRules []byte
	// ExtraRulesName names the extra rules in errors (a file name).
	ExtraRulesName string
}

// Redactor finds and replaces secrets. Build it with New.
type Redactor struct {
	rules     []*rule
	global    []*config.Allowlist
	kw        *keywords
	byKeyword [][]int // keyword number -> rules
	ids       []string
	scratch   sync.Pool
}

// Counts are redactions by rule id.
type Counts map[string]int

// Add adds o to c, allocating c when needed.
func (c *Counts) Add(o Counts) {
	if len(o) == 0 {
		return
	}
	if *c == nil {
		*c = make(Counts, len(o))
	}
	for k, v := range o {
		(*c)[k] += v
	}
}

// Total is the sum over rules.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// New builds a Redactor from gitleaks' default rules, Hindsight's own and
// o.ExtraRules. A malformed rules file is an error naming the rule.
func New(o Options) (*Redactor, error) {
	def, err := loadConfig([]byte(config.DefaultConfig), "gitleaks default rules", true)
	if err != nil {
		return nil, err
	}
	rules := map[string]*rule{}
	var order []string
	add := func(c config.Config) error {
		for _, id := range c.OrderedRules {
			x, ok, err := fromGitleaks(c.Rules[id])
			if err != nil {
				return err
			}
			if !ok {
				delete(rules, id)
				continue
			}
			if _, seen := rules[id]; !seen {
				order = append(order, id)
			}
			rules[id] = x
		}
		return nil
	}
	if err := add(def); err != nil {
		return nil, err
	}
	global := def.Allowlists
	if len(o.ExtraRules) > 0 {
		name := o.ExtraRulesName
		if name == "" {
			name = "extra rules"
		}
		extra, err := loadConfig(o.ExtraRules, name, false)
		if err != nil {
			return nil, err
		}
		if len(extra.OrderedRules) == 0 {
			return nil, fmt.Errorf("%s: %w", name, errNoRules)
		}
		if err := add(extra); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		global = append(global, extra.Allowlists...)
	}
	r := &Redactor{global: global}
	for _, id := range order {
		if x := rules[id]; x != nil {
			r.rules = append(r.rules, x)
		}
	}
	for _, x := range ownRules() {
		if err := x.compile(); err != nil {
			return nil, err
		}
		r.rules = append(r.rules, x)
	}
	ids := map[string]bool{RulePrivate: true}
	kw := map[string]int{}
	var words []string
	for i, x := range r.rules {
		ids[x.id] = true
		for _, k := range x.keywords {
			n, ok := kw[k]
			if !ok {
				n = len(words)
				kw[k] = n
				words = append(words, k)
				r.byKeyword = append(r.byKeyword, nil)
			}
			if !slices.Contains(r.byKeyword[n], i) {
				r.byKeyword[n] = append(r.byKeyword[n], i)
			}
		}
	}
	r.kw = newKeywords(words)
	r.ids = slices.Sorted(maps.Keys(ids))
	r.scratch.New = func() any {
		return &scratch{hits: make([][]int32, len(r.rules)), next: make([]int, len(r.rules))}
	}
	return r, nil
}

// Rules returns the ids of the rules in force, sorted; RulePrivate among
// them.
func (r *Redactor) Rules() []string { return slices.Clone(r.ids) }

// markerPrefix begins every marker.
const markerPrefix = "[redacted:"

// Marker is what replaces a secret found by rule.
func Marker(rule string) string { return markerPrefix + rule + "]" }

// Span is where a marker lies in a text, and its rule.
type Span struct {
	Start, End int
	Rule       string
}

// Markers returns the markers in s, in order. The dashboard uses it to show
// where text was redacted.
func Markers(s string) []Span {
	var out []Span
	for off := 0; ; {
		i := strings.Index(s[off:], markerPrefix)
		if i < 0 {
			return out
		}
		start := off + i
		j := start + len(markerPrefix)
		k := j
		for k < len(s) && k-j <= 64 && isIDByte(s[k]) {
			k++
		}
		if k < len(s) && s[k] == ']' && k > j {
			out = append(out, Span{Start: start, End: k + 1, Rule: s[j:k]})
			off = k + 1
		} else {
			off = j
		}
	}
}

// String returns s with every secret replaced by its marker and every
// <private>...</private> span by [redacted:private], and how many of each
// rule it replaced (nil when none). Redacting redacted text changes
// nothing: markers are never matched again.
func (r *Redactor) String(s string) (string, Counts) {
	if s == "" {
		return s, nil
	}
	sc := r.scratch.Get().(*scratch)
	defer r.scratch.Put(sc)
	sc.found = sc.found[:0]
	private(s, &sc.found)
	r.detect(s, sc)
	if len(sc.found) == 0 {
		return s, nil
	}
	return apply(s, sc.found, r.rules)
}

// finding is a secret's span and its rule (an index into rules; -1: private).
type finding struct {
	start, end int
	rule       int
}

// apply replaces the findings (in any order, possibly overlapping) by
// markers. Overlapping findings become one marker over their union, named
// after a specific rule rather than a generic one.
func apply(s string, found []finding, rules []*rule) (string, Counts) {
	slices.SortFunc(found, func(a, b finding) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end))
	})
	name := func(i int) string {
		if i < 0 {
			return RulePrivate
		}
		return rules[i].id
	}
	weaker := func(a, b int) bool { // a yields to b
		switch {
		case a < 0:
			return false
		case b < 0:
			return true
		}
		return rules[a].generic && !rules[b].generic
	}
	var b strings.Builder
	b.Grow(len(s))
	counts := Counts{}
	at := 0
	for i := 0; i < len(found); {
		f := found[i]
		for i++; i < len(found) && found[i].start < f.end; i++ {
			f.end = max(f.end, found[i].end)
			if weaker(f.rule, found[i].rule) {
				f.rule = found[i].rule
			}
		}
		b.WriteString(s[at:f.start])
		id := name(f.rule)
		b.WriteString(Marker(id))
		counts[id]++
		at = f.end
	}
	b.WriteString(s[at:])
	return b.String(), counts
}

// private adds the <private>...</private> spans of s (tags included, in
// any case) to found. An unclosed tag hides the rest of the text.
func private(s string, found *[]finding) {
	const open, close = "<private>", "</private>"
	if !containsFold(s, open) {
		return
	}
	low := string(lowerASCII(nil, s))
	for off := 0; ; {
		i := strings.Index(low[off:], open)
		if i < 0 {
			return
		}
		start := off + i
		j := strings.Index(low[start+len(open):], close)
		end := len(s)
		if j >= 0 {
			end = start + len(open) + j + len(close)
		}
		*found = append(*found, finding{start: start, end: end, rule: -1})
		off = end
	}
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return false
		}
		i += j
		if i+len(sub) <= len(s) && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// lowerASCII appends s with ASCII letters in lower case to dst (other bytes
// unchanged, so offsets agree with s).
func lowerASCII(dst []byte, s string) []byte {
	dst = append(dst[:0], s...)
	for i, c := range dst {
		if 'A' <= c && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
	}
	return dst
}

// CheckRules reports what is wrong with a file of extra rules, as New
// would, without building a Redactor.
func CheckRules(data []byte) error {
	c, err := loadConfig(data, "rules", false)
	if err != nil {
		return err
	}
	if len(c.OrderedRules) == 0 {
		return errNoRules
	}
	for _, id := range c.OrderedRules {
		if _, _, err := fromGitleaks(c.Rules[id]); err != nil {
			return err
		}
	}
	return nil
}
