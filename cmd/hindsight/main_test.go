package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/internal/openaitest"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
)

// TestMain lets a test re-run this binary as `hindsight` in a child process
// (HINDSIGHT_TEST_RUN_MAIN=1, arguments after "--"), so crash and signal tests
// exercise the real serve command without building a separate binary. The
// child hashes passwords at bcrypt's lowest cost, as the tests' in-process
// commands do (withStdin): at the default cost under -race on loaded cores, a
// password set through a child server's admin socket outlasted the admin
// client's wait.
func TestMain(m *testing.M) {
	if os.Getenv("HINDSIGHT_TEST_RUN_MAIN") == "1" {
		passwordCost = bcrypt.MinCost
		args := os.Args
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Args = append([]string{"hindsight"}, args...)
		main()
		os.Exit(0)
	}
	os.Exit(pgtest.Run(m)) // and stop the shared PostgreSQL (pgtest.Shared)
}

// child is a `hindsight serve` running in its own process.
type child struct {
	cmd    *exec.Cmd
	URL    string
	stderr *bytes.Buffer
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// startServe starts `hindsight serve` on a free loopback port over dataDir and
// waits until it prints its URL.
//
// Unless extra names an embedder, the child embeds through an
// OpenAI-compatible server in this process (openaitest): the semantic
// pipeline (queue, embedder, vector store) runs as in production, but
// without loading the offline model that make test's HINDSIGHT_MODEL_DIR
// would give it and running it under -race, seconds of CPU per start and
// per batch that these tests, which do not test the model, do not need.
// A restart on the same data finds the same model and dimension.
func startServe(t *testing.T, dataDir string, extra ...string) *child {
	t.Helper()
	args := append([]string{"-test.run=^$", "--", "serve", "--addr", "127.0.0.1:0", "--data", dataDir, "--log-format", "json"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "HINDSIGHT_TEST_RUN_MAIN=1")
	if !slices.Contains(extra, "--embedder") {
		oai := openaitest.New(t, openaitest.Options{APIKey: "sk-test"})
		cmd.Env = append(cmd.Env, "HINDSIGHT_EMBEDDER=openai", "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+oai.URL(),
			"HINDSIGHT_OPENAI_DIM=256")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	select {
	case c.URL = <-found:
	case <-ctx.Done():
		t.Fatalf("serve did not start; stderr:\n%s", c.stderr)
	}
	return c
}

// untilDeadline returns a context that ends a minute before the test's
// deadline (go test -timeout), or never without one. Waits take what a
// loaded machine needs; a hang still fails, naming what it waited for,
// before the binary's timeout panics.
func untilDeadline(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	return context.WithDeadline(context.Background(), deadline(t))
}

// deadline is when untilDeadline's context ends (a year away without a
// deadline), for loops that poll.
func deadline(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-time.Minute)
	}
	return time.Now().AddDate(1, 0, 0)
}

// waitUntil polls cond until it holds, failing the test, naming what, at
// untilDeadline's end.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not reached by the test's deadline", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// runCmd runs a hindsight command in-process and returns stdout.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := untilDeadline(t)
	defer cancel()
	err := run(ctx, args, &out, &errb)
	if err != nil {
		t.Logf("hindsight %s: %v\nstderr: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}

// newKey creates a user and a key in dataDir through the CLI and returns the key.
func newKey(t *testing.T, dataDir, user string) string {
	t.Helper()
	if _, err := runCmd(t, "users", "create", user, "--data", dataDir); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, "keys", "create", "--user", user, "--data", dataDir)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if !strings.HasPrefix(key, "osk_") || len(key) != 36 {
		t.Fatalf("last line of keys create is not a key: %q", key)
	}
	return key
}
