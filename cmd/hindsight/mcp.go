package main

import (
	"context"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/mcpd"
)

// cmdMCP: `hindsight mcp` is an MCP server on stdin/stdout for assistants
// that launch one, answering through a running server's REST API with the
// importer's variables (HINDSIGHT_URL, HINDSIGHT_API_KEY). stdout carries
// nothing but the protocol; logs go to stderr, as JSON.
func cmdMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	cfg.LogLevel = "warn" // stderr of an assistant's child process: quiet unless asked
	fs := cli.NewFlags("mcp", "mcp [--server URL] [--key KEY]", stderr)
	ld := config.NewLoader(fs, os.LookupEnv, config.Checks{})
	ld.Client(&cfg)
	ld.LogLevel(&cfg)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if err := ld.Err(); err != nil {
		return cli.Usage(err.Error())
	}
	if len(pos) > 0 {
		return cli.Usagef("mcp takes no arguments, got %q", pos)
	}
	// The key is read after parsing so that --help never prints it.
	ld.APIKey(&cfg)
	if cfg.APIKey == "" {
		return cli.Usage("an API key is needed: set HINDSIGHT_API_KEY (or pass --key); create one with: hindsight keys create --user NAME")
	}
	if !strings.HasPrefix(cfg.ServerURL, "http://") && !strings.HasPrefix(cfg.ServerURL, "https://") {
		return cli.Usagef("the server must be an http:// or https:// URL (HINDSIGHT_URL), got %q", cfg.ServerURL)
	}
	log := newLogger("json", cfg.LogLevel, stderr)
	out, ok := stdout.(io.WriteCloser)
	if !ok {
		out = nopWriteCloser{stdout}
	}
	log.Info().Str("server", cfg.ServerURL).Msg("serving MCP on stdio")
	b := mcpd.NewRemote(cfg.ServerURL, cfg.APIKey, &http.Client{Timeout: time.Minute})
	return mcpd.ServeStdio(ctx, b, os.Stdin, out, log, version)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
