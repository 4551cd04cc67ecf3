package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/vectors"
)

// memVectors is a VectorWriter in memory: the hashes it was given, by
// session.
type memVectors struct{ hashes map[string]map[int]string }

func (m *memVectors) Upsert(_ context.Context, user string, sessions map[string][]vectors.Vector) error {
	for sid, vs := range sessions {
		h := map[int]string{}
		for _, v := range vs {
			h[v.Ordinal] = v.TextHash
		}
		m.hashes[user+"/"+sid] = h
	}
	return nil
}

func (m *memVectors) Delete(_ context.Context, user string, ids []string) error {
	for _, id := range ids {
		delete(m.hashes, user+"/"+id)
	}
	return nil
}

func (m *memVectors) Hashes(_ context.Context, user, sid string) (map[int]string, error) {
	return m.hashes[user+"/"+sid], nil
}

// textLog is an Embedder that records the texts it embeds.
type textLog struct{ texts []string }

func (l *textLog) Embed(_ context.Context, texts []string) ([][]float32, error) {
	l.texts = append(l.texts, texts...)
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1}
	}
	return out, nil
}

func embedDoc(sid, title string, chunks ...string) Doc {
	d := Doc{UserID: "u", SessionID: sid, Session: kv.Session{ID: sid, Title: title}}
	for i, c := range chunks {
		d.Chunks = append(d.Chunks, Chunk{Ordinal: i, Text: c})
	}
	return d
}

func TestEmbedWindowsCarryTheTitle(t *testing.T) {
	long := strings.Repeat("word ", 10)
	tests := []struct {
		name, title string
		chunks      []string
		want        []string
	}{
		{"untitled", "", []string{"a b c"}, []string{"a b c"}},
		{"titled", "Fix the flaky test", []string{"a b c", "d e"}, []string{"Fix the flaky test\n\na b c", "Fix the flaky test\n\nd e"}},
		// the header's words count against the window of 8 words: 5 + 5
		{"window shrinks", "one two three", []string{strings.TrimSpace(long)},
			[]string{"one two three\n\nword word word word word", "one two three\n\nword word word word word"}},
		{"title only", "kubernetes pod restarting", nil, []string{"kubernetes pod restarting"}},
		{"long title clipped", strings.Repeat("t ", 40), []string{"x"}, []string{strings.TrimSpace(strings.Repeat("t ", maxHeaderWords)) + "\n\nx"}},
		{"nothing", "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewEmbedStage(&memVectors{hashes: map[string]map[int]string{}}, &textLog{}, EmbedOptions{WindowWords: 8})
			var got []string
			for _, w := range e.windows(embedDoc("s", tt.title, tt.chunks...)) {
				got = append(got, w.text)
				if w.hash != TextHash(w.text) {
					t.Errorf("window %d: hash of another text", w.ordinal)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("windows = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEmbedUpgradeReembedsTitledWindows: vectors written before windows had
// title headers (their hashes are of the bare text) are re-embedded exactly
// where the embedded text changed: titled sessions, not untitled ones.
func TestEmbedUpgradeReembedsTitledWindows(t *testing.T) {
	ctx := context.Background()
	store := &memVectors{hashes: map[string]map[int]string{}}
	var docs []Doc
	for i := range 6 {
		title := ""
		if i%2 == 0 {
			title = fmt.Sprintf("title %d", i)
		}
		d := embedDoc(fmt.Sprintf("s%d", i), title, fmt.Sprintf("first chunk %d", i), fmt.Sprintf("second chunk %d", i))
		docs = append(docs, d)
		old := map[int]string{} // what the stage wrote before headers
		for _, c := range d.Chunks {
			old[c.Ordinal*WindowsPerChunk] = TextHash(c.Text)
		}
		store.hashes["u/"+d.SessionID] = old
	}
	log := &textLog{}
	e := NewEmbedStage(store, log, EmbedOptions{})
	if err := e.Process(ctx, docs); err != nil {
		t.Fatal(err)
	}
	want := []string{"title 0\n\nfirst chunk 0", "title 0\n\nsecond chunk 0", "title 2\n\nfirst chunk 2", "title 2\n\nsecond chunk 2",
		"title 4\n\nfirst chunk 4", "title 4\n\nsecond chunk 4"}
	if !slices.Equal(log.texts, want) {
		t.Errorf("after the upgrade the stage embedded %q, want %q", log.texts, want)
	}
	if embedded, skipped := e.Counts(); embedded != 6 || skipped != 6 {
		t.Errorf("counts: %d embedded, %d skipped; want 6 and 6", embedded, skipped)
	}
	log.texts = nil
	if err := e.Process(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if len(log.texts) != 0 {
		t.Errorf("a second pass embedded %q", log.texts)
	}
}
