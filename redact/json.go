package redact

import (
	"bytes"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// JSON redacts the strings of a JSON text (a tool call's arguments, a part
// kept as sent) and keeps it valid: each string, member names included, is
// redacted as String would, and a member's value together with its name,
// so that "password": "..." gives its value away as password=... does in
// text. Only strings that change are rewritten; the rest of raw is kept
// byte for byte. A text that is not valid JSON is redacted as String
// would.
func (r *Redactor) JSON(raw []byte) ([]byte, Counts) {
	if len(raw) == 0 {
		return raw, nil
	}
	// Most texts hold nothing: when the raw text holds no escape (which
	// could hide a secret, \u0067hp_..., or change what ends one, \") and
	// shows no secret, its strings show none either.
	if bytes.IndexByte(raw, '\\') < 0 && !r.found(string(raw)) {
		return raw, nil
	}
	type edit struct {
		start, end int
		quoted     []byte
	}
	var edits []edit
	var counts Counts
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var name []byte // the member name just read, when the next value is its value
	for {
		kind := dec.PeekKind()
		if kind == 0 {
			break
		}
		if kind != '"' {
			if _, err := dec.ReadToken(); err != nil {
				break
			}
			name = nil
			continue
		}
		k, n := dec.StackIndex(dec.StackDepth())
		isName := k == '{' && n%2 == 0
		v, err := dec.ReadValue()
		if err != nil {
			break
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		text, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			break
		}
		var out string
		var c Counts
		if !isName && name != nil {
			out, c = r.member(string(name), string(text))
		} else {
			out, c = r.String(string(text))
		}
		name = nil
		if isName {
			name = text
		}
		if c != nil {
			counts.Add(c)
			q, err := jsontext.AppendQuote(nil, out)
			if err != nil {
				break
			}
			edits = append(edits, edit{start, end, q})
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		// Not one valid JSON value: redact it as text.
		return r.bytes(raw)
	}
	if len(edits) == 0 {
		return raw, nil
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	at := 0
	for _, e := range edits {
		b.Write(raw[at:e.start])
		b.Write(e.quoted)
		at = e.end
	}
	b.Write(raw[at:])
	return b.Bytes(), counts
}

func (r *Redactor) bytes(raw []byte) ([]byte, Counts) {
	out, c := r.String(string(raw))
	if c == nil {
		return raw, nil
	}
	return []byte(out), c
}

// found reports whether String would change s.
func (r *Redactor) found(s string) bool {
	sc := r.scratch.Get().(*scratch)
	defer r.scratch.Put(sc)
	sc.found = sc.found[:0]
	private(s, &sc.found)
	r.detect(s, sc)
	return len(sc.found) > 0
}

// member redacts a member's value seen after its name, as name: value.
func (r *Redactor) member(name, value string) (string, Counts) {
	if value == "" {
		return value, nil
	}
	prefix := name + ": "
	s := prefix + value
	sc := r.scratch.Get().(*scratch)
	defer r.scratch.Put(sc)
	sc.found = sc.found[:0]
	private(s, &sc.found)
	r.detect(s, sc)
	kept := sc.found[:0]
	for _, f := range sc.found {
		if f.end <= len(prefix) {
			continue // in the name: redacted as a string of its own
		}
		f.start, f.end = max(f.start, len(prefix))-len(prefix), f.end-len(prefix)
		kept = append(kept, f)
	}
	if len(kept) == 0 {
		return value, nil
	}
	return apply(value, kept, r.rules)
}
