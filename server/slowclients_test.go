package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
)

// TestSlowClients runs the server as serve does (Run, its http.Server and
// timeouts, shortened here) against slow clients: 200 slow-loris
// connections trickling headers do not stop it answering a normal client,
// and the server closes them itself; a body trickled past the request
// timeout is a 408, not a server error. Waits are bounds on liveness, not
// timings.
func TestSlowClients(t *testing.T) {
	cfg := config.Default()
	cfg.Data = t.TempDir()
	cfg.Semantic.Embedder = "none"
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	// serve's own limits are all set; the test shortens them.
	if d := s.timeouts; d.header <= 0 || d.request <= 0 || d.idle <= 0 || d.write <= 0 {
		t.Errorf("serve's http.Server leaves a slow-client limit unset: %+v", d)
	}
	s.timeouts = httpTimeouts{header: time.Second, request: 2 * time.Second, idle: 2 * time.Second, write: 2 * time.Second}
	if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	runDone := make(chan error, 1)
	go func() { runDone <- s.Run(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Error(err)
		}
	}()

	// 200 slow-loris connections: a request line, then a header byte now
	// and then, never the blank line.
	const slow = 200
	var started, closed sync.WaitGroup
	var closedByServer atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	for range slow {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		started.Add(1)
		closed.Add(1)
		go func() {
			defer closed.Done()
			fmt.Fprintf(conn, "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
			started.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := conn.Write([]byte("a")); err != nil {
					closedByServer.Add(1)
					return
				}
			}
		}()
		go func() {
			// The server closing the connection ends this read.
			if _, err := io.Copy(io.Discard, conn); !errors.Is(err, net.ErrClosed) {
				conn.Close() // makes the writer above fail at once
			}
		}()
	}
	started.Wait()

	client := &http.Client{Timeout: time.Minute}
	do := func(method, path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s while slow clients hold connections: %v", method, path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/health", ""},
		{"POST", "/sync/session", `{"externalId":"s1","title":"answered"}`},
		{"GET", "/api/sessions", ""},
	} {
		if st := do(c.method, c.path, c.body); st != http.StatusOK {
			t.Errorf("%s %s: %d with 200 slow clients connected", c.method, c.path, st)
		}
	}

	// The server itself ends every slow-loris connection.
	waited := make(chan struct{})
	go func() { closed.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("only %d of %d slow-loris connections were closed by the server", closedByServer.Load(), slow)
	}
	if n := closedByServer.Load(); n != slow {
		t.Errorf("%d of %d slow-loris connections closed by the server", n, slow)
	}

	// A body trickled past the request timeout: 408.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"externalId":"s2","title":"never finished"}`
	fmt.Fprintf(conn, "POST /sync/session HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", key, len(body))
	go func() {
		for i := range len(body) - 1 {
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("slow body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("slow body: status %d, want 408", resp.StatusCode)
	}
	code, metrics := get(t, "http://"+addr+"/metrics", "")
	if code != http.StatusOK || !strings.Contains(metrics, `status="408"`) || strings.Contains(metrics, `status="500"`) {
		t.Errorf("metrics after slow clients (want a 408, no 500):\n%s", grepLines(metrics, "hindsight_http_requests_total"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
