package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/importer"
)

// ImportConfig is what bench import measures.
type ImportConfig struct {
	Formats     []string // agents whose generated history is measured; empty = every bench.HistoryFormats
	Size        int64    // bytes of generated history per format
	Seed        uint64
	Transcripts string // the real transcripts (a directory with manifest.tsv); "" = none
	Invocation
}

// Import generates a large history per format and imports it, then imports
// each agent's real transcripts, measuring throughput and the import
// process's peak memory.
func Import(ctx context.Context, c ImportConfig, stdout, stderr io.Writer) error {
	// A fresh directory in the scratch space for the histories and the
	// server's data, removed at the end.
	dir, progressOut, err := c.start("import", stderr)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	client, a, stop, err := startServer(ctx, filepath.Join(dir, "data"), zerolog.Nop(), config.Config{}, Vectors{Embedder: "none", Store: "embedded"})
	if err != nil {
		return err
	}
	defer stop()
	res := &bench.ImportResult{Command: c.Command, Size: c.Size, Settings: runSettings(map[string]string{
		"seed": strconv.FormatUint(c.Seed, 10), "server": "in the bench process, full-text indexing on, no embedder",
		"import": "hindsight import AGENT --concurrency 4 (the defaults), a process of its own",
	})}
	if l := loadAverage(); l != "" {
		res.Settings["load average at start"] = l
	}
	formats := bench.HistoryFormats()
	if len(c.Formats) > 0 {
		var pick []bench.HistoryFormat
		for _, name := range c.Formats {
			found := false
			for _, f := range formats {
				if f.Agent == name {
					pick, found = append(pick, f), true
				}
			}
			if !found {
				return &FlagError{fmt.Sprintf("bench import: no generator for %q", name)}
			}
		}
		formats = pick
	}
	for i, f := range formats {
		home := filepath.Join(dir, "home-"+f.Agent)
		fmt.Fprintf(progressOut, "generating %.0f MB of %s history...\n", float64(c.Size)/(1<<20), f.Agent)
		st, err := f.Write(home, c.Size, c.Seed+uint64(i))
		if err != nil {
			return fmt.Errorf("generate %s: %w", f.Agent, err)
		}
		run := bench.ImportRun{Agent: f.Agent, Kind: "generated", Files: st.Files, Bytes: st.Bytes}
		if err := measureImport(ctx, c, client, a.Pipeline.WaitIdle, home, &run, progressOut); err != nil {
			return err
		}
		if run.Messages != st.Messages {
			run.Note = fmt.Sprintf("the generator wrote %d messages, the import sent %d", st.Messages, run.Messages)
		}
		res.Runs = append(res.Runs, run)
		os.RemoveAll(home) // a gigabyte each: not kept for the next format
	}
	if c.Transcripts != "" {
		runs, err := importTranscripts(ctx, c, client, a.Pipeline.WaitIdle, dir, progressOut)
		if err != nil {
			return err
		}
		res.Runs = append(res.Runs, runs...)
	}
	if l := loadAverage(); l != "" {
		res.Settings["load average at end"] = l
	}
	if c.Out != "" {
		if err := bench.WriteImportReport(c.Out, res); err != nil {
			return err
		}
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	bench.PrintImport(stdout, res)
	return nil
}

// importTranscripts imports each agent's real transcripts, rebuilt under a
// $HOME of its own. Files whose original paths collide go under a
// directory per repository.
func importTranscripts(ctx context.Context, c ImportConfig, client *bench.Client, idle func(context.Context) error, dir string, progressOut io.Writer) ([]bench.ImportRun, error) {
	files, err := bench.ReadTranscripts(c.Transcripts)
	if err != nil {
		return nil, fmt.Errorf("real transcripts: %w", err)
	}
	byAgent := map[string][]bench.TranscriptFile{}
	var order []string
	for _, f := range files {
		if byAgent[f.Agent] == nil {
			order = append(order, f.Agent)
		}
		byAgent[f.Agent] = append(byAgent[f.Agent], f)
	}
	var runs []bench.ImportRun
	for _, agent := range order {
		fs := byAgent[agent]
		run := bench.ImportRun{Agent: agent, Kind: "real", Files: len(fs)}
		for _, f := range fs {
			run.Bytes += f.Bytes
		}
		if _, ok := importer.AgentNamed(agent); !ok {
			run.Note = "no importer for this agent in this build"
			runs = append(runs, run)
			continue
		}
		seen := map[string]bool{}
		collide := false
		for _, f := range fs {
			collide = collide || seen[f.Path]
			seen[f.Path] = true
		}
		var place func(bench.TranscriptFile) string
		if collide {
			place = bench.RepoPlace
		}
		home := filepath.Join(dir, "real-"+agent)
		if _, err := bench.RebuildTranscripts(c.Transcripts, home, fs, place); err != nil {
			return nil, fmt.Errorf("real %s transcripts: %w", agent, err)
		}
		if err := measureImport(ctx, c, client, idle, home, &run, progressOut); err != nil {
			run.Note = err.Error()
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// measureImport reads the agent's history under home three ways: its bytes,
// its sessions through the importer's readers, and `hindsight import` in a
// process of its own. Each starts once the server has indexed what came
// before (idle), so the phases do not share the cores with that work.
func measureImport(ctx context.Context, c ImportConfig, client *bench.Client, idle func(context.Context) error, home string, run *bench.ImportRun, progressOut io.Writer) error {
	a, _ := importer.AgentNamed(run.Agent)
	root := ""
	for _, r := range a.Roots(home, "linux", func(string) string { return "" }) {
		if _, err := os.Stat(r); err == nil {
			root = r
			break
		}
	}
	if root == "" {
		return fmt.Errorf("no %s history at its default places under %s", run.Agent, home)
	}
	if err := idle(ctx); err != nil {
		return err
	}
	// Bytes as the disk and page cache give them.
	start := time.Now()
	var read int64
	err := filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, f)
		f.Close()
		read += n
		return err
	})
	if err != nil {
		return err
	}
	run.Bytes = read
	run.ReadMBps = float64(read) / (1 << 20) / time.Since(start).Seconds()

	fmt.Fprintf(progressOut, "%s %s: reading %.0f MB with the importer's readers...\n", run.Kind, run.Agent, float64(read)/(1<<20))
	start, cpu := time.Now(), bench.ProcessCPU()
	items, err := a.Read(root, importer.ReadOptions{})
	if err != nil {
		return err
	}
	for _, it := range items {
		if _, _, err := it.Read(); err != nil {
			return fmt.Errorf("%s: %w", it.Path, err)
		}
	}
	took := time.Since(start).Seconds()
	run.Sessions = len(items)
	run.ParseMBps = float64(read) / (1 << 20) / took
	run.ParseSessionsPS = float64(len(items)) / took
	run.ParseCPUSeconds = (bench.ProcessCPU() - cpu).Seconds()
	if err := idle(ctx); err != nil {
		return err
	}

	fmt.Fprintf(progressOut, "%s %s: hindsight import...\n", run.Kind, run.Agent)
	args := append(append([]string{}, c.Self[1:]...), "import", run.Agent, "--server", client.URL, "--key", client.Key, "--quiet")
	cmd := exec.CommandContext(ctx, c.Self[0], args...)
	cmd.Env = append(append(os.Environ(), c.Env...), "HOME="+home, "USERPROFILE="+home, "CODEX_HOME=", "CLAUDE_CONFIG_DIR=", "XDG_DATA_HOME=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start = time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("hindsight import %s: %w", run.Agent, err)
	}
	peak := bench.WatchPeakRSS(cmd.Process.Pid)
	err = cmd.Wait()
	took = time.Since(start).Seconds()
	run.PeakRSSBytes = peak()
	if err != nil {
		return fmt.Errorf("hindsight import %s: %v\n%s\n%s", run.Agent, err, out.String(), errOut.String())
	}
	run.ImportCPUSeconds = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	m := importedRe.FindStringSubmatch(out.String())
	if m == nil {
		return fmt.Errorf("hindsight import %s printed no summary:\n%s", run.Agent, out.String())
	}
	run.Messages, _ = strconv.Atoi(m[1])
	run.ImportSeconds = took
	run.ImportMBps = float64(read) / (1 << 20) / took
	run.ImportSessionsPS = float64(run.Sessions) / took
	run.ImportMessagesPS = float64(run.Messages) / took
	return nil
}

var importedRe = regexp.MustCompile(`messages: (\d+) imported`)
