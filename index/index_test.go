package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// openTest opens a real index in a temporary directory and closes it at the
// end of the test.
// fullSize reports whether the large data-correctness tests (search
// against the reference model, pruned against exhaustive, per-user
// statistics) run at full size: not under -short. make test runs them in
// its build without the race detector (see the Makefile and
// skipUnderRace).
func fullSize() bool { return !testing.Short() }

// skipUnderRace skips a large data-correctness test under the race
// detector, saying so: it checks scores and order, which the detector
// cannot change, at ten times the cost under it, and make test runs it in
// its build without the detector. What the detector can find there (the
// search workers' protocol) TestPrunedEqualsExhaustiveRandom and
// TestConcurrentUse exercise under it.
//
// The tests it lets run are independent (each writes its own indexes) and
// run in parallel: make test's step without the detector runs only them
// and the goldens, one package, so that they use every core.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("SKIPPING under the race detector: a data-correctness test, run by make test without it (see skipUnderRace)")
	}
	t.Parallel()
}

func openTest(t *testing.T, dir string) *Index {
	t.Helper()
	return openTestWith(t, dir, Options{})
}

// openTestWith opens an index with opts in dir (a temporary directory
// when ""), closed when the test ends.
func openTestWith(t *testing.T, dir string, opts Options) *Index {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ix, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Error(err)
		}
	})
	return ix
}

func put(t *testing.T, ix *Index, ss ...Session) {
	t.Helper()
	if err := ix.Put(context.Background(), ss); err != nil {
		t.Fatal(err)
	}
}

func search(t *testing.T, ix *Index, q Query) []Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	return hits
}

// ids renders hits as "session" (sessions) or "session#ordinal" (chunks).
func ids(hits []Hit) []string {
	out := []string{}
	for _, h := range hits {
		if h.Ordinal >= 0 {
			out = append(out, fmt.Sprintf("%s#%d", h.SessionID, h.Ordinal))
		} else {
			out = append(out, h.SessionID)
		}
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func counts(t *testing.T, ix *Index) [2]uint64 {
	t.Helper()
	s, c, err := ix.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return [2]uint64{s, c}
}

// chunked makes a session whose chunks are its messages.
func chunked(user, id, title string, messages ...string) Session {
	s := Session{UserID: user, SessionID: id, Title: title}
	for i, m := range messages {
		if i > 0 {
			s.Body += "\n\n"
			s.Breaks = append(s.Breaks, len(s.Body))
		}
		s.Body += m
		s.Chunks = append(s.Chunks, Chunk{Ordinal: i, Text: m})
	}
	return s
}

func TestUserIsolation(t *testing.T) {
	ix := openTest(t, "")
	// Same words, same session ids: only the owner differs.
	put(t, ix,
		chunked("alice", "s1", "Flaky auth test", "the auth test fails on CI", "retry the auth handshake"),
		chunked("alice", "s2", "Parser bug", "parseConfigFile panics on empty input"),
		chunked("bob", "s1", "Flaky auth test", "the auth test fails on CI", "retry the auth handshake"),
		chunked("bob", "s3", "Auth rewrite", "rewrite auth middleware"),
		chunked("bob:x", "s4", "Auth", "auth"), // an id that extends another user's id
	)
	tests := []struct {
		user string
		kind Kind
		want []string
	}{
		{"alice", Sessions, []string{"s1"}},
		{"bob", Sessions, []string{"s1", "s3"}},
		{"bob:x", Sessions, []string{"s4"}},
		{"carol", Sessions, []string{}},
		{"alice", Chunks, []string{"s1#0", "s1#1"}},
		{"bob", Chunks, []string{"s1#0", "s1#1", "s3#0"}},
		{"bob:x", Chunks, []string{"s4#0"}},
		{"carol", Chunks, []string{}},
	}
	for _, tt := range tests {
		for _, explain := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/explain=%v", tt.user, tt.kind, explain), func(t *testing.T) {
				hits := search(t, ix, Query{UserID: tt.user, Text: "auth", Kind: tt.kind, Explain: explain})
				if got := sorted(ids(hits)); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %v, want %v", got, tt.want)
				}
				for _, h := range hits {
					if explain && !strings.Contains(h.Snippet, "<mark>") {
						t.Errorf("hit %s: snippet %q has no mark", h.SessionID, h.Snippet)
					}
					if !explain && (h.Snippet != "" || h.MatchedIn != nil) {
						t.Errorf("hit %s: explain fields set without Explain", h.SessionID)
					}
				}
			})
		}
	}
	// The user clause restricts without scoring, and the statistics are
	// the user's: alice scores as she would alone.
	solo := openTest(t, "")
	put(t, solo,
		chunked("alice", "s1", "Flaky auth test", "the auth test fails on CI", "retry the auth handshake"),
		chunked("alice", "s2", "Parser bug", "parseConfigFile panics on empty input"))
	for _, text := range []string{"flaky handshake", "auth", "auth parser"} {
		a := search(t, ix, Query{UserID: "alice", Text: text})
		b := search(t, solo, Query{UserID: "alice", Text: text})
		if len(a) == 0 || !reflect.DeepEqual(a, b) {
			t.Errorf("%q: alice's hits beside others' %+v, alone %+v", text, a, b)
		}
	}
	if _, err := ix.Search(context.Background(), Query{Text: "auth"}); err == nil || errors.Is(err, ErrBadQuery) {
		t.Errorf("search without user: err = %v, want a non-ErrBadQuery error", err)
	}
}

func TestPutReplacesSession(t *testing.T) {
	ix := openTest(t, "")
	put(t, ix, chunked("u", "s", "Original heading", "alpha message", "bravo message", "charlie message"))
	// The title changes and the session loses two chunks.
	put(t, ix, chunked("u", "s", "Renamed heading", "alpha message"))

	tests := []struct {
		text string
		kind Kind
		want []string
	}{
		{"original", Sessions, []string{}},
		{"renamed", Sessions, []string{"s"}},
		{"alpha", Sessions, []string{"s"}}, // a title change keeps the body searchable
		{"bravo", Sessions, []string{}},
		{"alpha", Chunks, []string{"s#0"}},
		{"bravo charlie", Chunks, []string{}}, // stale ordinals are gone
		{"message", Chunks, []string{"s#0"}},
	}
	for _, tt := range tests {
		t.Run(tt.text+"/"+tt.kind.String(), func(t *testing.T) {
			got := ids(search(t, ix, Query{UserID: "u", Text: tt.text, Kind: tt.kind}))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got := counts(t, ix); got != [2]uint64{1, 1} {
		t.Errorf("counts = %v, want [1 1]", got)
	}

	// Repeating the same Put changes nothing; a session given twice in one
	// call is indexed as its last version.
	put(t, ix, chunked("u", "s", "Renamed heading", "alpha message"))
	put(t, ix, chunked("u", "t", "first", "one", "two"), chunked("u", "t", "second", "three"))
	if got := counts(t, ix); got != [2]uint64{2, 2} {
		t.Errorf("counts = %v, want [2 2]", got)
	}
	if got := ids(search(t, ix, Query{UserID: "u", Text: "first one two", Kind: Chunks})); len(got) != 0 {
		t.Errorf("earlier duplicate indexed: %v", got)
	}
}

// TestPutParts: PutSessions is Put (the session document carries the
// chunk statistics; chunks are read from the text), and PutChunks writes
// nothing but rejects what Put rejects.
func TestPutParts(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "")
	s := chunked("u", "s", "Original heading", "alpha message", "bravo message")
	if err := ix.PutSessions(ctx, []Session{s}); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, ix); got != [2]uint64{1, 2} {
		t.Fatalf("after PutSessions: counts = %v, want [1 2]", got)
	}
	if got := ids(search(t, ix, Query{UserID: "u", Text: "bravo", Kind: Chunks})); !reflect.DeepEqual(got, []string{"s#1"}) {
		t.Errorf("after PutSessions: chunks search = %v, want [s#1]", got)
	}
	s2 := chunked("u", "s", "Renamed heading", "charlie message")
	if err := ix.PutChunks(ctx, []Session{s2}); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, ix, Query{UserID: "u", Text: "charlie", Kind: Chunks})); len(got) != 0 {
		t.Errorf("PutChunks wrote a chunk: %v", got)
	}
	bad := Session{UserID: "u", SessionID: "s", Chunks: []Chunk{{Ordinal: 1}, {Ordinal: 1}}}
	if err := ix.PutChunks(ctx, []Session{bad}); err == nil {
		t.Error("PutChunks accepted duplicate ordinals")
	}
	if err := ix.PutSessions(ctx, []Session{s2}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		text string
		kind Kind
		want []string
	}{
		{"renamed charlie", Sessions, []string{"s"}},
		{"original", Sessions, []string{}},
		{"charlie", Chunks, []string{"s#0"}},
		{"bravo", Chunks, []string{}}, // the stale ordinal is gone
	} {
		if got := ids(search(t, ix, Query{UserID: "u", Text: tt.text, Kind: tt.kind})); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("after PutSessions of a new version: %q in %v = %v, want %v", tt.text, tt.kind, got, tt.want)
		}
	}
	if got := counts(t, ix); got != [2]uint64{1, 1} {
		t.Errorf("counts = %v, want [1 1]", got)
	}
}

func TestPutValidates(t *testing.T) {
	ix := openTest(t, "")
	bad := []Session{
		{UserID: "", SessionID: "s"},
		{UserID: "u", SessionID: ""},
		{UserID: "u", SessionID: "s", Chunks: []Chunk{{Ordinal: -1}}},
		{UserID: "u", SessionID: "s", Chunks: []Chunk{{Ordinal: 1}, {Ordinal: 1}}},
	}
	for _, s := range bad {
		if err := ix.Put(context.Background(), []Session{s}); err == nil {
			t.Errorf("Put(%+v) succeeded, want an error", s)
		}
	}
	if got := counts(t, ix); got != [2]uint64{0, 0} {
		t.Errorf("counts after rejected puts = %v", got)
	}
}

func TestDelete(t *testing.T) {
	ix := openTest(t, "")
	put(t, ix,
		chunked("u", "keep", "kept session", "shared words here"),
		chunked("u", "drop", "dropped session", "shared words here", "more shared words"),
		chunked("other", "drop", "other user's session", "shared words here"),
	)
	if err := ix.Delete(context.Background(), "u", []string{"drop", "never-existed"}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []Kind{Sessions, Chunks} {
		got := ids(search(t, ix, Query{UserID: "u", Text: "shared words", Kind: kind}))
		want := map[Kind][]string{Sessions: {"keep"}, Chunks: {"keep#0"}}[kind]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s after delete: got %v, want %v", kind, got, want)
		}
		// Another user's session with the same id is untouched.
		if got := ids(search(t, ix, Query{UserID: "other", Text: "shared", Kind: kind})); len(got) != 1 {
			t.Errorf("%s of other user after delete: %v", kind, got)
		}
	}
	if got := counts(t, ix); got != [2]uint64{2, 2} {
		t.Errorf("counts = %v, want [2 2]", got)
	}
}

func TestExplain(t *testing.T) {
	ix := openTest(t, "")
	put(t, ix,
		chunked("u", "xss", "Sanitise <b>HTML</b>",
			`The page rendered <script>alert("x")</script> & we must escape parseConfigFile output.`),
		chunked("u", "title-only", "Config loader", "nothing relevant here"),
	)
	hits := search(t, ix, Query{UserID: "u", Text: "config", Explain: true})
	if len(hits) != 2 {
		t.Fatalf("hits = %v, want 2", ids(hits))
	}
	byID := map[string]Hit{}
	for _, h := range hits {
		byID[h.SessionID] = h
	}
	x := byID["xss"]
	if !strings.Contains(x.Snippet, "parse<mark>Config</mark>File") {
		t.Errorf("snippet %q does not mark the sub-word", x.Snippet)
	}
	if !strings.Contains(x.Snippet, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; we") {
		t.Errorf("snippet %q is not escaped", x.Snippet)
	}
	if stripped := strings.NewReplacer("<mark>", "", "</mark>", "").Replace(x.Snippet); strings.ContainsAny(stripped, "<>") {
		t.Errorf("snippet %q has markup besides <mark>", x.Snippet)
	}
	if want := []string{"messages"}; !reflect.DeepEqual(x.MatchedIn, want) {
		t.Errorf("matchedIn = %v, want %v", x.MatchedIn, want)
	}
	to := byID["title-only"]
	if want := []string{"title"}; !reflect.DeepEqual(to.MatchedIn, want) {
		t.Errorf("matchedIn = %v, want %v", to.MatchedIn, want)
	}
	if to.Snippet != "<mark>Config</mark> loader" {
		t.Errorf("title-only snippet = %q", to.Snippet)
	}

	hits = search(t, ix, Query{UserID: "u", Text: "sanitise escape", Explain: true})
	if len(hits) != 1 || !reflect.DeepEqual(hits[0].MatchedIn, []string{"title", "messages"}) {
		t.Errorf("hits = %+v, want xss matched in title and messages", hits)
	}

	hits = search(t, ix, Query{UserID: "u", Text: "script", Kind: Chunks, Explain: true})
	if len(hits) != 1 || !reflect.DeepEqual(hits[0].MatchedIn, []string{"messages"}) ||
		!strings.Contains(hits[0].Snippet, "&lt;<mark>script</mark>&gt;") {
		t.Errorf("chunk hits = %+v", hits)
	}
}

func TestQuerySemantics(t *testing.T) {
	ix := openTest(t, "")
	put(t, ix,
		chunked("u", "camel", "", "we call parseConfigFile at startup"),
		chunked("u", "snake", "", "we call parse_config_file at startup"),
		chunked("u", "path", "", "see src/parse/config_file.go for details"),
		chunked("u", "words", "", "parse the config file first"),
		chunked("u", "race", "", "a race condition in the scheduler"),
		chunked("u", "cond", "", "the condition of the race track"),
	)
	tests := []struct {
		text    string
		want    []string // exact order when ordered, else as a set
		ordered bool
	}{
		// every spelling of the identifier meets the plain words
		{text: "parse config file", want: []string{"camel", "path", "snake", "words"}},
		// an exact identifier search ranks the exact spelling first
		{text: "parseConfigFile", want: []string{"camel"}, ordered: true},
		{text: "parse_config_file", want: []string{"snake"}, ordered: true},
		// OR semantics, BM25 ranking: both words beat one word
		{text: "race scheduler", want: []string{"race", "cond"}, ordered: true},
		// a phrase must match, in order
		{text: `"race condition"`, want: []string{"race"}},
		{text: `"condition race"`, want: []string{}},
		{text: `"parse config file"`, want: []string{"camel", "path", "snake"}},
		{text: `"parse the config"`, want: []string{"words"}}, // stop word gap
		// exclusions
		{text: "race -scheduler", want: []string{"cond"}},
		{text: `condition -"race condition"`, want: []string{"cond"}},
		// an excluded identifier is excluded in every spelling, like a phrase
		{text: "parse config -parseConfigFile", want: []string{"words"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got := ids(search(t, ix, Query{UserID: "u", Text: tt.text}))
			if tt.ordered {
				if len(got) < len(tt.want) || !reflect.DeepEqual(got[:len(tt.want)], tt.want) {
					t.Errorf("got %v, want it to start with %v", got, tt.want)
				}
				return
			}
			if got := sorted(got); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHostileQueries(t *testing.T) {
	ix := openTest(t, "")
	put(t, ix, chunked("u", "s", "Unicode 日本語 café", "naïve café 日本語 テキスト emoji 😀 and title:foo"))
	long := strings.Repeat(`parseConfigFile "unbalanced (x) *:* -y ~z^2 日本 `, 300) // > 10 KiB
	tests := []struct {
		text    string
		badOK   bool // ErrBadQuery expected
		wantHit bool
	}{
		{text: `"unbalanced quote café`, wantHit: true},
		{text: `café"`, wantHit: true},
		{text: `-"`, badOK: true},
		{text: `*:*`, badOK: true},
		{text: `!@#$%^&*()_+{}|:"<>?[];',./\`, badOK: true},
		{text: `&& || !`, badOK: true},
		{text: "title:foo", wantHit: true},
		{text: "日本語", wantHit: true},
		{text: "CAFÉ", wantHit: true},
		{text: "😀", badOK: true},
		{text: "\x00\xff\xfe invalid utf8 café", wantHit: true},
		{text: long, wantHit: false},
		{text: strings.Repeat("a", 100000), badOK: true}, // one over-long token
	}
	for _, tt := range tests {
		name := tt.text
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			for _, kind := range []Kind{Sessions, Chunks} {
				hits, err := ix.Search(context.Background(), Query{UserID: "u", Text: tt.text, Kind: kind, Explain: true})
				switch {
				case tt.badOK && errors.Is(err, ErrBadQuery):
					if !strings.Contains(err.Error(), "bad query: ") {
						t.Errorf("error %q lacks a message", err)
					}
				case err != nil:
					t.Fatalf("%s: %v", kind, err)
				case tt.badOK:
					t.Errorf("%s: no ErrBadQuery", kind)
				case tt.wantHit && len(hits) != 1:
					t.Errorf("%s: hits = %v, want s", kind, ids(hits))
				}
			}
		})
	}
}

func TestReopenGivesSameResults(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ss []Session
	for i := 0; i < 60; i++ {
		ss = append(ss, chunked("u", fmt.Sprintf("s%02d", i), fmt.Sprintf("session %d about topic%d", i, i%7),
			fmt.Sprintf("message about config%d and parser%d", i%5, i%3), "another message with auth details"))
	}
	put(t, ix, ss[:30]...)
	put(t, ix, ss[30:]...)
	queries := []Query{
		{UserID: "u", Text: "config2 parser1 topic3", Limit: 100},
		{UserID: "u", Text: "auth", Kind: Chunks, Limit: 100, Explain: true},
		{UserID: "u", Text: `"another message" topic4`, Limit: 5, Explain: true},
	}
	var before [][]Hit
	for _, q := range queries {
		before = append(before, search(t, ix, q))
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := ix.Search(context.Background(), queries[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("search after close: %v, want ErrClosed", err)
	}
	if err := ix.Put(context.Background(), ss[:1]); !errors.Is(err, ErrClosed) {
		t.Errorf("put after close: %v, want ErrClosed", err)
	}

	ix = openTest(t, dir)
	if got := counts(t, ix); got != [2]uint64{60, 120} {
		t.Errorf("counts after reopen = %v", got)
	}
	for i, q := range queries {
		after := search(t, ix, q)
		if len(after) == 0 || !reflect.DeepEqual(after, before[i]) {
			t.Errorf("query %d after reopen:\n got %+v\nwant %+v", i, after, before[i])
		}
	}
}

func TestOpenRejectsOtherFormat(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.sessions.SetInternal([]byte(metaKey), []byte(`{"format":999}`)); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Open = %v, want ErrIncompatible", err)
	}
}

func TestOptions(t *testing.T) {
	for _, tt := range []struct {
		boost   float64
		want    int
		wantErr bool
	}{
		{0, DefaultTitleBoost, false}, {1, 1, false}, {2.4, 2, false}, {3, 3, false},
		{0.5, 0, true}, {-1, 0, true}, {1000, 0, true},
	} {
		got, err := Options{TitleBoost: tt.boost}.titleRepeat()
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("TitleBoost %v: got %d, %v; want %d, error %v", tt.boost, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestContextCanceled(t *testing.T) {
	ix := openTest(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ix.Put(ctx, []Session{chunked("u", "s", "t", "m")}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put: %v", err)
	}
	if _, err := ix.Search(ctx, Query{UserID: "u", Text: "m"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Search: %v", err)
	}
	if err := ix.Delete(ctx, "u", []string{"s"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete: %v", err)
	}
	if got := counts(t, ix); got != [2]uint64{0, 0} {
		t.Errorf("canceled Put wrote: %v", got)
	}
}

func TestFieldOptionsMatchMapping(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  any
		want any
	}{
		{"keyword", keywordOpts, keywordField().Options()},
		{"text", textOpts, textField().Options()},
		{"stored", storedOpts, storedField().Options()},
	} {
		if tt.got != tt.want {
			t.Errorf("%s options %v, mapping says %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestDocIDs(t *testing.T) {
	for _, tt := range []struct{ user, session string }{
		{"u", "s"}, {"user:1", "sess#2"}, {"12", ":x"}, {"ü", "日本#0"}, {"a#1", "b"},
	} {
		key := docKey(tt.user, tt.session)
		u, s, ok := splitKey(key)
		if !ok || u != tt.user || s != tt.session {
			t.Errorf("splitKey(docKey(%q, %q)) = %q, %q, %v", tt.user, tt.session, u, s, ok)
		}
	}
	for _, bad := range []string{"", "x", ":u", "5:abc", "-1:x"} {
		if _, _, ok := splitKey(bad); ok {
			t.Errorf("splitKey(%q) accepted", bad)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	ix := openTest(t, "")
	ctx := context.Background()
	const writers, perWriter = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < writers; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				id := fmt.Sprintf("w%d-s%d", w, i)
				s := chunked("u", id, "session "+id, "common words", "more common words")
				if err := ix.Put(ctx, []Session{s}); err != nil {
					errs <- err
				}
				if i%3 == 0 { // rewrite an earlier session with fewer chunks
					s = chunked("u", fmt.Sprintf("w%d-s%d", w, i/2), "rewritten", "common words")
					if err := ix.Put(ctx, []Session{s}); err != nil {
						errs <- err
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				for _, kind := range []Kind{Sessions, Chunks} {
					if _, err := ix.Search(ctx, Query{UserID: "u", Text: "common", Kind: kind, Explain: i%2 == 0}); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sessions, chunks, err := ix.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sessions != writers*perWriter {
		t.Errorf("sessions = %d, want %d", sessions, writers*perWriter)
	}
	// Every session has one or two chunks, and its hits agree with its version.
	hits := search(t, ix, Query{UserID: "u", Text: "common", Kind: Chunks, Limit: 1000})
	if uint64(len(hits)) != chunks || chunks < sessions || chunks > 2*sessions {
		t.Errorf("chunks = %d, chunk hits = %d, sessions = %d", chunks, len(hits), sessions)
	}
}

func TestHugeDocument(t *testing.T) {
	ix := openTest(t, "")
	blob := strings.Repeat("QUJD", 50000) // a 200 KB token
	body := "header words " + blob + " " + strings.Repeat("filler text ", 20000) + " trailing needle"
	put(t, ix, chunked("u", "big", "Big one", body))
	for _, kind := range []Kind{Sessions, Chunks} {
		hits := search(t, ix, Query{UserID: "u", Text: "needle", Kind: kind, Explain: true})
		if len(hits) != 1 || !slices.Contains(hits[0].MatchedIn, "messages") {
			t.Errorf("%s: hits = %+v", kind, hits)
		}
	}
}

// TestWordsPlan checks the frequent-word plan: documents that drop out are
// only those without a selective word, and the documents returned keep
// the scores of the unrestricted query (the reference model, without the
// plan).
func TestWordsPlan(t *testing.T) {
	ix := openTest(t, "")
	n := minDocsForFrequent + 200
	var ss []Session
	for i := 0; i < n; i++ {
		words := []string{"common"}
		if i%100 == 0 {
			words = append(words, "rare")
		}
		if i < n/2 {
			words = append(words, "beta")
		}
		if i%3 == 0 {
			words = append(words, "gamma")
		}
		ss = append(ss, Session{UserID: "u", SessionID: fmt.Sprintf("s%04d", i), Body: strings.Join(words, " ")})
	}
	put(t, ix, ss...)

	ref := newRefIndex(ix.analyzer, ix.repeat)
	for _, se := range ss {
		ref.put(se)
	}
	unrestricted := func(text string, limit int) []Hit {
		pq, err := parseQuery(ix.analyzer, text)
		if err != nil {
			t.Fatal(err)
		}
		hits := ref.search(pq, "u", false, exact)
		return hits[:min(limit, len(hits))]
	}
	scores := func(hits []Hit) []float64 {
		var out []float64
		for _, h := range hits {
			out = append(out, h.Score)
		}
		slices.Sort(out)
		return out
	}
	tests := []struct {
		text     string
		plan     string // what planWords must choose
		wantHits int
	}{
		{"common rare", "selective", 12},         // only the documents with the selective word
		{"common rare nowhere", "selective", 12}, // an absent word is not selective
		{"common beta gamma", "none", 20},        // all words frequent: no restriction
		{"rare nowhere", "none", 12},             // no frequent word: no restriction
		{`common "beta gamma"`, "phrase", 20},    // a phrase bounds the candidates itself
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			pq, err := parseQuery(ix.analyzer, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			dfs := make([]uint64, len(pq.Terms))
			for i, term := range pq.Terms {
				for _, d := range ref.docs {
					if d.text.tf[term] > 0 {
						dfs[i]++
					}
				}
			}
			plan := planFromFrequencies(uint64(len(ref.docs)), pq.Terms, dfs)
			got := map[bool]string{true: "selective", false: "none"}[plan.selective != nil]
			if len(pq.Phrases) > 0 {
				got = "phrase"
			}
			if got != tt.plan {
				t.Errorf("plan = %+v, want %s", plan, tt.plan)
			}
			hits := search(t, ix, Query{UserID: "u", Text: tt.text, Limit: 20})
			if len(hits) != tt.wantHits {
				t.Fatalf("got %d hits, want %d", len(hits), tt.wantHits)
			}
			want := unrestricted(tt.text, len(hits))
			if !slices.EqualFunc(scores(hits), scores(want), func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*b }) {
				t.Errorf("scores differ from the unrestricted query:\n got %v\nwant %v", scores(hits), scores(want))
			}
		})
	}
}
