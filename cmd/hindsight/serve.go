package main

import (
	"context"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/server"
)

// parseServe reads serve's flags and environment into a Config.
func parseServe(args []string, stderr io.Writer) (config.Config, error) {
	cfg := config.Default()
	pos, err := loadFlags(cli.NewFlags("serve", "serve [flags]", stderr), args, func(ld *config.Loader) { ld.Serve(&cfg) })
	if err != nil {
		return cfg, err
	}
	if len(pos) > 0 {
		return cfg, cli.Usagef("serve takes no arguments, got %q", pos)
	}
	// The admin socket hashes passwords at the commands' cost (tests lower it).
	cfg.BcryptCost = passwordCost
	return cfg, nil
}

// newLogger returns the logger of format (console or json, as config
// checked) at level.
func newLogger(format, level string, w io.Writer) zerolog.Logger {
	lvl, _ := zerolog.ParseLevel(level)
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogFormat, cfg.LogLevel, stderr)
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		s.Close(context.Background())
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	url := "http://" + ln.Addr().String()
	abs, _ := filepath.Abs(cfg.Data)
	log.Info().Str("url", url).Str("data", abs).Str("go", runtime.Version()).
		Str("os", runtime.GOOS+"/"+runtime.GOARCH).Int("cpus", runtime.NumCPU()).
		Str("embedder", s.Semantic.Describe).Str("version", version).Msg("hindsight serving")
	fmt.Fprintf(stdout, "Hindsight %s listening on %s (data: %s)\nsemantic search: %s\n", version, url, abs, s.Semantic.Describe)
	if link, err := s.Dashboard.SetupLink(ctx); err != nil {
		log.Warn().Err(err).Msg("could not issue the first-run setup link")
	} else if link != "" {
		fmt.Fprintf(stdout, "No account yet. Create the first one (this link works once): %s%s\n", url, link)
	}
	runErr := s.Run(ctx, ln)
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Close(cctx); err != nil && runErr == nil {
		return fmt.Errorf("close: %w", err)
	}
	if runErr != nil {
		return runErr
	}
	log.Info().Msg("stopped cleanly")
	return nil
}

// isTerminal reports whether w is a character device (colour only then).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
