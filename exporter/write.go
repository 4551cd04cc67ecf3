package exporter

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"unicode/utf8"
)

// writer buffers output and keeps the first error, so the format code can
// write without checking every call; the loops over messages check err() to
// stop early (a client that went away must not cost a full read of the data).
type writer struct {
	bw  *bufio.Writer
	err error
}

func newWriter(w io.Writer) *writer { return &writer{bw: bufio.NewWriterSize(w, 32<<10)} }

func (w *writer) raw(s string) {
	if w.err == nil {
		_, w.err = w.bw.WriteString(s)
	}
}

func (w *writer) bytes(b []byte) {
	if w.err == nil {
		_, w.err = w.bw.Write(b)
	}
}

// str writes s as a JSON string.
func (w *writer) str(s string) {
	w.raw(`"`)
	w.strBody(s)
	w.raw(`"`)
}

const hexDigits = "0123456789abcdef"

// strBody writes s escaped for the inside of a JSON string, so a long string
// can be written in pieces. Like encoding/json it replaces invalid UTF-8 with
// U+FFFD and escapes U+2028 and U+2029; unlike it, it leaves <, > and & alone.
func (w *writer) strBody(s string) {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			w.raw(s[start:i])
			switch c {
			case '"':
				w.raw(`\"`)
			case '\\':
				w.raw(`\\`)
			case '\n':
				w.raw(`\n`)
			case '\r':
				w.raw(`\r`)
			case '\t':
				w.raw(`\t`)
			default:
				w.raw(`\u00` + string(hexDigits[c>>4]) + string(hexDigits[c&0xf]))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			w.raw(s[start:i])
			w.raw(`\ufffd`)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			w.raw(s[start:i])
			w.raw(`\u202` + string(hexDigits[r&0xf]))
			i += size
			start = i
			continue
		}
		i += size
	}
	w.raw(s[start:])
}

func (w *writer) int(n int64) { w.raw(strconv.FormatInt(n, 10)) }

// value writes v as compact JSON without HTML escaping (small values only:
// metadata, session headers).
func (w *writer) value(v any) {
	if w.err != nil {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.err = err
		return
	}
	w.bytes(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// finish ends a write: with no error it flushes the buffer; otherwise it
// returns the error (err, or the writer's own) and writes nothing more, so a
// caller whose client has received nothing yet can still answer with an
// error instead of a partial file.
func (w *writer) finish(err error) error {
	switch {
	case err != nil:
		return err
	case w.err != nil:
		return w.err
	}
	return w.bw.Flush()
}
