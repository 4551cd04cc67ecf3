package httpd_test

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/httpd"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
)

// observed collects what the API reports to metrics.
type observed struct {
	mu       sync.Mutex
	statuses map[int]int
	n        int
}

func (o *observed) observe(route, method string, status int, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.statuses[status]++
	o.n++
}

func (o *observed) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// TestAbandonedUploadIsAClientDisconnect: a client that sends half a body
// and hangs up is counted and logged as a client disconnect (499), never as
// a server error: no 500 in the metrics, nothing at error level in the log.
func TestAbandonedUploadIsAClientDisconnect(t *testing.T) {
	st := kvtest.Open(t)
	acct := accounts.New(st, nil)
	if _, err := acct.CreateUser(bg, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := acct.CreateKey(bg, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	obs := &observed{statuses: map[int]int{}}
	api := httpd.New(httpd.Config{Auth: acct, Ingest: ingest.NewService(st, nil), Records: st,
		Logger: zerolog.New(logs).Level(zerolog.InfoLevel), Observe: obs.observe})
	r := mux.NewRouter()
	api.Install(r)
	srv := httptest.NewServer(api.Handler(r))
	defer srv.Close()

	body := `{"sessions":[{"externalId":"s1","title":"` + strings.Repeat("x", 20000) + `"}],"messages":[]}`
	const n = 40
	for i := range n {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		path := []string{"/sync/batch", "/sync/session", "/sync/message"}[i%3]
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n", path, key)
		if i%2 == 0 {
			fmt.Fprintf(conn, "%sContent-Length: %d\r\n\r\n%s", head, len(body), body[:len(body)/2])
		} else {
			fmt.Fprintf(conn, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s", head, len(body), body[:len(body)/2])
		}
		conn.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, conn) // whatever the server answers, if it does
		conn.Close()
	}
	// A bound on liveness, not a timing: every request ends up observed.
	deadline := time.Now().Add(2 * time.Minute)
	for obs.count() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.n != n || obs.statuses[499] != n {
		t.Errorf("abandoned uploads counted as %v, want %d x 499", obs.statuses, n)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"level":"error"`) {
			t.Errorf("abandoned upload logged as an error: %s", line)
		}
	}
	if !strings.Contains(logs.String(), `"status":499`) {
		t.Errorf("no access log line with status 499:\n%s", logs.String())
	}
}
