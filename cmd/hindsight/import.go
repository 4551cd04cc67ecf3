// Command hindsight import reads coding assistants' local history and uploads
// it to a Hindsight server through the sync API, keeping the original dates.
// It is a client: it needs a running server and an API key, not the data
// directory. The assistants it reads are importer.Agents(): a new one there
// is a new agent here, with its default paths in --help.

package main

import (
	"context"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/importer"
	"github.com/hindsight-dev/hindsight/redact"
	"github.com/hindsight-dev/hindsight/server"
)

// importConfig is what import reads from flags and the environment.
type importConfig struct {
	config.Config        // ServerURL, APIKey (a secret: never printed)
	Agent         string // "" = every agent found under the home directory
	Dir           string // the agent's history; "" = its default
	Concurrency   int
	MaxPart       int
	Singles       bool
	Quiet         bool
	DryRun        bool
	Watch         bool          // keep running and follow what the assistants write
	State         string        // the watch state file
	RetryMax      time.Duration // longest wait between retries
}

// importSynopsis is the first line of import's help.
const importSynopsis = "import [AGENT [PATH]] [--watch] [flags]"

// importHelp explains import: what it does, the agents and where each keeps
// its history on each system (from the agents' own Roots).
func importHelp() string {
	var b strings.Builder
	b.WriteString(`Upload coding assistants' local history to a Hindsight server, keeping the original dates.

  hindsight import                  find every assistant's history under your home directory, list it, import all of it
  hindsight import --dry-run        only list what would be imported (no server, no key needed)
  hindsight import AGENT [PATH]     one assistant, from PATH or its default place
  hindsight import [AGENT] --watch  the same, then keep running: what the assistants write is synced
                                    as they write it (appended JSONL is read from where the last read
                                    stopped; databases and other files are re-read when they change)

A re-run sends only what the server lacks (an appended session uploads its new messages); sessions
already synced live by a plugin are completed, not duplicated. Malformed lines are reported as
file:line and skipped.

--watch survives restarts (what the server acknowledged is kept in the --state file), server
outages (changes wait and are retried, with backoff up to --retry-max, nothing lost) and files that
are truncated or replaced. README.md shows how to run it as a systemd user service or a launchd agent.

Agents and where they keep their history (~ is your home directory; the first that exists is read):
`)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, a := range importer.Agents() {
		fmt.Fprintf(tw, "  %s\t%s\n", a.Name, strings.Join(defaultPlaces(a), "\n  \t"))
	}
	tw.Flush()
	return b.String()
}

// defaultPlaces describes where a keeps its history on Linux, macOS and
// Windows, and what the environment changes.
func defaultPlaces(a importer.Agent) []string {
	none := func(string) string { return "" }
	at := func(goos, home string, getenv func(string) string) string {
		roots := a.Roots(home, goos, getenv)
		if goos == "windows" {
			for i, r := range roots {
				roots[i] = strings.ReplaceAll(r, "/", `\`)
			}
		}
		return strings.Join(roots, ", ")
	}
	linux, mac, win := at("linux", "~", none), at("darwin", "~", none), at("windows", "%USERPROFILE%", none)
	var out []string
	if linux == mac {
		out = append(out, linux+" (Linux, macOS)")
	} else {
		out = append(out, linux+" (Linux)", mac+" (macOS)")
	}
	out = append(out, win+" (Windows)")
	// Variables the agent reads, shown by name where they change the place.
	named := func(k string) string { return "$" + k }
	if env := at("linux", "~", named); env != linux {
		out = append(out, env+" (when set)")
	}
	return out
}

func parseImport(args []string, stderr io.Writer) (importConfig, error) {
	c := importConfig{Config: config.Default()}
	fs := cli.NewFlags("import", importSynopsis, stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: hindsight %s\n\n%s\nFlags:\n", importSynopsis, importHelp())
		fs.PrintDefaults()
	}
	fs.IntVar(&c.Concurrency, "concurrency", 4, "sessions uploaded at once")
	fs.IntVar(&c.MaxPart, "max-part-bytes", importer.DefaultMaxPartBytes, "longest part (tool output, text) kept; longer is cut with a note")
	fs.BoolVar(&c.Singles, "singles", false, "one request per message even if the server offers date-keeping batches")
	fs.BoolVar(&c.Quiet, "quiet", false, "no progress bar")
	fs.BoolVar(&c.DryRun, "dry-run", false, "list the sessions found (agent, path, count) and upload nothing")
	fs.BoolVar(&c.Watch, "watch", false, "keep running and sync what the assistants write as they write it")
	fs.StringVar(&c.State, "state", "", "with --watch: the state file (default $XDG_STATE_HOME/hindsight/import-state.json, ~/.local/state/hindsight/import-state.json)")
	fs.DurationVar(&c.RetryMax, "retry-max", 30*time.Second, "longest wait between retries while the server is unreachable or failing")
	ld := config.NewLoader(fs, os.LookupEnv, server.ConfigChecks())
	ld.Client(&c.Config)
	ld.Redact(&c.Config)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return c, err
	}
	if err := ld.Err(); err != nil {
		return c, cli.Usage(err.Error())
	}
	// The key is read after parsing so that --help never prints it.
	ld.APIKey(&c.Config)
	if len(pos) > 0 {
		c.Agent = pos[0]
		if _, ok := importer.AgentNamed(c.Agent); !ok {
			fmt.Fprintf(stderr, "Usage: hindsight %s\n\n%s", importSynopsis, importHelp())
			return c, cli.Usagef("unknown agent %q (one of: %s)", c.Agent, strings.Join(agentNames(), ", "))
		}
	}
	switch len(pos) {
	case 0, 1:
	case 2:
		c.Dir = pos[1]
	default:
		return c, cli.Usagef("import takes an agent and one path, got %q", pos)
	}
	if c.DryRun {
		if c.Watch {
			return c, cli.Usage("--dry-run and --watch do not go together")
		}
		return c, nil
	}
	if c.RetryMax < 10*time.Millisecond {
		return c, cli.Usage("--retry-max must be at least 10ms")
	}
	if c.Watch && c.State == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return c, cli.Usage("no home directory for the watch state: pass --state FILE")
		}
		c.State = importer.DefaultWatchState(home, os.Getenv)
	}
	if c.APIKey == "" {
		return c, cli.Usage("an API key is needed: pass --key or set HINDSIGHT_API_KEY (create one with: hindsight keys create --user NAME)")
	}
	if !strings.HasPrefix(c.ServerURL, "http://") && !strings.HasPrefix(c.ServerURL, "https://") {
		return c, cli.Usagef("--server must be an http:// or https:// URL, got %q", c.ServerURL)
	}
	if c.Concurrency < 1 || c.MaxPart < 1024 {
		return c, cli.Usage("--concurrency must be at least 1 and --max-part-bytes at least 1024")
	}
	return c, nil
}

func agentNames() []string {
	var names []string
	for _, a := range importer.Agents() {
		names = append(names, a.Name)
	}
	return names
}

// found is one agent's history: where it was read and its sessions.
type found struct {
	agent importer.Agent
	path  string
	items []importer.Item
	err   error // the history is there but could not be listed
}

// discover finds the history of the agents to import: the one named (at
// dir, or its first root that exists), or every agent with sessions under
// the home directory.
func discover(c importConfig) ([]found, error) {
	ro := importer.ReadOptions{MaxPartBytes: c.MaxPart}
	if c.Agent != "" {
		a, _ := importer.AgentNamed(c.Agent)
		dir := c.Dir
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("no home directory to find the %s history in (pass PATH): %w", a.Name, err)
			}
			roots := a.Roots(home, runtime.GOOS, os.Getenv)
			dir = firstExisting(roots)
			if dir == "" {
				return nil, fmt.Errorf("no %s history found: none of %s exists (pass PATH)", a.Name, strings.Join(roots, ", "))
			}
		}
		items, err := a.Read(dir, ro)
		if err != nil {
			return nil, err
		}
		return []found{{agent: a, path: dir, items: items}}, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("no home directory to look for history in (name an agent and a PATH): %w", err)
	}
	var out []found
	for _, a := range importer.Agents() {
		dir := firstExisting(a.Roots(home, runtime.GOOS, os.Getenv))
		if dir == "" {
			continue
		}
		items, err := a.Read(dir, ro)
		if err == nil && len(items) == 0 && (!c.Watch || a.InProjects) {
			// Agents whose histories live inside projects (aider, specstory)
			// search the home directory, which always exists: an agent counts
			// as found only when it has sessions.
			continue
		}
		out = append(out, found{agent: a, path: dir, items: items, err: err})
	}
	return out, nil
}

func firstExisting(paths []string) string {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func cmdImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseImport(args, stderr)
	if err != nil {
		return err
	}
	fs, err := discover(c)
	if err != nil {
		return err
	}
	var items []importer.Item
	unreadable := 0
	if c.Agent != "" {
		items = fs[0].items
		verb := "uploading to " + c.ServerURL
		if c.DryRun {
			verb = "not uploading (--dry-run)"
		}
		fmt.Fprintf(stdout, "Found %d %s sessions in %s; %s\n", len(items), c.Agent, fs[0].path, verb)
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "agent\tsessions\tpath")
		for _, f := range fs {
			if f.err != nil {
				unreadable++
				fmt.Fprintf(tw, "%s\t-\t%s\n", f.agent.Name, f.path)
				continue
			}
			items = append(items, f.items...)
			fmt.Fprintf(tw, "%s\t%d\t%s\n", f.agent.Name, len(f.items), f.path)
		}
		tw.Flush()
		for _, f := range fs {
			if f.err != nil {
				fmt.Fprintf(stdout, "cannot read the %s history: %v\n", f.agent.Name, f.err)
			}
		}
		switch {
		case len(fs) == 0:
			fmt.Fprintln(stdout, "No assistant's history found under your home directory (hindsight import --help lists where each is looked for).")
			return nil
		case c.DryRun:
			fmt.Fprintf(stdout, "Found %d sessions of %d assistants; not uploading (--dry-run)\n", len(items), len(fs)-unreadable)
		default:
			fmt.Fprintf(stdout, "Found %d sessions of %d assistants; uploading to %s\n", len(items), len(fs)-unreadable, c.ServerURL)
		}
	}
	if c.DryRun {
		if unreadable > 0 {
			return fmt.Errorf("%d assistants' history could not be read (above)", unreadable)
		}
		return nil
	}
	client := &importer.Client{URL: c.ServerURL, Key: c.APIKey, HTTP: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: c.Concurrency, Proxy: http.ProxyFromEnvironment},
	}, Retry: importer.Backoff{Max: c.RetryMax}}
	opts := importer.Options{Concurrency: c.Concurrency, Singles: c.Singles, Label: "sessions", Progress: stderr}
	if c.Quiet {
		opts.Progress = nil
	}
	red, err := server.NewRedactor(c.Redact)
	if err != nil {
		return err
	}
	found := func() redact.Counts { return nil }
	if red != nil {
		opts.Redact, found = importer.Redaction(red)
	}
	if c.Watch {
		return watch(ctx, c, fs, client, opts.Redact, stdout, stderr)
	}
	sum, err := importer.Upload(ctx, client, items, opts)
	if sum != nil {
		printImportSummary(stdout, sum)
		fmt.Fprintln(stdout, redactionSummary(found(), red != nil))
	}
	if err != nil {
		if importer.Unauthorized(err) {
			return fmt.Errorf("the server refused the API key (revoked, or for another server?): %w", err)
		}
		return fmt.Errorf("import stopped: %w", err)
	}
	if sum.Sessions.Failed > 0 {
		return fmt.Errorf("%d sessions did not import completely (reasons above); re-run the same command to retry them", sum.Sessions.Failed)
	}
	if unreadable > 0 {
		return fmt.Errorf("%d assistants' history could not be read (above); the rest was imported", unreadable)
	}
	return nil
}

// printImportSummary writes what an import did, with at most 50 lines per list.
func printImportSummary(w io.Writer, s *importer.Summary) {
	how := "one request per message"
	if s.Batched {
		how = "date-keeping batches"
	}
	fmt.Fprintf(w, "Done in %s (%s).\n", s.Elapsed.Round(time.Millisecond), how)
	fmt.Fprintf(w, "sessions: %d imported, %d updated, %d unchanged, %d skipped (nothing to import), %d failed\n",
		s.Sessions.Imported, s.Sessions.Updated, s.Sessions.Unchanged, s.Sessions.Skipped, s.Sessions.Failed)
	fmt.Fprintf(w, "messages: %d imported, %d unchanged, %d failed\n", s.Messages.Imported, s.Messages.Unchanged, s.Messages.Failed)
	if s.Sessions.Deleted > 0 {
		fmt.Fprintf(w, "skipped %d sessions deleted on the server (its Deleted sessions page can allow them to sync again)\n", s.Sessions.Deleted)
	}
	list := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(w, "%s (%d):\n", title, len(lines))
		for i, l := range lines {
			if i == 50 {
				fmt.Fprintf(w, "  ... and %d more\n", len(lines)-50)
				break
			}
			fmt.Fprintln(w, "  "+l)
		}
	}
	probs := make([]string, len(s.Problems))
	for i, p := range s.Problems {
		probs[i] = p.String()
	}
	list("skipped malformed input", probs)
	list("failed", s.Failures)
}

// watch follows the histories found until ctx ends (a signal): the first
// pass is an import of what the server lacks, then what the assistants
// write is synced as they write it. Logs go to stderr.
func watch(ctx context.Context, c importConfig, fs []found, client *importer.Client, red func(*importer.Session), stdout, stderr io.Writer) error {
	var roots []importer.WatchRoot
	var names []string
	for _, f := range fs {
		if f.err != nil {
			continue
		}
		roots = append(roots, importer.WatchRoot{Agent: f.agent, Dir: f.path})
		names = append(names, f.agent.Name)
	}
	if len(roots) == 0 {
		return fmt.Errorf("no assistant's history to watch")
	}
	level := "info"
	if c.Quiet {
		level = "warn"
	}
	fmt.Fprintf(stdout, "Watching %s; state in %s; stop with Ctrl-C (or SIGTERM)\n", strings.Join(names, ", "), c.State)
	w := &importer.Watcher{Client: client, Roots: roots, State: c.State, Redact: red,
		Read: importer.ReadOptions{MaxPartBytes: c.MaxPart}, Log: newLogger("console", level, stderr)}
	if err := w.Run(ctx); err != nil {
		return fmt.Errorf("watch stopped: %w", err)
	}
	return nil
}
