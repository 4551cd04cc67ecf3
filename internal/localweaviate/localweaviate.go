// Package localweaviate runs a weaviate-server on this machine for the
// benchmarks and tests: the pinned binary (scripts/weaviate.sh), a data
// directory the caller gives, and nothing reachable from outside the
// machine. [Launch] starts it and [Server.Stop] stops it. The tests' helpers
// (a shared server per test package, skipping without a binary) are in
// package weaviatetest, which wraps this one; this package does not import
// testing, so a binary (hindsight-bench) can link it.
//
// # Finding the binary
//
// [Binary] looks at HINDSIGHT_WEAVIATE_BIN, then at the path
// `scripts/weaviate.sh path` prints (the pinned version in GOPATH/bin, built
// by `make weaviate`).
//
// # Network isolation
//
// weaviate-server v1.35.2 binds its REST API where told, but its gRPC server,
// its internal cluster API and its profiler listen on every interface (the
// address is hard-coded as ":port"). So that nothing it opens is reachable
// from the network, and so that parallel test packages never compete for its
// fixed ports, Launch runs it in a network namespace of its own (`unshare
// --map-root-user --net`, loopback brought up with `ip link set lo up`) with
// the REST API on a unix socket in the data directory, and serves that socket
// on 127.0.0.1 through a small in-process TCP proxy: [Server.URL] is a plain
// http://127.0.0.1:port URL. gRPC is then unreachable ([Server.GRPCAddr] is
// empty); the stores fall back to REST batches.
//
// Where unprivileged namespaces are not available (unshare or ip missing, or
// the kernel refuses), Launch starts the server directly with every port
// chosen free and the REST API on 127.0.0.1, turns the profiler off, and
// says in the server log that gRPC and the cluster API listen on all
// interfaces.
package localweaviate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvBinary names the environment variable Binary reads: the path of
// weaviate-server.
const EnvBinary = "HINDSIGHT_WEAVIATE_BIN"

// ErrNoBinary: no weaviate-server was found.
var ErrNoBinary = errors.New("no weaviate-server binary: set " + EnvBinary + " or run `make weaviate` (bash scripts/weaviate.sh install)")

// readyTimeout bounds the wait for /v1/.well-known/ready when the caller's
// context has no deadline. A start takes about 10 seconds on 2 idle cores,
// most of it the single-node Raft election (the follower waits out its
// heartbeat timeout, then elects itself: the "heartbeat timeout reached"
// warning of every start), and many times that on 2 busy cores running
// -race; the bound is for a start that hangs, not for a slow one.
const readyTimeout = 10 * time.Minute

// probeTimeout bounds one readiness probe; a probe that a starved server
// answers late is simply repeated.
const probeTimeout = 30 * time.Second

// Binary returns the weaviate-server to run: $HINDSIGHT_WEAVIATE_BIN, else the
// pinned binary `scripts/weaviate.sh path` names (the script is looked up
// from the working directory upwards). It returns an error wrapping
// ErrNoBinary when the chosen file does not exist.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w (%v)", EnvBinary, p, ErrNoBinary, err)
		}
		return p, nil
	}
	script, err := findUp(filepath.Join("scripts", "weaviate.sh"))
	if err != nil {
		return "", fmt.Errorf("%w (scripts/weaviate.sh not found: %v)", ErrNoBinary, err)
	}
	out, err := exec.Command("bash", script, "path").Output()
	if err != nil {
		return "", fmt.Errorf("%w (%s path: %v)", ErrNoBinary, script, err)
	}
	p := strings.TrimSpace(string(out))
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w (%s is not built: %v)", ErrNoBinary, p, err)
	}
	return p, nil
}

func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s in the working directory or above", rel)
		}
		dir = parent
	}
}

// Server is a running weaviate-server. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the REST endpoint, http://127.0.0.1:port.
	URL string
	// GRPCAddr is the gRPC endpoint (host:port), or "" when the server runs
	// isolated and gRPC cannot be reached.
	GRPCAddr string
	// Dir is the directory the server keeps its data (and socket) in.
	Dir string
	// Isolated reports whether the server runs in a network namespace of
	// its own (see the package documentation).
	Isolated bool

	bin      string
	launcher string // the program started: bin, or unshare/nsenter running it in a namespace
	args     []string
	env      []string
	sock     string // isolated: the REST unix socket
	tmp      string // a directory of our own for sock when Dir's path is too long; removed by Stop
	log      *tailBuffer
	proxy    *proxy // isolated: 127.0.0.1 -> sock

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Launch starts bin with its data in dir (created if needed) and returns
// once the server answers ready, or with an error that includes the tail of
// its output. The caller stops it with Stop and removes dir.
func Launch(ctx context.Context, bin, dir string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin, log: &tailBuffer{max: 512 << 10}}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"PERSISTENCE_DATA_PATH=" + filepath.Join(dir, "data"),
		"DEFAULT_VECTORIZER_MODULE=none",
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true",
		"DISABLE_TELEMETRY=true",
		"CLUSTER_HOSTNAME=node1",
		"CLUSTER_BIND_ADDR=127.0.0.1",
		"CLUSTER_ADVERTISE_ADDR=127.0.0.1",
		"RAFT_BOOTSTRAP_EXPECT=1",
		"GO_PROFILING_DISABLE=true",
		"PROMETHEUS_MONITORING_ENABLED=false",
		"LOG_LEVEL=warning",
	}
	if isolationWorks() {
		s.Isolated = true
		s.sock = filepath.Join(dir, "rest.sock")
		if len(s.sock) > 100 { // sun_path holds 108 bytes
			short, err := os.MkdirTemp("", "wv")
			if err != nil {
				return nil, err
			}
			s.tmp = short
			s.sock = filepath.Join(short, "rest.sock")
		}
		// Inside the namespace the default ports cannot collide with
		// anything: every server has its own.
		s.env = append(env, "GRPC_PORT=50051")
		s.launcher = "unshare"
		s.args = []string{"--map-root-user", "--net", "sh", "-c", `ip link set lo up && exec "$0" "$@"`,
			bin, "--scheme", "unix", "--socket-path", s.sock}
		p, err := newProxy(s.sock)
		if err != nil {
			return nil, err
		}
		s.proxy = p
		s.URL = "http://" + p.addr()
	} else {
		ports, err := freePorts(6)
		if err != nil {
			return nil, err
		}
		s.env = append(env,
			"GRPC_PORT="+strconv.Itoa(ports[1]),
			"CLUSTER_GOSSIP_BIND_PORT="+strconv.Itoa(ports[2]),
			"CLUSTER_DATA_BIND_PORT="+strconv.Itoa(ports[3]),
			"RAFT_PORT="+strconv.Itoa(ports[4]),
			"RAFT_INTERNAL_RPC_PORT="+strconv.Itoa(ports[5]),
		)
		s.args = []string{"--host", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--scheme", "http"}
		s.URL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
		s.GRPCAddr = "127.0.0.1:" + strconv.Itoa(ports[1])
		warning := fmt.Sprintf("localweaviate: network namespaces unavailable (unshare or ip missing, or refused): weaviate-server runs unisolated, its gRPC (port %d) and cluster API (port %d) listening on all interfaces\n", ports[1], ports[3])
		s.log.Write([]byte(warning))
		os.Stderr.WriteString(warning)
	}
	if err := s.start(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

var isolation = sync.OnceValue(func() bool {
	if _, err := exec.LookPath("unshare"); err != nil {
		return false
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return false
	}
	return exec.Command("unshare", "--map-root-user", "--net", "sh", "-c", "ip link set lo up").Run() == nil
})

func isolationWorks() bool { return isolation() }

func (s *Server) start(ctx context.Context) error {
	if err := s.spawn(); err != nil {
		return err
	}
	return s.waitReady(ctx)
}

// spawn starts the process without waiting for it to be ready.
func (s *Server) spawn() error {
	name := s.bin
	if s.launcher != "" {
		name = s.launcher
	}
	if s.sock != "" {
		os.Remove(s.sock) // a stale socket of a previous run blocks the listener
	}
	cmd := exec.Command(name, s.args...)
	cmd.Env = s.env
	cmd.Dir = s.Dir
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start weaviate-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	return nil
}

// waitReady waits for /v1/.well-known/ready of the spawned process.
func (s *Server) waitReady(ctx context.Context) error {
	return s.waitPath(ctx, "/v1/.well-known/ready")
}

// waitPath waits for path to answer 200.
func (s *Server) waitPath(ctx context.Context, path string) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return errors.New("weaviate-server is not running")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	client := &http.Client{Timeout: probeTimeout}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return fmt.Errorf("weaviate-server exited before it was ready (%v); its output:\n%s", cmd.ProcessState, s.log.tail(8<<10))
		case <-ctx.Done():
			return fmt.Errorf("weaviate-server not ready at %s: %w; its output:\n%s", s.URL, ctx.Err(), s.log.tail(8<<10))
		case <-tick.C:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 30 seconds) and its
// proxy. It leaves Dir in place. Safe to call twice.
func (s *Server) Stop() error {
	err := s.stopProcess()
	if s.proxy != nil {
		s.proxy.close()
	}
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
	return err
}

// take takes the running process from s for the caller to end; nil when
// it is stopped (or another caller took it).
func (s *Server) take() (cmd *exec.Cmd, done chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd, done = s.cmd, s.done
	s.cmd = nil
	return cmd, done
}

func (s *Server) stopProcess() error {
	cmd, done := s.take()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		return errors.New("weaviate-server did not stop within 30 seconds of SIGTERM; killed")
	}
	return nil
}

// Kill ends the server at once (SIGKILL): a crash, with nothing flushed.
// Restart brings it back on the same data. Safe to call when stopped.
func (s *Server) Kill() error {
	cmd, done := s.take()
	if cmd == nil {
		return nil
	}
	err := cmd.Process.Kill()
	<-done
	if s.proxy != nil {
		s.proxy.dropConns()
	}
	return err
}

// Restart stops the server gracefully (when it runs: after Kill it just
// starts) and starts it again on the same data (and, when isolated, the
// same URL), returning once it is ready. It is what
// an operator's restart does: memtables are flushed to disk segments and
// every shard is loaded afresh.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.stopProcess(); err != nil {
		return err
	}
	if s.proxy != nil {
		s.proxy.dropConns() // connections to the old process are dead
	}
	return s.start(ctx)
}

// Log returns the last part (up to 512 KiB) of the server's output.
func (s *Server) Log() string { return s.log.tail(s.log.max) }

// Tail returns about the last n bytes of the server's output, from a line
// start.
func (s *Server) Tail(n int) string { return s.log.tail(n) }

// sysProcAttr kills the server with the process that started it (Linux),
// so an aborted test run leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr { return pdeathsig() }

// freePorts returns n distinct ports free on 127.0.0.1 at the time of the
// call.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.buf
	if len(out) > n {
		out = out[len(out)-n:]
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	return string(out)
}

// proxy serves a unix socket on 127.0.0.1.
type proxy struct {
	l    net.Listener
	sock string

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

func newProxy(sock string) (*proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{l: l, sock: sock, conns: map[net.Conn]bool{}}
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.l.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.closed {
			return false
		}
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *proxy) forward(c net.Conn) {
	defer c.Close()
	u, err := net.Dial("unix", p.sock)
	if err != nil {
		return // the client sees the connection close: the server is down
	}
	defer u.Close()
	if !p.track(c, true) || !p.track(u, true) {
		return
	}
	defer p.track(c, false)
	defer p.track(u, false)
	errc := make(chan error, 2)
	go func() { _, err := io.Copy(u, c); u.(*net.UnixConn).CloseWrite(); errc <- err }()
	go func() { _, err := io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); errc <- err }()
	<-errc
	<-errc
}

// dropConns closes every forwarded connection.
func (p *proxy) dropConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.l.Close()
	p.dropConns()
}
