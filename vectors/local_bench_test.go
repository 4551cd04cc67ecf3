package vectors

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// liteBenchProse is long enough for the 128-token window.
const liteBenchProse = "Hindsight keeps a searchable history of working sessions. Each session is " +
	"split into chunks of sixty to eighty words, every chunk is embedded, and the vectors are " +
	"stored next to a full-text index so that a query can be answered by keyword, by meaning, " +
	"or by both at once. When the embedding provider is slow or unavailable the search falls " +
	"back to the text index and says so in a response header, rather than failing the request. " +
	"The offline encoder is a small two-layer transformer with an eight-thousand-piece " +
	"vocabulary and a window of one hundred and twenty-eight tokens, which is why long " +
	"documents must be chunked before they are embedded."

// liteTextOfTokens returns the shortest prefix of liteBenchProse (in words)
// with at least n tokens.
func liteTextOfTokens(b *testing.B, l *Local, n int) string {
	words := strings.Fields(liteBenchProse)
	for i := 1; i <= len(words); i++ {
		text := strings.Join(words[:i], " ")
		if len(l.Tokenize(text)) >= n {
			return text
		}
	}
	b.Fatalf("liteBenchProse has fewer than %d tokens", n)
	return ""
}

// BenchmarkLocalEmbed measures throughput in texts per second for one text
// per call at several lengths, and for a batch of short texts per call.
// models.md records ~340 short sentences/s, ~52 texts/s at 63 tokens and
// ~23 texts/s at 128 tokens on 2 cores.
func BenchmarkLocalEmbed(b *testing.B) {
	l := loadLiteModel(b)
	short := "how do I fix a segfault in my C program"
	batch := make([]string, 32)
	for i := range batch {
		batch[i] = fmt.Sprintf("%s number %d", short, i)
	}
	cases := []struct {
		name  string
		texts []string
	}{
		{name: "short", texts: []string{short}},
		{name: "short-batch32", texts: batch},
		{name: "63tok", texts: []string{liteTextOfTokens(b, l, 63)}},
		{name: "128tok", texts: []string{liteTextOfTokens(b, l, 128)}},
	}
	ctx := context.Background()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			tokens := 0
			for _, t := range c.texts {
				tokens += len(l.Tokenize(t))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Embed(ctx, c.texts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(c.texts))/b.Elapsed().Seconds(), "texts/s")
			b.ReportMetric(float64(tokens)/float64(len(c.texts)), "tokens/text")
		})
	}
}

// BenchmarkLoadLocal measures LoadLocal: reading and decoding ~28 MB.
func BenchmarkLoadLocal(b *testing.B) {
	loadLiteModel(b) // skip when the model is missing
	dir := liteModelDir(b)
	for b.Loop() {
		if _, err := LoadLocal(dir); err != nil {
			b.Fatal(err)
		}
	}
}
