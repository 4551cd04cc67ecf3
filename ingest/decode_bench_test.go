package ingest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/ingest"
)

// benchBatch is a /sync/batch body like the ingest bench's: 500 messages of
// 25 sessions, mixing textContent, text parts with code, tool calls with
// object and string args, tool results and a thinking part.
func benchBatch() []byte {
	var sessions, messages []string
	text := strings.Repeat("The handler returns when the request is cancelled, so check ctx.Err() first. ", 12)
	code := "```go\\nif err := parseConfigFile(ctx, 3); err != nil {\\n\\treturn err\\n}\\n```"
	for s := range 25 {
		sid := fmt.Sprintf("bench-%04d", s)
		sessions = append(sessions, fmt.Sprintf(`{"externalId":%q,"source":"claude-code","title":"Fix the login redirect loop in auth-service","model":"claude-sonnet-4-20250514","projectPath":"/home/dev/src/auth-service","projectName":"auth-service","promptTokens":4000,"completionTokens":1600,"cost":0.036}`, sid))
		for m := range 20 {
			id := fmt.Sprintf("%s-m%04d", sid, m)
			switch m % 4 {
			case 0:
				messages = append(messages, fmt.Sprintf(`{"externalId":%q,"sessionExternalId":%q,"role":"user","textContent":%q}`, id, sid, text))
			case 1:
				messages = append(messages, fmt.Sprintf(`{"externalId":%q,"sessionExternalId":%q,"role":"assistant","parts":[{"type":"text","content":"%s %s"}],"model":"claude-sonnet-4-20250514","promptTokens":900,"completionTokens":120}`, id, sid, text, code))
			case 2:
				messages = append(messages, fmt.Sprintf(`{"externalId":%q,"sessionExternalId":%q,"role":"assistant","parts":[{"type":"tool-call","content":{"toolName":"Bash","args":{"command":"go test ./auth/..."}}},{"type":"tool-result","toolName":"Bash","content":%q}]}`, id, sid, text))
			default:
				messages = append(messages, fmt.Sprintf(`{"externalId":%q,"sessionExternalId":%q,"role":"assistant","parts":[{"type":"thinking","content":"Let me look at the callback."},{"type":"tool-call","toolName":"Read","args":"{\"path\":\"auth/redirect.go\"}"},{"type":"text","content":{"text":%q}}]}`, id, sid, text))
			}
		}
	}
	return []byte(batchOf(sessions, messages))
}

func BenchmarkDecodeBatch(b *testing.B) {
	body := benchBatch()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		batch, err := ingest.DecodeBatch(body, ingest.Limits{})
		if err != nil || len(batch.Errors) != 0 || len(batch.Messages) != 500 {
			b.Fatalf("%v %v %d", err, batch.Errors, len(batch.Messages))
		}
	}
}

func BenchmarkDecodeMessage(b *testing.B) {
	body := []byte(claudeCodeToolCall)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ingest.DecodeMessage(body, ingest.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
