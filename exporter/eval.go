package exporter

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hindsight-dev/hindsight/kv"
)

// Session is one session of an eval dataset: its record and its messages.
type Session struct {
	kv.Session
	Messages Messages
}

// Sessions is the sessions of a dataset, in export order, as an iterator: it
// runs yield for each and stops at, and returns, the first error.
type Sessions func(yield func(Session) error) error

// CountEval is the number of test cases session s contributes to a dataset
// in format f: its exchanges, or for chat-jsonl 1 (its line) when it has a
// message with text and 0 otherwise. It reads the messages once without
// building their text, so a caller can set counts before streaming.
func CountEval(f EvalFormat, s Session, opts Options) (int, error) {
	switch f {
	case ChatJSONL:
		found := false
		err := s.Messages(func(m kv.Message) error {
			if hasText(m, opts) {
				found = true
				return errStop
			}
			return nil
		})
		if errors.Is(err, errStop) {
			err = nil
		}
		if found {
			return 1, err
		}
		return 0, err
	case DeepEval, Text, OpenAIEvals, Promptfoo:
		return countExchanges(s.Messages, opts)
	}
	return 0, fmt.Errorf("%w %q", ErrUnknownFormat, f)
}

var errStop = errors.New("stop")

// WriteEval writes the dataset of sessions in format f. Shapes, one line or
// object per test case unless said otherwise:
//
// deepeval: a JSON array of test cases, one per exchange:
//
//	{"input": "...", "actual_output": "...", "expected_output": null,
//	 "context": ["user: ...", "assistant: ..."], "retrieval_context": [],
//	 "metadata": {"session_id", "title", "exchange", "model", "source",
//	  "status", "tags", "created_at", "updated_at", "reviewed_at",
//	  "prompt_tokens", "completion_tokens", "total_tokens", "cost",
//	  "context_omitted"}}
//
// expected_output is the session's expectedOutput on its last exchange and
// null elsewhere; context is every earlier message of the session as
// "role: text", within the context bounds of Options.
//
// chat-jsonl: one line per session, {"messages": [{"role", "content"}...]},
// every role in order; messages without text are left out, and so is a
// session with none.
//
// text: per session a heading (title, id, source, project, date), the user
// and assistant turns as [USER] / [ASSISTANT] blocks, the expected output when
// set, and a footer with tokens, cost, model, eval status and tags.
//
// openai-evals: JSONL for the openai/evals Match-style evals, one sample per
// exchange: {"input": [chat messages], "ideal": "...", "metadata": {...}}.
// input is the context then the user message; roles other than system, user
// and assistant go in as system messages prefixed "[tool] " / "[unknown] ",
// which the chat API accepts. ideal is the expectedOutput on the last exchange
// when set, else the recorded reply (metadata.status says how far to trust it).
//
// promptfoo: a JSON array of promptfoo test cases (tests: file://x.json), one
// per exchange: {"description", "vars": {"input", "context"}, "assert": [...],
// "metadata"}; context is the earlier messages as "role: text"
// paragraphs. assert is a "similar" check against the expectedOutput on the
// last exchange when set; otherwise "similar" to the recorded reply for golden
// and correct sessions, "not-similar" to it for incorrect ones, and nothing
// for sessions still needing review.
//
// Memory: each session's messages are read once (twice when the session has
// an expectedOutput, to find its last exchange) and written as they come;
// whatever a session's length, a writer holds one message and the context
// window of Options (MaxContextMessages, MaxContextBytes), and replies are
// streamed into their test case rather than collected.
//
// Strings in the metadata and the exported text are anonymised unless
// opts.KeepHomeDirs. It returns the first error of sessions, of a session's
// messages or of w; on error the output is incomplete.
func WriteEval(w io.Writer, f EvalFormat, sessions Sessions, opts Options) error {
	opts = opts.withDefaults()
	out := newWriter(w)
	var err error
	switch f {
	case DeepEval, Promptfoo:
		out.raw("[")
		sep := "\n"
		err = sessions(func(s Session) error {
			return writeCases(out, f, s, opts, &sep)
		})
		if sep == "\n" {
			out.raw("]\n")
		} else {
			out.raw("\n]\n")
		}
	case OpenAIEvals:
		sep := ""
		err = sessions(func(s Session) error { return writeCases(out, f, s, opts, &sep) })
		if sep != "" {
			out.raw("\n")
		}
	case ChatJSONL:
		err = sessions(func(s Session) error { return writeChat(out, s, opts) })
	case Text:
		first := true
		err = sessions(func(s Session) error {
			if !first {
				out.raw("\n")
			}
			first = false
			return writeText(out, s, opts)
		})
	default:
		return fmt.Errorf("%w %q", ErrUnknownFormat, f)
	}
	return out.finish(err)
}

// caseMeta is the metadata of one test case (deepeval, openai-evals,
// promptfoo). Keys are snake_case like the frameworks' own.
type caseMeta struct {
	SessionID        string   `json:"session_id"`
	Title            string   `json:"title,omitempty"`
	Exchange         int      `json:"exchange"`
	Model            string   `json:"model,omitempty"`
	Source           string   `json:"source"`
	Status           string   `json:"status,omitempty"`
	Tags             []string `json:"tags"`
	CreatedAt        int64    `json:"created_at"`
	UpdatedAt        int64    `json:"updated_at"`
	ReviewedAt       int64    `json:"reviewed_at,omitempty"`
	PromptTokens     int64    `json:"prompt_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	TotalTokens      int64    `json:"total_tokens"`
	Cost             float64  `json:"cost"`
	ContextOmitted   int      `json:"context_omitted,omitempty"`
}

func metaOf(s kv.Session, opts Options) caseMeta {
	tags := s.Tags
	if tags == nil {
		tags = []string{}
	}
	return caseMeta{
		SessionID: s.ID, Title: anonymize(s.Title, opts), Model: s.Model, Source: s.Source,
		Status: s.Status, Tags: tags, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, ReviewedAt: s.ReviewedAt,
		PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, TotalTokens: s.TotalTokens, Cost: s.Cost,
	}
}

// caseWriter writes the per-exchange formats. Each test case is written as
// its exchange arrives: begin writes up to the field that holds the
// assistant's reply, output streams the reply message by message, finish
// writes the rest. So a reply is never held in memory whole; the context of
// the current case is (it is bounded by the window).
type caseWriter struct {
	w        *writer
	f        EvalFormat
	s        kv.Session
	opts     Options
	meta     caseMeta
	expected string // anonymised expectedOutput
	last     int    // index of the last exchange; -1 when not needed
	sep      *string

	// The current case.
	ctx         []turn
	useExpected bool // its reference is the session's expectedOutput
	streaming   bool // the reply is being written into it
	pieces      int  // reply messages written so far
}

func writeCases(w *writer, f EvalFormat, s Session, opts Options, sep *string) error {
	c := &caseWriter{w: w, f: f, s: s.Session, opts: opts, meta: metaOf(s.Session, opts), last: -1, sep: sep}
	if s.ExpectedOutput != "" {
		n, err := countExchanges(s.Messages, opts)
		if err != nil {
			return err
		}
		c.last = n - 1
		c.expected = anonymize(s.ExpectedOutput, opts)
	}
	return walkExchanges(w, s.Messages, opts, c)
}

func (c *caseWriter) begin(i int, input string, ctx []turn, omitted int) {
	w := c.w
	w.raw(*c.sep)
	if c.f == OpenAIEvals {
		*c.sep = "\n"
	} else {
		*c.sep = ",\n"
	}
	c.meta.Exchange, c.meta.ContextOmitted = i, omitted
	c.ctx, c.streaming, c.pieces = ctx, false, 0
	c.useExpected = i == c.last
	switch c.f {
	case DeepEval:
		w.raw(`{"input":`)
		w.str(input)
		w.raw(`,"actual_output":"`)
		c.streaming = true
	case OpenAIEvals:
		w.raw(`{"input":[`)
		for _, t := range ctx {
			role, text := t.role, t.text
			if role != "system" && role != "user" && role != "assistant" {
				role, text = "system", "["+role+"] "+text
			}
			writeRoleContent(w, role, text)
			w.raw(",")
		}
		writeRoleContent(w, "user", input)
		w.raw(`],"ideal":`)
		if c.useExpected {
			w.str(c.expected)
		} else {
			w.raw(`"`)
			c.streaming = true
		}
	case Promptfoo:
		w.raw(`{"description":`)
		title := c.meta.Title
		if title == "" {
			title = c.s.ID
		}
		w.str(title + " #" + strconv.Itoa(i+1))
		w.raw(`,"vars":{"input":`)
		w.str(input)
		w.raw(`,"context":"`)
		for j, t := range ctx {
			if j > 0 {
				w.strBody("\n\n")
			}
			w.strBody(t.role)
			w.strBody(": ")
			w.strBody(t.text)
		}
		w.raw(`"},"assert":[`)
		switch {
		case c.useExpected:
			w.raw(`{"type":"similar","value":`)
			w.str(c.expected)
			w.raw("}")
		case c.s.Status == kv.EvalGolden || c.s.Status == kv.EvalCorrect:
			w.raw(`{"type":"similar","value":"`)
			c.streaming = true
		case c.s.Status == kv.EvalIncorrect:
			w.raw(`{"type":"not-similar","value":"`)
			c.streaming = true
		}
	}
}

func (c *caseWriter) output(text string) {
	if !c.streaming {
		return
	}
	if c.pieces > 0 {
		c.w.strBody("\n\n")
	}
	c.w.strBody(text)
	c.pieces++
}

func (c *caseWriter) finish() {
	w := c.w
	if c.streaming {
		w.raw(`"`)
	}
	switch c.f {
	case DeepEval:
		w.raw(`,"expected_output":`)
		if c.useExpected {
			w.str(c.expected)
		} else {
			w.raw("null")
		}
		w.raw(`,"context":[`)
		for j, t := range c.ctx {
			if j > 0 {
				w.raw(",")
			}
			w.raw(`"`)
			w.strBody(t.role)
			w.strBody(": ")
			w.strBody(t.text)
			w.raw(`"`)
		}
		w.raw(`],"retrieval_context":[],"metadata":`)
		w.value(c.meta)
		w.raw("}")
	case OpenAIEvals:
		w.raw(`,"metadata":`)
		w.value(c.meta)
		w.raw("}")
	case Promptfoo:
		if c.streaming {
			w.raw("}")
		}
		w.raw(`],"metadata":`)
		w.value(c.meta)
		w.raw("}")
	}
	c.ctx = nil
}

// writeChat writes the chat-jsonl line of one session.
func writeChat(w *writer, s Session, opts Options) error {
	n := 0
	err := s.Messages(func(m kv.Message) error {
		if !hasText(m, opts) {
			return nil
		}
		if n == 0 {
			w.raw(`{"messages":[`)
		} else {
			w.raw(",")
		}
		n++
		writeRoleContent(w, m.Role, MessageText(m, opts))
		return w.err
	})
	if n > 0 {
		w.raw("]}\n")
	}
	return err
}

const (
	textRule = "=============================================================================="
	textLine = "------------------------------------------------------------------------------"
)

// writeText writes the plain-text block of one session.
func writeText(w *writer, s Session, opts Options) error {
	s.Title = anonymize(s.Title, opts)
	title := s.DisplayTitle()
	w.raw(textRule + "\nSession: " + oneLine(title) + "\n")
	head := "ID: " + s.ID + " | Source: " + s.Source
	if s.ProjectName != "" {
		head += " | Project: " + oneLine(s.ProjectName)
	}
	if d := date(s.CreatedAt); d != "" {
		head += " | Created: " + d
	}
	w.raw(head + "\n" + textRule + "\n")
	err := s.Messages(func(m kv.Message) error {
		if (m.Role != "user" && m.Role != "assistant") || !hasText(m, opts) {
			return nil
		}
		w.raw("\n[" + strings.ToUpper(m.Role) + "]\n")
		w.raw(MessageText(m, opts))
		w.raw("\n")
		return w.err
	})
	if err != nil {
		return err
	}
	if s.ExpectedOutput != "" {
		w.raw("\n[EXPECTED OUTPUT]\n")
		w.raw(strings.TrimSpace(anonymize(s.ExpectedOutput, opts)))
		w.raw("\n")
	}
	model, status, tags := s.Model, s.Status, strings.Join(s.Tags, ", ")
	if model == "" {
		model = "(unknown)"
	}
	if status == "" {
		status = "(none)"
	}
	if tags == "" {
		tags = "(none)"
	}
	w.raw("\n" + textLine + "\n")
	w.raw("Tokens: " + tokens(s.Session) + "\n")
	w.raw("Cost: " + cost(s.Cost) + "\n")
	w.raw("Model: " + oneLine(model) + "\n")
	w.raw("Eval status: " + status + "\n")
	w.raw("Tags: " + oneLine(tags) + "\n")
	w.raw(textLine + "\n")
	return w.err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
