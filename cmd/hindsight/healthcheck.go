package main

import (
	"context"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/hindsight-dev/hindsight/config"
)

// cmdHealthcheck exits 0 when the server at --addr answers /health: the
// container image has no shell tools, so its HEALTHCHECK runs the binary.
func cmdHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	if _, err := loadFlags(cli.NewFlags("healthcheck", "healthcheck [--addr HOST:PORT]", stderr), args, func(ld *config.Loader) {
		ld.Addr(&cfg, "address the server listens on")
	}); err != nil {
		return err
	}
	addr := &cfg.Addr
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return cli.Usagef("--addr %q: %v", *addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("unhealthy: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: /health answered %d", resp.StatusCode)
	}
	fmt.Fprintln(stdout, "healthy")
	return nil
}
