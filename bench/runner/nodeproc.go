package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hindsight-dev/hindsight/admin"
	"github.com/hindsight-dev/hindsight/bench"
)

// A serveNode is `hindsight serve` running as a process of its own, as a
// deployment runs it, so that it can be killed (bench nodes).
type serveNode struct {
	name   string
	cmd    *exec.Cmd
	client *bench.Client
	done   chan struct{} // closed when the process has exited

	mu   sync.Mutex
	id   string   // its node id among those sharing the records ("" on bbolt)
	tail []string // the last lines of its output
	errs []string // the last lines it logged at level error
}

var (
	listeningLine = regexp.MustCompile(`listening on (http://\S+)`)
	nodeIDLine    = regexp.MustCompile(`"node":"([^"]+)".*records in PostgreSQL`)
)

// benchKey creates the user "bench" and a key for it in the records
// (records, else the bbolt file in dataDir), before any node serves them.
func benchKey(ctx context.Context, records, dataDir string) (string, error) {
	return userKey(ctx, records, dataDir, "bench")
}

// userKey creates user and a key for it in the records (records, else the
// bbolt file in dataDir), before any node serves them.
func userKey(ctx context.Context, records, dataDir, user string) (string, error) {
	var key string
	err := admin.WithRecords(ctx, records, dataDir, 0, func(ops admin.Ops) error {
		if _, err := ops.CreateUser(ctx, user); err != nil {
			return err
		}
		k, _, err := ops.CreateKey(ctx, user, "bench")
		key = k
		return err
	})
	if err != nil {
		return "", fmt.Errorf("create the user %s: %w", user, err)
	}
	return key, nil
}

// nodeEnv is the environment of the nodes: this process's without
// Hindsight's, Weaviate's and OpenAI's settings (the flags and extra say
// everything that matters), plus extra.
func nodeEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "HINDSIGHT_") || strings.HasPrefix(name, "WEAVIATE_") || strings.HasPrefix(name, "OPENAI_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// startNode runs `self serve --addr 127.0.0.1:0 --log-format json args...`
// with env and returns once it answers /ready (a first node over an empty
// Weaviate creates the text index's collections first).
func startNode(ctx context.Context, name string, self, env []string, key string, args ...string) (*serveNode, error) {
	argv := append(append(append([]string{}, self[1:]...), "serve", "--addr", "127.0.0.1:0", "--log-format", "json"), args...)
	cmd := exec.Command(self[0], argv...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	n := &serveNode{name: name, cmd: cmd, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	url := make(chan string, 1)
	var readers sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			n.read(r, url)
		}()
	}
	go func() {
		readers.Wait()
		cmd.Wait()
		close(n.done)
	}()
	select {
	case u := <-url:
		n.client = &bench.Client{URL: u, Key: key, HTTP: &http.Client{
			Timeout:   2 * time.Minute,
			Transport: &http.Transport{MaxIdleConnsPerHost: 256},
		}}
	case <-n.done:
		return nil, fmt.Errorf("%s exited before it listened: %s", name, n.output())
	case <-ctx.Done():
		n.kill()
		return nil, ctx.Err()
	}
	if err := n.waitReady(ctx); err != nil {
		n.kill()
		return nil, err
	}
	return n, nil
}

// read keeps the last lines of r, sends the listening URL to url and
// notes the node id.
func (n *serveNode) read(r io.Reader, url chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		n.mu.Lock()
		if m := nodeIDLine.FindStringSubmatch(line); m != nil {
			n.id = m[1]
		}
		n.tail = append(n.tail, line)
		if len(n.tail) > 40 {
			n.tail = n.tail[len(n.tail)-40:]
		}
		if strings.Contains(line, `"level":"error"`) {
			n.errs = append(n.errs, line)
			if len(n.errs) > 10 {
				n.errs = n.errs[len(n.errs)-10:]
			}
		}
		n.mu.Unlock()
		if m := listeningLine.FindStringSubmatch(line); m != nil {
			select {
			case url <- m[1]:
			default:
			}
		}
	}
	io.Copy(io.Discard, r)
}

// nodeID is the node's id among those sharing the records, as it logged
// it at start.
func (n *serveNode) nodeID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}

// output is the last lines the process wrote.
func (n *serveNode) output() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.tail, "\n")
}

// loggedErrors returns the distinct errors (the "error" field) of the
// last lines the node logged at level error.
func (n *serveNode) loggedErrors() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, line := range n.errs {
		var l struct {
			Error string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Error != "" && !slices.Contains(out, l.Error) {
			out = append(out, l.Error)
		}
	}
	return out
}

// failed wraps err, a failure against the node, with the errors it
// logged last.
func (n *serveNode) failed(err error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err == nil || len(n.errs) == 0 {
		return err
	}
	return fmt.Errorf("%w; %s logged last:\n%s", err, n.name, strings.Join(n.errs, "\n"))
}

func (n *serveNode) waitReady(ctx context.Context) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.client.URL+"/ready", nil)
		if err != nil {
			return err
		}
		if resp, err := n.client.HTTP.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-n.done:
			return fmt.Errorf("%s exited before it was ready: %s", n.name, n.output())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", n.name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop ends the node as an operator does (SIGTERM), killing it when it
// has not exited 30 seconds later.
func (n *serveNode) stop() {
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		n.kill()
	}
}

// kill ends the node at once (SIGKILL): nothing it holds is released.
func (n *serveNode) kill() error {
	err := n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
	if errors.Is(err, os.ErrProcessDone) {
		err = nil
	}
	return err
}

// outboxDepth is the node's hindsight_outbox_depth (/metrics): the
// sessions waiting to be indexed (of every node, when they share the
// records).
func outboxDepth(ctx context.Context, c *bench.Client) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "hindsight_outbox_depth "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("%s/metrics: no hindsight_outbox_depth (status %d)", c.URL, resp.StatusCode)
}

// nodeIndexer is what bench.RunIngest needs to wait for a node's
// indexing, from outside its process: its outbox depth, polled (the index
// lag, which the node keeps in its memory, is not reported).
func nodeIndexer(c *bench.Client) *bench.Indexer {
	return &bench.Indexer{
		Lags: func() []time.Duration { return nil },
		WaitIdle: func(ctx context.Context) error {
			for {
				d, err := outboxDepth(ctx, c)
				if err != nil {
					return err
				}
				if d == 0 {
					return nil
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
			}
		},
		Pending: func() int {
			d, _ := outboxDepth(context.Background(), c)
			return d
		},
	}
}
