package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
)

// LongSessionConfig is what bench longsession measures.
type LongSessionConfig struct {
	bench.LongSessionOptions
	Invocation // Self is the binary whose server is measured; Out gets report.txt and result.json
}

// LongSession runs `hindsight serve` as a process of its own over a fresh
// data directory, with two users, and the long-session workload
// (bench.RunLongSession) against it, watching the server's resident set.
func LongSession(ctx context.Context, c LongSessionConfig, stdout, stderr io.Writer) error {
	dir, progressOut, err := c.start("longsession", stderr)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c.Progress = progressOut
	data := filepath.Join(dir, "data")
	keys := map[string]string{}
	for _, user := range []string{"long", "live"} {
		if keys[user], err = userKey(ctx, "", data, user); err != nil {
			return err
		}
	}
	env := append(nodeEnv(c.Env...), "HINDSIGHT_EMBEDDER=none", "HINDSIGHT_RATE_LIMIT=0")
	server, err := startNode(ctx, "hindsight serve", c.Self, env, keys["long"], "--data", data)
	if err != nil {
		return err
	}
	defer server.stop()
	client := func(user string) *bench.Client {
		return &bench.Client{URL: server.client.URL, Key: keys[user], HTTP: &http.Client{Timeout: 10 * time.Minute}}
	}
	pid := server.cmd.Process.Pid
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
		return fmt.Errorf("bench longsession: %w\n%s", err, server.output())
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
