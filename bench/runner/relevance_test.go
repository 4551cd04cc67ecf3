package runner

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/importer"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
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

// buildCommit prefers the binary's own stamp and labels the fallback.
func TestBuildCommit(t *testing.T) {
	stamped := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	head := func() string { return "headhash" }
	noHead := func() string { return "" }
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		head func() string
		want string // exact, or a prefix when wantPrefix
		pre  bool
	}{
		{"clean stamp", stamped("vcs.revision", "abc123", "vcs.modified", "false"), head, "abc123", false},
		{"modified stamp", stamped("vcs.revision", "abc123", "vcs.modified", "true"), head, "abc123 (built with uncommitted changes)", false},
		{"no stamp", stamped("-buildvcs", "false"), head, "headhash (not stamped:", true},
		{"no build info", nil, head, "headhash (not stamped:", true},
		{"nothing", nil, noHead, "unknown (not stamped:", true},
	} {
		got := buildCommit(tt.bi, tt.head)
		if tt.pre && !strings.HasPrefix(got, tt.want) || !tt.pre && got != tt.want {
			t.Errorf("%s: buildCommit = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A document that is a session is synced as a plugin syncs it: the session,
// its messages with their roles, text as a text part and tool output as a
// tool-result part cut as hindsight import cuts it; only the text is
// searchable.
func TestLoadCorpusSessions(t *testing.T) {
	ctx := t.Context()
	client, a, stop, err := startServer(ctx, t.TempDir(), zerolog.Nop(), config.Config{}, Vectors{Embedder: "none", Store: "embedded"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	huge := strings.Repeat("ld: undefined symbol zorblax\n", 100_000) // 2.9 MB
	ds := &bench.Dataset{Corpus: []bench.Doc{
		{ID: "s1", Title: "Fix the linker", Session: &bench.Session{Source: "cursor", Project: "app", Messages: []bench.Message{
			{Role: "user", Text: "why does the build fail"},
			{Role: "assistant", Text: "the linker flag is wrong", ToolOutput: huge},
			{Role: "assistant", ToolOutput: "exit status 0"},
			{Role: "user"}, // nothing to send
		}}},
		{ID: "d2", Title: "plain", Text: "a plain document"},
	}}
	if err := loadCorpus(ctx, client, ds, nil); err != nil {
		t.Fatal(err)
	}
	userID, docOf, err := sessionDocIDs(ctx, a.Store)
	if err != nil {
		t.Fatal(err)
	}
	sid := ""
	for s, doc := range docOf {
		if doc == "s1" {
			sid = s
		}
	}
	type msg struct {
		role  string
		parts []kv.Part
	}
	var got []msg
	var sess kv.Session
	err = a.Store.View(ctx, func(tx *kv.Tx) error {
		if sess, err = tx.Session(userID, sid); err != nil {
			return err
		}
		return tx.Messages(userID, sid, func(m kv.Message) error {
			got = append(got, msg{m.Role, m.Parts})
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Title != "Fix the linker" || !strings.HasPrefix(sess.Source, "cursor") || sess.ProjectName != "app" { // the server names sources as plugins do (cursor-sync)
		t.Errorf("session = %+v, want its title, source and project", sess)
	}
	if len(got) != 3 {
		t.Fatalf("%d messages stored, want 3 (the empty one is not sent): %+v", len(got), got)
	}
	want := [][]string{{"user", "text"}, {"assistant", "text", "tool-result"}, {"assistant", "tool-result"}}
	for i, m := range got {
		types := []string{m.role}
		for _, p := range m.parts {
			types = append(types, p.Type)
		}
		if !slices.Equal(types, want[i]) {
			t.Errorf("message %d: %v, want %v", i, types, want[i])
		}
	}
	if cut := got[1].parts[1].Content; cut != importer.Truncate(huge, importer.DefaultMaxPartBytes) || len(cut) > importer.DefaultMaxPartBytes {
		t.Errorf("tool output of %d bytes stored as %d bytes, want the importer's cut to %d", len(huge), len(cut), importer.DefaultMaxPartBytes)
	}
	if err := a.Pipeline.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"linker": 1, "zorblax": 0, "plain": 1} {
		hits, err := a.Index.Search(ctx, index.Query{UserID: userID, Text: q})
		if err != nil || len(hits) != want {
			t.Errorf("search %q: %d hits, %v; want %d (tool output is not searchable)", q, len(hits), err, want)
		}
	}
}

// TestSweepFusion: --sweep fusion takes the fusions by name or number and
// keeps their numbers; anything else is refused.
func TestSweepFusion(t *testing.T) {
	var ps []bench.Param
	f := SweepFlag{Params: &ps}
	if err := f.Set("fusion=rrf,minmax,2"); err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || !slices.Equal(ps[0].Values, []float64{0, 1, 2}) {
		t.Fatalf("params = %+v, want fusion 0, 1, 2", ps)
	}
	for i, v := range ps[0].Values {
		if fusions[int(v)] != []ranking.Fusion{ranking.FusionRRF, ranking.FusionMinMax, ranking.FusionZScore}[i] {
			t.Errorf("fusion=%v is %s", v, fusions[int(v)])
		}
	}
	for _, bad := range []string{"fusion=borda", "fusion=3", "fusion=0.5"} {
		ps = nil
		if err := f.Set(bad); err == nil {
			t.Errorf("--sweep %s accepted", bad)
		}
	}
}

// TestSchedulerNote: the settings say whether nice could order the run
// against other work, from the kernel's autogroup switch.
func TestSchedulerNote(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content, want string
	}{
		{"1\n", "autogroup on"},
		{"0\n", "autogroup off"},
		{"x\n", ""},
	} {
		path := filepath.Join(dir, "autogroup")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := schedulerNote(path); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
			t.Errorf("file %q: %q, want it to start with %q", tc.content, got, tc.want)
		}
	}
	if got := schedulerNote(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing file: %q, want nothing", got)
	}
}
