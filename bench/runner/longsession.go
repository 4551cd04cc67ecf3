package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
)

// LongSessionConfig is what bench longsession measures.
type LongSessionConfig struct {
	bench.LongSessionOptions
	// Self runs hindsight (the binary whose server is measured); Env is
	// added to the environment of what it runs.
	Self    []string
	Env     []string
	Dir     string // where to make the scratch directory; "" = the system's
	Out     string // directory for report.md and result.json; "" = none
	JSON    bool
	Command string
}

// LongSession runs `hindsight serve` as a process of its own over a fresh
// data directory, with two users, and the long-session workload
// (bench.RunLongSession) against it, watching the server's resident set.
func LongSession(ctx context.Context, c LongSessionConfig, stdout, stderr io.Writer) error {
	if len(c.Self) == 0 {
		return fmt.Errorf("bench longsession: no hindsight command to run")
	}
	dir, err := os.MkdirTemp(c.Dir, "hindsight-bench-longsession-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	progressOut := stderr
	if c.JSON {
		progressOut = io.Discard
	}
	c.Progress = progressOut
	data := filepath.Join(dir, "data")
	env := append(append(os.Environ(), c.Env...), "HINDSIGHT_EMBEDDER=none", "HINDSIGHT_RATE_LIMIT=0", "HINDSIGHT_LOG_LEVEL=warn")
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, c.Self[0], append(append(append([]string{}, c.Self[1:]...), args...), "--data", data)...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil {
			return "", fmt.Errorf("hindsight %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String(), nil
	}
	keys := map[string]string{}
	for _, user := range []string{"long", "live"} {
		if _, err := run("users", "create", user); err != nil {
			return err
		}
		out, err := run("keys", "create", "--user", user)
		if err != nil {
			return err
		}
		lines := strings.Fields(strings.TrimSpace(out))
		keys[user] = lines[len(lines)-1]
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, c.Self[0], append(append([]string{}, c.Self[1:]...), "serve", "--data", data, "--addr", addr)...)
	cmd.Env = env
	var serveOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &serveOut, &serveOut
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("hindsight serve: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	client := func(user string) *bench.Client {
		return &bench.Client{URL: "http://" + addr, Key: keys[user], HTTP: &http.Client{Timeout: 10 * time.Minute}}
	}
	if err := waitHealthy(ctx, "http://"+addr, exited); err != nil {
		return fmt.Errorf("hindsight serve: %w\n%s", err, serveOut.String())
	}
	pid := cmd.Process.Pid
	// The watcher keeps the highest mark it read: a reset starts a new one.
	stopPeak := bench.WatchPeakRSS(pid)
	peak := func() int64 {
		p := stopPeak()
		stopPeak = bench.WatchPeakRSS(pid)
		return p
	}
	reset := func() bool {
		stopPeak()
		ok := bench.ResetPeakRSS(pid)
		stopPeak = bench.WatchPeakRSS(pid)
		return ok
	}
	res, err := bench.RunLongSession(ctx, bench.LongSessionServer{Long: client("long"), Live: client("live"),
		ResetPeak: reset, Peak: peak, RSS: func() int64 { return bench.CurrentRSS(pid) }}, c.LongSessionOptions)
	stopPeak()
	if err != nil {
		return fmt.Errorf("bench longsession: %w\n%s", err, serveOut.String())
	}
	res.Command = c.Command
	for k, v := range runSettings(map[string]string{
		"seed":     strconv.FormatUint(c.Seed, 10),
		"server":   "hindsight serve, a process of its own (" + c.Self[0] + "), HINDSIGHT_EMBEDDER=none, rate limit off",
		"messages": fmt.Sprintf("%d to %d bytes of text, user and assistant alternating", c.MinBytes, c.MaxBytes),
		"settle":   c.Settle.String(),
	}) {
		res.Settings[k] = v
	}
	if l := loadAverage(); l != "" {
		res.Settings["load average at end"] = l
	}
	if c.Out != "" {
		if err := os.MkdirAll(c.Out, 0o755); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(filepath.Join(c.Out, "result.json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
		var table bytes.Buffer
		bench.PrintLongSession(&table, res)
		if err := os.WriteFile(filepath.Join(c.Out, "report.txt"), table.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	bench.PrintLongSession(stdout, res)
	return nil
}

// waitHealthy waits until the server at url answers /health, or exits.
func waitHealthy(ctx context.Context, url string, exited <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before it answered: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("no answer on %s/health within 2 minutes", url)
}
