package httpd_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/httpd"
)

// TestWriteTimeoutBoundsStallsNotResponses: behind the API's middleware the
// server's WriteTimeout limits how long one write may stall, not how long a
// response may take. A download that keeps going, with pauses longer than
// the timeout between its parts, arrives whole; a client that stops reading
// has its response cut off once a write stalls for the timeout.
func TestWriteTimeoutBoundsStallsNotResponses(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	stalled := make(chan error, 1)
	api := httpd.New(httpd.Config{Logger: zerolog.Nop()})
	r := mux.NewRouter()
	api.Install(r)
	r.HandleFunc("/test/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		for i := range 3 {
			if i > 0 {
				time.Sleep(2 * writeTimeout) // at least that long: longer than the timeout
			}
			if _, err := fmt.Fprintf(w, "part %d\n", i); err != nil {
				return
			}
			http.NewResponseController(w).Flush()
		}
	})
	r.HandleFunc("/test/big", func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for range 64 << 20 / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				stalled <- err
				return
			}
		}
		stalled <- nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api.Handler(r), WriteTimeout: writeTimeout, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/test/slow")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "part 0\npart 1\npart 2\n"; err != nil || string(body) != want {
		t.Errorf("a response with pauses longer than WriteTimeout: %q, %v; want %q", body, err, want)
	}

	// A client that asks for 64 MiB and reads none of it.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /test/big HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-stalled:
		if err == nil {
			t.Fatal("64 MiB written to a client that reads nothing")
		}
	case <-time.After(2 * time.Minute): // a bound on liveness, not a timing
		t.Fatal("a write to a client that stopped reading never timed out")
	}
	// The response is cut off: the client never sees all of it.
	br := bufio.NewReader(conn)
	n, _ := io.Copy(io.Discard, br)
	if n >= 64<<20 {
		t.Errorf("the stalled client got the whole response (%d bytes)", n)
	}
}
