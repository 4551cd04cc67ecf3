package index

import (
	"github.com/blevesearch/bleve/v2/analysis"
)

// The methods below give a full-text index kept outside this package (the
// Weaviate text index) the query parsing, phrase checks and snippets of this
// one, so both modes parse and mark text the same way (the Analyzer type and
// its Terms are in analysis.go).

// ParsedQuery is a query text as Search reads it (see Query.Text).
type ParsedQuery struct {
	p parsedQuery
}

// Parse parses and analyses a query text as Search does; the error wraps
// ErrBadQuery when nothing searchable remains.
func (a *Analyzer) Parse(text string) (ParsedQuery, error) {
	p, err := parseQuery(a.a, text)
	return ParsedQuery{p: p}, err
}

// Terms returns every distinct positive term: plain words and phrase
// words, what BM25 scores. Search scores phrase words too (a phrase query
// scores its terms).
func (q ParsedQuery) Terms() []string {
	seen := make(map[string]bool)
	var out []string
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range q.p.Terms {
		add(t)
	}
	for _, ph := range q.p.Phrases {
		for _, alts := range ph {
			for _, t := range alts {
				add(t)
			}
		}
	}
	return out
}

// Phrases returns the phrases that must match: per position the accepted
// terms (none for a removed stop word, which any term fills).
func (q ParsedQuery) Phrases() [][][]string { return phrasesOf(q.p.Phrases) }

// Exclusions returns the phrases that must not match (an excluded word is a
// phrase of one position).
func (q ParsedQuery) Exclusions() [][][]string { return phrasesOf(q.p.Exclude) }

func phrasesOf(ps []phrase) [][][]string {
	out := make([][][]string, len(ps))
	for i, ph := range ps {
		out[i] = [][]string(ph)
	}
	return out
}

// MatchesMessages reports whether a document of a title and a body whose
// later messages start at breaks (Session.Breaks, Chunk.Breaks) satisfies
// the query's phrases and exclusions (plain words only rank): every phrase
// occurs within the title or within one message, never across two, as
// Search matches it, and no exclusion occurs in any.
func (a *Analyzer) MatchesMessages(q ParsedQuery, title, body string, breaks []int) bool {
	return sessionMatches(a.a, q.p, Session{Title: title, Body: body, Breaks: breaks})
}

// phraseIn reports whether the token stream holds ph at consecutive
// positions, as Bleve's multi-phrase query matches it: any accepted term at
// each position, and any term at all at a position with none.
func phraseIn(toks analysis.TokenStream, ph phrase) bool {
	if len(ph) == 0 {
		return false
	}
	at := make(map[int][]string, len(toks))
	for _, t := range toks {
		at[t.Position] = append(at[t.Position], string(t.Term))
	}
	first := 0
	for first < len(ph) && len(ph[first]) == 0 {
		first++
	}
	if first == len(ph) {
		return false
	}
	for _, t := range toks {
		if !contains(ph[first], string(t.Term)) {
			continue
		}
		start := t.Position - first
		ok := true
		for i := first + 1; i < len(ph) && ok; i++ {
			if len(ph[i]) == 0 {
				continue
			}
			ok = false
			for _, term := range at[start+i] {
				if contains(ph[i], term) {
					ok = true
					break
				}
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Explain returns the snippet and matchedIn of a hit whose title and body
// (or chunk text, with an empty title) are given, as Search with Explain
// makes them.
func (a *Analyzer) Explain(q ParsedQuery, title, body string) (snippet string, matchedIn []string) {
	return explain(a.a, q.p.matchTerms(), title, body)
}
