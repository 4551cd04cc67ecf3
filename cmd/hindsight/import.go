// Command hindsight import reads a coding assistant's local history (Claude
// Code transcripts, opencode's JSON storage) and uploads it to a Hindsight
// server through the sync API, keeping the original dates. It is a client: it
// needs a running server and an API key, not the data directory.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/importer"
	"github.com/hindsight-dev/hindsight/redact"
	"github.com/hindsight-dev/hindsight/server"
)

const importUsage = `import claude-code [DIR] [flags]   DIR defaults to ~/.claude/projects
       import opencode [DIR] [flags]      DIR defaults to $XDG_DATA_HOME/opencode (~/.local/share/opencode)`

// importConfig is what import reads from flags and the environment.
type importConfig struct {
	config.Config // ServerURL, APIKey (a secret: never printed), XDGDataHome
	Kind          string
	Dir           string
	Concurrency   int
	MaxPart       int
	Singles       bool
	Quiet         bool
}

func parseImport(args []string, stderr io.Writer) (importConfig, error) {
	c := importConfig{Config: config.Default()}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, "Usage: hindsight "+importUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return c, flag.ErrHelp
		}
		return c, &usageError{"import needs a source: claude-code or opencode"}
	}
	c.Kind = args[0]
	if c.Kind != "claude-code" && c.Kind != "opencode" {
		fmt.Fprintln(stderr, "Usage: hindsight "+importUsage)
		return c, &usageError{fmt.Sprintf("unknown import source %q (claude-code or opencode)", c.Kind)}
	}
	fs := newFlags("import "+c.Kind, "import "+c.Kind+" [DIR] [flags]", stderr)
	fs.IntVar(&c.Concurrency, "concurrency", 4, "sessions uploaded at once")
	fs.IntVar(&c.MaxPart, "max-part-bytes", importer.DefaultMaxPartBytes, "longest part (tool output, text) kept; longer is cut with a note")
	fs.BoolVar(&c.Singles, "singles", false, "one request per message even if the server offers date-keeping batches")
	fs.BoolVar(&c.Quiet, "quiet", false, "no progress bar")
	ld := config.NewLoader(fs, os.LookupEnv)
	ld.Client(&c.Config)
	ld.Redact(&c.Config)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return c, err
	}
	if err := ld.Err(); err != nil {
		return c, &usageError{err.Error()}
	}
	// The key is read after parsing so that --help never prints it.
	ld.APIKey(&c.Config)
	switch len(pos) {
	case 0:
		if c.Dir, err = defaultImportDir(c.Kind, c.XDGDataHome); err != nil {
			return c, err
		}
	case 1:
		c.Dir = pos[0]
	default:
		return c, &usageError{fmt.Sprintf("import %s takes one directory, got %q", c.Kind, pos)}
	}
	if c.APIKey == "" {
		return c, &usageError{"an API key is needed: pass --key or set HINDSIGHT_API_KEY (create one with: hindsight keys create --user NAME)"}
	}
	if !strings.HasPrefix(c.ServerURL, "http://") && !strings.HasPrefix(c.ServerURL, "https://") {
		return c, &usageError{fmt.Sprintf("--server must be an http:// or https:// URL, got %q", c.ServerURL)}
	}
	if c.Concurrency < 1 || c.MaxPart < 1024 {
		return c, &usageError{"--concurrency must be at least 1 and --max-part-bytes at least 1024"}
	}
	return c, nil
}

func defaultImportDir(kind, xdgDataHome string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory to find the %s history in (pass DIR): %w", kind, err)
	}
	if kind == "claude-code" {
		return filepath.Join(home, ".claude", "projects"), nil
	}
	if xdgDataHome == "" {
		xdgDataHome = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(xdgDataHome, "opencode"), nil
}

func cmdImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseImport(args, stderr)
	if err != nil {
		return err
	}
	ro := importer.ReadOptions{MaxPartBytes: c.MaxPart}
	var items []importer.Item
	if c.Kind == "claude-code" {
		items, err = importer.ClaudeCode(c.Dir, ro)
	} else {
		items, err = importer.OpenCode(c.Dir, ro)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Found %d %s sessions in %s; uploading to %s\n", len(items), c.Kind, c.Dir, c.ServerURL)
	client := &importer.Client{URL: c.ServerURL, Key: c.APIKey, HTTP: &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: c.Concurrency, Proxy: http.ProxyFromEnvironment},
	}}
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
