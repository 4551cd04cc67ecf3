package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/vectors"
)

// VectorWriter is the write side of the vector store the embedding stage
// feeds; vectors.Store implementations satisfy it.
type VectorWriter interface {
	Upsert(ctx context.Context, userID string, sessions map[string][]vectors.Vector) error
	Delete(ctx context.Context, userID string, sessionIDs []string) error
	Hashes(ctx context.Context, userID, sessionID string) (map[int]string, error)
}

// Embedder turns texts into vectors (vectors.Embedder satisfies it).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// WindowsPerChunk bounds how many embedding windows one chunk may have; a
// vector's ordinal is chunk*WindowsPerChunk + window, so ranking maps a vector
// hit back to its chunk with ChunkOfVector.
const WindowsPerChunk = 64

// ChunkOfVector is the chunk ordinal a vector ordinal belongs to.
func ChunkOfVector(ordinal int) int { return ordinal / WindowsPerChunk }

// EmbedOptions tune the embedding stage.
type EmbedOptions struct {
	// WindowWords splits each chunk into windows of at most this many words
	// before embedding (the offline model reads 128 tokens: about 60-80
	// words). 0 embeds each chunk whole.
	WindowWords int
	// BatchSize is how many texts go to the embedder per call; 0 = 256.
	BatchSize int
	Logger    zerolog.Logger
}

// EmbedStage embeds the chunks whose text changed and writes their vectors.
// Unchanged text is never re-embedded: each window's text hash is compared
// with the stored one, and an unchanged window keeps its stored vector.
type EmbedStage struct {
	store VectorWriter
	emb   Embedder
	opts  EmbedOptions

	embedded atomic.Int64 // windows sent to the embedder
	skipped  atomic.Int64 // windows whose vector was kept
}

// NewEmbedStage returns a stage writing to store with vectors from emb.
func NewEmbedStage(store VectorWriter, emb Embedder, opts EmbedOptions) *EmbedStage {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	return &EmbedStage{store: store, emb: emb, opts: opts}
}

// Counts returns how many windows were embedded and how many were skipped as
// unchanged since start.
func (e *EmbedStage) Counts() (embedded, skipped int64) { return e.embedded.Load(), e.skipped.Load() }

type window struct {
	ordinal int
	text    string // what is embedded: the body under the title header
	body    string // the chunk's words alone
	hash    string
}

// Window is one embedding window of a session, as the stage embeds it.
type Window struct {
	Ordinal  int
	Text     string // the text embedded: Body under the session's title
	Body     string // the chunk's words the window holds, without the title
	TextHash string
}

// Windows returns the windows the stage embeds for d, in ordinal order. A
// system compared with Hindsight (the bench's Weaviate peers) indexes the
// same windows and can take their stored vectors.
func (e *EmbedStage) Windows(d Doc) []Window {
	ws := e.windows(d)
	out := make([]Window, len(ws))
	for i, w := range ws {
		out[i] = Window{Ordinal: w.ordinal, Text: w.text, Body: w.body, TextHash: w.hash}
	}
	return out
}

// maxHeaderWords bounds the title header of a window: a title is a line,
// and a pasted paragraph must not crowd the window's own text out of the
// model's input.
const maxHeaderWords = 16

// windows splits a session's chunks into embedding windows. Each window is
// embedded with the session's title as a header line: the title is
// searchable text (the full-text index scores it) and is the most
// informative context a window can carry, and a session whose words are
// only in its title must be found by semantic search too. With a window
// size, the header's words count against it, so the window still fits the
// model's input. A session with a title and no message text gets one
// window of the title alone (ordinal 0; it names no chunk, and context
// hydration skips ordinals without a chunk).
//
// The header is part of the embedded text, so it is part of the text hash:
// a new title re-embeds the session's windows, and so does the first run
// after an upgrade from windows without headers; nothing else changes.
func (e *EmbedStage) windows(d Doc) []window {
	header := titleHeader(d.Session.Title)
	words := e.opts.WindowWords
	if n := len(strings.Fields(header)); words > 0 && n > 0 {
		words = max(words-n, words/2)
	}
	var out []window
	add := func(ordinal int, body string) {
		text := EmbedText(d.Session.Title, body)
		out = append(out, window{ordinal: ordinal, text: text, body: body, hash: TextHash(text)})
	}
	for _, c := range d.Chunks {
		for i, t := range splitWords(c.Text, words) {
			if i == WindowsPerChunk {
				break // the rest of a pathological chunk stays full-text only
			}
			add(c.Ordinal*WindowsPerChunk+i, t)
		}
	}
	if len(out) == 0 && header != "" {
		out = append(out, window{ordinal: 0, text: header, hash: TextHash(header)})
	}
	return out
}

// titleHeader is the header line of a session's windows: its title's
// first maxHeaderWords words.
func titleHeader(title string) string {
	words := strings.Fields(title)
	return strings.Join(words[:min(len(words), maxHeaderWords)], " ")
}

// EmbedText is the text the embedding stage embeds for a window of a
// session with the given title: the title header, a blank line, the
// window's text. Another system compared with Hindsight (the bench's
// Weaviate peers) embeds the same.
func EmbedText(title, text string) string {
	header := titleHeader(title)
	switch {
	case header == "":
		return text
	case strings.TrimSpace(text) == "":
		return header
	}
	return header + "\n\n" + text
}

func splitWords(s string, n int) []string {
	if n <= 0 {
		return []string{s}
	}
	words := strings.Fields(s)
	if len(words) <= n {
		return []string{s}
	}
	var out []string
	for i := 0; i < len(words); i += n {
		out = append(out, strings.Join(words[i:min(i+n, len(words))], " "))
	}
	return out
}

// Process embeds what changed in docs and writes the vectors; deleted
// sessions lose theirs. An embedding failure returns an error so the
// pipeline keeps the work queued and retries; input the provider rejects for
// good (a 4xx other than auth and rate limits) is logged and skipped so one
// bad text cannot block the queue.
func (e *EmbedStage) Process(ctx context.Context, docs []Doc) error {
	type pending struct {
		user, session string
		wins          []window
		embed         []int // indexes into wins that need embedding
	}
	var plans []*pending
	deleted := map[string][]string{}
	var texts []string
	for _, d := range docs {
		if d.Deleted {
			deleted[d.UserID] = append(deleted[d.UserID], d.SessionID)
			continue
		}
		wins := e.windows(d)
		stored, err := e.store.Hashes(ctx, d.UserID, d.SessionID)
		if err != nil {
			return fmt.Errorf("read vector hashes of %s: %w", d.SessionID, err)
		}
		p := &pending{user: d.UserID, session: d.SessionID, wins: wins}
		for i, w := range wins {
			if stored[w.ordinal] != w.hash {
				p.embed = append(p.embed, i)
			}
		}
		if len(p.embed) == 0 && len(stored) == len(wins) {
			e.skipped.Add(int64(len(wins)))
			continue // nothing changed: no embedding call, no write
		}
		for _, i := range p.embed {
			texts = append(texts, wins[i].text)
		}
		e.skipped.Add(int64(len(wins) - len(p.embed)))
		plans = append(plans, p)
	}
	vecs := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += e.opts.BatchSize {
		batch := texts[i:min(i+e.opts.BatchSize, len(texts))]
		out, err := e.emb.Embed(ctx, batch)
		if err != nil {
			if permanent(err) {
				e.opts.Logger.Warn().Err(err).Int("texts", len(batch)).Msg("embedding provider rejected input; those sessions stay full-text only until they change")
				return e.writeDeletes(ctx, deleted)
			}
			return fmt.Errorf("embed %d texts: %w", len(batch), err)
		}
		if len(out) != len(batch) {
			return fmt.Errorf("embedder returned %d vectors for %d texts", len(out), len(batch))
		}
		vecs = append(vecs, out...)
	}
	e.embedded.Add(int64(len(texts)))
	byUser := map[string]map[string][]vectors.Vector{}
	next := 0
	for _, p := range plans {
		vs := make([]vectors.Vector, len(p.wins))
		for i, w := range p.wins {
			vs[i] = vectors.Vector{Ordinal: w.ordinal, TextHash: w.hash} // nil Values: keep the stored vector
		}
		for _, i := range p.embed {
			vs[i].Values = vecs[next]
			next++
		}
		if byUser[p.user] == nil {
			byUser[p.user] = map[string][]vectors.Vector{}
		}
		byUser[p.user][p.session] = vs
	}
	for user, sessions := range byUser {
		if err := e.store.Upsert(ctx, user, sessions); err != nil {
			return fmt.Errorf("write vectors: %w", err)
		}
	}
	return e.writeDeletes(ctx, deleted)
}

func (e *EmbedStage) writeDeletes(ctx context.Context, deleted map[string][]string) error {
	for user, ids := range deleted {
		if err := e.store.Delete(ctx, user, ids); err != nil {
			return fmt.Errorf("delete vectors: %w", err)
		}
	}
	return nil
}

// permanent reports whether the provider refused the input itself, so a retry
// cannot help: a 4xx other than 401/403 (fix the key), 408 and 429 (wait).
func permanent(err error) bool {
	var pe *vectors.ProviderError
	if !errors.As(err, &pe) {
		return false
	}
	switch {
	case pe.StatusCode == 401 || pe.StatusCode == 403 || pe.StatusCode == 408 || pe.StatusCode == 429:
		return false
	case pe.StatusCode >= 400 && pe.StatusCode < 500:
		return true
	}
	return false
}
