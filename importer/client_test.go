package importer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/api"
)

// scripted answers each request with the next of its responses (the last one
// repeats) and counts requests. It is the one fault-injecting boundary these
// tests need: the server's own behaviour is tested against the real server in
// cmd/hindsight.
type scripted struct {
	mu    sync.Mutex
	steps []func(w http.ResponseWriter)
	n     int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	step := s.steps[min(s.n, len(s.steps)-1)]
	s.n++
	s.mu.Unlock()
	step(w)
}

func status(code int, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		if code >= 400 {
			w.Write([]byte(`{"error":"` + http.StatusText(code) + `","message":"scripted"}`))
			return
		}
		w.Write([]byte(`{"ok":true,"sessionId":"s1"}`))
	}
}

// testClient returns a client for srv whose waits are recorded, not slept.
func testClient(url string, waits *[]time.Duration) *Client {
	return &Client{URL: url, Key: "osk_test", Retry: Backoff{Attempts: 4, Base: 100 * time.Millisecond, Max: time.Second},
		sleep: func(ctx context.Context, d time.Duration) error {
			*waits = append(*waits, d)
			return ctx.Err()
		}}
}

func TestImportClientRetries(t *testing.T) {
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name      string
		steps     []func(http.ResponseWriter)
		requests  int
		waits     []time.Duration // exact waits; nil means "backoff range" (see below)
		backoff   int             // number of backoff waits to check against their range
		wantErr   string
		wantAuth  bool
		wantRetry bool
	}{
		{name: "5xx then success", steps: []func(http.ResponseWriter){status(503), status(502), status(200)}, requests: 3, backoff: 2},
		{name: "429 honours Retry-After seconds", steps: []func(http.ResponseWriter){status(429, "Retry-After", "7"), status(200)}, requests: 2, waits: []time.Duration{7 * time.Second}},
		{name: "Retry-After as a date", steps: []func(http.ResponseWriter){status(503, "Retry-After", date), status(200)}, requests: 2, backoff: 0},
		{name: "400 is not retried", steps: []func(http.ResponseWriter){status(400)}, requests: 1, wantErr: "POST /sync/session: 400 Bad Request: scripted"},
		{name: "401 is not retried", steps: []func(http.ResponseWriter){status(401)}, requests: 1, wantErr: "401", wantAuth: true},
		{name: "gives up", steps: []func(http.ResponseWriter){status(500)}, requests: 4, backoff: 3, wantErr: "gave up after 4 attempts: POST /sync/session: 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{steps: tc.steps}
			srv := httptest.NewServer(s)
			defer srv.Close()
			var waits []time.Duration
			c := testClient(srv.URL, &waits)
			_, err := c.postSession(context.Background(), api.SyncSession{ExternalID: new("x"), Source: new("claude-code")})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if Unauthorized(err) != tc.wantAuth {
				t.Errorf("Unauthorized(%v) = %v", err, !tc.wantAuth)
			}
			if s.n != tc.requests {
				t.Errorf("%d requests, want %d", s.n, tc.requests)
			}
			if tc.waits != nil && asString(waits) != asString(tc.waits) {
				t.Errorf("waits %v, want %v", waits, tc.waits)
			}
			if tc.name == "Retry-After as a date" && (len(waits) != 1 || waits[0] < 25*time.Second || waits[0] > 30*time.Second) {
				t.Errorf("waits %v, want about 30 s", waits)
			}
			// Backoff n waits between half and all of 100 ms·2ⁿ⁻¹, capped at 1 s.
			for i := 0; i < tc.backoff; i++ {
				hi := min(100*time.Millisecond<<i, time.Second)
				if i >= len(waits) || waits[i] < hi/2 || waits[i] > hi {
					t.Errorf("wait %d = %v, want in [%v, %v] (all: %v)", i+1, waits, hi/2, hi, waits)
				}
			}
		})
	}
}

func asString(ds []time.Duration) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String() + " ")
	}
	return b.String()
}

func TestImportClientRetriesNetworkErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	var waits []time.Duration
	c := testClient(url, &waits)
	err := c.postMessage(context.Background(), []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "gave up after 4 attempts") || len(waits) != 3 {
		t.Fatalf("err = %v after %d waits; want 4 attempts", err, len(waits))
	}
}

func TestImportClientStopsWaitingWhenCancelled(t *testing.T) {
	// An hour's Retry-After: a client that did not stop waiting at the
	// deadline would hang until go test's -timeout, so no clock is read.
	srv := httptest.NewServer(&scripted{steps: []func(http.ResponseWriter){status(429, "Retry-After", "3600")}})
	defer srv.Close()
	c := &Client{URL: srv.URL, Key: "osk_test"}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.postSession(ctx, api.SyncSession{ExternalID: new("x")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v; want the deadline", err)
	}
}

func TestImportBackoffWait(t *testing.T) {
	b := Backoff{}.withDefaults()
	if b.Attempts != 6 || b.Base != 500*time.Millisecond || b.Max != 30*time.Second {
		t.Fatalf("defaults = %+v", b)
	}
	for round := range 50 {
		sched := b.schedule()
		for n := 1; n < 40; n++ {
			d := wait(sched, 0)
			hi := min(b.Base<<min(n-1, 20), b.Max)
			if d < hi/2 || d > hi {
				t.Fatalf("round %d: wait %d = %v, want in [%v, %v]", round, n, d, hi/2, hi)
			}
		}
	}
	if d := wait(b.schedule(), time.Hour); d != maxRetryAfter {
		t.Errorf("a Retry-After of an hour waits %v, want the %v cap", d, maxRetryAfter)
	}
}
