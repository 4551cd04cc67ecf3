package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
)

// envDiskChild makes TestDiskFull the child: the server on a tmpfs of its
// own, in a mount namespace of its own (see diskChild).
const envDiskChild = "HINDSIGHT_DISKFULL_CHILD"

// TestDiskFull fills the filesystem of the data directory under a running
// server, then frees it: syncs answer 507 (not 500) with a clear message
// while it is full, nothing acknowledged is lost, and the server takes
// writes and indexes them again once there is space.
//
// The data directory is a 64 MiB tmpfs mounted in a private mount namespace
// (unshare -m) of a child process, so nothing is mounted on the host; the
// child is this test binary, re-run as the server, driven over loopback and
// told over its stdin to fill and free the disk. Without root the mount
// namespace is made inside a user namespace of the child's own (unshare -r
// -m), which needs no privilege where the kernel allows unprivileged user
// namespaces. Where neither works the test skips, saying why, or fails
// with HINDSIGHT_REQUIRE_MOUNT=1 (make test sets it).
func TestDiskFull(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv(envDiskChild); dir != "" {
		diskChild(t, dir)
		return
	}
	unshare, err := mountNamespace()
	if err != nil {
		msg := fmt.Sprintf("the disk-full test cannot mount a tmpfs in a private mount namespace: %v", err)
		if os.Getenv("HINDSIGHT_REQUIRE_MOUNT") == "1" {
			t.Fatalf("HINDSIGHT_REQUIRE_MOUNT=1: %s (run as root, or allow unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1)", msg)
		}
		t.Skipf("SKIPPING: %s", msg)
	}
	c := startDiskChild(t, unshare)

	seen := &statuses{}
	var acked []string
	sync := func(prefix string, n, textBytes int) answer {
		a, ids := c.sync(prefix, n, textBytes)
		seen.add("sync", a.status)
		if a.status == http.StatusOK {
			acked = append(acked, ids...)
		}
		return a
	}
	if a := sync("before", 5, 1000); a.status != http.StatusOK {
		t.Fatalf("sync before filling the disk: %d %s", a.status, a.body)
	}
	c.command("fill") // at once: the indexer meets the full disk too

	// Big batches need new pages: they cannot fit. (A small write may still
	// land in the records file's free pages; then it is acknowledged, and it
	// must survive like any other.)
	refused := 0
	for i := range 4 {
		a := sync(fmt.Sprintf("full%d", i), 20, 100_000)
		switch a.status {
		case http.StatusOK:
		case http.StatusInsufficientStorage, http.StatusServiceUnavailable:
			refused++
			if !strings.Contains(a.body, "disk is full") || a.header.Get("Retry-After") == "" {
				t.Errorf("a sync refused for lack of space answered %d (Retry-After %q) %s; want a message saying the disk is full, and Retry-After",
					a.status, a.header.Get("Retry-After"), a.body)
			}
		default:
			t.Errorf("a sync with the disk full answered %d %s; want 507 or 503", a.status, a.body)
		}
	}
	if refused == 0 {
		t.Fatalf("no sync was refused with the disk full (%s): the test did not fill it", seen)
	}
	// Reads still work.
	s := c.search("flaky upload")
	seen.add("fulltext", s.status)
	if s.status != http.StatusOK {
		t.Errorf("full-text search with the disk full: %d %s", s.status, s.body)
	}

	c.command("free")
	freed := time.Now()
	// The plugin retries its refused writes; they are taken now.
	for i := range 4 {
		var a answer
		waitFor(t, "a sync to be accepted after space returned", func() bool {
			a = sync(fmt.Sprintf("after%d", i), 20, 100_000)
			return a.status == http.StatusOK
		})
	}
	// Everything acknowledged is there, and indexed again.
	ids := c.sessionIDs()
	lost := 0
	for _, id := range acked {
		if !ids[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged sessions lost", lost, len(acked))
	}
	// The sessions synced just before the disk filled were indexed while it
	// was full (or after): all of them are found.
	waitFor(t, "the full-text index to catch up", func() bool {
		a := c.search("flaky upload")
		return a.status == http.StatusOK && strings.Count(a.body, `"title":"session `) == len(acked)
	})
	recovered := time.Since(freed)
	if n := seen.count(http.StatusInternalServerError); n > 0 {
		t.Errorf("%d answers were 500 (%s)", n, seen)
	}
	report(t, "disk full (data directory on a full 64 MiB tmpfs), then freed", seen, lost, recovered)
}

// diskChild is the server side of TestDiskFull, run in its own mount
// namespace: it mounts a tmpfs on dir, serves a server on it, prints its
// URL and an API key, and obeys "fill" and "free" on stdin until stdin
// closes.
func diskChild(t *testing.T, dir string) {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := filepath.Join(dir, "data")
	s, err := New(ctx, config.Config{Data: data, Semantic: config.Semantic{Embedder: "none"}},
		zerolog.New(os.Stderr).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if _, err := s.Accounts.CreateUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	key, _, err := s.Accounts.CreateKey(ctx, "alice", "faults")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	fmt.Printf("FAULTCHILD ready http://%s %s\n", ln.Addr(), key)

	filler := filepath.Join(dir, "filler")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "fill":
			f, err := os.Create(filler)
			if err != nil {
				t.Fatal(err)
			}
			block := bytes.Repeat([]byte{1}, 64<<10)
			for {
				if _, err := f.Write(block); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("fill: %v", err)
					}
					break
				}
			}
			f.Close()
			fmt.Println("FAULTCHILD fill")
		case "free":
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			fmt.Println("FAULTCHILD free")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// diskChildRig drives the child.
type diskChildRig struct {
	t      *testing.T
	url    string
	key    string
	stdin  io.WriteCloser
	stdout *bufio.Scanner
}

// mountNamespace returns the arguments to unshare that give a child a
// private mount namespace where it may mount a tmpfs: -m as root, else -r
// -m (a user namespace where the child is root), each tried by mounting
// one.
func mountNamespace() ([]string, error) {
	if runtime.GOOS != "linux" {
		return nil, errors.New("mount namespaces are Linux only")
	}
	var errs []error
	for _, args := range [][]string{{"-m"}, {"-r", "-m"}} {
		args = append(args, "--propagation", "private")
		try := exec.Command("unshare", append(args, "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt")...)
		out, err := try.CombinedOutput()
		if err == nil {
			return args, nil
		}
		errs = append(errs, fmt.Errorf("unshare %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out)))
	}
	return nil, errors.Join(errs...)
}

func startDiskChild(t *testing.T, unshare []string) *diskChildRig {
	t.Helper()
	dir := t.TempDir()
	args := append(slices.Clone(unshare), os.Args[0], "-test.run=^TestDiskFull$")
	if d, ok := t.Deadline(); ok { // the child has what time the test has left
		args = append(args, "-test.timeout="+time.Until(d).String())
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), envDiskChild+"="+dir)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &diskChildRig{t: t, stdin: stdin, stdout: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		stdin.Close()
		exited := make(chan error, 1)
		go func() {
			io.Copy(io.Discard, stdout)
			exited <- cmd.Wait()
		}()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("disk-full child: %v\n%s", err, stderr.String())
			}
		case <-time.After(2 * time.Minute): // a bound on liveness, not a timing
			cmd.Process.Kill()
			t.Errorf("disk-full child did not stop; killed\n%s", stderr.String())
		}
		if t.Failed() {
			t.Logf("child's log:\n%s", stderr.String())
		}
	})
	fields := strings.Fields(c.line("ready"))
	if len(fields) != 2 {
		t.Fatalf("child said %q", fields)
	}
	c.url, c.key = fields[0], fields[1]
	return c
}

// line returns the rest of the child's next protocol line, which must be
// the given word.
func (c *diskChildRig) line(word string) string {
	c.t.Helper()
	for c.stdout.Scan() {
		rest, ok := strings.CutPrefix(c.stdout.Text(), "FAULTCHILD "+word)
		if ok {
			return strings.TrimSpace(rest)
		}
	}
	c.t.Fatalf("the disk-full child ended before saying %q", word)
	return ""
}

func (c *diskChildRig) command(cmd string) {
	c.t.Helper()
	if _, err := fmt.Fprintln(c.stdin, cmd); err != nil {
		c.t.Fatal(err)
	}
	c.line(cmd)
}

func (c *diskChildRig) do(method, path string, body []byte) answer {
	c.t.Helper()
	return exchange(c.t, method, c.url+path, c.key, bytes.NewReader(body))
}

// sync writes n sessions of about textBytes of text each in one batch.
func (c *diskChildRig) sync(prefix string, n, textBytes int) (answer, []string) {
	c.t.Helper()
	var sessions, messages []any
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		ids = append(ids, id)
		sessions = append(sessions, map[string]any{"externalId": id, "title": "session " + id})
		text := strings.Repeat(fmt.Sprintf("%s worker %d retries the flaky upload. ", prefix, i), textBytes/40+1)
		messages = append(messages, map[string]any{"sessionExternalId": id, "externalId": id + "-m", "role": "user", "textContent": text})
	}
	body, _ := json.Marshal(map[string]any{"sessions": sessions, "messages": messages})
	return c.do(http.MethodPost, "/sync/batch", body), ids
}

func (c *diskChildRig) search(q string) answer {
	c.t.Helper()
	return c.do(http.MethodGet, "/api/search?limit=100&q="+url.QueryEscape(q), nil)
}

func (c *diskChildRig) sessionIDs() map[string]bool {
	c.t.Helper()
	a := c.do(http.MethodGet, "/sync/sessions/list", nil)
	var body struct {
		SessionIDs []string `json:"sessionIds"`
	}
	if err := json.Unmarshal([]byte(a.body), &body); err != nil || a.status != http.StatusOK {
		c.t.Fatalf("/sync/sessions/list: %d %s", a.status, a.body)
	}
	ids := map[string]bool{}
	for _, id := range body.SessionIDs {
		ids[id] = true
	}
	return ids
}
