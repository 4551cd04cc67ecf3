package index

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
)

// exchange is a chunk of two messages, as the pipeline cuts them: the
// user's and the assistant's, joined by a blank line, with the break
// between them.
func exchange(ordinal int, user, assistant string) Chunk {
	return Chunk{Ordinal: ordinal, Text: user + "\n\n" + assistant, Breaks: []int{len(user) + 2}}
}

// conversation is a session of exchanges: its body is every message joined
// by blank lines, its chunks the exchanges.
func conversation(user, id, title string, exchanges ...[2]string) Session {
	s := Session{UserID: user, SessionID: id, Title: title}
	for i, e := range exchanges {
		for _, m := range e {
			if s.Body != "" {
				s.Body += "\n\n"
				s.Breaks = append(s.Breaks, len(s.Body))
			}
			s.Body += m
		}
		s.Chunks = append(s.Chunks, exchange(i, e[0], e[1]))
	}
	return s
}

// messageSource is a TextSource that also reads a text at a time
// (MessageSource), as the records do; texts counts the texts it gave.
type messageSource struct {
	mapSource
	texts int
}

func (m *messageSource) EachText(_ context.Context, userID string, ids []string, fn func(id, text string) bool) error {
	for _, id := range ids {
		s, ok := m.sessions[userID+"/"+id]
		if !ok {
			continue
		}
		m.texts++
		if !fn(id, s.Title) {
			continue
		}
		for _, t := range messagesOf(s.Body, s.Breaks) {
			m.texts++
			if !fn(id, t) {
				break
			}
		}
	}
	return nil
}

// TestPhraseWithinOneMessage pins what a quoted phrase means: it matches
// within the title or within one message, in order, never across two
// messages, two copies of the title, or the title and the body; whether
// the index stores the text, reads it whole from a TextSource, or a text
// at a time from a MessageSource. The pairs and their positions decide a
// phrase without reading text; only a phrase with a gap (a dropped token)
// is checked on the text.
func TestPhraseWithinOneMessage(t *testing.T) {
	ms := &messageSource{mapSource: mapSource{sessions: map[string]Session{}}}
	for _, src := range []TextSource{nil, &ms.mapSource, ms} {
		ix, err := Open(t.TempDir(), Options{Text: src})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ix.Close() })
		texts := func() int { return 0 }
		if src == TextSource(ms) {
			texts = func() int { return ms.texts }
		}
		testPhraseWithinOneMessage(t, ix, ms.sessions, texts)
	}
	if ms.texts == 0 {
		t.Error("the message source was never read, not even for the phrase with a gap")
	}
}

func testPhraseWithinOneMessage(t *testing.T, ix *Index, records map[string]Session, texts func() int) {
	const gapPhrase = `"flaky _ timeout"` // the pairs do not decide it: the text does
	ss := []Session{
		conversation("u", "within", "", [2]string{"the socket timeout is flaky", "yes"}),
		conversation("u", "across", "", [2]string{"why is it flaky socket", "timeout, the log says"}),
		conversation("u", "apart", "", [2]string{"flaky socket here and socket timeout there", "ok"}),
		conversation("u", "title", "Flaky socket timeout in CI", [2]string{"hello", "hi"}),
		conversation("u", "titlebody", "it is flaky socket", [2]string{"timeout again", "hm"}),
		conversation("u", "copies", "timeout flaky socket", [2]string{"x", "y"}),
		conversation("u", "ident", "", [2]string{"see flakySocketTimeout()", "right"}),
		conversation("u", "exchanges", "", [2]string{"a flaky socket", "b"}, [2]string{"timeout c", "d"}),
		conversation("u", "gap", "", [2]string{"flaky _ timeout", "e"}, [2]string{"flaky, timeout", "f"}),
	}
	for _, s := range ss {
		records[s.UserID+"/"+s.SessionID] = s
	}
	put(t, ix, ss...)
	for _, tt := range []struct {
		q              string
		sessions, chks []string
	}{
		{`"flaky socket timeout"`, []string{"ident", "title"}, []string{"ident#0"}},
		{`"socket timeout"`, []string{"apart", "ident", "title", "within"}, []string{"apart#0", "ident#0", "within#0"}},
		// the title copies are "timeout flaky socket\ntimeout flaky socket"
		{`"socket timeout flaky"`, nil, nil},
		{`"flaky socket"`, []string{"across", "apart", "copies", "exchanges", "ident", "title", "titlebody"},
			[]string{"across#0", "apart#0", "exchanges#0", "ident#0"}},
		{`socket -"socket timeout"`, []string{"across", "copies", "exchanges", "titlebody"},
			[]string{"across#0", "exchanges#0"}},
		{`socket -"flaky socket timeout"`, []string{"across", "apart", "copies", "exchanges", "titlebody", "within"},
			[]string{"across#0", "apart#0", "exchanges#0", "within#0"}},
		// "_" is no token: the phrase is "flaky", any word, "timeout" (so
		// "flaky socket timeout" holds it).
		{gapPhrase, []string{"gap", "ident", "title"}, []string{"gap#0", "ident#0"}},
	} {
		before := texts()
		got := sorted(ids(search(t, ix, Query{UserID: "u", Text: tt.q, Limit: MaxLimit})))
		if want := sorted(tt.sessions); !slices.Equal(got, want) {
			t.Errorf("sessions %s = %v, want %v", tt.q, got, want)
		}
		if read := texts() - before; tt.q != gapPhrase && read > 0 {
			t.Errorf("sessions %s: read %d texts; the pairs decide it", tt.q, read)
		}
		got = sorted(ids(search(t, ix, Query{UserID: "u", Text: tt.q, Kind: Chunks, Limit: MaxLimit})))
		if want := sorted(tt.chks); !slices.Equal(got, want) {
			t.Errorf("chunks %s = %v, want %v", tt.q, got, want)
		}
	}
}

// phraseCorpus generates sessions for a user: every one holds the words
// of "flaky socket timeout" (scattered), a few the phrase in one message
// (or the title, or as an identifier), and others traps: the phrase
// across two messages (in one exchange, or two), its two pairs apart in
// one message.
// With always, every session holds the phrase too.
func phraseCorpus(rng *rand.Rand, user string, n int, always bool) []Session {
	filler := strings.Fields("we ran the build again and the test failed on retry with a stack trace from " +
		"parser config handler queue worker cache index merge deploy commit branch review patch lint")
	words := func(k int) string {
		out := make([]string, k)
		for i := range out {
			out[i] = filler[rng.IntN(len(filler))]
		}
		return strings.Join(out, " ")
	}
	scatter := func(m []string) { // the phrase's words, each somewhere else
		for _, w := range []string{"flaky", "socket", "timeout"} {
			i := rng.IntN(len(m))
			m[i] = words(2) + " " + w + " " + m[i]
		}
	}
	out := make([]Session, n)
	for i := range out {
		m := make([]string, 4)
		for j := range m {
			m[j] = words(3 + rng.IntN(6))
		}
		title := ""
		if rng.IntN(4) == 0 {
			title = words(3)
		}
		scatter(m)
		j := rng.IntN(len(m) - 1)
		switch r := rng.IntN(1000); {
		case r < 5:
			m[j] += " flaky socket timeout " + words(2)
		case r < 8:
			m[j] += " Flaky_Socket, timeout!"
		case r < 10:
			title = words(1) + " flaky socket timeout"
		case r < 30: // across two messages
			m[j] += " flaky socket"
			m[j+1] = "timeout " + m[j+1]
		case r < 40:
			m[j] += " flaky"
			m[j+1] = "socket timeout " + m[j+1]
		case r < 60: // both pairs, apart
			m[j] += " flaky socket " + words(1) + " socket timeout"
		case r < 70: // the title and the body
			title = words(2) + " flaky socket"
			m[0] = "timeout " + m[0]
		}
		if always {
			m[3] += " flaky socket timeout"
		}
		out[i] = conversation(user, fmt.Sprintf("s%05d", i), title, [2]string{m[0], m[1]}, [2]string{m[2], m[3]})
	}
	return out
}

// messagesOf cuts a text into its messages at its breaks, trimmed.
func messagesOf(text string, breaks []int) []string {
	var out []string
	at := 0
	for _, b := range breaks {
		out = append(out, strings.TrimSpace(text[at:b]))
		at = b
	}
	return append(out, strings.TrimSpace(text[at:]))
}

// TestPhrasesMatchFullScan: on 10,200 sessions holding a phrase's words,
// a quoted phrase returns exactly the sessions and chunks a scan of every
// record finds holding it within one message (or the title), however few
// they are; another user's sessions, holding the phrase under the same
// ids, change nothing.
func TestPhrasesMatchFullScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	alice := phraseCorpus(rng, "alice", 10200, false)
	bob := phraseCorpus(rng, "bob", 400, true)
	ix := openTest(t, "")
	for _, corpus := range [][]Session{alice, bob} {
		for b := 0; b < len(corpus); b += 1000 {
			put(t, ix, corpus[b:min(b+1000, len(corpus))]...)
		}
	}
	// The reference reads the records: each message (and title) analysed
	// on its own, once.
	a := ix.analyzer
	type record struct {
		id       string
		messages []analysis.TokenStream // the title's, then the messages'
		chunks   [][]analysis.TokenStream
	}
	records := make([]record, len(alice))
	for i, s := range alice {
		if !slices.Equal(messagesOf(s.Body, s.Breaks), append(messagesOf(s.Chunks[0].Text, s.Chunks[0].Breaks),
			messagesOf(s.Chunks[1].Text, s.Chunks[1].Breaks)...)) {
			t.Fatalf("%s: the body's messages are not the chunks'", s.SessionID)
		}
		r := record{id: s.SessionID}
		for _, m := range append([]string{s.Title}, messagesOf(s.Body, s.Breaks)...) {
			r.messages = append(r.messages, a.Analyze([]byte(m)))
		}
		// The chunks' messages are the body's (checked above), two each.
		r.chunks = [][]analysis.TokenStream{r.messages[1:3], r.messages[3:5]}
		records[i] = r
	}
	holds := func(ms []analysis.TokenStream, ph phrase) bool {
		for _, m := range ms {
			if phraseIn(m, ph) {
				return true
			}
		}
		return false
	}
	for _, q := range []string{`"flaky socket timeout"`, `"socket timeout"`, `"flaky socket"`, `parser "flaky socket timeout"`} {
		pq, err := parseQuery(a, q)
		if err != nil {
			t.Fatal(err)
		}
		var wantS, wantC []string
		for _, r := range records {
			if holds(r.messages, pq.Phrases[0]) {
				wantS = append(wantS, r.id)
			}
			for o, c := range r.chunks {
				if holds(c, pq.Phrases[0]) {
					wantC = append(wantC, fmt.Sprintf("%s#%d", r.id, o))
				}
			}
		}
		t.Logf("%s: %d sessions, %d chunks hold it", q, len(wantS), len(wantC))
		if len(wantS) == 0 || len(wantS) > 600 || len(wantC) == 0 {
			t.Fatalf("%s: the corpus has %d sessions and %d chunks holding it: not a test", q, len(wantS), len(wantC))
		}
		got, err := ix.Search(context.Background(), Query{UserID: "alice", Text: q, Limit: MaxLimit})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if g := sorted(ids(got)); !slices.Equal(g, wantS) {
			t.Errorf("%s: %d sessions, the scan finds %d; missing %v, extra %v", q, len(g), len(wantS), minus(wantS, g), minus(g, wantS))
		}
		got, err = ix.Search(context.Background(), Query{UserID: "alice", Text: q, Kind: Chunks, Limit: MaxLimit})
		if err != nil {
			t.Fatalf("%s chunks: %v", q, err)
		}
		if g := sorted(ids(got)); !slices.Equal(g, sorted(wantC)) {
			t.Errorf("%s: %d chunks, the scan finds %d; missing %v, extra %v", q, len(g), len(wantC), minus(wantC, g), minus(g, wantC))
		}
		// The best few are the best of all: a small limit is a prefix.
		top, err := ix.Search(context.Background(), Query{UserID: "alice", Text: q, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		all, _ := ix.Search(context.Background(), Query{UserID: "alice", Text: q, Limit: MaxLimit})
		if !slices.Equal(ids(top), ids(all[:min(5, len(all))])) {
			t.Errorf("%s: top 5 %v, top of all %v", q, ids(top), ids(all[:5]))
		}
	}
}

// minus returns the elements of a not in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestPhraseBudgetSaysPartial: when checking a phrase's candidates would
// read more sessions than the budget, Search returns what it found with
// ErrPartial, never a silent short answer.
func TestPhraseBudgetSaysPartial(t *testing.T) {
	ix := openTest(t, "")
	var ss []Session
	// The phrase has a gap ("_" is no token), so its pairs do not decide
	// it and its candidates are checked on their text.
	const phrase = `"flaky _ timeout"`
	for i := range 40 { // every one holds both words, none the phrase
		ss = append(ss, conversation("u", fmt.Sprintf("decoy%02d", i), "", [2]string{"flaky socket and socket timeout", "no"}))
	}
	ss = append(ss, conversation("u", "holder", "", [2]string{"a flaky _ timeout", "yes"}))
	put(t, ix, ss...)
	ix.checkBudget = 8
	hits, err := ix.Search(context.Background(), Query{UserID: "u", Text: phrase + ` and`, Limit: 5})
	if !errors.Is(err, ErrPartial) {
		t.Fatalf("err = %v, hits %v: want ErrPartial", err, ids(hits))
	}
	for _, h := range hits {
		if h.SessionID != "holder" {
			t.Errorf("partial result holds %s, which does not hold the phrase", h.SessionID)
		}
	}
	ix.checkBudget = 0 // the default
	hits = search(t, ix, Query{UserID: "u", Text: phrase + ` and`, Limit: 5})
	if !slices.Equal(ids(hits), []string{"holder"}) {
		t.Errorf("hits %v, want [holder]", ids(hits))
	}
	if _, err := ix.Search(context.Background(), Query{UserID: "u", Text: phrase + ` and`, Kind: Chunks, Limit: 5}); err != nil {
		t.Errorf("chunks: %v", err)
	}
	ix.checkBudget = 8
	if _, err := ix.Search(context.Background(), Query{UserID: "u", Text: phrase, Kind: Chunks, Limit: 5}); !errors.Is(err, ErrPartial) {
		t.Errorf("chunks with 41 candidate sessions and a budget of 8: err %v, want ErrPartial", err)
	}
}

// TestLazyPhraseCheck: a search for a few hits checks positions on the
// best documents holding a phrase's pairs, asks for more while too few
// pass, and past maxLazyFetch checks them all. Here the 1,100 best
// documents hold both pairs of "flaky socket timeout" apart, and only two
// weaker ones the phrase: every round of the lazy check fails, and the
// answer must still be those two, as the exhaustive evaluation finds.
func TestLazyPhraseCheck(t *testing.T) {
	ix := openTest(t, "")
	var ss []Session
	for i := range maxLazyFetch + 100 {
		ss = append(ss, conversation("u", fmt.Sprintf("decoy%04d", i), "", [2]string{"flaky socket flaky socket, socket timeout socket timeout", "no"}))
	}
	filler := strings.Repeat("unrelated words about the weather and lunch ", 40)
	ss = append(ss,
		conversation("u", "holder1", "", [2]string{"a flaky socket timeout " + filler, "yes"}),
		conversation("u", "holder2", "", [2]string{filler + " the flaky socket timeout again", "yes"}))
	put(t, ix, ss...)
	for _, limit := range []int{1, 3, 20} {
		hits := search(t, ix, Query{UserID: "u", Text: `"flaky socket timeout"`, Limit: limit})
		want := []string{"holder1", "holder2"}[:min(limit, 2)]
		if got := sorted(ids(hits)); !slices.Equal(got, sorted(want)) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
	pq, err := parseQuery(ix.analyzer, `"flaky socket timeout"`)
	if err != nil {
		t.Fatal(err)
	}
	pruned, err := searchWords(context.Background(), ix.sessions, &ix.sessionLengths, "u", pq, 3, evaluation{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := searchWords(context.Background(), ix.sessions, &ix.sessionLengths, "u", pq, 3, evaluation{exhaustive: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pruned.docs, all.docs) {
		t.Errorf("lazy %v, exhaustive %v", pruned.docs, all.docs)
	}
	// With room for all 1,102 documents holding the pairs, they are
	// checked and scored one by one (scanPhraseDocs): the same answer.
	scanned, err := searchWords(context.Background(), ix.sessions, &ix.sessionLengths, "u", pq, 3, evaluation{phraseScan: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(scanned.docs, all.docs) {
		t.Errorf("scanned %v, exhaustive %v", scanned.docs, all.docs)
	}
}
