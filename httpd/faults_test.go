package httpd_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/ingest"
)

// TestPanicInsideAWrite: a panic in the write transaction (here in the
// ingest clock it calls) fails that request with a 500 naming the request
// id, is logged with its stack, rolls the write back, and the server keeps
// serving, the same write included once the fault is gone.
func TestPanicInsideAWrite(t *testing.T) {
	var fault atomic.Bool
	clock := &tickingClock{}
	a := newApp(t, options{ingestNow: func() time.Time {
		if fault.Load() {
			panic("injected fault in a write")
		}
		return clock.Now()
	}})
	key := a.user("ann")
	a.batch(key, `{"sessions":[{"externalId":"s","title":"keep"}]}`)
	before := a.snapshot()

	fault.Store(true)
	r := a.req("POST", "/sync/session", key, `{"externalId":"t","title":"lost to a panic"}`)
	checkError(t, r, http.StatusInternalServerError, "Internal Server Error", "request id")
	id := r.header.Get("X-Request-Id")
	if !strings.Contains(string(r.body), id) {
		t.Errorf("500 body %s does not name the request id %s", r.body, id)
	}
	if strings.Contains(string(r.body), "injected") || strings.Contains(string(r.body), "goroutine") {
		t.Errorf("500 body leaks the panic: %s", r.body)
	}
	logs := a.logs.String()
	if !strings.Contains(logs, `"request_id":"`+id+`"`) || !strings.Contains(logs, "write panicked") ||
		!strings.Contains(logs, "injected fault in a write") || !strings.Contains(logs, `"stack":`) {
		t.Errorf("the panic was not logged with its request id, value and stack; log:\n%s", logs)
	}
	if after := a.snapshot(); after != before {
		t.Errorf("the panicking write changed the store:\nbefore %s\nafter  %s", before, after)
	}

	fault.Store(false)
	if r := a.req("POST", "/sync/session", key, `{"externalId":"t","title":"after the panic"}`); r.status != http.StatusOK {
		t.Fatalf("the same write after the fault: %d %s", r.status, r.body)
	}
	if r := a.req("GET", "/api/sessions", key, nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "after the panic") {
		t.Errorf("reads after the panic: %d %s", r.status, r.body)
	}
	report(t, "panic inside a write (the commit callback)", "sync 500×1 with the request id; the same sync after 200×1; reads 200", "0 (rolled back, nothing acknowledged)", "the next request")
}

// report appends a row to the fault table (see server/faults_test.go) in
// $HINDSIGHT_FAULT_REPORT when set.
func report(t *testing.T, fault, seen, lost, recovered string) {
	t.Helper()
	row := fmt.Sprintf("| %s | %s | %s | %s |\n", fault, seen, lost, recovered)
	t.Logf("fault table row: %s", strings.TrimSpace(row))
	if path := os.Getenv("HINDSIGHT_FAULT_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("fault report: %v", err)
			return
		}
		defer f.Close()
		f.WriteString(row)
	}
}

// TestPanicInsideAHandlerLogsItsStack: a panic while handling a request
// (here in authentication) is a 500 with the request id, logged with its
// stack, and the next request is served.
func TestPanicInsideAHandlerLogsItsStack(t *testing.T) {
	a := newApp(t, options{auth: panicAuth{}})
	r := a.req("GET", "/api/sessions", "osk_x", nil)
	checkError(t, r, http.StatusInternalServerError, "Internal Server Error", "request id "+r.header.Get("X-Request-Id"))
	if logs := a.logs.String(); !strings.Contains(logs, "handler panicked") || !strings.Contains(logs, `"stack":`) || !strings.Contains(logs, "panicAuth") {
		t.Errorf("the panic was not logged with its stack; log:\n%s", logs)
	}
	if r := a.req("GET", "/health", "", nil); r.status != http.StatusOK {
		t.Errorf("health after the panic: %d", r.status)
	}
	report(t, "panic inside request handling", "500×1 with the request id; the next request 200×1", "0", "the next request")
}

// TestUnboundedInputIsBounded: what only the body size used to bound.
func TestUnboundedInputIsBounded(t *testing.T) {
	const msg = `"sessionExternalId":"s","externalId":"m","role":"user"`
	parts := func(n int, part string) string {
		return `[` + strings.Repeat(part+`,`, n-1) + part + `]`
	}
	t.Run("parts over the cap", func(t *testing.T) {
		a := newApp(t, options{limits: ingest.Limits{MaxParts: 3}})
		key := a.user("ann")
		before := a.snapshot()
		r := a.req("POST", "/sync/message", key, `{`+msg+`,"parts":`+parts(4, `{"type":"text","content":"x"}`)+`}`)
		checkError(t, r, http.StatusBadRequest, "Bad Request", "parts has 4 entries; the limit is 3 per message")
		r = a.req("POST", "/sync/batch", key, `{"messages":[{`+msg+`,"parts":`+parts(4, `{}`)+`}]}`)
		if r.status != http.StatusOK || !strings.Contains(string(r.body), "parts has 4 entries") {
			t.Errorf("a batch entry over the parts cap: %d %s; want its error in the batch's errors", r.status, r.body)
		}
		if after := a.snapshot(); after != before {
			t.Errorf("rejected parts changed the store")
		}
		if r := a.req("POST", "/sync/message", key, `{`+msg+`,"parts":`+parts(3, `{"type":"text","content":"x"}`)+`}`); r.status != http.StatusOK {
			t.Errorf("parts at the cap: %d %s", r.status, r.body)
		}
	})
	t.Run("a huge parts array", func(t *testing.T) {
		a := newApp(t, options{})
		key := a.user("ann")
		// 500,000 parts in 8 MiB: under the body limit, far over the cap.
		r := a.req("POST", "/sync/message", key, `{`+msg+`,"parts":`+parts(500_000, `{"type":"t"}`)+`}`)
		checkError(t, r, http.StatusBadRequest, "Bad Request", "parts has 500000 entries; the limit is 1000 per message")
	})
	t.Run("a batch of 10,000 entries each at the cap", func(t *testing.T) {
		if testing.Short() {
			t.Skip("10,000 entries: not in -short")
		}
		// A cap of 10 (100,000 parts, 3 MiB) keeps the test fast under
		// -race; the default cap only moves the bound to the body size.
		a := newApp(t, options{limits: ingest.Limits{MaxParts: 10}})
		key := a.user("ann")
		var b strings.Builder
		b.WriteString(`{"messages":[`)
		for i := range 10_000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"sessionExternalId":"s%d","externalId":"m%d","role":"user","parts":%s}`, i%100, i, parts(10, `{"type":"text","content":"p"}`))
		}
		b.WriteString(`]}`)
		r := a.req("POST", "/sync/batch", key, b.String())
		if r.status != http.StatusOK {
			t.Fatalf("batch of 10,000 entries at the cap: %d %.300s", r.status, r.body)
		}
		if got := r.json(t)["messages"]; fmt.Sprint(got) != "map[inserted:10000 updated:0]" {
			t.Errorf("batch counts %v", got)
		}
	})
	t.Run("deeply nested JSON in content", func(t *testing.T) {
		a := newApp(t, options{})
		key := a.user("ann")
		a.batch(key, `{"sessions":[{"externalId":"s","title":"keep"}]}`)
		before := a.snapshot()
		nest := func(depth int) string { return strings.Repeat(`[`, depth) + strings.Repeat(`]`, depth) }
		// Past the decoder's depth limit (10,000): the whole body is refused.
		deep := nest(200_000)
		for _, part := range []string{
			`{"type":"text","content":` + deep + `}`,
			`{"type":"text","content":{"text":` + deep + `}}`,
			`{"type":"tool-call","content":{"toolName":"Bash","args":` + deep + `}}`,
			`{"type":"thinking","content":` + deep + `}`,
		} {
			r := a.req("POST", "/sync/message", key, `{`+msg+`,"parts":[`+part+`]}`)
			checkError(t, r, http.StatusBadRequest, "Bad Request", "exceeded max depth")
		}
		r := a.req("POST", "/sync/message", key, `{`+msg+`,"textContent":"x","extra":`+deep+`}`)
		checkError(t, r, http.StatusBadRequest, "Bad Request", "exceeded max depth")
		r = a.req("POST", "/sync/message", key, `{`+msg+`,"parts":[{"type":"text","content":`+nest(9000)+`}]}`)
		checkError(t, r, http.StatusBadRequest, "Bad Request", "parts[0]")
		if after := a.snapshot(); after != before {
			t.Errorf("rejected nesting changed the store")
		}
		// Under the limit, a part of an unknown type is kept as sent; every
		// read of it still answers.
		r = a.req("POST", "/sync/message", key, `{`+msg+`,"parts":[{"type":"thinking","content":`+nest(9000)+`},{"type":"text","content":"after"}]}`)
		if r.status != http.StatusOK {
			t.Fatalf("nesting under the limit in a thinking part: %d %.300s", r.status, r.body)
		}
		list := a.req("GET", "/api/sessions", key, nil).json(t)
		id := fmt.Sprint(list["sessions"].([]any)[0].(map[string]any)["id"])
		for _, path := range []string{"/api/sessions/get?id=" + id, "/api/export?id=" + id, "/api/export?format=markdown&id=" + id} {
			if r := a.req("GET", path, key, nil); r.status != http.StatusOK {
				t.Errorf("GET %s: %d %.300s", path, r.status, r.body)
			}
		}
	})
}
