package ingest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// Realistic payloads, from what the plugins send (shared/spec/plugins.md).
var (
	claudeCodeSession  = `{"externalId":"11111111-2222-3333-4444-555555555555","source":"claude-code","title":"Fix the login redirect bug","projectPath":"/home/dev/demo-proj","projectName":"demo-proj","model":"claude-sonnet-4-20250514","promptTokens":315,"completionTokens":50,"cost":0.00123,"messageCount":2,"toolCallCount":1,"endReason":"exit","durationMs":10000}`
	claudeCodeSynctest = `{"externalId":"test-1795237841437","source":"claude-code","title":"Connection Test","projectName":"synctest","durationMs":0}`
	claudeCodeUser     = `{"sessionExternalId":"11111111-2222-3333-4444-555555555555","externalId":"11111111-2222-3333-4444-555555555555-user-1795237851454","role":"user","source":"claude-code","textContent":"Fix the login redirect bug"}`
	claudeCodeToolCall = `{"sessionExternalId":"11111111-2222-3333-4444-555555555555","externalId":"toolu_01","role":"assistant","source":"claude-code","parts":[{"type":"tool-call","content":{"toolName":"Bash","args":{"command":"ls"}}},{"type":"tool-result","content":"README.md\nmain.go"}]}`
	claudeCodeAsst     = `{"sessionExternalId":"11111111-2222-3333-4444-555555555555","externalId":"a-1","role":"assistant","source":"claude-code","textContent":"I'll look at the auth redirect.","model":"claude-sonnet-4-20250514"}`
	opencodeSession    = `{"externalId":"ses_abc123","title":"Untitled Session","projectPath":"/home/dev/app","projectName":"app","model":"gpt-4.1","provider":"openai","promptTokens":1200,"completionTokens":340,"cost":0.0123}`
	opencodeMessage    = `{"sessionExternalId":"ses_abc123","externalId":"msg_001","role":"assistant","textContent":"Done: added the route.","model":"gpt-4.1","promptTokens":1200,"completionTokens":340,"durationMs":5321}`
	piBatch            = `{"sessions":[],"messages":[{"sessionExternalId":"pi-7","externalId":"pi-7-1","role":"user","source":"pi","createdAt":1768039200000,"parts":[{"type":"text","content":"add tests"}]},{"sessionExternalId":"pi-7","externalId":"pi-7-2","role":"assistant","source":"pi","createdAt":1768039205000,"parts":[{"type":"thinking","content":"Let me look."},{"type":"tool-call","toolName":"read","args":"{\"path\":\"main.go\"}"},{"type":"tool-result","toolName":"read","content":"package main"},{"type":"text","content":{"text":"Added."}}],"promptTokens":900,"completionTokens":120}]}`
	piBatchWithSession = `{"sessions":[{"externalId":"pi-7","source":"pi","title":"add tests","totalTokens":1020,"promptTokens":900,"completionTokens":120,"cost":0.01,"messageCount":2,"createdAt":1768039200000}],"messages":[]}`
	droidBatch         = `{"sessions":[],"messages":[{"sessionExternalId":"droid-1","externalId":"d-1","role":"system","source":"factory-droid","textContent":"You are Droid."},{"sessionExternalId":"droid-1","externalId":"d-2","role":"assistant","source":"factory-droid","parts":[{"type":"tool_use","content":{"toolName":"Execute","args":{"command":"go test ./..."},"result":"ok"}},{"type":"text","content":"All green."}]}]}`
	badBatch           = `{"sessions":[{"externalId":"s","title":5},7],"messages":[{"sessionExternalId":"s","externalId":"m-17","role":"robot"},{"sessionExternalId":"s","externalId":"m","role":"user","promptTokens":1e999}]}`
)

// fuzzLimits: small enough that the fuzzer reaches every cap.
var fuzzLimits = ingest.Limits{MaxBody: 1 << 16, MaxBatchEntries: 6, MaxPartBytes: 64, MaxFieldBytes: 32}

func batchOf(sessions, messages []string) string {
	return `{"sessions":[` + strings.Join(sessions, ",") + `],"messages":[` + strings.Join(messages, ",") + `]}`
}

var entryErrRE = regexp.MustCompile(`^(sessions|messages)\[\d+\]( \(externalId .*\))?: .+`)

// FuzzDecodeBatch: DecodeBatch never panics, rejects only with ErrInvalid,
// accounts for every entry (accepted or one error naming it), and every
// accepted entry satisfies the validation invariants.
func FuzzDecodeBatch(f *testing.F) {
	for _, s := range []string{
		piBatch, piBatchWithSession, droidBatch, badBatch,
		batchOf([]string{claudeCodeSession, opencodeSession}, []string{claudeCodeUser, claudeCodeToolCall, claudeCodeAsst, opencodeMessage}),
		batchOf([]string{claudeCodeSynctest}, nil),
		`{}`, `{"sessions":null,"messages":null}`, `[]`, ``, `{"sessions":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, limits := range []ingest.Limits{fuzzLimits, {}} {
			b, err := ingest.DecodeBatch(body, limits)
			limits = limits.WithDefaults()
			if err != nil {
				if !errors.Is(err, ingest.ErrInvalid) {
					t.Fatalf("DecodeBatch error %v is not ErrInvalid", err)
				}
				if len(b.Sessions)+len(b.Messages)+len(b.Errors) != 0 {
					t.Fatalf("rejected batch still returned entries")
				}
				continue
			}
			// Every entry is either accepted or named by exactly one error.
			// Keys match exactly (a map, not a struct: encoding/json would
			// also match "Sessions" into a struct field).
			// The decoder trims Unicode white space around the body (a
			// harmless leniency: "{}\f" is accepted), so the oracle does too.
			var obj map[string]json.RawMessage
			if jerr := json.Unmarshal(bytes.TrimSpace(body), &obj); jerr != nil {
				t.Fatalf("DecodeBatch accepted a body encoding/json rejects: %v", jerr)
			}
			total := 0
			for _, name := range []string{"sessions", "messages"} {
				var list []json.RawMessage
				if jerr := json.Unmarshal(obj[name], &list); obj[name] != nil && jerr != nil {
					t.Fatalf("DecodeBatch accepted %s that is not an array: %v", name, jerr)
				}
				total += len(list)
			}
			if total > limits.MaxBatchEntries {
				t.Fatalf("accepted %d entries over the limit of %d", total, limits.MaxBatchEntries)
			}
			if got := len(b.Sessions) + len(b.Messages) + len(b.Errors); got != total {
				t.Fatalf("%d entries in, %d accepted + %d errors out", total, len(b.Sessions)+len(b.Messages), len(b.Errors))
			}
			for _, e := range b.Errors {
				if !entryErrRE.MatchString(e) {
					t.Fatalf("entry error %q does not name its entry", e)
				}
			}
			for _, s := range b.Sessions {
				checkSessionIn(t, s, limits)
			}
			for _, m := range b.Messages {
				checkMessageIn(t, m, limits)
			}
		}
	})
}

// FuzzDecodeMessage: the same invariants for single messages, whose part
// decoding is the most intricate input.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		claudeCodeUser, claudeCodeToolCall, claudeCodeAsst, opencodeMessage,
		`{"sessionExternalId":"s","externalId":"m","role":"assistant","parts":[{"type":"tool-call","toolName":"Bash","args":"{\"command\":\"ls\"}"}]}`,
		`{"sessionExternalId":"s","externalId":"m","role":"tool","parts":[{"type":"tool-result","content":{"toolName":"Bash","result":{"code":0}}}]}`,
		`{"sessionExternalId":"s","externalId":"m","role":"user","parts":[{"type":"file","mediaType":"image/png","url":"data:..."}]}`,
		`{"sessionExternalId":"s","externalId":"m","role":"user","parts":[{"type":"text","content":{"text":"\ud800 bad surrogate"}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, limits := range []ingest.Limits{fuzzLimits, {}} {
			m, err := ingest.DecodeMessage(body, limits)
			if err != nil {
				if !errors.Is(err, ingest.ErrInvalid) {
					t.Fatalf("DecodeMessage error %v is not ErrInvalid", err)
				}
				continue
			}
			checkMessageIn(t, m, limits.WithDefaults())
		}
		for _, limits := range []ingest.Limits{fuzzLimits, {}} {
			s, err := ingest.DecodeSession(body, limits)
			if err != nil {
				if !errors.Is(err, ingest.ErrInvalid) {
					t.Fatalf("DecodeSession error %v is not ErrInvalid", err)
				}
				continue
			}
			checkSessionIn(t, s, limits.WithDefaults())
		}
	})
}

func checkString(t *testing.T, field, s string, max int) {
	t.Helper()
	if len(s) > max {
		t.Fatalf("%s is %d bytes, over the cap of %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		t.Fatalf("%s is not valid UTF-8: %q", field, s)
	}
}

func checkID(t *testing.T, field, s string, max int) {
	t.Helper()
	if strings.TrimSpace(s) == "" {
		t.Fatalf("%s accepted empty (%q)", field, s)
	}
	checkString(t, field, s, max)
}

func checkCount(t *testing.T, field string, v *int64) {
	t.Helper()
	if v != nil && *v < 0 {
		t.Fatalf("%s accepted negative: %d", field, *v)
	}
}

func checkSessionIn(t *testing.T, s ingest.SessionIn, l ingest.Limits) {
	t.Helper()
	checkID(t, "session externalId", s.ExternalID, l.MaxFieldBytes)
	checkString(t, "session source", s.Source, l.MaxFieldBytes)
	for name, p := range map[string]*string{"title": s.Title, "model": s.Model, "provider": s.Provider,
		"projectPath": s.ProjectPath, "projectName": s.ProjectName} {
		if p != nil {
			checkString(t, name, *p, l.MaxFieldBytes)
		}
	}
	for name, p := range map[string]*int64{"promptTokens": s.PromptTokens, "completionTokens": s.CompletionTokens,
		"totalTokens": s.TotalTokens, "durationMs": s.DurationMs, "createdAt": s.CreatedAt} {
		checkCount(t, name, p)
	}
	if s.Cost != nil && (*s.Cost < 0 || math.IsNaN(*s.Cost) || math.IsInf(*s.Cost, 0)) {
		t.Fatalf("cost accepted: %v", *s.Cost)
	}
}

func checkMessageIn(t *testing.T, m ingest.MessageIn, l ingest.Limits) {
	t.Helper()
	checkID(t, "sessionExternalId", m.SessionExternalID, l.MaxFieldBytes)
	checkID(t, "message externalId", m.ExternalID, l.MaxFieldBytes)
	if !slices.Contains(kv.Roles, m.Role) {
		t.Fatalf("role %q accepted", m.Role)
	}
	checkString(t, "message source", m.Source, l.MaxFieldBytes)
	if m.TextContent != nil {
		checkString(t, "textContent", *m.TextContent, l.MaxPartBytes)
	}
	if m.Model != nil {
		checkString(t, "message model", *m.Model, l.MaxFieldBytes)
	}
	for name, p := range map[string]*int64{"promptTokens": m.PromptTokens, "completionTokens": m.CompletionTokens,
		"durationMs": m.DurationMs, "createdAt": m.CreatedAt} {
		checkCount(t, name, p)
	}
	if !m.PartsSet && m.Parts != nil {
		t.Fatalf("parts returned although PartsSet is false")
	}
	for i, p := range m.Parts {
		if strings.TrimSpace(p.Type) == "" {
			t.Fatalf("parts[%d]: empty type accepted", i)
		}
		checkString(t, "part type", p.Type, l.MaxFieldBytes)
		switch p.Type {
		case kv.PartText, kv.PartToolCall, kv.PartToolResult:
			if len(p.Raw) != 0 {
				t.Fatalf("parts[%d]: known type %q kept raw", i, p.Type)
			}
			checkString(t, "part content", p.Content, l.MaxPartBytes)
			checkString(t, "part args", p.Args, l.MaxPartBytes)
			checkString(t, "part toolName", p.ToolName, l.MaxFieldBytes)
			if p.Type != kv.PartToolCall && p.Args != "" {
				t.Fatalf("parts[%d]: %s part has args", i, p.Type)
			}
		default:
			if !utf8.Valid(p.Raw) {
				t.Fatalf("parts[%d]: raw %s part is not valid UTF-8: %q", i, p.Type, p.Raw)
			}
			if len(p.Raw) == 0 || len(p.Raw) > l.MaxPartBytes {
				t.Fatalf("parts[%d]: %s part raw is %d bytes (cap %d)", i, p.Type, len(p.Raw), l.MaxPartBytes)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(p.Raw, &obj); err != nil {
				t.Fatalf("parts[%d]: raw part is not a JSON object: %v", i, err)
			}
			if p.Content != "" || p.Args != "" || p.ToolName != "" {
				t.Fatalf("parts[%d]: raw %s part also has normalised fields", i, p.Type)
			}
		}
	}
}
