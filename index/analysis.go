package index

import (
	"fmt"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	bleveunicode "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/registry"
)

// Names under which this package registers its analysis components in
// Bleve's global registry. They carry a package-specific prefix so they
// cannot collide with Bleve's own components or another package's.
// An index mapping stores these names, so they must never change for an
// existing on-disk index.
const (
	// AnalyzerName is the analyzer of every scored text field: the code
	// tokenizer, then Bleve's English possessive filter, the identifier
	// splitter, lower-casing and the Porter stemmer (the chain of Bleve's
	// "en" analyzer with identifier handling added and without its stop
	// words: "if", "not", "in", "for", "or" are code, and BM25's idf already
	// gives common words little weight; see docs/index.md).
	AnalyzerName = "hindsight_code_en"
	// TokenizerName is the code tokenizer (see codeTokenizer).
	TokenizerName = "hindsight_code"
	// IdentSplitFilterName is the identifier-splitting token filter (see
	// identSplitFilter).
	IdentSplitFilterName = "hindsight_identsplit"
	// StemFilterName is Bleve's Porter stemmer behind a memo (see
	// stemFilter).
	StemFilterName = "hindsight_porter"
)

// Limits of the identifier handling. They bound the work and the number of
// extra terms one pathological token (a minified line, a base64 blob) can add.
const (
	maxCompoundParts = 8   // longest run of tokens joined into one compound token
	maxCompoundBytes = 128 // longest compound token emitted whole
	maxSplitBytes    = 128 // longer tokens are not split into sub-words
	maxSubwords      = 16  // at most this many sub-words per token
	maxTokenBytes    = 256 // longer tokens (blobs, minified code) are dropped
	maxStemMemo      = 1 << 17
)

// compoundToken marks a whole compound token made by codeTokenizer (such as
// "src/parse/config_file.go" or "parse-config-file"); identSplitFilter leaves
// such tokens alone because their parts follow them in the stream.
// Bleve's Shingle type is the closest existing meaning: several words made
// into one token.
const compoundToken = analysis.Shingle

// init registers the analysis components once per process. Registration in
// Bleve is global and rejects duplicate names, and a persisted index mapping
// refers to the analyzer by name, so this is the one package-level side effect
// this package has.
func init() {
	mustRegister(registry.RegisterTokenizer(TokenizerName,
		func(map[string]interface{}, *registry.Cache) (analysis.Tokenizer, error) {
			return newCodeTokenizer(), nil
		}))
	mustRegister(registry.RegisterTokenFilter(IdentSplitFilterName,
		func(map[string]interface{}, *registry.Cache) (analysis.TokenFilter, error) {
			return identSplitFilter{}, nil
		}))
	mustRegister(registry.RegisterTokenFilter(StemFilterName,
		func(_ map[string]interface{}, cache *registry.Cache) (analysis.TokenFilter, error) {
			inner, err := cache.TokenFilterNamed(porter.Name)
			if err != nil {
				return nil, err
			}
			return &stemFilter{inner: inner, memo: make(map[string][]byte)}, nil
		}))
	mustRegister(registry.RegisterAnalyzer(AnalyzerName,
		func(_ map[string]interface{}, cache *registry.Cache) (analysis.Analyzer, error) {
			return buildAnalyzer(cache)
		}))
}

func mustRegister(err error) {
	if err != nil {
		panic(fmt.Sprintf("index: registering analysis component: %v", err))
	}
}

// Analyzer is the index's analysis (AnalyzerName) for use outside an
// index: another index that must match this one's terms (a Weaviate text
// index, say) indexes what Terms returns. It is safe for concurrent use.
type Analyzer struct {
	a analysis.Analyzer
}

// NewAnalyzer returns an Analyzer. Reuse it: it memoises stems.
func NewAnalyzer() (*Analyzer, error) {
	a, err := newAnalyzer()
	if err != nil {
		return nil, fmt.Errorf("index: analyzer: %w", err)
	}
	return &Analyzer{a: a}, nil
}

// Terms returns the terms the index stores for text, in order: every token
// the analyzer emits, compounds and identifiers whole and then their
// parts. (A query of plain words looks up the same terms except the whole
// compounds: see parseQuery.)
func (a *Analyzer) Terms(text string) []string {
	tokens := a.a.Analyze([]byte(text))
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i] = string(tok.Term)
	}
	return out
}

// QueryTerms returns the distinct terms a query of plain words looks up
// for text, in order: Terms without the whole compounds, whose parts are
// looked up instead (see parseQuery). Each scores by BM25 once.
func (a *Analyzer) QueryTerms(text string) []string {
	var out []string
	for _, tok := range a.a.Analyze([]byte(text)) {
		if tok.Type == compoundToken {
			continue
		}
		if t := string(tok.Term); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Analyze is NewAnalyzer().Terms(text), for a one-off call.
func Analyze(text string) ([]string, error) {
	a, err := NewAnalyzer()
	if err != nil {
		return nil, err
	}
	return a.Terms(text), nil
}

// buildAnalyzer assembles the analyzer from registered components, so the
// English filters are exactly Bleve's.
func buildAnalyzer(cache *registry.Cache) (analysis.Analyzer, error) {
	tok, err := cache.TokenizerNamed(TokenizerName)
	if err != nil {
		return nil, err
	}
	var filters []analysis.TokenFilter
	for _, name := range []string{en.PossessiveName, IdentSplitFilterName, lowercase.Name, StemFilterName} {
		f, err := cache.TokenFilterNamed(name)
		if err != nil {
			return nil, fmt.Errorf("token filter %s: %w", name, err)
		}
		filters = append(filters, f)
	}
	return &analysis.DefaultAnalyzer{Tokenizer: tok, TokenFilters: filters}, nil
}

// newAnalyzer returns a fresh instance of the registered analyzer for use
// outside an index mapping (query parsing, snippets, tests).
func newAnalyzer() (analysis.Analyzer, error) {
	return registry.NewCache().AnalyzerNamed(AnalyzerName)
}

// codeTokenizer segments text with Bleve's Unicode (UAX #29) word tokenizer,
// then re-joins tokens that are written together with connector characters
// (- / \ . : @) and no space, such as "parse-config-file",
// "src/parse/config_file.go", "std::vector" or "github.com/x/y". For each
// such run of 2..maxCompoundParts tokens it emits the whole run as one extra
// token, at the position of its first part, followed by the parts at
// consecutive positions:
//
//	"see parse-config-file now" ->
//	  see@1  parse-config-file@2  parse@2  config@3  file@4  now@5
//
// Sharing the position keeps phrase queries working in both spellings: the
// query side is analysed the same way, and Bleve's multi-phrase matching
// accepts any alternative at a position.
//
// A codeTokenizer holds no state and is safe for concurrent use.
type codeTokenizer struct {
	base analysis.Tokenizer
}

func newCodeTokenizer() *codeTokenizer {
	return &codeTokenizer{base: bleveunicode.NewUnicodeTokenizer()}
}

// Tokenize implements analysis.Tokenizer.
func (t *codeTokenizer) Tokenize(input []byte) analysis.TokenStream {
	base := t.base.Tokenize(input)
	out := base
	copied := false
	pos := 1
	for i := 0; i < len(base); {
		j := i + 1
		for j < len(base) && j-i < maxCompoundParts && joined(input, base[j-1], base[j]) {
			j++
		}
		if j-i >= 2 && base[j-1].End-base[i].Start <= maxCompoundBytes {
			if !copied {
				out = make(analysis.TokenStream, 0, len(base)+len(base)/4+1)
				out = append(out, base[:i]...)
				copied = true
			}
			start, end := base[i].Start, base[j-1].End
			out = append(out, &analysis.Token{
				Start:    start,
				End:      end,
				Term:     append([]byte(nil), input[start:end]...),
				Position: pos,
				Type:     compoundToken,
			})
		}
		for k := i; k < j; k++ {
			base[k].Position = pos
			pos++
			if copied {
				out = append(out, base[k])
			}
		}
		i = j
	}
	return out
}

// joined reports whether tokens a and b (adjacent in the stream) are written
// as one compound: separated only by one to three connector characters, and
// both word-like (not ideographic).
func joined(input []byte, a, b *analysis.Token) bool {
	if a.Type == analysis.Ideographic || b.Type == analysis.Ideographic {
		return false
	}
	gap := input[a.End:b.Start]
	if len(gap) == 0 || len(gap) > 3 {
		return false
	}
	for _, c := range gap {
		switch c {
		case '-', '/', '\\', '.', ':', '@':
		default:
			return false
		}
	}
	return true
}

// identSplitFilter splits identifiers into their words and keeps the whole
// token too: "parseConfigFile", "parse_config_file", "config.parse.file",
// "HTTPServer", "__init__" and "Config::Load" yield the whole token followed
// by its sub-words ("parse", "Config", "File", ...). It must run before
// lower-casing, since it reads the case.
//
// Rules: a token is cut at every character that is neither a letter, a digit
// nor an apostrophe, except '.' and ',' between two digits ("3.14" stays one
// word); a word is cut before an upper-case letter that follows a lower-case
// letter or a digit ("parseConfig", "base64Encode") and before the last
// upper-case letter of a run that is followed by a lower-case letter
// ("HTTPServer" -> "HTTP", "Server"). Letters and digits are not otherwise
// separated ("utf8", "sha256", "v2" stay whole).
//
// Positions: the whole token keeps its position and its sub-words take
// consecutive positions from there; later tokens move up accordingly, so a
// phrase query "parse config file" matches the identifier parseConfigFile.
// Tokens without any letter or digit (a lone "_") and tokens longer than
// maxTokenBytes (encoded blobs, minified code: nobody searches for them, and
// each would add a large unique term) are dropped. Compound
// tokens from codeTokenizer, ideographic tokens and tokens longer than
// maxSplitBytes pass through unchanged. Sub-word terms are fresh copies,
// so later in-place filters cannot corrupt one another.
type identSplitFilter struct{}

// Filter implements analysis.TokenFilter.
func (identSplitFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	var out analysis.TokenStream // nil until the first split
	shift := 0                   // positions added by splits before the current position
	curPos, curExtra := -1, 0    // original position being processed, positions it adds
	var spans [maxSubwords][2]int
	for i, tok := range input {
		if tok.Position != curPos {
			shift += curExtra
			curPos, curExtra = tok.Position, 0
		}
		tok.Position += shift
		n := -1 // -1: leave the token alone; 0: drop it
		switch {
		case len(tok.Term) > maxTokenBytes:
			n = 0
		case tok.Type != compoundToken && tok.Type != analysis.Ideographic && len(tok.Term) <= maxSplitBytes:
			n = subwords(tok.Term, spans[:])
		}
		if n < 0 || (n == 1 && spans[0][0] == 0 && spans[0][1] == len(tok.Term)) {
			if out != nil {
				out = append(out, tok)
			}
			continue
		}
		if out == nil {
			out = make(analysis.TokenStream, 0, len(input)+len(input)/4+n)
			out = append(out, input[:i]...)
		}
		if n == 0 {
			continue
		}
		out = append(out, tok)
		for k := 0; k < n; k++ {
			s, e := spans[k][0], spans[k][1]
			out = append(out, &analysis.Token{
				Start:    tok.Start + s,
				End:      tok.Start + e,
				Term:     append([]byte(nil), tok.Term[s:e]...),
				Position: tok.Position + k,
				Type:     tok.Type,
			})
		}
		curExtra = max(curExtra, n-1)
	}
	if out == nil {
		return input
	}
	return out
}

// subwords writes the byte spans of the sub-words of term into spans and
// returns their number (at most len(spans)). See identSplitFilter for the
// rules.
func subwords(term []byte, spans [][2]int) int {
	n, start := 0, -1 // start of the current word, -1 between words
	emit := func(s, e int) bool {
		if n == len(spans) {
			return false
		}
		spans[n] = [2]int{s, e}
		n++
		return true
	}
	// prev and prevPrev are the last two runes of the current word (-1 when
	// absent); prevAt is the byte offset of prev.
	prev, prevPrev, prevAt := rune(-1), rune(-1), 0
	for i := 0; i < len(term); {
		r, size := utf8.DecodeRune(term[i:])
		inWord := isWordRune(r) ||
			(r == '.' || r == ',') && unicode.IsDigit(prev) && i+size < len(term) && isDigitAt(term, i+size)
		if !inWord {
			if start >= 0 && !emit(start, i) {
				return n
			}
			start, prev, prevPrev = -1, -1, -1
			i += size
			continue
		}
		switch {
		case start < 0:
			start = i
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			// parseConfig, base64Encode
			if !emit(start, i) {
				return n
			}
			start = i
		case unicode.IsLower(r) && unicode.IsUpper(prev) && unicode.IsUpper(prevPrev):
			// HTTPServer: the last capital of a run starts the next word
			if !emit(start, prevAt) {
				return n
			}
			start = prevAt
		}
		prevPrev, prev, prevAt = prev, r, i
		i += size
	}
	if start >= 0 {
		emit(start, len(term))
	}
	return n
}

// isWordRune reports whether r belongs to a word: letters, digits, combining
// marks and apostrophes (so "don't" stays one word).
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc) ||
		r == '\'' || r == '\u2019'
}

func isDigitAt(b []byte, i int) bool {
	r, _ := utf8.DecodeRune(b[i:])
	return unicode.IsDigit(r)
}

// stemFilter is Bleve's Porter stemmer with a memo of up to maxStemMemo
// stems: stemming is about a third of the analysis time, and the words of a
// corpus repeat (Zipf), so most tokens become one map look-up. Output is
// identical to the plain filter's. It is safe for concurrent use.
//
// Stemmed terms may share memory with the memo, so no filter after this one
// may modify terms in place; it is the last filter of the analyzer.
type stemFilter struct {
	inner analysis.TokenFilter // Bleve's porter filter

	mu   sync.RWMutex
	memo map[string][]byte // unstemmed term -> stem; read-only values
}

// Filter implements analysis.TokenFilter.
func (f *stemFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	var misses analysis.TokenStream
	f.mu.RLock()
	for _, tok := range input {
		if tok.KeyWord {
			continue
		}
		if stem, ok := f.memo[string(tok.Term)]; ok {
			tok.Term = stem
		} else {
			misses = append(misses, tok)
		}
	}
	full := len(f.memo) >= maxStemMemo
	f.mu.RUnlock()
	if len(misses) == 0 {
		return input
	}
	if full {
		f.inner.Filter(misses)
		return input
	}
	keys := make([]string, len(misses))
	for i, tok := range misses {
		keys[i] = string(tok.Term)
	}
	f.inner.Filter(misses)
	f.mu.Lock()
	for i, tok := range misses {
		if len(f.memo) >= maxStemMemo {
			break
		}
		f.memo[keys[i]] = tok.Term
	}
	f.mu.Unlock()
	return input
}
