package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"os"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/server"
)

const usage = `hindsight keeps your coding-assistant sessions and makes them searchable.

Usage:
  hindsight serve  [--addr 127.0.0.1:7420] [--data ./hindsight-data]   run the API server
  hindsight users  create NAME [--password-stdin] | password NAME | list   manage users (and dashboard passwords)
  hindsight keys   create --user NAME [--label TEXT] | list --user NAME | revoke PREFIX
  hindsight reindex [--data DIR] [--text-index bleve|weaviate]          rebuild the configured full-text index (server stopped)
  hindsight reembed [--data DIR] [--embedder E]                         (re)build all vectors for the configured embedder (server stopped)
  hindsight backup --out FILE [--data DIR]                              hot backup of the records (works while serving)
  hindsight restore FILE --data DIR                                     restore a backup into an empty directory
  hindsight migrate --from SRC --to DST [--force]                       copy the records between a data directory and PostgreSQL (servers stopped)
  hindsight redact [--data DIR] [--dry-run]                              redact secrets in stored sessions (works while serving)
  hindsight bench  relevance|load|ingest|... [flags]                    benchmarks: runs hindsight-bench (see: hindsight bench help)
  hindsight import [AGENT [PATH]] [--dry-run] [--server URL] [--key KEY] upload assistants' local history, keeping its dates
  hindsight mcp    (env HINDSIGHT_URL, HINDSIGHT_API_KEY)               MCP server on stdin/stdout for coding assistants
  hindsight healthcheck [--addr A]                                      exit 0 if the server answers /health (container HEALTHCHECK)
  hindsight version

Every command takes --data DIR (env HINDSIGHT_DATA, default ./hindsight-data).
Run "hindsight COMMAND --help" for the flags of a command.
`

// run executes one hindsight command; stdout gets results, stderr progress and logs.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return cli.Usage("no command given")
	}
	err := dispatch(ctx, args[0], args[1:], stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the flag set printed its help
	}
	return err
}

func dispatch(ctx context.Context, cmd string, rest []string, stdout, stderr io.Writer) error {
	switch cmd {
	case "serve":
		return cmdServe(ctx, rest, stdout, stderr)
	case "users":
		return cmdUsers(ctx, rest, stdout, stderr)
	case "keys":
		return cmdKeys(ctx, rest, stdout, stderr)
	case "reindex":
		return cmdReindex(ctx, rest, stdout, stderr)
	case "reembed":
		return cmdReembed(ctx, rest, stdout, stderr)
	case "backup":
		return cmdBackup(ctx, rest, stdout, stderr)
	case "restore":
		return cmdRestore(ctx, rest, stdout, stderr)
	case "redact":
		return cmdRedact(ctx, rest, stdout, stderr)
	case "migrate":
		return cmdMigrate(ctx, rest, stdout, stderr)
	case "mcp":
		return cmdMCP(ctx, rest, stdout, stderr)
	case "healthcheck":
		return cmdHealthcheck(ctx, rest, stdout, stderr)
	case "bench":
		return cmdBench(ctx, rest, stdout, stderr)
	case "import":
		return cmdImport(ctx, rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "hindsight", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return cli.Usagef("unknown command %q", cmd)
}

const version = server.Version

// exitCode is the process's exit status for err: hindsight-bench's own for
// a bench, 2 for a mistake in the command line or the configuration, else 1.
func exitCode(err error) int {
	var ce *config.Error
	var child *childExit
	switch {
	case errors.As(err, &child):
		return child.code
	case cli.IsUsage(err) || errors.As(err, &ce):
		return 2
	}
	return 1
}

// loadFlags parses args with the settings bind registered on fs and
// returns the positional arguments. A malformed flag or environment
// variable is a usage error naming it.
func loadFlags(fs *flag.FlagSet, args []string, bind func(*config.Loader)) ([]string, error) {
	ld := config.NewLoader(fs, os.LookupEnv, server.ConfigChecks())
	bind(ld)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if err := ld.Err(); err != nil {
		return nil, cli.Usage(err.Error())
	}
	return pos, nil
}

// dataDirOnly refuses command cmd, which works on the records of a data
// directory (the bbolt file) only, when records (--records,
// HINDSIGHT_RECORDS) is a PostgreSQL address: run against the data
// directory it would change records no node serves. why says what to do
// instead.
func dataDirOnly(cmd, records, why string) error {
	pg, err := kv.RecordsInPostgres(records)
	if err != nil {
		return cli.Usage(err.Error())
	}
	if pg {
		return fmt.Errorf("%s: the records are in PostgreSQL (--records, HINDSIGHT_RECORDS), and %s works on the records of a data directory only: %s", cmd, cmd, why)
	}
	return nil
}
