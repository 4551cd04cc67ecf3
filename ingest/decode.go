package ingest

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/kv"
)

// Limits bound what one payload may carry. The HTTP layer enforces MaxBody;
// the decoder enforces the rest.
type Limits struct {
	MaxBody         int64 // bytes per request body
	MaxBatchEntries int   // sessions + messages in one /sync/batch
	MaxPartBytes    int   // bytes of one part's content (and of textContent)
	MaxFieldBytes   int   // bytes of a title, path or other string field
	// MaxParts bounds the parts of one message. Without it only the body
	// size would: a 16 MiB body of empty parts is over a million of them,
	// each a record field to decode, store and index.
	MaxParts int
}

// DefaultLimits are the documented defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxBody:         16 << 20,
		MaxBatchEntries: 10_000,
		MaxPartBytes:    1 << 20,
		MaxFieldBytes:   512 << 10,
		MaxParts:        1000,
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
	if l.MaxParts <= 0 {
		l.MaxParts = d.MaxParts
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
	GitBranch                                        *string
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

// jsonOptions: names match exactly, as the spec writes them (encoding/json
// v1 would also take "Title" for "title"); a repeated name keeps the last
// value; invalid UTF-8 in a string becomes U+FFFD rather than failing the
// payload.
var jsonOptions = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// decodeObject decodes one JSON object into v, a payload of package api.
// A value of the wrong type is an error naming its field.
func decodeObject(raw []byte, v any, what string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return invalid("%s must be a JSON object", what)
	}
	err := json.Unmarshal(raw, v, jsonOptions)
	if err == nil {
		return nil
	}
	var se *json.SemanticError
	if errors.As(err, &se) && se.JSONPointer != "" && se.GoType != nil {
		name, t := se.JSONPointer.LastToken(), se.GoType
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.String:
			return invalid("%s must be a string", name)
		case reflect.Float64:
			if se.JSONKind == '0' {
				return invalid("%s must be a finite number", name)
			}
			return invalid("%s must be a number", name)
		case reflect.Slice:
			return invalid("%s must be an array", name)
		}
		return invalid("%s has the wrong type", name)
	}
	return invalid("%s is not valid JSON: %s", what, jsonProblem(err))
}

func jsonProblem(err error) string {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Err, se.ByteOffset)
	}
	return strings.TrimPrefix(err.Error(), "jsontext: ")
}

// checker validates decoded fields against the limits; the first problem
// sticks, so a payload is checked field by field in a fixed order.
type checker struct {
	limits Limits
	err    error
}

func (c *checker) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// str checks an optional string's length.
func (c *checker) str(name string, s *string, max int) *string {
	if s != nil && len(*s) > max {
		c.fail(invalid("%s is %d bytes; the limit is %d", name, len(*s), max))
	}
	return s
}

// required returns the first of vals that is present and not blank; names
// are the field and its aliases, in the order of vals.
func (c *checker) required(names []string, vals ...*string) string {
	for i, v := range vals {
		if c.str(names[i], v, c.limits.MaxFieldBytes); c.err != nil {
			return ""
		}
		if v != nil && strings.TrimSpace(*v) != "" {
			return *v
		}
	}
	c.fail(invalid("%s is required", names[0]))
	return ""
}

// num checks a number: finite and not negative.
func (c *checker) num(name string, v *float64) *float64 {
	switch {
	case v == nil:
	case math.IsInf(*v, 0) || math.IsNaN(*v):
		c.fail(invalid("%s must be a finite number", name))
	case *v < 0:
		c.fail(invalid("%s must not be negative", name))
	}
	return v
}

// count is num rounded to a whole number that fits an int64 (token counts,
// milliseconds). Plugins that compute tokens as floats are accepted.
func (c *checker) count(name string, v *float64) *int64 {
	if c.num(name, v) == nil || c.err != nil {
		return nil
	}
	if *v >= 1<<62 {
		c.fail(invalid("%s is too large", name))
		return nil
	}
	n := int64(math.Round(*v))
	return &n
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (c *checker) session(p *api.SyncSession) SessionIn {
	in := SessionIn{ExternalID: c.required([]string{"externalId", "sessionId"}, p.ExternalID, p.SessionID)}
	max := c.limits.MaxFieldBytes
	in.Source = deref(c.str("source", p.Source, max))
	in.Title = c.str("title", p.Title, max)
	in.Model = c.str("model", p.Model, max)
	in.Provider = c.str("provider", p.Provider, max)
	in.ProjectPath = c.str("projectPath", p.ProjectPath, max)
	in.ProjectName = c.str("projectName", p.ProjectName, max)
	in.GitBranch = c.str("gitBranch", p.GitBranch, max)
	in.PromptTokens = c.count("promptTokens", p.PromptTokens)
	in.CompletionTokens = c.count("completionTokens", p.CompletionTokens)
	in.TotalTokens = c.count("totalTokens", p.TotalTokens)
	in.DurationMs = c.count("durationMs", p.DurationMs)
	in.CreatedAt = c.count("createdAt", p.CreatedAt)
	in.Cost = c.num("cost", p.Cost)
	// messageCount is checked (a wrong value is a client bug worth
	// reporting) but not stored: the read field counts stored messages.
	c.count("messageCount", p.MessageCount)
	return in
}

func validRole(r string) bool {
	for _, ok := range kv.Roles {
		if r == ok {
			return true
		}
	}
	return false
}

func (c *checker) message(p *api.SyncMessage) MessageIn {
	in := MessageIn{
		SessionExternalID: c.required([]string{"sessionExternalId"}, p.SessionExternalID),
		ExternalID:        c.required([]string{"externalId"}, p.ExternalID),
		Role:              c.required([]string{"role"}, p.Role),
	}
	if c.err == nil && !validRole(in.Role) {
		c.fail(invalid("role must be one of %s", strings.Join(kv.Roles, ", ")))
	}
	max := c.limits.MaxFieldBytes
	in.TextContent = c.str("textContent", p.TextContent, c.limits.MaxPartBytes)
	in.Model = c.str("model", p.Model, max)
	in.Source = deref(c.str("source", p.Source, max))
	in.PromptTokens = c.count("promptTokens", p.PromptTokens)
	in.CompletionTokens = c.count("completionTokens", p.CompletionTokens)
	in.DurationMs = c.count("durationMs", p.DurationMs)
	in.CreatedAt = c.count("createdAt", p.CreatedAt)
	if len(p.Parts) > c.limits.MaxParts {
		c.fail(invalid("parts has %d entries; the limit is %d per message: split the message", len(p.Parts), c.limits.MaxParts))
	}
	if p.Parts != nil && c.err == nil {
		in.PartsSet = true
		in.Parts = make([]kv.Part, 0, len(p.Parts))
		for i, raw := range p.Parts {
			part, err := decodePart(raw, c.limits)
			if err != nil {
				c.fail(invalid("parts[%d]: %s", i, err.Error()))
				break
			}
			in.Parts = append(in.Parts, part)
		}
	}
	return in
}

func isNull(raw stdjson.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// decodePart accepts both shapes plugins send:
//
//	{"type":"tool-call","toolName":"Bash","args":"{...}"}
//	{"type":"tool-call","content":{"toolName":"Bash","args":{...}}}
//
// and a text part's content as a string or {"text": ...}. Other types are kept as sent.
func decodePart(raw stdjson.RawMessage, limits Limits) (kv.Part, error) {
	var typ struct {
		Type *string `json:"type"`
	}
	if err := decodeObject(raw, &typ, "part"); err != nil {
		return kv.Part{}, err
	}
	c := checker{limits: limits}
	p := kv.Part{Type: c.required([]string{"type"}, typ.Type)}
	if c.err != nil {
		return p, c.err
	}
	switch p.Type {
	case kv.PartText, kv.PartToolCall, kv.PartToolResult:
	default:
		if len(raw) > limits.MaxPartBytes {
			return p, invalid("%s part is %d bytes; the limit is %d", p.Type, len(raw), limits.MaxPartBytes)
		}
		// Invalid UTF-8 can only sit inside JSON strings, so replacing it keeps
		// the JSON valid and every response valid UTF-8.
		p.Raw = bytes.ToValidUTF8(bytes.TrimSpace(raw), []byte("\uFFFD"))
		if len(p.Raw) > limits.MaxPartBytes {
			return p, invalid("%s part is %d bytes; the limit is %d", p.Type, len(p.Raw), limits.MaxPartBytes)
		}
		return p, nil
	}
	var in api.Part
	if err := decodeObject(raw, &in, "part"); err != nil {
		return p, err
	}
	var err error
	if p.Type == kv.PartText {
		p.Content, err = text(in.Content, limits)
	} else {
		err = toolPart(&p, &in, limits)
	}
	return p, err
}

// text reads a text part's content: a string, or {"text": "..."}.
func text(raw stdjson.RawMessage, limits Limits) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	if raw[0] == '{' {
		var w struct {
			Text *string `json:"text"`
		}
		if err := decodeObject(raw, &w, "content"); err != nil {
			return "", invalid("content.%s", err.Error())
		}
		c := checker{limits: limits}
		return deref(c.str("content.text", w.Text, limits.MaxPartBytes)), c.err
	}
	return jsonString("content", raw, limits.MaxPartBytes)
}

// jsonString decodes a JSON string field kept raw.
func jsonString(name string, raw stdjson.RawMessage, max int) (string, error) {
	if raw[0] != '"' {
		return "", invalid("%s must be a string", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s, jsonOptions); err != nil {
		return "", invalid("%s is not a valid string", name)
	}
	if len(s) > max {
		return "", invalid("%s is %d bytes; the limit is %d", name, len(s), max)
	}
	return s, nil
}

// toolPart fills a tool-call or tool-result part from either shape: flat
// (toolName, args/content on the part) or nested (an object in content holding
// toolName, args and, for results, result or content).
func toolPart(p *kv.Part, flat *api.Part, limits Limits) error {
	inner, nested := flat, false
	if c := bytes.TrimSpace(flat.Content); len(c) > 0 && c[0] == '{' {
		var o api.Part
		if err := decodeObject(c, &o, "content"); err != nil {
			return err
		}
		// A tool call's object content is always the nested shape; a result's
		// object content is nested only if it looks like one, else it is the result.
		if p.Type == kv.PartToolCall || o.ToolName != "" || o.Name != "" || !isNull(o.Args) || !isNull(o.Result) {
			inner, nested = &o, true
		}
	}
	c := checker{limits: limits}
	for _, src := range []*api.Part{inner, flat} {
		for _, name := range []struct {
			key string
			v   string
		}{{"toolName", src.ToolName}, {"name", src.Name}} {
			c.str(name.key, &name.v, limits.MaxFieldBytes)
			if p.ToolName == "" {
				p.ToolName = name.v
			}
		}
	}
	if c.err != nil {
		return c.err
	}
	var err error
	switch {
	case p.Type == kv.PartToolCall && inner.Args != nil:
		p.Args, err = jsonText("args", inner.Args, limits.MaxPartBytes)
	case p.Type == kv.PartToolCall:
		p.Args, err = jsonText("input", inner.Input, limits.MaxPartBytes)
	case nested && !isNull(inner.Result):
		p.Content, err = jsonText("result", inner.Result, limits.MaxPartBytes)
	case nested:
		p.Content, err = jsonText("content", inner.Content, limits.MaxPartBytes)
	default:
		p.Content, err = jsonText("content", flat.Content, limits.MaxPartBytes)
	}
	return err
}

// jsonText returns a JSON string as is, and any other JSON value serialised
// compactly (tool args and results arrive as strings or objects).
func jsonText(name string, raw stdjson.RawMessage, max int) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		return jsonString(name, raw, max)
	}
	var buf bytes.Buffer
	if err := stdjson.Compact(&buf, raw); err != nil {
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
	return decodeSession(body, "request body", limits.WithDefaults(), true)
}

// DecodeMessage decodes and validates a POST /sync/message body.
func DecodeMessage(body []byte, limits Limits) (MessageIn, error) {
	return decodeMessage(body, "request body", limits.WithDefaults(), true)
}

// Without keepDates createdAt is ignored (server time is used), so a value
// of any type must not fail the entry: these shadow api's createdAt with a
// raw value that is never read.
type (
	sessionNoDate struct {
		api.SyncSession
		CreatedAt stdjson.RawMessage `json:"createdAt"`
	}
	messageNoDate struct {
		api.SyncMessage
		CreatedAt stdjson.RawMessage `json:"createdAt"`
	}
)

func decodeSession(raw []byte, what string, limits Limits, keepDates bool) (SessionIn, error) {
	var p sessionNoDate
	var dst any = &p.SyncSession
	if !keepDates {
		dst = &p
	}
	if err := decodeObject(raw, dst, what); err != nil {
		return SessionIn{}, err
	}
	c := checker{limits: limits}
	in := c.session(&p.SyncSession)
	return in, c.err
}

func decodeMessage(raw []byte, what string, limits Limits, keepDates bool) (MessageIn, error) {
	var p messageNoDate
	var dst any = &p.SyncMessage
	if !keepDates {
		dst = &p
	}
	if err := decodeObject(raw, dst, what); err != nil {
		return MessageIn{}, err
	}
	c := checker{limits: limits}
	in := c.message(&p.SyncMessage)
	return in, c.err
}

// Batch is a decoded /sync/batch: the valid entries, and one error string per
// invalid entry naming it.
type Batch struct {
	Sessions []SessionIn
	Messages []MessageIn
	Errors   []string
	// SessionAt and MessageAt are the places in the request of the entries
	// of Sessions and Messages (invalid entries are left out of those, so
	// the two differ). Nil means the places are the indexes.
	SessionAt, MessageAt []int
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
	// api.SyncBatch with its entries left raw, so that a bad entry fails alone.
	var lists struct {
		Sessions api.Parts `json:"sessions"`
		Messages api.Parts `json:"messages"`
	}
	if err := decodeObject(body, &lists, "request body"); err != nil {
		return Batch{}, err
	}
	if n := len(lists.Sessions) + len(lists.Messages); n > limits.MaxBatchEntries {
		return Batch{}, invalid("batch has %d entries; the limit is %d per request: split it", n, limits.MaxBatchEntries)
	}
	b := Batch{KeepDates: keepDates}
	b.Sessions, b.SessionAt = entries(&b, "sessions", lists.Sessions, func(raw []byte) (SessionIn, error) {
		return decodeSession(raw, "entry", limits, keepDates)
	})
	b.Messages, b.MessageAt = entries(&b, "messages", lists.Messages, func(raw []byte) (MessageIn, error) {
		return decodeMessage(raw, "entry", limits, keepDates)
	})
	return b, nil
}

// entries decodes the entries of one batch list, adding an error naming each
// bad one to b. It returns the good ones and their places in the list.
func entries[T any](b *Batch, list string, raws []stdjson.RawMessage, decode func([]byte) (T, error)) ([]T, []int) {
	var out []T
	var at []int
	for i, raw := range raws {
		v, err := decode(raw)
		if err != nil {
			b.Errors = append(b.Errors, entryError(list, i, raw, err))
			continue
		}
		out = append(out, v)
		at = append(at, i)
	}
	return out, at
}

// entry names entry i of Sessions (list "sessions") or Messages by its
// place in the request: "messages[3]".
func (b Batch) entry(list string, i int) string {
	at := b.MessageAt
	if list == "sessions" {
		at = b.SessionAt
	}
	if i < len(at) {
		i = at[i]
	}
	return fmt.Sprintf("%s[%d]", list, i)
}

// entryError names a bad entry by its position and, when it has a usable
// one, its externalId.
func entryError(list string, i int, raw []byte, err error) string {
	var id struct {
		ExternalID string `json:"externalId"`
	}
	// A failed decode leaves ExternalID empty or as far as it got: either way
	// only a plain string id names the entry.
	_ = json.Unmarshal(bytes.TrimSpace(raw), &id, jsonOptions)
	if id.ExternalID != "" && len(id.ExternalID) <= 256 {
		return fmt.Sprintf("%s[%d] (externalId %s): %s", list, i, id.ExternalID, err.Error())
	}
	return fmt.Sprintf("%s[%d]: %s", list, i, err.Error())
}
