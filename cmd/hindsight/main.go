// Command hindsight keeps coding-assistant sessions and makes them searchable:
// it serves the REST API and dashboard (serve), manages users and API keys,
// rebuilds derived data, and starts the benchmarks (a binary of their own,
// hindsight-bench). main only wires signals to run, which is what the tests
// call.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// A second signal exits at once, whatever is still draining.
		<-ctx.Done()
		stop()
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		<-c
		fmt.Fprintln(os.Stderr, "hindsight: second signal, exiting now")
		os.Exit(130)
	}()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		var ce *childExit
		if !errors.As(err, &ce) { // hindsight-bench printed its own error
			fmt.Fprintln(os.Stderr, "hindsight:", err)
		}
		os.Exit(exitCode(err))
	}
}
