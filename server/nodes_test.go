package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
)

// waitReady polls a node's /ready until it answers 200.
func waitReady(t *testing.T, base string) {
	t.Helper()
	waitFor(t, base+" ready", func() bool {
		code, _ := get(t, base+"/ready", "")
		return code == http.StatusOK
	})
}

// TestNodesIndexOnce: three nodes over one PostgreSQL and one Weaviate
// text index take writes at once; every session becomes searchable from
// every node, and across the nodes each session's write is indexed once
// (the nodes claim outbox entries, so no two index the same one).
func TestNodesIndexOnce(t *testing.T) {
	wv := weaviatetest.Start(t)
	ctx := context.Background()
	cfg := config.Config{Records: pgtest.Database(t), TextIndex: TextWeaviate, WeaviateReplication: 1,
		Semantic: config.Semantic{Embedder: "none", WeaviateURL: wv.URL}}
	var nodes []*Server
	var urls []string
	for i := range 3 {
		s, srv := startWith(t, cfg) // each its own data directory
		waitReady(t, srv.URL)
		nodes, urls = append(nodes, s), append(urls, srv.URL)
		if i == 0 {
			if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
				t.Fatal(err)
			}
		}
	}
	key, _, err := nodes[0].Accounts.CreateKey(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	before := make([]uint64, len(nodes)) // what starting (an index rebuild of no sessions) counted
	for i, s := range nodes {
		before[i] = s.Pipeline.Status().Indexed
	}

	// Writes arrive at every node at once, so every node's indexer wakes
	// and reads the same outbox.
	const n = 60
	var wg sync.WaitGroup
	for w := range len(nodes) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += len(nodes) {
				syncOne(t, urls[w], key, fmt.Sprintf("s%02d", i), fmt.Sprintf("Session %02d", i), fmt.Sprintf("walrus%02d harbour", i))
			}
		}()
	}
	wg.Wait()
	for _, s := range nodes {
		if err := s.Pipeline.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var total uint64
	for i, s := range nodes {
		took := s.Pipeline.Status().Indexed - before[i]
		t.Logf("node %d (%s) indexed %d sessions", i, s.Store.Node(), took)
		total += took
	}
	if total != n {
		t.Errorf("the nodes indexed %d sessions in all, want each of the %d written once", total, n)
	}
	// Each session is found from a node other than the one it was written to.
	for i := range n {
		node := (i + 1) % len(nodes)
		waitSearch(t, urls[node], key, fmt.Sprintf("walrus%02d", i), fmt.Sprintf("Session %02d", i))
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestNodesShareDashboardSignIn: a dashboard sign-in on one node is
// honoured by another over the same PostgreSQL (the web sessions are
// records), and signing out on the second ends it on the first.
func TestNodesShareDashboardSignIn(t *testing.T) {
	ctx := context.Background()
	cfg := config.Config{Records: pgtest.Database(t), BcryptCost: 4, Semantic: config.Semantic{Embedder: "none"}}
	a, srvA := startWith(t, cfg)
	_, srvB := startWith(t, cfg)
	if _, err := accounts.NewWeb(a.Store, accounts.WebOptions{BcryptCost: 4}).CreateUserWithPassword(ctx, "alice", "alice-password"); err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, u string, form url.Values, cookies ...*http.Cookie) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, u, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	cookie := func(resp *http.Response, name string) *http.Cookie {
		t.Helper()
		for _, c := range resp.Cookies() {
			if c.Name == name && c.Value != "" {
				return c
			}
		}
		t.Fatalf("%s %s: no %s cookie", resp.Request.Method, resp.Request.URL.Path, name)
		return nil
	}

	// Sign in on node A.
	resp, page := do(http.MethodGet, srvA.URL+"/login", nil)
	m := csrfField.FindStringSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("GET /login: %d, csrf field found %v", resp.StatusCode, m != nil)
	}
	resp, _ = do(http.MethodPost, srvA.URL+"/login", url.Values{"name": {"alice"}, "password": {"alice-password"}, "csrf": {m[1]}},
		cookie(resp, "hindsight_csrf"))
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		t.Fatalf("POST /login on node A: %d, want a redirect", resp.StatusCode)
	}
	signedIn := cookie(resp, "hindsight_session")

	// Node B honours it.
	resp, page = do(http.MethodGet, srvB.URL+"/sessions", nil, signedIn)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /sessions on node B with node A's sign-in: %d (Location %q), want the page", resp.StatusCode, resp.Header.Get("Location"))
	}
	m = csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("node B's page has no csrf field for signing out")
	}
	// Signing out on node B ends the session on node A too.
	resp, _ = do(http.MethodPost, srvB.URL+"/logout", url.Values{"csrf": {m[1]}}, signedIn)
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		t.Fatalf("POST /logout on node B: %d, want a redirect", resp.StatusCode)
	}
	resp, _ = do(http.MethodGet, srvA.URL+"/sessions", nil, signedIn)
	if loc := resp.Header.Get("Location"); resp.StatusCode == http.StatusOK || !strings.Contains(loc, "/login") {
		t.Errorf("GET /sessions on node A after signing out on node B: %d (Location %q), want a redirect to /login", resp.StatusCode, loc)
	}
}
