package index

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/search/query"
)

// ErrBadQuery is returned (wrapped with a message meant for the person who
// typed the query) when the query text has no searchable term at all: only
// punctuation or over-long tokens, or only excluded words.
var ErrBadQuery = errors.New("bad query")

// Limits that bound the work one query can cause. The parser reads the
// first MaxQueryBytes of the text and keeps the first MaxQueryTerms
// distinct analysed terms (words, phrase words and excluded words together,
// in the order they appear); it ignores the rest. A phrase that crosses the
// term limit is cut at it.
const (
	MaxQueryBytes = 16 << 10
	MaxQueryTerms = 64
)

// clause is one element of the user's query text before analysis.
type clause struct {
	Text    string
	Phrase  bool // "quoted": must match as a phrase
	Negated bool // -word or -"phrase": must not match
}

// lex splits raw user text into clauses. It is not Bleve query syntax and
// never fails:
//
//   - words are separated by white space and by quotes;
//   - "a phrase" is a phrase; “curly quotes” work too;
//   - -word and -"a phrase" exclude; a '-' counts only at the start of a
//     word and only when a word character or a quote follows it, so
//     "--dry-run" and "-" are ordinary words;
//   - an unmatched quote is ignored, and the text after it is read as
//     ordinary words (a '-' right before it is ignored too);
//   - every other character (+ : ~ ^ ( ) * ? [ ] { } \ / ! &) is just text;
//     the analyzer later drops what is not part of a word.
func lex(text string) []clause {
	var out []clause
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		negated := false
		if r == '-' && i+size < len(text) {
			next, nextSize := utf8.DecodeRuneInString(text[i+size:])
			if isQuote(next) || (!unicode.IsSpace(next) && next != '-') {
				negated = true
				i += size
				r, size = next, nextSize
			}
		}
		if isQuote(r) {
			end := indexQuote(text[i+size:])
			if end < 0 { // unmatched: drop the quote, read on as words
				i += size
				continue
			}
			if p := strings.TrimSpace(text[i+size : i+size+end]); p != "" {
				out = append(out, clause{Text: p, Phrase: true, Negated: negated})
			}
			_, closeSize := utf8.DecodeRuneInString(text[i+size+end:])
			i += size + end + closeSize
			continue
		}
		j := i
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if unicode.IsSpace(r) || isQuote(r) {
				break
			}
			j += size
		}
		out = append(out, clause{Text: text[i:j], Negated: negated})
		i = j
	}
	return out
}

func isQuote(r rune) bool { return r == '"' || r == '“' || r == '”' }

// indexQuote returns the byte index of the first quote in s, or -1.
func indexQuote(s string) int {
	return strings.IndexFunc(s, isQuote)
}

// phrase is an analysed phrase: the alternatives at each position (several
// when an identifier was split, none for a removed stop word inside the
// phrase), in the form Bleve's multi-phrase query takes.
type phrase [][]string

// parsedQuery is the analysed form of the user's query text.
type parsedQuery struct {
	Terms   []string // distinct terms of plain words; any may match (OR), scored by BM25
	Phrases []phrase // each must match
	Exclude []phrase // none may match; an excluded word is a one-word phrase
}

// matchTerms returns the distinct positive terms (plain words and phrase
// words): what snippets mark and what matchedIn looks for.
func (p parsedQuery) matchTerms() map[string]struct{} {
	m := make(map[string]struct{}, len(p.Terms))
	for _, t := range p.Terms {
		m[t] = struct{}{}
	}
	for _, ph := range p.Phrases {
		for _, alts := range ph {
			for _, t := range alts {
				m[t] = struct{}{}
			}
		}
	}
	return m
}

// scoredTerms returns the terms BM25 scores: the plain words, in query
// order, then the phrases' words not among them.
func (p parsedQuery) scoredTerms() []string {
	terms := slices.Clone(p.Terms)
	for _, ph := range p.Phrases {
		for _, alts := range ph {
			for _, t := range alts {
				if !slices.Contains(terms, t) {
					terms = append(terms, t)
				}
			}
		}
	}
	return terms
}

// parseQuery lexes and analyses user text. It is a pure function of its
// arguments. It returns an error wrapping ErrBadQuery when nothing
// searchable remains.
//
// An excluded word is treated as a phrase of its analysed terms, so
// -parseConfigFile excludes that identifier (and "parse config file"), not
// every text that mentions "config".
func parseQuery(a analysis.Analyzer, text string) (parsedQuery, error) {
	if len(text) > MaxQueryBytes {
		cut := MaxQueryBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	var p parsedQuery
	seen := make(map[string]struct{})
	budget := func(t string) bool { // reports whether t may be used
		if _, ok := seen[t]; ok {
			return true
		}
		if len(seen) >= MaxQueryTerms {
			return false
		}
		seen[t] = struct{}{}
		return true
	}
	inTerms := make(map[string]struct{})
	phrases := make(map[string]struct{}) // phrase and exclusion keys, to drop repeats
	for _, c := range lex(text) {
		if len(seen) >= MaxQueryTerms {
			break
		}
		tokens := a.Analyze([]byte(c.Text))
		if len(tokens) == 0 {
			continue
		}
		if !c.Phrase && !c.Negated {
			for _, tok := range tokens {
				if tok.Type == compoundToken {
					// A compound's parts follow it and are scored: the
					// whole would count the same evidence twice (SciFact
					// train nDCG@10 0.698 with it, 0.706 without; see
					// docs/index.md). A quoted phrase still asks for the spelling.
					continue
				}
				t := string(tok.Term)
				if _, dup := inTerms[t]; dup || !budget(t) {
					continue
				}
				inTerms[t] = struct{}{}
				p.Terms = append(p.Terms, t)
			}
			continue
		}
		ph := toPhrase(tokens, budget)
		if len(ph) == 0 {
			continue
		}
		key := fmt.Sprint(c.Negated, ph)
		if _, dup := phrases[key]; dup {
			continue
		}
		phrases[key] = struct{}{}
		if c.Negated {
			p.Exclude = append(p.Exclude, ph)
		} else {
			p.Phrases = append(p.Phrases, ph)
		}
	}
	if len(p.Terms) == 0 && len(p.Phrases) == 0 {
		if len(p.Exclude) > 0 {
			return parsedQuery{}, fmt.Errorf("%w: the query only excludes words; add at least one word to search for", ErrBadQuery)
		}
		return parsedQuery{}, fmt.Errorf("%w: the query has no searchable words (only punctuation or over-long strings)", ErrBadQuery)
	}
	return p, nil
}

// toPhrase turns an analysed token stream into positions with alternatives,
// as Bleve's match-phrase query does, cut where the term budget runs out.
// Trailing empty positions are dropped.
func toPhrase(tokens analysis.TokenStream, budget func(string) bool) phrase {
	first := tokens[0].Position
	last := first
	for _, tok := range tokens {
		first = min(first, tok.Position)
		last = max(last, tok.Position)
	}
	ph := make(phrase, last-first+1)
	cut := len(ph)
	for _, tok := range tokens {
		i := tok.Position - first
		if i >= cut {
			continue
		}
		t := string(tok.Term)
		if !budget(t) {
			cut = i
			continue
		}
		if !contains(ph[i], t) {
			ph[i] = append(ph[i], t)
		}
	}
	ph = ph[:cut]
	for len(ph) > 0 && len(ph[len(ph)-1]) == 0 {
		ph = ph[:len(ph)-1]
	}
	return ph
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// needsCheck reports whether the documents searchWords finds must still
// be checked on their text: a phrase or an exclusion that their pairs do
// not decide (see phrase.exact).
func (p parsedQuery) needsCheck() bool {
	for _, ph := range p.Phrases {
		if !ph.exact() {
			return true
		}
	}
	for _, ph := range p.Exclude {
		if !ph.exact() {
			return true
		}
	}
	return false
}

func termQuery(field, term string) *query.TermQuery {
	q := query.NewTermQuery(term)
	q.SetField(field)
	return q
}
