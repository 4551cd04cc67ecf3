package mcpd_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hindsight-dev/hindsight/bench"
)

// TestMeasureHTTP measures the tools over Streamable HTTP on the bench's
// generated corpus (bench.Generator, seed 1, about 20 messages a session),
// all of it one user's, with no embedder (so search_sessions runs full-text,
// its default there). It is a measurement, not a test: it runs only when
// HINDSIGHT_MCP_BENCH names the number of sessions, and reports
//
//   - search_sessions latency p50/p99 over HTTP at its defaults, for the
//     load bench's query mix (bench.LoadQuery), from the Go SDK client;
//
//   - each tool's output size at its defaults (text content, and the
//     structured content where the tool has one).
//
//     HINDSIGHT_MCP_BENCH=10000 go test -run TestMeasureHTTP -v -timeout 30m ./mcpd/
func TestMeasureHTTP(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HINDSIGHT_MCP_BENCH"))
	if n <= 0 {
		t.Skip("a measurement: set HINDSIGHT_MCP_BENCH=10000 (sessions) to run it")
	}
	queries := 1000
	s := newStack(t, stackOptions{})
	s.user("alice")
	gen := bench.NewGenerator(1)
	var titles []string
	start := time.Now()
	for done := 0; done < n; {
		var sessions, messages []any
		for range min(100, n-done) {
			g := gen.Session(20)
			titles = append(titles, g.Title)
			sessions = append(sessions, g)
			for _, m := range g.Messages {
				messages = append(messages, m)
			}
			done++
		}
		s.sync("alice", map[string]any{"sessions": sessions, "messages": messages})
	}
	t.Logf("ingested and indexed %d sessions in %s", n, time.Since(start).Round(time.Second))

	alice := s.connect("alice", "http")
	rng := rand.New(rand.NewPCG(2, 3))
	lat := make([]time.Duration, 0, queries)
	for i := range queries + 50 {
		_, q := bench.LoadQuery(rng, i, titles)
		t0 := time.Now()
		res := call(t, alice, "search_sessions", map[string]any{"query": q})
		if i >= 50 { // the first calls warm up caches and connections
			lat = append(lat, time.Since(t0))
		}
		if res.IsError {
			t.Fatalf("search_sessions(%q): %s", q, textOf(res))
		}
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	t.Logf("search_sessions over HTTP, %d queries at defaults (limit 10, full-text): p50 %s, p90 %s, p99 %s, max %s",
		len(lat), pct(0.50), pct(0.90), pct(0.99), lat[len(lat)-1])

	// Output sizes at the defaults.
	size := func(name string, res *mcp.CallToolResult) {
		t.Helper()
		if res.IsError {
			t.Fatalf("%s: %s", name, textOf(res))
		}
		st := 0
		if res.StructuredContent != nil {
			b, _ := json.Marshal(res.StructuredContent)
			st = len(b)
		}
		t.Logf("%-40s text %6d bytes, structured %6d bytes", name, len(textOf(res)), st)
	}
	size("search_sessions {query: login redirect}", call(t, alice, "search_sessions", map[string]any{"query": "login redirect"}))
	size("get_context {query: login redirect}", call(t, alice, "get_context", map[string]any{"query": "how did we fix the login redirect"}))
	list := call(t, alice, "list_sessions", map[string]any{})
	size("list_sessions {}", list)
	var out listOut
	structured(t, list, &out)
	var longest string
	var most int64
	for _, ss := range out.Sessions {
		if ss.Messages > most {
			longest, most = ss.ID, ss.Messages
		}
	}
	size("get_session {id: first listed}", call(t, alice, "get_session", map[string]any{"id": out.Sessions[0].ID}))
	size(fmt.Sprintf("get_session {id: %d-message session}", most), call(t, alice, "get_session", map[string]any{"id": longest}))
}
