package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/kv/kvtest"
	"github.com/hindsight-dev/hindsight/vectors"
)

// countingEmbedder is a working embedder: the vector of a text is its
// length; it counts the texts it was asked for.
type countingEmbedder struct{ texts int }

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

func TestCachedEmbedder(t *testing.T) {
	inner := &countingEmbedder{}
	c := &cachedEmbedder{e: inner, m: map[string][]float32{}}
	ds := &bench.Dataset{Queries: []bench.Query{{ID: "1", Text: "a"}, {ID: "2", Text: "bb"}, {ID: "3", Text: "a"}}}
	if err := c.warm(context.Background(), ds, nil); err != nil {
		t.Fatal(err)
	}
	if inner.texts != 2 {
		t.Errorf("warm embedded %d texts, want 2 (a repeated query once)", inner.texts)
	}
	got, err := c.Embed(context.Background(), []string{"bb", "ccc", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.texts != 3 {
		t.Errorf("%d texts embedded in all, want 3: only ccc is new", inner.texts)
	}
	for i, want := range []float32{2, 3, 1} {
		if got[i][0] != want {
			t.Errorf("vector %d = %v, want length %v", i, got[i], want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	got := CommandLine([]string{"hindsight", "bench", "--dataset", "my data", "--sweep", "rrf.k=1,2", "it's", ""})
	want := `hindsight bench --dataset 'my data' --sweep rrf.k=1,2 'it'\''s' ''`
	if got != want {
		t.Errorf("CommandLine = %s, want %s", got, want)
	}
}

// The Weaviate peers take the windows Hindsight's embedding stage embedded,
// with their stored vectors, only while the store holds exactly those
// windows; otherwise they embed their own.
func TestStoredVectorsLookup(t *testing.T) {
	ctx := context.Background()
	recs := kvtest.Open(t)
	var userID string
	if err := recs.Commit(ctx, func(tx *kv.Tx) error {
		u, err := tx.CreateUser("bench", 1)
		userID = u.ID
		return err
	}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("word ", 150) // three windows of 64 words less the title's
	b, err := ingest.DecodeBatch([]byte(`{"sessions":[{"externalId":"d1","title":"A title"}],
	  "messages":[{"sessionExternalId":"d1","externalId":"m","role":"user","parts":[{"type":"text","content":"`+long+`"}]}]}`), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.NewService(recs, time.Now).Batch(ctx, userID, b); err != nil {
		t.Fatal(err)
	}
	var doc ingest.Doc
	recs.View(ctx, func(tx *kv.Tx) error {
		sid, _ := tx.SessionIDByExternal(userID, "d1")
		doc, err = ingest.LoadDoc(tx, userID, sid)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := vectors.OpenEmbedded(filepath.Join(t.TempDir(), "v.db"), vectors.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	if err := vs.SetMeta(ctx, "m", 2); err != nil {
		t.Fatal(err)
	}
	emb := &countingEmbedder{}
	stage := ingest.NewEmbedStage(vs, emb, ingest.EmbedOptions{WindowWords: 64})
	if err := stage.Process(ctx, []ingest.Doc{doc}); err != nil {
		t.Fatal(err)
	}
	ws := stage.Windows(doc)
	if len(ws) < 2 || emb.texts != len(ws) {
		t.Fatalf("stage embedded %d texts for %d windows; want several windows", emb.texts, len(ws))
	}

	sv := &storedVectors{userID: userID, records: recs, stage: stage, store: vs,
		sessionOf: map[string]string{"doc1": doc.Session.ID}}
	chunks, vecs, ok := sv.lookup(ctx, "doc1")
	if !ok || len(chunks) != len(ws) || len(vecs) != len(ws) {
		t.Fatalf("lookup = %d chunks, %d vectors, %v; want the %d windows", len(chunks), len(vecs), ok, len(ws))
	}
	for i, w := range ws {
		if chunks[i] != w.Body || strings.Contains(chunks[i], "A title") {
			t.Errorf("chunk %d = %q, want the window's body %q", i, chunks[i], w.Body)
		}
		// countingEmbedder's vector of a text is (len, 1), stored unit-length.
		if want := float32(len(w.Text)); vecs[i][0]/vecs[i][1] < want-0.5 || vecs[i][0]/vecs[i][1] > want+0.5 {
			t.Errorf("vector %d = %v, want the direction of (%v, 1)", i, vecs[i], want)
		}
	}
	if _, _, ok := sv.lookup(ctx, "doc2"); ok {
		t.Error("lookup found vectors for a document Hindsight does not have")
	}
	// A window whose stored hash differs (the text changed) is not reused.
	if err := vs.Upsert(ctx, userID, map[string][]vectors.Vector{doc.Session.ID: {{Ordinal: ws[0].Ordinal, TextHash: "other", Values: []float32{1, 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := sv.lookup(ctx, "doc1"); ok {
		t.Error("lookup reused a vector whose text hash does not match")
	}
	var none *storedVectors
	if _, _, ok := none.lookup(ctx, "doc1"); ok {
		t.Error("a nil lookup found vectors")
	}
}

// gitHead finds the commit of a plain checkout and of a worktree (.git a
// file naming its git directory; refs in the common one).
func TestGitHead(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main/.git/HEAD", "ref: refs/heads/main\n")
	write("main/.git/refs/heads/main", "aaaa\n")
	write("main/.git/packed-refs", "cccc refs/heads/packed\n")
	write("main/.git/worktrees/w/HEAD", "ref: refs/heads/w\n")
	write("main/.git/worktrees/w/commondir", "../..\n")
	write("main/.git/refs/heads/w", "bbbb\n")
	write("w/.git", "gitdir: "+filepath.Join(root, "main", ".git", "worktrees", "w")+"\n")
	write("p/.git", "gitdir: "+filepath.Join(root, "main", ".git", "worktrees", "p")+"\n")
	write("main/.git/worktrees/p/HEAD", "ref: refs/heads/packed\n")
	write("main/.git/worktrees/p/commondir", "../..\n")
	for dir, want := range map[string]string{"main": "aaaa", "w": "bbbb", "p": "cccc"} {
		t.Chdir(filepath.Join(root, dir))
		if got := gitHead(); got != want {
			t.Errorf("gitHead in %s = %q, want %q", dir, got, want)
		}
	}
}
