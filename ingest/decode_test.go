package ingest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// small are limits small enough that over-cap payloads stay readable.
var small = ingest.Limits{MaxBody: 4096, MaxBatchEntries: 3, MaxPartBytes: 40, MaxFieldBytes: 20}

const roleErr = "role must be one of user, assistant, system, tool, unknown"

func TestDecodeSessionErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"empty", ``, "request body must be a JSON object"},
		{"whitespace", " \n ", "request body must be a JSON object"},
		{"array", `[]`, "request body must be a JSON object"},
		{"null", `null`, "request body must be a JSON object"},
		{"string", `"x"`, "request body must be a JSON object"},
		{"truncated", `{"externalId":"a"`, "request body is not valid JSON"},
		{"trailing garbage", `{"externalId":"a"} x`, "request body is not valid JSON"},
		{"missing externalId", `{"source":"pi"}`, "externalId is required"},
		{"empty externalId", `{"externalId":""}`, "externalId is required"},
		{"blank externalId", `{"externalId":"  "}`, "externalId is required"},
		{"null externalId", `{"externalId":null}`, "externalId is required"},
		{"externalId number", `{"externalId":5}`, "externalId must be a string"},
		{"sessionId alias number", `{"sessionId":5}`, "sessionId must be a string"},
		{"title number", `{"externalId":"a","title":5}`, "title must be a string"},
		{"model object", `{"externalId":"a","model":{}}`, "model must be a string"},
		{"source bool", `{"externalId":"a","source":true}`, "source must be a string"},
		{"promptTokens string", `{"externalId":"a","promptTokens":"10"}`, "promptTokens must be a number"},
		{"completionTokens negative", `{"externalId":"a","completionTokens":-1}`, "completionTokens must not be negative"},
		{"cost negative fraction", `{"externalId":"a","cost":-0.5}`, "cost must not be negative"},
		{"cost non-finite", `{"externalId":"a","cost":1e999}`, "cost must be a finite number"},
		{"durationMs bool", `{"externalId":"a","durationMs":true}`, "durationMs must be a number"},
		{"totalTokens array", `{"externalId":"a","totalTokens":[1]}`, "totalTokens must be a number"},
		{"createdAt too large", `{"externalId":"a","createdAt":1e20}`, "createdAt is too large"},
		{"createdAt string", `{"externalId":"a","createdAt":"2026-01-10T10:00:00Z"}`, "createdAt must be a number"},
		{"messageCount string", `{"externalId":"a","messageCount":"3"}`, "messageCount must be a number"},
		{"title over cap", `{"externalId":"a","title":"` + strings.Repeat("t", 21) + `"}`, "title is 21 bytes; the limit is 20"},
		{"externalId over cap", `{"externalId":"` + strings.Repeat("e", 21) + `"}`, "externalId is 21 bytes; the limit is 20"},
		{"projectPath over cap", `{"externalId":"a","projectPath":"` + strings.Repeat("/p", 11) + `"}`, "projectPath is 22 bytes; the limit is 20"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ingest.DecodeSession([]byte(tc.body), small)
			checkInvalid(t, err, tc.want)
		})
	}
}

func TestDecodeMessageErrors(t *testing.T) {
	const base = `"sessionExternalId":"s","externalId":"m","role":"user"`
	tests := []struct {
		name, body, want string
	}{
		{"array body", `[{}]`, "request body must be a JSON object"},
		{"invalid JSON", `{"role":}`, "request body is not valid JSON"},
		{"missing sessionExternalId", `{"externalId":"m","role":"user"}`, "sessionExternalId is required"},
		{"missing externalId", `{"sessionExternalId":"s","role":"user"}`, "externalId is required"},
		{"missing role", `{"sessionExternalId":"s","externalId":"m"}`, "role is required"},
		{"role number", `{"sessionExternalId":"s","externalId":"m","role":3}`, "role must be a string"},
		{"unknown role", `{"sessionExternalId":"s","externalId":"m","role":"bot"}`, roleErr},
		{"role wrong case", `{"sessionExternalId":"s","externalId":"m","role":"User"}`, roleErr},
		{"textContent number", `{` + base + `,"textContent":1}`, "textContent must be a string"},
		{"textContent over cap", `{` + base + `,"textContent":"` + strings.Repeat("x", 41) + `"}`, "textContent is 41 bytes; the limit is 40"},
		{"promptTokens string", `{` + base + `,"promptTokens":"10"}`, "promptTokens must be a number"},
		{"durationMs negative", `{` + base + `,"durationMs":-3}`, "durationMs must not be negative"},
		{"completionTokens non-finite", `{` + base + `,"completionTokens":-1e999}`, "completionTokens must be a finite number"},
		{"model over cap", `{` + base + `,"model":"` + strings.Repeat("m", 21) + `"}`, "model is 21 bytes; the limit is 20"},
		{"parts object", `{` + base + `,"parts":{}}`, "parts must be an array"},
		{"parts string", `{` + base + `,"parts":"text"}`, "parts must be an array"},
		{"part not object", `{` + base + `,"parts":[5]}`, "parts[0]: part must be a JSON object"},
		{"part null", `{` + base + `,"parts":[{"type":"text","content":"a"},null]}`, "parts[1]: part must be a JSON object"},
		{"part without type", `{` + base + `,"parts":[{"content":"x"}]}`, "parts[0]: type is required"},
		{"part type number", `{` + base + `,"parts":[{"type":1}]}`, "parts[0]: type must be a string"},
		{"text content number", `{` + base + `,"parts":[{"type":"text","content":5}]}`, "parts[0]: content must be a string"},
		{"text content.text number", `{` + base + `,"parts":[{"type":"text","content":{"text":5}}]}`, "parts[0]: content.text must be a string"},
		{"text part over cap", `{` + base + `,"parts":[{"type":"text","content":"` + strings.Repeat("x", 41) + `"}]}`, "parts[0]: content is 41 bytes; the limit is 40"},
		{"wrapped text over cap", `{` + base + `,"parts":[{"type":"text","content":{"text":"` + strings.Repeat("x", 41) + `"}}]}`, "parts[0]: content.text is 41 bytes; the limit is 40"},
		{"toolName number", `{` + base + `,"parts":[{"type":"tool-call","toolName":5,"args":"{}"}]}`, "parts[0]: toolName must be a string"},
		{"nested toolName number", `{` + base + `,"parts":[{"type":"tool-call","content":{"toolName":5}}]}`, "parts[0]: toolName must be a string"},
		{"args string over cap", `{` + base + `,"parts":[{"type":"tool-call","toolName":"Bash","args":"` + strings.Repeat("a", 41) + `"}]}`, "parts[0]: args is 41 bytes; the limit is 40"},
		{"nested args object over cap", `{` + base + `,"parts":[{"type":"tool-call","content":{"toolName":"Bash","args":{"command":"` + strings.Repeat("a", 30) + `"}}}]}`, "parts[0]: args is 44 bytes; the limit is 40"},
		{"tool result over cap", `{` + base + `,"parts":[{"type":"tool-result","toolName":"Bash","content":"` + strings.Repeat("r", 41) + `"}]}`, "parts[0]: content is 41 bytes; the limit is 40"},
		{"other part over cap", `{` + base + `,"parts":[{"type":"thinking","content":"` + strings.Repeat("t", 30) + `"}]}`, "parts[0]: thinking part is 62 bytes; the limit is 40"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ingest.DecodeMessage([]byte(tc.body), small)
			checkInvalid(t, err, tc.want)
		})
	}
}

func TestDecodeBatchErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"array body", `[]`, "request body must be a JSON object"},
		{"invalid JSON", `{"sessions":[}`, "request body is not valid JSON"},
		{"sessions object", `{"sessions":{}}`, "sessions must be an array"},
		{"messages string", `{"messages":"m"}`, "messages must be an array"},
		{"messages number", `{"sessions":[],"messages":1}`, "messages must be an array"},
		{"too many entries", `{"sessions":[{},{}],"messages":[{},{}]}`, "batch has 4 entries; the limit is 3 per request: split it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ingest.DecodeBatch([]byte(tc.body), small)
			checkInvalid(t, err, tc.want)
			if len(b.Sessions)+len(b.Messages)+len(b.Errors) != 0 {
				t.Errorf("a rejected batch returned entries: %+v", b)
			}
		})
	}
}

// checkInvalid asserts err is an ingest validation error (HTTP 400) whose
// message contains want.
func checkInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want an error containing %q", want)
	}
	if !errors.Is(err, ingest.ErrInvalid) {
		t.Errorf("error %v is not ErrInvalid", err)
	}
	var inv *ingest.InvalidError
	if !errors.As(err, &inv) {
		t.Errorf("error %v is not an *InvalidError", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to contain %q", err, want)
	}
}

func TestDecodeBatchEntryErrors(t *testing.T) {
	body := `{
	  "sessions": [
	    {"externalId":"s-1","source":"pi","title":"ok"},
	    {"externalId":"s-2","title":5},
	    7,
	    {"title":"no id"}
	  ],
	  "messages": [
	    {"sessionExternalId":"s-1","externalId":"m-1","role":"user","textContent":"hi"},
	    {"sessionExternalId":"s-1","externalId":"m-2","role":"assistant","parts":{}},
	    {"sessionExternalId":"s-1","externalId":"m-3","role":"assistant","promptTokens":-1},
	    {"sessionExternalId":"s-1","externalId":"m-17","role":"robot"},
	    {"sessionExternalId":"s-1","externalId":"m-5","role":"assistant","createdAt":1700000000000}
	  ]
	}`
	b, err := ingest.DecodeBatch([]byte(body), ingest.Limits{})
	if err != nil {
		t.Fatalf("DecodeBatch: %v", err)
	}
	want := []string{
		"sessions[1] (externalId s-2): title must be a string",
		"sessions[2]: entry must be a JSON object",
		"sessions[3]: externalId is required",
		"messages[1] (externalId m-2): parts must be an array",
		"messages[2] (externalId m-3): promptTokens must not be negative",
		"messages[3] (externalId m-17): " + roleErr,
	}
	if !slices.Equal(b.Errors, want) {
		t.Errorf("Errors =\n  %s\nwant\n  %s", strings.Join(b.Errors, "\n  "), strings.Join(want, "\n  "))
	}
	if len(b.Sessions) != 1 || b.Sessions[0].ExternalID != "s-1" {
		t.Errorf("Sessions = %+v, want only s-1", b.Sessions)
	}
	var ids []string
	for _, m := range b.Messages {
		ids = append(ids, m.ExternalID)
	}
	if !slices.Equal(ids, []string{"m-1", "m-5"}) {
		t.Errorf("accepted messages = %v, want [m-1 m-5]", ids)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDecodeSessionFields(t *testing.T) {
	tests := []struct {
		name string
		body string
		want ingest.SessionIn
	}{
		{"minimal", `{"externalId":"a"}`, ingest.SessionIn{ExternalID: "a"}},
		{"sessionId alias (Claude Code)", `{"sessionId":"cc-1","source":"claude-code"}`,
			ingest.SessionIn{ExternalID: "cc-1", Source: "claude-code"}},
		{"externalId wins over sessionId", `{"externalId":"x","sessionId":"y"}`, ingest.SessionIn{ExternalID: "x"}},
		{"empty externalId falls back to sessionId", `{"externalId":"","sessionId":"y"}`, ingest.SessionIn{ExternalID: "y"}},
		{"nulls are absent", `{"externalId":"a","title":null,"promptTokens":null,"cost":null,"source":null}`,
			ingest.SessionIn{ExternalID: "a"}},
		{"unknown fields ignored", `{"externalId":"a","toolCallCount":3,"endReason":"exit","slug":{"x":1},"messageCount":2}`,
			ingest.SessionIn{ExternalID: "a"}},
		{"every field", `{"externalId":"a","source":"pi","title":"T","model":"M","provider":"P","projectPath":"/p","projectName":"p",
			"gitBranch":"main","promptTokens":10,"completionTokens":20,"totalTokens":35,"durationMs":1000,"cost":0.25,"createdAt":1700000000000}`,
			ingest.SessionIn{ExternalID: "a", Source: "pi", Title: ptr("T"), Model: ptr("M"), Provider: ptr("P"),
				ProjectPath: ptr("/p"), ProjectName: ptr("p"), GitBranch: ptr("main"), PromptTokens: ptr[int64](10), CompletionTokens: ptr[int64](20),
				TotalTokens: ptr[int64](35), DurationMs: ptr[int64](1000), Cost: ptr(0.25), CreatedAt: ptr[int64](1700000000000)}},
		{"float counts are rounded", `{"externalId":"a","promptTokens":10.6,"completionTokens":0.4}`,
			ingest.SessionIn{ExternalID: "a", PromptTokens: ptr[int64](11), CompletionTokens: ptr[int64](0)}},
		{"empty title is recorded", `{"externalId":"a","title":""}`, ingest.SessionIn{ExternalID: "a", Title: ptr("")}},
		{"field exactly at the cap", `{"externalId":"a","title":"` + strings.Repeat("t", 20) + `"}`,
			ingest.SessionIn{ExternalID: "a", Title: ptr(strings.Repeat("t", 20))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ingest.DecodeSession([]byte(tc.body), small)
			if err != nil {
				t.Fatalf("DecodeSession: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %s\nwant %s", dump(got), dump(tc.want))
			}
		})
	}
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDecodeMessageParts(t *testing.T) {
	tests := []struct {
		name  string
		parts string
		want  []kv.Part
	}{
		{"text string", `[{"type":"text","content":"hello"}]`, []kv.Part{{Type: "text", Content: "hello"}}},
		{"text wrapped", `[{"type":"text","content":{"text":"hello"}}]`, []kv.Part{{Type: "text", Content: "hello"}}},
		{"text without content", `[{"type":"text"}]`, []kv.Part{{Type: "text"}}},
		{"flat tool-call, args string", `[{"type":"tool-call","toolName":"Bash","args":"{\"command\":\"ls\"}"}]`,
			[]kv.Part{{Type: "tool-call", ToolName: "Bash", Args: `{"command":"ls"}`}}},
		{"flat tool-call, args object", `[{"type":"tool-call","toolName":"Bash","args":{"command": "ls"}}]`,
			[]kv.Part{{Type: "tool-call", ToolName: "Bash", Args: `{"command":"ls"}`}}},
		{"nested tool-call (Claude Code)", `[{"type":"tool-call","content":{"toolName":"Bash","args":{"command":"ls"}}}]`,
			[]kv.Part{{Type: "tool-call", ToolName: "Bash", Args: `{"command":"ls"}`}}},
		{"nested tool-call, args string", `[{"type":"tool-call","content":{"toolName":"Read","args":"{\"path\":\"a.go\"}"}}]`,
			[]kv.Part{{Type: "tool-call", ToolName: "Read", Args: `{"path":"a.go"}`}}},
		{"tool-call with name and input", `[{"type":"tool-call","content":{"name":"Edit","input":{"file":"x"}}}]`,
			[]kv.Part{{Type: "tool-call", ToolName: "Edit", Args: `{"file":"x"}`}}},
		{"flat tool-result", `[{"type":"tool-result","toolName":"Bash","content":"file.txt"}]`,
			[]kv.Part{{Type: "tool-result", ToolName: "Bash", Content: "file.txt"}}},
		{"tool-result with plain object content", `[{"type":"tool-result","content":{"stdout":"ok","code":0}}]`,
			[]kv.Part{{Type: "tool-result", Content: `{"stdout":"ok","code":0}`}}},
		{"nested tool-result", `[{"type":"tool-result","content":{"toolName":"Bash","result":"done"}}]`,
			[]kv.Part{{Type: "tool-result", ToolName: "Bash", Content: "done"}}},
		{"nested tool-result, content field", `[{"type":"tool-result","content":{"toolName":"Bash","content":["a","b"]}}]`,
			[]kv.Part{{Type: "tool-result", ToolName: "Bash", Content: `["a","b"]`}}},
		{"thinking kept as sent", `[{"type":"thinking","content":"hmm","signature":"abc"}]`,
			[]kv.Part{{Type: "thinking", Raw: json.RawMessage(`{"type":"thinking","content":"hmm","signature":"abc"}`)}}},
		{"droid tool_use kept as sent", `[{"type":"tool_use","content":{"toolName":"Bash","args":{"cmd":"ls"},"result":"x"}}]`,
			[]kv.Part{{Type: "tool_use", Raw: json.RawMessage(`{"type":"tool_use","content":{"toolName":"Bash","args":{"cmd":"ls"},"result":"x"}}`)}}},
		{"empty parts", `[]`, []kv.Part{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"sessionExternalId":"s","externalId":"m","role":"assistant","parts":` + tc.parts + `}`
			got, err := ingest.DecodeMessage([]byte(body), ingest.Limits{})
			if err != nil {
				t.Fatalf("DecodeMessage: %v", err)
			}
			if !got.PartsSet {
				t.Errorf("PartsSet = false for a message with parts")
			}
			if !reflect.DeepEqual(got.Parts, tc.want) {
				t.Errorf("parts = %s\nwant    %s", dump(got.Parts), dump(tc.want))
			}
		})
	}
}

func TestDecodeMessageFields(t *testing.T) {
	body := `{"sessionExternalId":"s","externalId":"m","role":"assistant","source":"claude-code",
	  "textContent":"Fixed it.","model":"claude-sonnet-4-20250514","promptTokens":12,"completionTokens":3,
	  "durationMs":900,"createdAt":1700000000000,"extra":"ignored"}`
	got, err := ingest.DecodeMessage([]byte(body), ingest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := ingest.MessageIn{SessionExternalID: "s", ExternalID: "m", Role: "assistant", Source: "claude-code",
		TextContent: ptr("Fixed it."), Model: ptr("claude-sonnet-4-20250514"), PromptTokens: ptr[int64](12),
		CompletionTokens: ptr[int64](3), DurationMs: ptr[int64](900), CreatedAt: ptr[int64](1700000000000)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %s\nwant %s", dump(got), dump(want))
	}
	// No parts field: nothing set, so an update keeps stored parts.
	if got.PartsSet || got.Parts != nil {
		t.Errorf("PartsSet %v, Parts %v for a message without parts", got.PartsSet, got.Parts)
	}
	got, err = ingest.DecodeMessage([]byte(`{"sessionExternalId":"s","externalId":"m","role":"user","parts":null}`), ingest.Limits{})
	if err != nil || got.PartsSet {
		t.Errorf(`"parts": null: PartsSet %v, err %v; want absent`, got.PartsSet, err)
	}
	for _, role := range kv.Roles {
		body := fmt.Sprintf(`{"sessionExternalId":"s","externalId":"m","role":%q}`, role)
		if _, err := ingest.DecodeMessage([]byte(body), ingest.Limits{}); err != nil {
			t.Errorf("role %q rejected: %v", role, err)
		}
	}
}

func TestLimitsWithDefaults(t *testing.T) {
	d := ingest.DefaultLimits()
	if got := (ingest.Limits{}).WithDefaults(); got != d {
		t.Errorf("zero Limits.WithDefaults() = %+v, want %+v", got, d)
	}
	if got := (ingest.Limits{MaxBody: -1, MaxPartBytes: 7}).WithDefaults(); got.MaxBody != d.MaxBody || got.MaxPartBytes != 7 {
		t.Errorf("WithDefaults kept %+v", got)
	}
	if d.MaxBody <= 0 || d.MaxBatchEntries <= 0 || d.MaxPartBytes <= 0 || d.MaxFieldBytes <= 0 || int64(d.MaxPartBytes) > d.MaxBody {
		t.Errorf("DefaultLimits() = %+v: not all positive and consistent", d)
	}
}

// TestDecodeKeepsUTF8Valid: string fields with invalid UTF-8 are repaired
// (U+FFFD), and so must be JSON values kept as text (tool args and results
// sent as objects) and parts kept as sent, or invalid bytes reach the store,
// the index and every response. (Found by FuzzDecodeMessage.)
func TestDecodeKeepsUTF8Valid(t *testing.T) {
	tests := []struct{ name, parts string }{
		{"string field", `[{"type":"text","content":"a\xabb"}]`},
		{"tool-call args object", `[{"type":"tool-call","toolName":"Bash","args":{"cmd":"ls \xab"}}]`},
		{"nested tool-call args key", `[{"type":"tool-call","content":{"args":{"\xab":""}}}]`},
		{"tool-result object", `[{"type":"tool-result","content":{"out":"\xff\xfe"}}]`},
		{"thinking part", `[{"type":"thinking","content":"\xc3("}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// \xNN in the table is a raw byte in the body.
			parts := strings.NewReplacer(`\xab`, "\xab", `\xff`, "\xff", `\xfe`, "\xfe", `\xc3`, "\xc3").Replace(tc.parts)
			body := `{"sessionExternalId":"s","externalId":"m","role":"assistant","parts":` + parts + `}`
			m, err := ingest.DecodeMessage([]byte(body), ingest.Limits{})
			if err != nil {
				return // rejecting invalid UTF-8 is fine too
			}
			for _, p := range m.Parts {
				for name, v := range map[string]string{"content": p.Content, "args": p.Args, "toolName": p.ToolName, "raw": string(p.Raw)} {
					if !utf8.ValidString(v) {
						t.Errorf("%s part %s holds invalid UTF-8: %q", p.Type, name, v)
					}
				}
			}
		})
	}
}
