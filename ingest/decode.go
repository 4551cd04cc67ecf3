package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/kv"
)

// Limits bound what one payload may carry. The HTTP layer enforces MaxBody;
// the decoder enforces the rest.
type Limits struct {
	MaxBody         int64 // bytes per request body
	MaxBatchEntries int   // sessions + messages in one /sync/batch
	MaxPartBytes    int   // bytes of one part's content (and of textContent)
	MaxFieldBytes   int   // bytes of a title, path or other string field
}

// DefaultLimits are the documented defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxBody:         16 << 20,
		MaxBatchEntries: 10_000,
		MaxPartBytes:    1 << 20,
		MaxFieldBytes:   512 << 10,
	}
}

// WithDefaults returns l with every unset (zero) limit at its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBody <= 0 {
		l.MaxBody = d.MaxBody
	}
	if l.MaxBatchEntries <= 0 {
		l.MaxBatchEntries = d.MaxBatchEntries
	}
	if l.MaxPartBytes <= 0 {
		l.MaxPartBytes = d.MaxPartBytes
	}
	if l.MaxFieldBytes <= 0 {
		l.MaxFieldBytes = d.MaxFieldBytes
	}
	return l
}

// ErrInvalid marks a payload the caller must fix (HTTP 400).
var ErrInvalid = errors.New("invalid payload")

// InvalidError says what is wrong with a payload, naming the field.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }
func (e *InvalidError) Is(target error) bool {
	return target == ErrInvalid
}

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// SessionIn is a validated session write. Nil pointers are fields the plugin
// did not send: an update changes only the fields present.
type SessionIn struct {
	ExternalID                                       string
	Source                                           string // "" when absent
	Title, Model, Provider, ProjectPath, ProjectName *string
	PromptTokens, CompletionTokens, TotalTokens      *int64
	DurationMs                                       *int64
	Cost                                             *float64
	CreatedAt                                        *int64 // honoured on first insert only
}

// MessageIn is a validated message write.
type MessageIn struct {
	SessionExternalID string
	ExternalID        string
	Role              string
	Parts             []kv.Part // nil when absent
	PartsSet          bool
	TextContent       *string
	Model             *string
	Source            string
	PromptTokens      *int64
	CompletionTokens  *int64
	DurationMs        *int64
	CreatedAt         *int64
}

// fields gives typed, field-named access to one JSON object.
type fields struct {
	m      map[string]json.RawMessage
	limits Limits
}

func object(raw []byte, what string, limits Limits) (fields, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return fields{}, invalid("%s must be a JSON object", what)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fields{}, invalid("%s is not valid JSON: %s", what, jsonProblem(err))
	}
	return fields{m: m, limits: limits}, nil
}

func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must be %s, got %s", te.Field, te.Type, te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// str returns the string field, nil when absent or null.
func (f fields) str(name string, max int) (*string, error) {
	raw, ok := f.m[name]
	if !ok || isNull(raw) {
		return nil, nil
	}
	if raw[0] != '"' {
		return nil, invalid("%s must be a string", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, invalid("%s is not a valid string", name)
	}
	if len(s) > max {
		return nil, invalid("%s is %d bytes; the limit is %d", name, len(s), max)
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return &s, nil
}

func (f fields) requiredStr(name string, alias ...string) (string, error) {
	for _, n := range append([]string{name}, alias...) {
		s, err := f.str(n, f.limits.MaxFieldBytes)
		if err != nil {
			return "", err
		}
		if s != nil && strings.TrimSpace(*s) != "" {
			return *s, nil
		}
	}
	return "", invalid("%s is required", name)
}

// num returns a finite, non-negative number field, nil when absent or null.
func (f fields) num(name string) (*float64, error) {
	raw, ok := f.m[name]
	if !ok || isNull(raw) {
		return nil, nil
	}
	c := raw[0]
	if c != '-' && (c < '0' || c > '9') {
		return nil, invalid("%s must be a number", name)
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, invalid("%s must be a finite number", name)
	}
	if v < 0 {
		return nil, invalid("%s must not be negative", name)
	}
	return &v, nil
}

// count is num rounded to a whole number that fits an int64 (token counts,
// milliseconds). Plugins that compute tokens as floats are accepted.
func (f fields) count(name string) (*int64, error) {
	v, err := f.num(name)
	if v == nil || err != nil {
		return nil, err
	}
	if *v >= 1<<62 {
		return nil, invalid("%s is too large", name)
	}
	n := int64(math.Round(*v))
	return &n, nil
}

func (f fields) session(limits Limits) (SessionIn, error) {
	var in SessionIn
	var err error
	if in.ExternalID, err = f.requiredStr("externalId", "sessionId"); err != nil {
		return in, err
	}
	src, err := f.str("source", limits.MaxFieldBytes)
	if err != nil {
		return in, err
	}
	if src != nil {
		in.Source = *src
	}
	for _, sf := range []struct {
		name string
		dst  **string
	}{{"title", &in.Title}, {"model", &in.Model}, {"provider", &in.Provider}, {"projectPath", &in.ProjectPath}, {"projectName", &in.ProjectName}} {
		if *sf.dst, err = f.str(sf.name, limits.MaxFieldBytes); err != nil {
			return in, err
		}
	}
	for _, nf := range []struct {
		name string
		dst  **int64
	}{{"promptTokens", &in.PromptTokens}, {"completionTokens", &in.CompletionTokens}, {"totalTokens", &in.TotalTokens}, {"durationMs", &in.DurationMs}, {"createdAt", &in.CreatedAt}} {
		if *nf.dst, err = f.count(nf.name); err != nil {
			return in, err
		}
	}
	if in.Cost, err = f.num("cost"); err != nil {
		return in, err
	}
	// messageCount is validated (a wrong type is a client bug worth reporting)
	// but not stored: the read field counts stored messages.
	if _, err = f.count("messageCount"); err != nil {
		return in, err
	}
	return in, nil
}

func validRole(r string) bool {
	for _, ok := range kv.Roles {
		if r == ok {
			return true
		}
	}
	return false
}

func (f fields) message(limits Limits) (MessageIn, error) {
	var in MessageIn
	var err error
	if in.SessionExternalID, err = f.requiredStr("sessionExternalId"); err != nil {
		return in, err
	}
	if in.ExternalID, err = f.requiredStr("externalId"); err != nil {
		return in, err
	}
	if in.Role, err = f.requiredStr("role"); err != nil {
		return in, err
	}
	if !validRole(in.Role) {
		return in, invalid("role must be one of %s", strings.Join(kv.Roles, ", "))
	}
	if in.TextContent, err = f.str("textContent", limits.MaxPartBytes); err != nil {
		return in, err
	}
	if in.Model, err = f.str("model", limits.MaxFieldBytes); err != nil {
		return in, err
	}
	src, err := f.str("source", limits.MaxFieldBytes)
	if err != nil {
		return in, err
	}
	if src != nil {
		in.Source = *src
	}
	for _, nf := range []struct {
		name string
		dst  **int64
	}{{"promptTokens", &in.PromptTokens}, {"completionTokens", &in.CompletionTokens}, {"durationMs", &in.DurationMs}, {"createdAt", &in.CreatedAt}} {
		if *nf.dst, err = f.count(nf.name); err != nil {
			return in, err
		}
	}
	raw, ok := f.m["parts"]
	if ok && !isNull(raw) {
		in.PartsSet = true
		if in.Parts, err = decodeParts(raw, limits); err != nil {
			return in, err
		}
	}
	return in, nil
}

func decodeParts(raw json.RawMessage, limits Limits) ([]kv.Part, error) {
	if raw[0] != '[' {
		return nil, invalid("parts must be an array")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid("parts is not valid JSON: %s", jsonProblem(err))
	}
	parts := make([]kv.Part, 0, len(items))
	for i, item := range items {
		p, err := decodePart(item, limits)
		if err != nil {
			return nil, invalid("parts[%d]: %s", i, err.Error())
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// decodePart accepts both shapes plugins send:
//
//	{"type":"tool-call","toolName":"Bash","args":"{...}"}
//	{"type":"tool-call","content":{"toolName":"Bash","args":{...}}}
//
// and a text part's content as a string or {"text": ...}. Other types are kept as sent.
func decodePart(raw json.RawMessage, limits Limits) (kv.Part, error) {
	f, err := object(raw, "part", limits)
	if err != nil {
		return kv.Part{}, err
	}
	typ, err := f.requiredStr("type")
	if err != nil {
		return kv.Part{}, err
	}
	p := kv.Part{Type: typ}
	switch typ {
	case kv.PartText:
		p.Content, err = f.text("content", "text")
	case kv.PartToolCall, kv.PartToolResult:
		err = f.toolPart(&p)
	default:
		if len(raw) > limits.MaxPartBytes {
			return p, invalid("%s part is %d bytes; the limit is %d", typ, len(raw), limits.MaxPartBytes)
		}
		// Invalid UTF-8 can only sit inside JSON strings, so replacing it keeps
		// the JSON valid and every response valid UTF-8.
		p.Raw = bytes.ToValidUTF8(bytes.TrimSpace(raw), []byte("\uFFFD"))
		if len(p.Raw) > limits.MaxPartBytes {
			return p, invalid("%s part is %d bytes; the limit is %d", typ, len(p.Raw), limits.MaxPartBytes)
		}
	}
	return p, err
}

// toolPart fills a tool-call or tool-result part from either shape: flat
// (toolName, args/content on the part) or nested (an object in content holding
// toolName, args and, for results, result or content).
func (f fields) toolPart(p *kv.Part) error {
	inner, nested := f, false
	if c := bytes.TrimSpace(f.m["content"]); len(c) > 0 && c[0] == '{' {
		o, err := object(c, "content", f.limits)
		if err != nil {
			return err
		}
		_, hasName := o.m["toolName"]
		_, hasArgs := o.m["args"]
		_, hasResult := o.m["result"]
		// A tool call's object content is always the nested shape; a result's
		// object content is nested only if it looks like one, else it is the result.
		if p.Type == kv.PartToolCall || hasName || hasArgs || hasResult {
			inner, nested = o, true
		}
	}
	for _, src := range []fields{inner, f} {
		for _, key := range []string{"toolName", "name"} {
			name, err := src.str(key, f.limits.MaxFieldBytes)
			if err != nil {
				return err
			}
			if name != nil && p.ToolName == "" {
				p.ToolName = *name
			}
		}
	}
	var err error
	switch {
	case p.Type == kv.PartToolCall:
		key := "args"
		if _, ok := inner.m[key]; !ok {
			key = "input"
		}
		p.Args, err = inner.jsonText(key, f.limits.MaxPartBytes)
	case nested && inner.m["result"] != nil:
		p.Content, err = inner.jsonText("result", f.limits.MaxPartBytes)
	case nested:
		p.Content, err = inner.jsonText("content", f.limits.MaxPartBytes)
	default:
		p.Content, err = f.jsonText("content", f.limits.MaxPartBytes)
	}
	return err
}

// text reads a string that may also arrive wrapped as {"text": "..."}.
func (f fields) text(name, inner string) (string, error) {
	raw, ok := f.m[name]
	if !ok || isNull(raw) {
		return "", nil
	}
	if raw[0] == '{' {
		o, err := object(raw, name, f.limits)
		if err != nil {
			return "", err
		}
		s, err := o.str(inner, f.limits.MaxPartBytes)
		if err != nil {
			return "", invalid("%s.%s", name, err.Error())
		}
		if s == nil {
			return "", nil
		}
		return *s, nil
	}
	s, err := f.str(name, f.limits.MaxPartBytes)
	if err != nil || s == nil {
		return "", err
	}
	return *s, nil
}

// jsonText returns a string field as is, and any other JSON value serialised
// compactly (tool args and results arrive as strings or objects).
func (f fields) jsonText(name string, max int) (string, error) {
	raw, ok := f.m[name]
	if !ok || isNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		s, err := f.str(name, max)
		if err != nil || s == nil {
			return "", err
		}
		return *s, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", invalid("%s is not valid JSON", name)
	}
	out := bytes.ToValidUTF8(buf.Bytes(), []byte("\uFFFD"))
	if len(out) > max {
		return "", invalid("%s is %d bytes; the limit is %d", name, len(out), max)
	}
	return string(out), nil
}

// DecodeSession decodes and validates a POST /sync/session body.
func DecodeSession(body []byte, limits Limits) (SessionIn, error) {
	limits = limits.WithDefaults()
	f, err := object(body, "request body", limits)
	if err != nil {
		return SessionIn{}, err
	}
	return f.session(limits)
}

// DecodeMessage decodes and validates a POST /sync/message body.
func DecodeMessage(body []byte, limits Limits) (MessageIn, error) {
	limits = limits.WithDefaults()
	f, err := object(body, "request body", limits)
	if err != nil {
		return MessageIn{}, err
	}
	return f.message(limits)
}

// Batch is a decoded /sync/batch: the valid entries, and one error string per
// invalid entry naming it.
type Batch struct {
	Sessions []SessionIn
	Messages []MessageIn
	Errors   []string
	// KeepDates: createdAt on the entries is honoured on first insert, as on
	// the single endpoints (/sync/batch?keepDates=1, for imports of past
	// sessions). Plain batches use server time, as the spec says.
	KeepDates bool
}

// DecodeBatch decodes a POST /sync/batch body. A body that is not an object
// with array fields, or that holds more than MaxBatchEntries entries, is an
// error for the whole request; a bad entry only adds to Batch.Errors.
func DecodeBatch(body []byte, limits Limits) (Batch, error) {
	return decodeBatch(body, limits, false)
}

// DecodeBatchKeepingDates is DecodeBatch for /sync/batch?keepDates=1: the
// entries' createdAt is validated and kept.
func DecodeBatchKeepingDates(body []byte, limits Limits) (Batch, error) {
	return decodeBatch(body, limits, true)
}

func decodeBatch(body []byte, limits Limits, keepDates bool) (Batch, error) {
	limits = limits.WithDefaults()
	f, err := object(body, "request body", limits)
	if err != nil {
		return Batch{}, err
	}
	b := Batch{KeepDates: keepDates}
	lists := map[string][]json.RawMessage{}
	for _, name := range []string{"sessions", "messages"} {
		raw, ok := f.m[name]
		if !ok || isNull(raw) {
			continue
		}
		if raw[0] != '[' {
			return Batch{}, invalid("%s must be an array", name)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return Batch{}, invalid("%s is not valid JSON: %s", name, jsonProblem(err))
		}
		lists[name] = items
	}
	if n := len(lists["sessions"]) + len(lists["messages"]); n > limits.MaxBatchEntries {
		return Batch{}, invalid("batch has %d entries; the limit is %d per request: split it", n, limits.MaxBatchEntries)
	}
	// Unless dates are kept, createdAt is ignored on batch entries (server
	// time is used), so a value of any type must not fail the entry.
	for i, raw := range lists["sessions"] {
		ef, err := object(raw, "entry", limits)
		if !keepDates {
			delete(ef.m, "createdAt")
		}
		var s SessionIn
		if err == nil {
			s, err = ef.session(limits)
		}
		if err != nil {
			b.Errors = append(b.Errors, entryError("sessions", i, ef, "externalId", err))
			continue
		}
		b.Sessions = append(b.Sessions, s)
	}
	for i, raw := range lists["messages"] {
		ef, err := object(raw, "entry", limits)
		if !keepDates {
			delete(ef.m, "createdAt")
		}
		var m MessageIn
		if err == nil {
			m, err = ef.message(limits)
		}
		if err != nil {
			b.Errors = append(b.Errors, entryError("messages", i, ef, "externalId", err))
			continue
		}
		b.Messages = append(b.Messages, m)
	}
	return b, nil
}

func entryError(list string, i int, f fields, idField string, err error) string {
	if f.m != nil {
		if id, _ := f.str(idField, 256); id != nil && *id != "" {
			return fmt.Sprintf("%s[%d] (externalId %s): %s", list, i, *id, err.Error())
		}
	}
	return fmt.Sprintf("%s[%d]: %s", list, i, err.Error())
}
