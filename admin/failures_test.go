package admin

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/kv"
)

func openStore(t *testing.T, dir string) *kv.Store {
	t.Helper()
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestAdminSocketChmodFailureFailsServe: when the bound socket cannot be
// made private, Serve fails with the reason and no socket is left to
// connect to (the server then runs without it, saying so).
func TestAdminSocketChmodFailureFailsServe(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	listen := func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		// A dangling link in the socket's place: the chmod that follows
		// fails, while the rename after it would succeed, so only a chmod
		// error that is heeded fails serve.
		if err := os.Remove(addr); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, "nothing-here"), addr); err != nil {
			t.Fatal(err)
		}
		return ln, nil
	}
	stop, err := serve(dir, st, accounts.New(st, nil), bcrypt.MinCost, nil, zerolog.Nop(), listen)
	if err == nil {
		stop(context.Background())
		t.Fatal("serve succeeded although the socket could not be made private")
	}
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "admin socket") {
		t.Errorf("err = %v, want the chmod failure, naming the admin socket", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != kv.FileName {
			t.Errorf("left in the data directory: %s", e.Name())
		}
	}
}

// failingListener accepts nothing: its Accept fails at once.
type failingListener struct{ net.Listener }

var errAccept = errors.New("accept: scripted failure")

func (failingListener) Accept() (net.Conn, error) { return nil, errAccept }

// logLines hands the test each line the serving goroutine logs.
type logLines chan string

func (c logLines) Write(p []byte) (int, error) {
	c <- string(p)
	return len(p), nil
}

// TestAdminSocketServeErrorLogged: when the socket stops serving, the
// error is logged with what it means for the operator, not dropped.
func TestAdminSocketServeErrorLogged(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	logs := make(logLines, 16)
	listen := func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		return failingListener{ln}, err
	}
	stop, err := serve(dir, st, accounts.New(st, nil), bcrypt.MinCost, nil, zerolog.New(logs), listen)
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	// The bound is generous: the test asserts what is logged, not when.
	var out string
	select {
	case out = <-logs:
	case <-time.After(time.Minute):
		t.Fatal("nothing logged after the socket stopped serving")
	}
	if !strings.Contains(out, "admin socket stopped") || !strings.Contains(out, errAccept.Error()) ||
		!strings.Contains(out, filepath.Join(dir, Socket)) || !strings.Contains(out, `"level":"error"`) {
		t.Errorf("log = %q, want an error naming the socket and the accept failure", out)
	}
}
