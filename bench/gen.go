package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/hindsight-dev/hindsight/api"
)

// Generator makes realistic coding-assistant sessions, deterministically: the
// same seed gives the same sessions, byte for byte. Sessions mix prompts,
// prose answers, code blocks, stack traces and tool calls, with a long tail of
// long sessions, the way real plugin traffic looks.
type Generator struct {
	rng  *rand.Rand
	seed uint64
	n    int
}

// NewGenerator returns a generator for seed.
func NewGenerator(seed uint64) *Generator {
	return &Generator{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), seed: seed}
}

// GenMessage is one generated message. It encodes as the api.SyncMessage
// plugins send.
type GenMessage struct {
	ExternalID  string
	SessionExt  string
	Role        string
	TextContent string           // "" when the message has parts
	Parts       []map[string]any // each a part object as sent
	Model       string
}

// MarshalJSON encodes m as a message write.
func (m GenMessage) MarshalJSON() ([]byte, error) {
	p := api.SyncMessage{ExternalID: &m.ExternalID, SessionExternalID: &m.SessionExt, Role: &m.Role,
		TextContent: nonEmpty(m.TextContent), Model: nonEmpty(m.Model)}
	for _, part := range m.Parts {
		b, err := json.Marshal(part)
		if err != nil {
			return nil, err
		}
		p.Parts = append(p.Parts, b)
	}
	return json.Marshal(p)
}

// GenSession is one generated session with its messages. It encodes as the
// api.SyncSession plugins send, without the messages.
type GenSession struct {
	ExternalID       string
	Source           string
	Title            string
	Model            string
	ProjectPath      string
	ProjectName      string
	PromptTokens     int
	CompletionTokens int
	Cost             float64
	Messages         []GenMessage
}

// MarshalJSON encodes s as a session write.
func (s GenSession) MarshalJSON() ([]byte, error) {
	return json.Marshal(api.SyncSession{ExternalID: &s.ExternalID, Source: &s.Source, Title: &s.Title, Model: &s.Model,
		ProjectPath: &s.ProjectPath, ProjectName: &s.ProjectName, PromptTokens: new(float64(s.PromptTokens)),
		CompletionTokens: new(float64(s.CompletionTokens)), Cost: &s.Cost})
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

var (
	genSources  = []string{"claude-code", "opencode", "codex-cli", "cursor", "pi", "factory-droid"}
	genModels   = []string{"claude-sonnet-4-20250514", "gpt-5-codex", "claude-opus-4-1", "gemini-2.5-pro", "o4-mini"}
	genProjects = []string{"billing-api", "web-dashboard", "ingest-worker", "auth-service", "cli-tools", "search-infra", "mobile-app", "data-pipeline"}
	genTopics   = []struct{ area, thing string }{
		{"auth", "login redirect"}, {"database", "connection pool"}, {"cache", "stale entries"},
		{"parser", "unicode escapes"}, {"scheduler", "retry backoff"}, {"http", "timeout handling"},
		{"build", "flaky integration test"}, {"config", "environment overrides"}, {"queue", "duplicate delivery"},
		{"search", "ranking regression"}, {"payments", "currency rounding"}, {"metrics", "histogram buckets"},
		{"migrations", "column rename"}, {"websocket", "reconnect storm"}, {"storage", "file handle leak"},
		{"logging", "request id propagation"}, {"cli", "flag parsing"}, {"deploy", "rollback script"},
	}
	genVerbs  = []string{"Fix", "Debug", "Refactor", "Add tests for", "Speed up", "Document", "Investigate", "Clean up"}
	genIdents = []string{"parseConfigFile", "retry_with_backoff", "UserSessionStore", "handleWebhook", "buildIndexBatch", "normalize_path", "TokenBucket", "flushPending", "load_fixtures", "ConnPool.acquire"}
	genErrors = []string{"panic: assignment to entry in nil map", "TypeError: Cannot read properties of undefined (reading 'id')", "segmentation fault (core dumped)", "context deadline exceeded", "ECONNREFUSED 127.0.0.1:5432", "IndexError: list index out of range", "deadlock detected"}
	genWords  = strings.Fields("the a function returns when we call it after request handler value error test case file module package config because so then check update change value should would could might first next also only still before after inside around through")
	genTools  = []string{"Bash", "Read", "Edit", "Grep", "Write", "WebFetch"}
	genLangs  = []string{"go", "python", "typescript", "rust", "sql"}
)

func (g *Generator) pick(xs []string) string { return xs[g.rng.IntN(len(xs))] }

func (g *Generator) sentence(min, max int) string {
	n := min + g.rng.IntN(max-min+1)
	w := make([]string, n)
	for i := range w {
		if g.rng.IntN(12) == 0 {
			w[i] = g.pick(genIdents)
		} else {
			w[i] = g.pick(genWords)
		}
	}
	s := strings.Join(w, " ")
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

func (g *Generator) code() string {
	lang := g.pick(genLangs)
	var b strings.Builder
	fmt.Fprintf(&b, "```%s\n", lang)
	for i := 0; i < 3+g.rng.IntN(12); i++ {
		fmt.Fprintf(&b, "%sif err := %s(ctx, %d); err != nil {\n\treturn err\n}\n", strings.Repeat("\t", g.rng.IntN(2)), g.pick(genIdents), g.rng.IntN(100))
	}
	b.WriteString("```")
	return b.String()
}

func (g *Generator) trace() string {
	var b strings.Builder
	b.WriteString(g.pick(genErrors) + "\n")
	for i := 0; i < 3+g.rng.IntN(6); i++ {
		fmt.Fprintf(&b, "    at %s (src/%s/%s.go:%d)\n", g.pick(genIdents), g.pick(genProjects), strings.ToLower(g.pick(genIdents)), 10+g.rng.IntN(400))
	}
	return b.String()
}

// messageCount draws a session length: mostly short, a long tail of long ones.
func (g *Generator) messageCount(mean int) int {
	if mean <= 0 {
		mean = 20
	}
	n := int(g.rng.ExpFloat64() * float64(mean))
	return max(2, min(n, mean*10))
}

// Session generates the next session with about meanMessages messages (the
// exact count is drawn from a long-tailed distribution; 0 means 20).
func (g *Generator) Session(meanMessages int) GenSession {
	return g.SessionN(g.messageCount(meanMessages))
}

// SessionN generates the next session with exactly n messages.
func (g *Generator) SessionN(n int) GenSession {
	g.n++
	topic := genTopics[g.rng.IntN(len(genTopics))]
	project := g.pick(genProjects)
	s := GenSession{
		ExternalID:  fmt.Sprintf("gen-%d-%06d", g.seed, g.n),
		Source:      g.pick(genSources),
		Title:       fmt.Sprintf("%s %s %s in %s", g.pick(genVerbs), topic.area, topic.thing, project),
		Model:       g.pick(genModels),
		ProjectPath: "/home/dev/src/" + project,
		ProjectName: project,
	}
	for i := 0; i < n; i++ {
		m := GenMessage{ExternalID: fmt.Sprintf("%s-m%04d", s.ExternalID, i), SessionExt: s.ExternalID}
		switch {
		case i%2 == 0:
			m.Role = "user"
			text := fmt.Sprintf("%s the %s %s. %s", g.pick(genVerbs), topic.area, topic.thing, g.sentence(6, 30))
			if g.rng.IntN(4) == 0 {
				text += "\n\n" + g.trace()
			}
			m.TextContent = text
		case g.rng.IntN(3) == 0:
			m.Role = "assistant"
			tool := g.pick(genTools)
			m.Parts = []map[string]any{
				{"type": "tool-call", "toolName": tool, "args": fmt.Sprintf(`{"command":"go test ./%s/..."}`, strings.ToLower(topic.area))},
				{"type": "tool-result", "toolName": tool, "content": g.trace()},
			}
		default:
			m.Role = "assistant"
			text := g.sentence(10, 60)
			if g.rng.IntN(2) == 0 {
				text += "\n\n" + g.code()
			}
			m.Parts = []map[string]any{{"type": "text", "content": text}}
			m.Model = s.Model
		}
		s.Messages = append(s.Messages, m)
	}
	s.PromptTokens = 200 * n
	s.CompletionTokens = 80 * n
	s.Cost = float64(s.PromptTokens)*3e-6 + float64(s.CompletionTokens)*15e-6
	return s
}
