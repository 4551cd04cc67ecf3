package redact

import (
	"math"
	"strings"

	"github.com/zricethezav/gitleaks/v8/config"
)

// scratch is one call's working memory, pooled.
type scratch struct {
	hits    [][]int32 // per rule: keyword occurrences, (start, keyword number) pairs
	touched []int     // rules with hits
	next    []int     // per rule: where its required literal occurs next (-1: not looked for yet)
	found   []finding
}

// detect adds the secrets of s to sc.found. One pass over s finds every
// keyword occurrence (keywords.go); a rule runs only at its own.
func (r *Redactor) detect(s string, sc *scratch) {
	sc.touched = sc.touched[:0]
	r.kw.each(s, func(start, n int) {
		for _, ri := range r.byKeyword[n] {
			if len(sc.hits[ri]) == 0 {
				sc.touched = append(sc.touched, ri)
				sc.next[ri] = -1
			}
			sc.hits[ri] = append(sc.hits[ri], int32(start), int32(n))
		}
	})
	for _, ri := range sc.touched {
		r.run(s, ri, sc.hits[ri], sc)
		sc.hits[ri] = sc.hits[ri][:0]
	}
}

// run looks for rule ri's secrets at its keyword occurrences hits.
func (r *Redactor) run(s string, ri int, hits []int32, sc *scratch) {
	x := r.rules[ri]
	switch {
	case x.find != nil:
		for i := 0; i < len(hits); i += 2 {
			h, kw := int(hits[i]), r.kw.words[hits[i+1]]
			if start, end, ok := x.find(s, h, len(kw)); ok {
				sc.found = append(sc.found, finding{start, end, ri})
			}
		}
	case x.shape == led:
		done, tried := -1, -1
		for i := 0; i < len(hits); i += 2 {
			h := int(hits[i])
			if h < done || h == tried {
				continue
			}
			tried = h
			if !x.ledAt(s, h, &sc.next[ri]) {
				continue
			}
			for k := 0; k <= x.skip && k <= h; k++ {
				if loc := x.matchAt(s, h-k); loc != nil {
					if end := r.keep(s, ri, loc, sc); end > 0 {
						done = end
					}
					break
				}
			}
		}
	case x.shape == assignment:
		tried := -1
		try := func(start, nameEnd int) {
			if start == tried || !assignmentAfter(s, nameEnd) {
				return
			}
			tried = start
			if loc := x.matchAt(s, start); loc != nil {
				r.keep(s, ri, loc, sc)
			}
		}
		for i := 0; i < len(hits); i += 2 {
			h, kw := int(hits[i]), r.kw.words[hits[i+1]]
			if x.identKW[kw] {
				try(h, h+len(kw))
				continue
			}
			// The keyword is in the value: find the name before it.
			for j := max(0, h-assignBack); j < h; j++ {
				for _, l := range x.idents {
					if (lead{l.lit, true}).at(s, j) {
						try(j, j+len(l.lit))
					}
				}
			}
		}
	default: // window
		w0, w1 := -1, -1
		flush := func() {
			if w0 < 0 {
				return
			}
			for _, loc := range x.re.FindAllStringSubmatchIndex(s[w0:w1], -1) {
				for j := range loc {
					if loc[j] >= 0 {
						loc[j] += w0
					}
				}
				if loc[1] == w1 && w1 < len(s) {
					// Cut by the window: match again with all that follows.
					if l := x.re.FindStringSubmatchIndex(s[loc[0]:]); l != nil && l[0] == 0 {
						for j := range l {
							if l[j] >= 0 {
								l[j] += loc[0]
							}
						}
						loc = l
					}
				}
				r.keep(s, ri, loc, sc)
			}
		}
		for i := 0; i < len(hits); i += 2 {
			h := int(hits[i])
			a, b := max(0, h-lookBack), min(len(s), h+x.maxLen)
			if a <= w1 {
				w1 = max(w1, b)
				continue
			}
			flush()
			w0, w1 = a, b
		}
		flush()
	}
}

// ledAt reports whether a match of a led rule may start at its keyword
// occurrence h: one of its literals is there, the bytes after it are of the
// class that follows it, and a literal every match holds occurs within
// reach (next caches where it occurs next).
func (x *rule) ledAt(s string, h int, next *int) bool {
	n := -1
	for _, l := range x.lits {
		if l.at(s, h) {
			n = len(l.lit)
			break
		}
	}
	if n < 0 {
		return false
	}
	if x.follow != nil {
		if h+n+x.followN > len(s) {
			return false
		}
		for _, c := range []byte(s[h+n : h+n+x.followN]) {
			if !x.follow[c] {
				return false
			}
		}
	}
	if x.required != nil {
		if *next < h+n {
			*next = len(s)
			for _, l := range x.required {
				if i := strings.Index(s[h+n:], l.lit); i >= 0 {
					*next = min(*next, h+n+i)
				}
			}
		}
		if *next >= len(s) || *next-h > x.maxLen {
			return false
		}
	}
	return true
}

// matchAt returns the submatch offsets (in s) of rule x's match starting at
// start, or nil. The expression sees the character before start, so \b
// and [^\w] hold as in the whole text; it reads at most maxLen bytes
// unless its match reaches that far.
func (x *rule) matchAt(s string, start int) []int {
	end := min(len(s), start+x.maxLen)
	anchored, withCtx := x.anchor()
	for {
		var loc []int
		shift := start
		if start > 0 {
			shift = start - 1
			loc = withCtx.FindStringSubmatchIndex(s[shift:end])
			if loc != nil {
				loc[0] = 1 // the context character is not part of the match
			}
		} else {
			loc = anchored.FindStringSubmatchIndex(s[:end])
		}
		if loc == nil {
			return nil
		}
		if shift+loc[1] == end && end < len(s) {
			end = len(s)
			continue
		}
		for j := range loc {
			if loc[j] >= 0 {
				loc[j] += shift
			}
		}
		return loc
	}
}

// keep vets the match loc of rule ri as gitleaks does (the secret group,
// the entropy threshold, the allowlists) and adds its secret to the
// findings. It returns the match's end, or 0 when nothing was kept.
func (r *Redactor) keep(s string, ri int, loc []int, sc *scratch) int {
	x := r.rules[ri]
	ms, me := loc[0], loc[1]
	// As gitleaks: a match is trimmed of newlines.
	for ms < me && s[ms] == '\n' {
		ms++
	}
	for me > ms && s[me-1] == '\n' {
		me--
	}
	start, end := ms, me
	switch groups := len(loc)/2 - 1; {
	case x.group > 0 && x.group <= groups:
		start, end = loc[2*x.group], loc[2*x.group+1]
	case x.group > 0:
		return 0
	case groups > 0:
		for g := 1; g <= groups; g++ {
			if loc[2*g] >= 0 && loc[2*g+1] > loc[2*g] {
				start, end = loc[2*g], loc[2*g+1]
				break
			}
		}
	}
	if start < 0 || end <= start {
		return 0
	}
	secret := s[start:end]
	if strings.HasPrefix(secret, markerPrefix) || overlapsMarker(s, start, end) {
		return 0
	}
	if x.valid != nil && !x.valid(secret) {
		return 0
	}
	if x.entropy != 0 && shannon(secret) <= x.entropy {
		return 0
	}
	match := s[ms:me]
	line := func() string {
		a := strings.LastIndexByte(s[:ms], '\n') + 1
		b := strings.IndexByte(s[me:], '\n')
		if b < 0 {
			return s[a:]
		}
		return s[a : me+b]
	}
	if allowed(r.global, secret, match, line) || allowed(x.allow, secret, match, line) || hindsightAllowed(x, secret, match, line) {
		return 0
	}
	sc.found = append(sc.found, finding{start, end, ri})
	return me
}

// allowed applies gitleaks' allowlists to a finding, as its detector does
// for text without a commit or a path.
func allowed(lists []*config.Allowlist, secret, match string, line func() string) bool {
	for _, a := range lists {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line()
		}
		regex := a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(secret)
		if a.MatchCondition == config.AllowlistMatchAnd {
			ok := len(a.Commits) == 0 && len(a.Paths) == 0 && len(a.Regexes)+len(a.StopWords) > 0
			if len(a.Regexes) > 0 {
				ok = ok && regex
			}
			if len(a.StopWords) > 0 {
				ok = ok && stop
			}
			if ok {
				return true
			}
			continue
		}
		if regex || stop {
			return true
		}
	}
	return false
}

// overlapsMarker reports whether [start, end) of s touches a marker, so
// that redacted text is never redacted again.
func overlapsMarker(s string, start, end int) bool {
	from := max(0, start-len(markerPrefix)-64)
	for _, m := range Markers(s[from:min(len(s), end+len(markerPrefix))]) {
		if from+m.Start < end && from+m.End > start {
			return true
		}
	}
	return false
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// shannon is the Shannon entropy of s, in bits, as gitleaks computes it:
// over its characters, each frequency taken over its length in bytes.
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	var ascii [128]int
	var other map[rune]int
	for _, c := range s {
		if c < 128 {
			ascii[c]++
			continue
		}
		if other == nil {
			other = map[rune]int{}
		}
		other[c]++
	}
	n := float64(len(s))
	e := 0.0
	add := func(c int) {
		if c > 0 {
			p := float64(c) / n
			e -= p * math.Log2(p)
		}
	}
	for _, c := range ascii {
		add(c)
	}
	for _, c := range other {
		add(c)
	}
	return e
}
