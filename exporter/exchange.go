package exporter

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/kv"
)

// turn is one message as context: its role and exported text.
type turn struct{ role, text string }

// window holds the most recent messages of a session, bounded by
// MaxContextMessages and MaxContextBytes: it is the context of the next
// exchange and all a writer keeps of a session's past. Older messages are
// dropped from the front and counted in omitted.
type window struct {
	items    []turn
	head     int
	bytes    int
	omitted  int
	maxN     int
	maxBytes int
}

func newWindow(opts Options) *window {
	return &window{maxN: opts.MaxContextMessages, maxBytes: opts.MaxContextBytes}
}

const truncatedMark = " [truncated]"

func (w *window) add(t turn) {
	if limit := w.maxBytes / 2; len(t.text) > limit {
		// One message takes at most half the window, so the messages just
		// before it stay. Clone: the window must not pin the whole original.
		t.text = strings.Clone(cutUTF8(t.text, max(0, limit-len(truncatedMark)))) + truncatedMark
	}
	w.items = append(w.items, t)
	w.bytes += len(t.text)
	for len(w.items)-w.head > w.maxN || w.bytes > w.maxBytes {
		w.bytes -= len(w.items[w.head].text)
		w.items[w.head] = turn{}
		w.head++
		w.omitted++
	}
	if w.head >= 64 && 2*w.head >= len(w.items) {
		n := copy(w.items, w.items[w.head:])
		clear(w.items[n:])
		w.items, w.head = w.items[:n], 0
	}
}

// snapshot is the current context (a copy of the slice headers; the texts are
// shared, immutable strings) and how many earlier messages it leaves out.
func (w *window) snapshot() ([]turn, int) {
	return slices.Clone(w.items[w.head:]), w.omitted
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// exchangeHandler receives a session's exchanges as walkExchanges finds them.
type exchangeHandler interface {
	// begin starts exchange i (0-based) when its first assistant text
	// arrives: input is the user message, ctx the messages before it.
	begin(i int, input string, ctx []turn, omitted int)
	// output is one assistant message of the current exchange, in order.
	output(text string)
	// finish ends the current exchange.
	finish()
}

// walkExchanges reads msgs once and reports exchanges to h (see the package
// doc for the pairing rule). Memory: the context window and one message.
func walkExchanges(w *writer, msgs Messages, opts Options, h exchangeHandler) error {
	win := newWindow(opts)
	type pendingInput struct {
		text    string
		ctx     []turn
		omitted int
	}
	var pending *pendingInput
	open, n := false, 0
	err := msgs(func(m kv.Message) error {
		if !hasText(m, opts) {
			return nil
		}
		text := MessageText(m, opts)
		switch m.Role {
		case "user":
			if open {
				h.finish()
				open = false
			}
			ctx, omitted := win.snapshot()
			pending = &pendingInput{text, ctx, omitted}
		case "assistant":
			if pending != nil {
				h.begin(n, pending.text, pending.ctx, pending.omitted)
				n++
				pending, open = nil, true
			}
			if open {
				h.output(text)
			}
		}
		win.add(turn{m.Role, text})
		return w.err
	})
	if open {
		h.finish()
	}
	return err
}

// countExchanges is the number of exchanges walkExchanges reports, computed
// without building any text.
func countExchanges(msgs Messages, opts Options) (int, error) {
	n, pending := 0, false
	err := msgs(func(m kv.Message) error {
		if !hasText(m, opts) {
			return nil
		}
		switch m.Role {
		case "user":
			pending = true
		case "assistant":
			if pending {
				n++
				pending = false
			}
		}
		return nil
	})
	return n, err
}
