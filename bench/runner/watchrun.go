package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
)

// WatchConfig is what bench watch measures.
type WatchConfig struct {
	Messages    int           // messages appended
	PerAgent    int           // sessions per agent (Claude Code, Codex)
	MinInterval time.Duration // appends are MinInterval..MaxInterval apart
	MaxInterval time.Duration
	Seed        uint64
	Invocation
}

// Watch runs a server, `hindsight import --watch` over a temporary home,
// and writers appending to its transcripts; it measures how long each
// appended message takes to become searchable, next to the plugins' way
// (bench.StartProbe) in the same run.
func Watch(ctx context.Context, c WatchConfig, stdout, stderr io.Writer) error {
	dir, progressOut, err := c.start("watch", stderr)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	client, _, stop, err := startServer(ctx, filepath.Join(dir, "data"), zerolog.Nop(), config.Config{}, Vectors{Embedder: "none", Store: "embedded"})
	if err != nil {
		return err
	}
	defer stop()
	home := filepath.Join(dir, "home")
	sessions, err := bench.WriteWatchSessions(home, c.PerAgent, time.Now().UTC())
	if err != nil {
		return err
	}
	res := &bench.WatchResult{Command: c.Command, IntervalMs: [2]int{int(c.MinInterval.Milliseconds()), int(c.MaxInterval.Milliseconds())},
		Sessions: map[string]int{"claude-code": c.PerAgent, "codex": c.PerAgent},
		Settings: runSettings(map[string]string{
			"seed":   strconv.FormatUint(c.Seed, 10),
			"server": "in the bench process, full-text indexing on, no embedder",
			"watch":  "hindsight import --watch --quiet (every agent found under the home), a process of its own",
		})}
	if l := loadAverage(); l != "" {
		res.Settings["load average at start"] = l
	}

	args := append(append([]string{}, c.Self[1:]...), "import", "--watch", "--quiet", "--server", client.URL, "--key", client.Key,
		"--state", filepath.Join(dir, "state.json"))
	cmd := exec.CommandContext(ctx, c.Self[0], args...)
	cmd.Env = append(append(os.Environ(), c.Env...), "HOME="+home, "USERPROFILE="+home, "CODEX_HOME=", "CLAUDE_CONFIG_DIR=", "XDG_DATA_HOME=", "XDG_STATE_HOME=")
	var watchOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &watchOut, &watchOut
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("hindsight import --watch: %w", err)
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

	fmt.Fprintf(progressOut, "waiting for the watcher's first pass over %d sessions...\n", len(sessions))
	var starts []string
	for i := range sessions {
		starts = append(starts, bench.StartWord(i))
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = bench.WaitFound(wctx, client, starts)
	cancel()
	if err != nil {
		return fmt.Errorf("the watcher's first pass did not arrive: %w\n%s", err, watchOut.String())
	}

	fmt.Fprintf(progressOut, "appending %d messages, one every %s to %s...\n", c.Messages, c.MinInterval, c.MaxInterval)
	stopProbe := bench.StartProbe(ctx, client, "watch-bench-plugin-probe")
	delays, missed, err := bench.WatchLoad(ctx, client, sessions, c.Messages, c.MinInterval, c.MaxInterval, c.Seed, progressOut)
	probe, perr := stopProbe()
	if err != nil {
		return fmt.Errorf("watch load: %w\n%s", err, watchOut.String())
	}
	if perr != nil {
		return fmt.Errorf("plugin probe: %w", perr)
	}
	select {
	case err := <-exited:
		return fmt.Errorf("the watcher exited during the run: %v\n%s", err, watchOut.String())
	default:
	}
	res.Summarise(delays)
	res.Missed, res.Plugin = missed, probe
	if l := loadAverage(); l != "" {
		res.Settings["load average at end"] = l
	}
	if c.Out != "" {
		if err := bench.WriteWatchReport(c.Out, res); err != nil {
			return err
		}
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprint(stdout, bench.WatchTable(res))
	return nil
}
