package redact

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/zricethezav/gitleaks/v8/config"
)

// A rule finds one kind of secret. Rules come from gitleaks' default
// configuration, from an extra rules file in the same format, and from
// Hindsight's own rules (own.go).
type rule struct {
	id string
	re *regexp.Regexp
	// The anchored forms of re, compiled on first use (most rules never
	// run on a given server): ^(?:re), a match starting at the input's
	// start, and ^(?s:.)(?:re), the same with one character of context
	// before it.
	once              sync.Once
	anchored, withCtx *regexp.Regexp
	group             int     // the secret's group; 0: the first non-empty group, else the match
	entropy           float64 // the secret's Shannon entropy must exceed it (0: no check)
	allow             []*config.Allowlist
	keywords          []string // lower case; the rule runs only where one occurs
	generic           bool     // yields to a specific rule that finds an overlapping secret
	// valid, for Hindsight's own rules, vets a candidate secret.
	valid func(secret string) bool
	// find, for rules that are code rather than a regular expression: the
	// secret's span near the keyword at hit, or ok false.
	find func(s string, hit, n int) (start, end int, ok bool)
	// assign marks Hindsight's own rules of the assignment shape.
	assign bool

	shape  shape
	maxLen int // how far a match is looked for past its start before looking further

	// Shape led.
	lits     []lead     // the literals a match starts with
	skip     int        // bytes a match may start before its literal
	follow   *[256]bool // the bytes that may follow the literal (nil: any)
	followN  int        // how many bytes after the literal follow must admit
	required []lead     // one of these occurs in every match after its literal (nil: no check)

	// Shape assignment.
	idents  []lead          // the names an assignment's identifier starts with
	identKW map[string]bool // keywords at which an identifier starts
}

// loadConfig parses rules in gitleaks' TOML format. It never panics on a bad
// expression (gitleaks' own loader would): every expression is compiled
// here first, and the error names the rule.
// Rules on file paths are left out; in an extra file (builtin false) they
// are an error.
func loadConfig(data []byte, source string, builtin bool) (config.Config, error) {
	var vc config.ViperConfig
	if err := toml.Unmarshal(data, &vc); err != nil {
		return config.Config{}, fmt.Errorf("%s: %w", source, err)
	}
	// Extending other files is gitleaks' business; here the defaults are
	// always in force and an extra file adds to them.
	vc.Extend = config.Extend{}
	for _, r := range vc.Rules {
		if err := validID(r.ID); err != nil {
			return config.Config{}, fmt.Errorf("%s: %w", source, err)
		}
		if builtin {
			continue // gitleaks' own rules compile; compiling them twice costs a start
		}
		exprs := []string{r.Regex, r.Path}
		for _, a := range r.Allowlists {
			exprs = append(exprs, a.Regexes...)
		}
		if r.AllowList != nil {
			exprs = append(exprs, r.AllowList.Regexes...)
		}
		for _, e := range exprs {
			if _, err := regexp.Compile(e); err != nil {
				return config.Config{}, fmt.Errorf("%s: rule %s: %w", source, r.ID, err)
			}
		}
		if r.Regex == "" && !builtin {
			return config.Config{}, fmt.Errorf("%s: rule %s has no regex (rules on file paths do not apply to text)", source, r.ID)
		}
	}
	for _, a := range append(vc.Allowlists, vc.AllowList) {
		if a == nil || builtin {
			continue
		}
		for _, e := range append(slices.Clone(a.Regexes), a.Paths...) {
			if _, err := regexp.Compile(e); err != nil {
				return config.Config{}, fmt.Errorf("%s: allowlist: %w", source, err)
			}
		}
	}
	c, err := translate(&vc)
	if err != nil {
		return config.Config{}, fmt.Errorf("%s: %w", source, err)
	}
	return c, nil
}

// translate runs gitleaks' own translation, turning a panic it should not
// raise into an error.
func translate(vc *config.ViperConfig) (c config.Config, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("invalid rules: %v", p)
		}
	}()
	return vc.Translate()
}

// validID keeps rule ids fit for a marker: [redacted:<id>] is shown by the
// dashboard and parsed back by Markers.
func validID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("rule id %q: want 1 to 64 characters", id)
	}
	for _, c := range []byte(id) {
		if !isIDByte(c) {
			return fmt.Errorf("rule id %q: want letters, digits, '-', '_' and '.' only", id)
		}
	}
	return nil
}

func isIDByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// fromGitleaks turns a translated gitleaks rule into a rule. Rules that
// match file paths are left out (ok false): a session's text has none.
func fromGitleaks(r config.Rule) (*rule, bool, error) {
	if r.Path != nil || r.Regex == nil || r.SkipReport {
		return nil, false, nil
	}
	x := &rule{
		id: r.RuleID, re: r.Regex, group: r.SecretGroup, entropy: r.Entropy,
		allow: r.Allowlists, keywords: r.Keywords,
		generic: strings.HasPrefix(r.RuleID, "generic"),
	}
	if err := x.compile(); err != nil {
		return nil, false, err
	}
	return x, true, nil
}

// errNoRules: a rules file that holds no rule is a mistake worth naming.
var errNoRules = errors.New("no [[rules]] in the file")
