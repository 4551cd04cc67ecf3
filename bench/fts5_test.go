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
