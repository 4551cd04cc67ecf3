package mcpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/httpd"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/mcpd"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/vectors"
)

var bg = context.Background()

// stack is a real Hindsight on loopback, wired as cmd/hindsight wires serve:
// records, full-text index, ingest pipeline, ranking and, with an embedder,
// an OpenAI-compatible embeddings server (openaitest) and the embedded
// vector store; the REST API and /mcp behind its authentication.
type stack struct {
	t        *testing.T
	store    *kv.Store
	pipeline *ingest.Pipeline
	acct     *accounts.Accounts
	embed    *openaitest.Server // nil without an embedder
	srv      *httptest.Server
	keys     map[string]string // user -> API key
}

type stackOptions struct {
	embedder bool
	rate     float64
	burst    int
	store    *kv.Store // replaces kvtest.Open (tests that break the store)
}

func newStack(t *testing.T, o stackOptions) *stack {
	t.Helper()
	st := o.store
	if st == nil {
		st = kvtest.Open(t)
	}
	idx, err := index.Open(filepath.Join(t.TempDir(), "index"), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	s := &stack{t: t, store: st, keys: map[string]string{}}
	var stages []ingest.Stage
	var vs ranking.VectorSearcher
	var emb ranking.Embedder
	if o.embedder {
		s.embed = openaitest.New(t, openaitest.Options{Dim: 64})
		e := vectors.NewOpenAI(vectors.OpenAIConfig{APIKey: "sk-test", BaseURL: s.embed.URL(), Model: "text-embedding-3-small", Dim: 64})
		store, err := vectors.OpenEmbedded(filepath.Join(t.TempDir(), "vectors.db"), vectors.EmbeddedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		if err := vectors.EnsureMeta(bg, store, e.Model(), e.Dim()); err != nil {
			t.Fatal(err)
		}
		stages = append(stages, ingest.NewEmbedStage(store, e, ingest.EmbedOptions{}))
		vs, emb = vectorSearcher{store}, e
	}
	s.pipeline = ingest.NewPipeline(st, idx, ingest.PipelineOptions{}, stages...)
	search := ranking.New(idx, vs, emb, ranking.Options{})
	s.acct = accounts.New(st, nil)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	api := httpd.New(httpd.Config{Auth: s.acct, Ingest: ingest.NewService(st, nil), Records: st, Search: search,
		RatePerSecond: o.rate, RateBurst: o.burst, Logger: log})
	r := mux.NewRouter()
	api.Install(r)
	r.Handle("/mcp", api.Authenticated(mcpd.Handler(st, search, httpd.UserID, log, "test")))
	s.srv = httptest.NewServer(api.Handler(r))
	t.Cleanup(s.srv.Close)
	return s
}

// vectorSearcher adapts the vector store to ranking, as serve does: a
// vector's ordinal names a window of a chunk.
type vectorSearcher struct{ store vectors.Searcher }

func (v vectorSearcher) Nearest(ctx context.Context, userID string, q []float32, k int) ([]ranking.VectorHit, error) {
	hits, err := v.store.Nearest(ctx, userID, q, k*2)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []ranking.VectorHit
	for _, h := range hits {
		ord := ingest.ChunkOfVector(h.Ordinal)
		if key := fmt.Sprint(h.SessionID, "#", ord); !seen[key] {
			seen[key] = true
			out = append(out, ranking.VectorHit{SessionID: h.SessionID, Ordinal: ord, Score: h.Score})
		}
	}
	return out[:min(k, len(out))], nil
}

// user creates a user with an API key.
func (s *stack) user(name string) string {
	s.t.Helper()
	if _, err := s.acct.CreateUser(bg, name); err != nil {
		s.t.Fatal(err)
	}
	key, _, err := s.acct.CreateKey(bg, name, "test")
	if err != nil {
		s.t.Fatal(err)
	}
	s.keys[name] = key
	return key
}

// sync posts a /sync/batch for user and indexes it.
func (s *stack) sync(user string, batch map[string]any) {
	s.t.Helper()
	body, _ := json.Marshal(batch)
	req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/sync/batch", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.keys[user])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("sync batch for %s: %d", user, resp.StatusCode)
	}
	for {
		n, err := s.pipeline.DrainOnce(bg)
		if err != nil {
			s.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func session(id, title, source, project string) map[string]any {
	return map[string]any{"externalId": id, "title": title, "source": source, "projectName": project, "projectPath": "/home/dev/" + project}
}

func text(session, id, role, content string) map[string]any {
	return map[string]any{"sessionExternalId": session, "externalId": id, "role": role, "textContent": content}
}

// sessionID returns the service id of user's session titled title.
func (s *stack) sessionID(user, title string) string {
	s.t.Helper()
	var id string
	s.store.View(bg, func(tx *kv.Tx) error {
		u, err := tx.UserByName(user)
		if err != nil {
			return err
		}
		return tx.Sessions(u.ID, func(ss kv.Session) error {
			if ss.Title == title {
				id = ss.ID
			}
			return nil
		})
	})
	if id == "" {
		s.t.Fatalf("%s has no session %q", user, title)
	}
	return id
}

// seed gives alice and bob the sessions most tests use. Both have a session
// about a login redirect; only alice's mentions the SSO callback.
func (s *stack) seed() {
	s.user("alice")
	s.user("bob")
	// One batch per session, apart in time: most recently updated is a3,
	// then a2, then a1.
	for _, b := range []map[string]any{{
		"sessions": []any{session("a1", "Fix the login redirect loop", "claude-code", "webapp")},
		"messages": []any{
			text("a1", "m1", "user", "After SSO sign in the callback sends users back to the login page forever. Fix the login redirect."),
			map[string]any{"sessionExternalId": "a1", "externalId": "m2", "role": "assistant", "parts": []any{
				map[string]any{"type": "text", "content": "I'll look at the SSO callback handler."},
				map[string]any{"type": "tool-call", "toolName": "Bash", "args": `{"command":"grep -rn redirect auth/"}`},
			}},
			map[string]any{"sessionExternalId": "a1", "externalId": "m3", "role": "tool", "parts": []any{
				map[string]any{"type": "tool-result", "toolName": "Bash", "content": "auth/callback.go:42: http.Redirect(w, r, \"/login\", 302)\n## not a heading\n```\nnot a fence end"},
			}},
			text("a1", "m4", "assistant", "Fixed: the callback redirected to /login instead of the saved return path in the state parameter."),
		},
	}, {
		"sessions": []any{session("a2", "Tune the connection pool", "opencode", "api")},
		"messages": []any{
			text("a2", "m1", "user", "The database connection pool is exhausted under load."),
			text("a2", "m2", "assistant", "Raise max open connections to 50 and set a connection lifetime."),
		},
	}, {
		"sessions": []any{session("a3", "Login page styling", "opencode", "webapp")},
		"messages": []any{text("a3", "m1", "user", "Make the login page button blue.")},
	}} {
		s.sync("alice", b)
		time.Sleep(5 * time.Millisecond)
	}
	s.sync("bob", map[string]any{
		"sessions": []any{session("b1", "Bob's login redirect secret", "claude-code", "bobsite")},
		"messages": []any{
			text("b1", "m1", "user", "login redirect broken: token bob-secret-7731 leaks in the redirect URL"),
			text("b1", "m2", "assistant", "Strip the token from the redirect URL."),
		},
	})
}

// bearer adds an API key to every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// transports are the two ways a client reaches the tools: Streamable HTTP at
// /mcp, and stdio (hindsight mcp's ServeStdio over the REST API), here over
// pipes.
var transports = []string{"http", "stdio"}

// connect returns a Go SDK client session for user over transport.
func (s *stack) connect(user, transport string) *mcp.ClientSession {
	s.t.Helper()
	return s.connectKey(s.keys[user], transport)
}

func (s *stack) connectKey(key, transport string) *mcp.ClientSession {
	s.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpd-test", Version: "v0"}, nil)
	var tr mcp.Transport
	switch transport {
	case "http":
		tr = &mcp.StreamableClientTransport{Endpoint: s.srv.URL + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}}
	case "stdio":
		tr = s.stdio(key)
	default:
		s.t.Fatalf("unknown transport %q", transport)
	}
	cs, err := client.Connect(bg, tr, nil)
	if err != nil {
		s.t.Fatalf("connect over %s: %v", transport, err)
	}
	s.t.Cleanup(func() { cs.Close() })
	return cs
}

// stdio runs ServeStdio with a Remote backend on pipes and returns the
// client's end.
func (s *stack) stdio(key string) mcp.Transport {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		done <- mcpd.ServeStdio(ctx, mcpd.NewRemote(s.srv.URL, key, http.DefaultClient), sr, sw, zerolog.Nop(), "test")
	}()
	s.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			s.t.Errorf("ServeStdio: %v", err)
		}
	})
	return &mcp.IOTransport{Reader: cr, Writer: cw}
}

// call calls a tool and returns its result; a protocol error fails the test.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(bg, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", tool, args, err)
	}
	return res
}

// textOf joins a result's text content.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured decodes a result's structured content into out.
func structured(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}
