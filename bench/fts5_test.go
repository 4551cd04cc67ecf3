package bench

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestFTS5Match(t *testing.T) {
	tests := []struct{ in, want string }{
		{"retry policy", `"retry" OR "policy"`},
		{`IL-6 "and" NEAR(x)`, `"IL" OR "6" OR "and" OR "NEAR" OR "x"`},
		{"a OR b AND NOT c", `"a" OR "OR" OR "b" OR "AND" OR "NOT" OR "c"`},
		{"title:foo bar* ^baz", `"title" OR "foo" OR "bar" OR "baz"`},
		{"Retry retry RETRY", `"Retry"`},
		{"naïve café 東京", `"naïve" OR "café" OR "東京"`},
		{"  -- ?? ", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := FTS5Match(tt.in); got != tt.want {
			t.Errorf("FTS5Match(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestFTS5Peer(t *testing.T) {
	ctx := context.Background()
	p, err := OpenFTS5("")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Name() != FTS5Name {
		t.Errorf("Name = %q", p.Name())
	}
	// Two batches, as IndexPeer sends them.
	if err := p.Index(ctx, []Doc{
		{ID: "d1", Title: "Retry budget", Text: "Retries back off exponentially after a failure."},
		{ID: "d2", Title: "Flaky auth test", Text: "The auth test fails when the token cache is cold."},
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.Index(ctx, []Doc{
		{ID: "d3", Title: "", Text: "Cache warming: running the tests twice hides the cold cache."},
		{ID: "d4", Title: "Unrelated", Text: "Bake a chocolate cake."},
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		q    string
		k    int
		want []string
	}{
		// Porter stemming: "retrying" meets "Retry" and "Retries".
		{"retrying", 10, []string{"d1"}},
		// "cold", "cache" and "test" (stemmed) are in d2 and d3; d3 has
		// "cache" twice, so bm25 puts it first.
		{"cold cache test", 10, []string{"d3", "d2"}},
		{"cold cache test", 1, []string{"d3"}},
		// Query syntax is read as plain terms, not as operators.
		{`NOT cake OR "chocolate`, 10, []string{"d4"}},
		{"nothing matches this", 10, []string{}},
	}
	for _, tt := range tests {
		got, err := p.Search(ctx, tt.q, tt.k)
		if err != nil {
			t.Fatalf("Search(%q): %v", tt.q, err)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Search(%q, %d) = %v, want %v", tt.q, tt.k, got, tt.want)
		}
	}
	if _, err := p.Search(ctx, "?!", 10); !errors.Is(err, ErrNoTerms) {
		t.Errorf("Search of punctuation: err = %v, want ErrNoTerms", err)
	}
}

func TestFTS5OnFile(t *testing.T) {
	path := t.TempDir() + "/fts.db"
	p, err := OpenFTS5(path)
	if err != nil {
		t.Fatal(err)
	}
	ds := &Dataset{Corpus: []Doc{{ID: "a", Title: "alpha", Text: "one"}, {ID: "b", Title: "beta", Text: "two"}}}
	if err := IndexPeer(context.Background(), p, ds, nil); err != nil {
		t.Fatal(err)
	}
	got, err := p.Search(context.Background(), "beta", 10)
	if err != nil || !slices.Equal(got, []string{"b"}) {
		t.Errorf("Search = %v, %v; want [b]", got, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFTS5(path); err == nil {
		t.Error("OpenFTS5 on an existing index succeeded; want an error (the table exists)")
	}
}

// TestFTS5TextPeer: the text-only peer leaves a session's tool output out,
// and indexes other documents whole.
func TestFTS5TextPeer(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		open func(string) (*FTS5, error)
		name string
		want []string // for a word only tool output holds
	}{
		{OpenFTS5, FTS5Name, []string{"s1", "d2"}},
		{OpenFTS5Text, FTS5TextName, []string{"d2"}},
	} {
		p, err := tt.open("")
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != tt.name {
			t.Errorf("Name = %q, want %q", p.Name(), tt.name)
		}
		s := &Session{Messages: []Message{
			{Role: "user", Text: "why does the build fail"},
			{Role: "assistant", Text: "the linker flag is wrong", ToolOutput: "ld: undefined symbol zorblax"},
		}}
		docs := []Doc{
			{ID: "s1", Title: "build", Text: "why does the build fail\n\nthe linker flag is wrong\n\nld: undefined symbol zorblax", Session: s},
			{ID: "d2", Text: "zorblax zorblax in a plain document"},
		}
		if err := p.Index(ctx, docs); err != nil {
			t.Fatal(err)
		}
		got, err := p.Search(ctx, "zorblax", 10)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tt.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s: zorblax found %v, want %v", tt.name, got, want)
		}
		if got, err := p.Search(ctx, "linker", 10); err != nil || !slices.Equal(got, []string{"s1"}) {
			t.Errorf("%s: linker found %v, %v; want [s1]", tt.name, got, err)
		}
		p.Close()
	}
}
