package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
)

// TestProviderFaults takes the embedding provider down in each way a real
// one fails, while the server takes writes and answers queries, and brings
// it back: syncs are acknowledged, full-text search finds them, hybrid and
// context answer from full-text with X-Search-Degraded, semantic answers 503
// with Retry-After (the provider's, or a default), never 500; once the
// provider recovers every queued chunk is embedded and semantic search
// finds every session.
func TestProviderFaults(t *testing.T) {
	t.Parallel()
	provider := openaitest.New(t, openaitest.Options{APIKey: "sk-test"})
	r := startRig(t, config.Config{Semantic: config.Semantic{
		Embedder: "openai", OpenAIKey: "sk-test", OpenAIBaseURL: provider.URL(), OpenAIDim: 64,
		OpenAITimeout: 0.3, // the "timeout" fault answers after 3 s
	}})

	// Some sessions embedded before any fault.
	if a, _ := r.syncSessions("base", 3); a.status != http.StatusOK {
		t.Fatalf("sync: %d %s", a.status, a.body)
	}
	if took, missing := r.waitEmbedded(); missing != 0 {
		t.Fatalf("%d chunks not embedded after %s with the provider up", missing, took)
	}

	faults := []struct {
		name       string
		fault      openaitest.Fault
		retryAfter string // the 503's Retry-After
	}{
		{"provider 429 with Retry-After: 1", openaitest.RateLimited("1"), "1"},
		{"provider 429 without Retry-After", openaitest.RateLimited(""), "5"},
		{"provider 500", openaitest.ServerError(), "5"},
		{"provider timeout (no answer within the client's 0.3 s)", openaitest.Slow(3 * time.Second), "5"},
		{"provider malformed body", openaitest.Malformed(), "5"},
		{"provider wrong dimensions (32 for 64)", openaitest.WrongDim(32), "5"},
	}
	total := 3
	for i, f := range faults {
		seen := &statuses{}
		prefix := string(rune('a'+i)) + "fault"
		before := len(provider.Received())
		provider.FailAll(f.fault)

		a, _ := r.syncSessions(prefix, 3)
		seen.add("sync", a.status)
		if a.status != http.StatusOK {
			t.Fatalf("%s: sync %d %s", f.name, a.status, a.body)
		}
		total += 3
		// The background embedding meets the fault: wait for its request.
		waitFor(t, f.name+": a background embedding request", func() bool {
			for _, req := range provider.Received()[before:] {
				for _, in := range req.Input {
					if strings.Contains(in, prefix+" worker") {
						return true
					}
				}
			}
			return false
		})

		sem := r.search("semantic", "jittered backoff", 10)
		seen.add("semantic", sem.status)
		if sem.status != http.StatusServiceUnavailable || sem.header.Get("Retry-After") != f.retryAfter ||
			!strings.Contains(sem.body, `"error":"semantic_unavailable"`) || !strings.Contains(sem.body, "embedding provider") {
			t.Errorf("%s: semantic search answered %d (Retry-After %q) %s; want 503, Retry-After %s, semantic_unavailable naming the embedding provider",
				f.name, sem.status, sem.header.Get("Retry-After"), sem.body, f.retryAfter)
		}
		hyb := r.search("hybrid", "jittered backoff", 50)
		seen.add("hybrid", hyb.status)
		if hyb.status != http.StatusOK || hyb.header.Get("X-Search-Degraded") != "semantic" || !strings.Contains(hyb.body, "session base-0") {
			t.Errorf("%s: hybrid search answered %d degraded=%q %.300s; want 200 from full-text, X-Search-Degraded: semantic",
				f.name, hyb.status, hyb.header.Get("X-Search-Degraded"), hyb.body)
		}
		ctx := r.context("jittered backoff")
		seen.add("context", ctx.status)
		if ctx.status != http.StatusOK || ctx.header.Get("X-Search-Degraded") != "semantic" || !strings.Contains(ctx.body, "jittered backoff") {
			t.Errorf("%s: context answered %d degraded=%q %.300s; want 200 from full-text, X-Search-Degraded: semantic",
				f.name, ctx.status, ctx.header.Get("X-Search-Degraded"), ctx.body)
		}
		r.waitFound("flaky", total)
		seen.add("fulltext", http.StatusOK)

		provider.Recover()
		took, missing := r.waitEmbedded()
		if missing != 0 {
			t.Errorf("%s: %d chunks still not embedded %s after the provider recovered", f.name, missing, took)
		}
		// A store makes a write visible to Hashes a moment before its
		// searches see it: allow that moment.
		var after answer
		for deadline := waitDeadline(t); ; {
			after = r.search("semantic", "jittered backoff", 100)
			if after.status != http.StatusOK || strings.Count(after.body, `"title":"session `) == total || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		seen.add("semantic after", after.status)
		if after.status != http.StatusOK || strings.Count(after.body, `"title":"session `) != total {
			t.Errorf("%s: semantic search after recovery: %d, %d sessions, want 200 and all %d", f.name, after.status,
				strings.Count(after.body, `"title":"session `), total)
		}
		if n := seen.count(http.StatusInternalServerError); n > 0 {
			t.Errorf("%s: %d answers were 500", f.name, n)
		}
		report(t, f.name+" (queries and background embedding)", seen, missing, took)
	}

	// Metrics count the degraded answers by dependency; the log names the
	// dependency once per outage, not once per request.
	if n := r.metric(`hindsight_search_degraded_total{reason="embedding_provider"}`); n < float64(2*len(faults)) {
		t.Errorf("hindsight_search_degraded_total{embedding_provider} = %g, want at least %d", n, 2*len(faults))
	}
	if n := r.metric(`hindsight_semantic_unavailable_total{reason="embedding_provider"}`); n < float64(len(faults)) {
		t.Errorf("hindsight_semantic_unavailable_total{embedding_provider} = %g, want at least %d", n, len(faults))
	}
	logs := r.logs.String()
	if n := strings.Count(logs, "semantic search degraded: the embedding provider is failing"); n != len(faults) {
		t.Errorf("the outage was logged %d times, want once per outage (%d)", n, len(faults))
	}
	if n := strings.Count(logs, "semantic search recovered: the embedding provider"); n != len(faults) {
		t.Errorf("the recovery was logged %d times, want once per outage (%d)", n, len(faults))
	}
}

// waitDeadline is when a wait gives up: a minute before the test's
// deadline (go test -timeout), so that it fails naming what it waited for
// before the binary's timeout panics; a year away without a deadline. No
// wait in these tests has a shorter bound: a loaded machine takes what it
// needs.
func waitDeadline(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-time.Minute)
	}
	return time.Now().AddDate(1, 0, 0)
}

// waitFor polls cond every 20 ms until it holds, failing the test a
// minute before its deadline (go test -timeout): a loaded machine takes
// what it needs, and a hang still fails naming what it waited for.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := waitDeadline(t)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not by the test's deadline: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
