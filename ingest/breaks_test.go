package ingest_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// cut returns text cut at breaks, each piece trimmed.
func cut(text string, breaks []int) []string {
	var out []string
	at := 0
	for _, b := range append(breaks, len(text)) {
		out = append(out, strings.TrimSpace(text[at:b]))
		at = b
	}
	return out
}

// TestMessageBreaks: the index session's body, cut at its breaks, is the
// searchable text of each message; each chunk, cut at its breaks, is a run
// of pieces of consecutive messages, the first and last possibly partial
// (a long message is split), the others whole. Seeded: message counts,
// roles, lengths and multi-part messages vary.
func TestMessageBreaks(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	word := func() string { return []string{"alpha", "beta", "gamma.", "delta\n", "epsilon"}[rng.IntN(5)] }
	for trial := range 200 {
		var msgs []kv.Message
		var texts []string // the searchable text of each message, in order
		for i := range 1 + rng.IntN(8) {
			m := kv.Message{Seq: uint64(i + 1), Role: []string{"user", "assistant", "assistant", "tool"}[rng.IntN(4)]}
			var parts []string
			for range 1 + rng.IntN(2) {
				var w []string
				for range rng.IntN(3) * (1 + rng.IntN(400)) {
					w = append(w, word())
				}
				parts = append(parts, strings.Join(w, " "))
				m.Parts = append(m.Parts, kv.Part{Type: kv.PartText, Content: parts[len(parts)-1]})
			}
			msgs = append(msgs, m)
			if t := ingest.MessageText(m); t != "" {
				texts = append(texts, t)
			}
		}
		d := ingest.Doc{UserID: "u", SessionID: "s", Exchanges: ingest.Exchanges(msgs)}
		d.Chunks = ingest.Chunks(d.Exchanges)
		is := ingest.IndexSession(d)
		if got := cut(is.Body, is.Breaks); len(texts) > 0 && strings.Join(got, "|") != strings.Join(texts, "|") {
			t.Fatalf("trial %d: body cut at its breaks = %q, messages %q", trial, got, texts)
		}
		// Walk the messages with the chunks: each chunk's pieces continue
		// where the last left off.
		msg, at := 0, 0 // the message and the offset in it where the next piece starts
		for _, c := range is.Chunks {
			for k, piece := range cut(c.Text, c.Breaks) {
				if k > 0 { // a break: a new message starts whole
					msg, at = msg+1, 0
				}
				for msg < len(texts) && strings.TrimSpace(texts[msg][at:]) == "" {
					msg, at = msg+1, 0
				}
				if msg >= len(texts) {
					t.Fatalf("trial %d: chunk %d has more pieces than there are messages", trial, c.Ordinal)
				}
				i := strings.Index(texts[msg][at:], piece)
				if i < 0 || strings.TrimSpace(texts[msg][at:at+i]) != "" || (k > 0 && i != 0) {
					t.Fatalf("trial %d: chunk %d piece %d %q is not the next text of message %d %q", trial, c.Ordinal, k, piece, msg, texts[msg][at:])
				}
				at += i + len(piece)
			}
		}
		if msg != len(texts)-1 && len(texts) > 0 {
			t.Fatalf("trial %d: the chunks end in message %d of %d", trial, msg, len(texts))
		}
	}
}

// TestPhraseAcrossMessages: through the pipeline, a quoted phrase matches
// within one message only, for sessions and for chunks, with the index
// reading the records (ingest.Texts, a message at a time) as the server's
// does.
func TestPhraseAcrossMessages(t *testing.T) {
	f := newFixture(t)
	ix, err := index.Open(t.TempDir(), index.Options{Text: ingest.Texts{Store: f.st}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	p := ingest.NewPipeline(f.st, ix, ingest.PipelineOptions{})
	msg := func(session, id, role, text string) string {
		return fmt.Sprintf(`{"sessionExternalId":%q,"externalId":%q,"role":%q,"textContent":%q}`, session, id, role, text)
	}
	f.batch(`{"messages":[` + strings.Join([]string{
		msg("one", "1a", "user", "why is the socket flaky"),
		msg("one", "1b", "assistant", "timeout in the dialer"),
		msg("two", "2a", "user", "a flaky socket timeout again"),
		msg("two", "2b", "assistant", "yes"),
		msg("three", "3a", "user", "is it flaky socket"),
		msg("three", "3b", "assistant", "timeout: flaky socket timeout"),
	}, ",") + `]}`)
	drainStep(t, p, 3)
	two, _ := f.stored("two")
	three, _ := f.stored("three")
	for _, kind := range []index.Kind{index.Sessions, index.Chunks} {
		if got, want := foundIDs(t, ix, f.user, kind, `"flaky socket timeout"`), sortedIDs(two.ID, three.ID); !slices.Equal(got, want) {
			t.Errorf("%v: phrase in one message found %v, want %v", kind, got, want)
		}
		if got := foundIDs(t, ix, f.user, kind, `"socket flaky timeout"`); len(got) != 0 {
			t.Errorf("%v: a phrase across two messages found %v", kind, got)
		}
	}
}
