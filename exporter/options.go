package exporter

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/hindsight-dev/hindsight/kv"
)

// Options adjust what an export contains. The zero value anonymises home
// directories, leaves tool calls out and uses the default context bounds.
type Options struct {
	// KeepHomeDirs leaves home directories as recorded (anonymize=false).
	KeepHomeDirs bool
	// IncludeTools adds tool calls and tool results to message text.
	IncludeTools bool
	// MaxContextMessages bounds the prior messages repeated as context of one
	// exchange (deepeval, openai-evals, promptfoo); the most recent are kept.
	// 0 means DefaultMaxContextMessages.
	MaxContextMessages int
	// MaxContextBytes bounds the text of that context; a single message
	// longer than half of it is cut to half. 0 means DefaultMaxContextBytes.
	MaxContextBytes int
}

// Context bounds: the context window of an exchange keeps the most recent
// prior messages within both limits, which also bounds the memory a writer
// holds for a session of any length. The number of messages left out is
// reported in the exchange's metadata (context_omitted).
const (
	DefaultMaxContextMessages = 200
	DefaultMaxContextBytes    = 128 << 10
)

func (o Options) withDefaults() Options {
	o.MaxContextMessages = cmp.Or(o.MaxContextMessages, DefaultMaxContextMessages)
	o.MaxContextBytes = cmp.Or(o.MaxContextBytes, DefaultMaxContextBytes)
	return o
}

// ErrUnknownFormat is returned (wrapped, with the accepted names) for a format
// name no writer knows.
var ErrUnknownFormat = errors.New("unknown export format")

// Messages is a session's messages in creation order, as an iterator: each
// call runs yield for every message and stops at, and returns, the first
// error yield returns. It may be called more than once (the writers that need
// the number of exchanges before writing read a session twice). Backed by
// kv: func(yield func(kv.Message) error) error { return tx.Messages(uid, sid, yield) }.
type Messages func(yield func(kv.Message) error) error

// SliceMessages iterates over msgs (tests and small callers).
func SliceMessages(msgs []kv.Message) Messages {
	return func(yield func(kv.Message) error) error {
		for _, m := range msgs {
			if err := yield(m); err != nil {
				return err
			}
		}
		return nil
	}
}

// SessionFormat is a single-session export format.
type SessionFormat string

// Single-session formats (decisions.md, Export of one session).
const (
	JSON     SessionFormat = "json"     // {"session": {...}, "messages": [{"role","content"}...]}
	Markdown SessionFormat = "markdown" // a readable document; tool calls as fenced blocks
	JSONL    SessionFormat = "jsonl"    // one {"role","content"} per line
)

// ParseSessionFormat maps a format name to a SessionFormat; "" is JSON.
func ParseSessionFormat(name string) (SessionFormat, error) {
	switch f := SessionFormat(name); f {
	case "":
		return JSON, nil
	case JSON, Markdown, JSONL:
		return f, nil
	}
	return "", fmt.Errorf("%w %q: use json, markdown or jsonl", ErrUnknownFormat, name)
}

// ContentType is the media type of the format's files.
func (f SessionFormat) ContentType() string {
	switch f {
	case Markdown:
		return "text/markdown; charset=utf-8"
	case JSONL:
		return "application/x-ndjson"
	}
	return "application/json"
}

// Ext is the file name extension of the format, without the dot.
func (f SessionFormat) Ext() string {
	switch f {
	case Markdown:
		return "md"
	case JSONL:
		return "jsonl"
	}
	return "json"
}

// EvalFormat is an evaluation-dataset format.
type EvalFormat string

// Eval dataset formats (decisions.md, Eval labelling and datasets).
const (
	DeepEval    EvalFormat = "deepeval"     // JSON array, one test case per exchange
	ChatJSONL   EvalFormat = "chat-jsonl"   // one {"messages": [...]} line per session
	Text        EvalFormat = "text"         // human-readable transcript per session
	OpenAIEvals EvalFormat = "openai-evals" // JSONL, one {"input", "ideal"} sample per exchange
	Promptfoo   EvalFormat = "promptfoo"    // JSON array of promptfoo test cases
)

// EvalFormats lists the eval formats in the order they are documented.
var EvalFormats = []EvalFormat{DeepEval, ChatJSONL, Text, OpenAIEvals, Promptfoo}

// ParseEvalFormat maps a format name to an EvalFormat; "" is DeepEval.
func ParseEvalFormat(name string) (EvalFormat, error) {
	if name == "" {
		return DeepEval, nil
	}
	for _, f := range EvalFormats {
		if string(f) == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w %q: use deepeval, chat-jsonl, text, openai-evals or promptfoo", ErrUnknownFormat, name)
}

// ContentType is the media type of the format's files.
func (f EvalFormat) ContentType() string {
	switch f {
	case ChatJSONL, OpenAIEvals:
		return "application/x-ndjson"
	case Text:
		return "text/plain; charset=utf-8"
	}
	return "application/json"
}

// Ext is the file name extension of the format, without the dot.
func (f EvalFormat) Ext() string {
	switch f {
	case ChatJSONL, OpenAIEvals:
		return "jsonl"
	case Text:
		return "txt"
	}
	return "json"
}
