package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/mcpd"
)

// cmdMCP: `hindsight mcp` is an MCP server on stdin/stdout for assistants
// that launch one, answering through a running server's REST API with the
// importer's variables (HINDSIGHT_URL, HINDSIGHT_API_KEY). stdout carries
// nothing but the protocol; logs go to stderr.
func cmdMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp", "mcp [--server URL] [--key KEY]", stderr)
	server := fs.String("server", env("HINDSIGHT_URL", "http://"+env("HINDSIGHT_ADDR", "127.0.0.1:7420")), "Hindsight server URL (env HINDSIGHT_URL)")
	// The key's default is read after parsing so that --help never prints it.
	key := fs.String("key", "", "API key, osk_... (env HINDSIGHT_API_KEY)")
	level := fs.String("log-level", env("HINDSIGHT_LOG_LEVEL", "warn"), "log level on stderr: debug, info, warn, error (env HINDSIGHT_LOG_LEVEL)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{fmt.Sprintf("mcp takes no arguments, got %q", pos)}
	}
	if *key == "" {
		*key = env("HINDSIGHT_API_KEY", "")
	}
	if *key == "" {
		return &usageError{"an API key is needed: set HINDSIGHT_API_KEY (or pass --key); create one with: hindsight keys create --user NAME"}
	}
	if !strings.HasPrefix(*server, "http://") && !strings.HasPrefix(*server, "https://") {
		return &usageError{fmt.Sprintf("the server must be an http:// or https:// URL (HINDSIGHT_URL), got %q", *server)}
	}
	log, err := newLogger("json", *level, stderr)
	if err != nil {
		return err
	}
	out, ok := stdout.(io.WriteCloser)
	if !ok {
		out = nopWriteCloser{stdout}
	}
	log.Info().Str("server", *server).Msg("serving MCP on stdio")
	b := mcpd.NewRemote(*server, *key, &http.Client{Timeout: time.Minute})
	return mcpd.ServeStdio(ctx, b, os.Stdin, out, log, version)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
