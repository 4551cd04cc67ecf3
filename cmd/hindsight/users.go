package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/admin"
	"github.com/hindsight-dev/hindsight/config"
)

const usersUsage = `users create NAME [--password-stdin] [--data DIR|--records URL]   add a user (asks for a dashboard password on a terminal)
       users password NAME [--password-stdin] [--data DIR|--records URL] set a user's dashboard password
       users list [--data DIR|--records URL]                             list users`

func cmdUsers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Usage: hindsight "+usersUsage)
		return cli.Usage("users needs a subcommand: create, password or list")
	}
	cfg := config.Default()
	fs := cli.NewFlags("users", usersUsage, stderr)
	fromStdin := fs.Bool("password-stdin", false, "read the dashboard password from the first line of stdin (never pass it as an argument)")
	pos, err := loadFlags(fs, args[1:], func(ld *config.Loader) { ld.Data(&cfg); ld.Records(&cfg) })
	if err != nil {
		return err
	}
	switch args[0] {
	case "create":
		if len(pos) != 1 {
			return cli.Usage("usage: hindsight users create NAME [--password-stdin]")
		}
		if err := accounts.ValidUserName(pos[0]); err != nil {
			return fmt.Errorf("create user: %w", err)
		}
		// The password is read (and checked) before anything is written or
		// sent to a running server.
		pw, err := readPassword(pos[0], *fromStdin, false, stderr)
		if err != nil {
			return err
		}
		if pw != "" {
			return admin.WithRecords(ctx, cfg.Records, cfg.Data, passwordCost, func(ops admin.Ops) error {
				u, err := ops.CreateUserWithPassword(ctx, pos[0], pw)
				if err != nil {
					return fmt.Errorf("create user: %w", err)
				}
				fmt.Fprintf(stdout, "created user %s (id %s) with a dashboard password\nnext: hindsight keys create --user %s, or sign in to the dashboard and create a key on its Settings page\n", u.Name, u.ID, u.Name)
				return nil
			})
		}
		return admin.WithRecords(ctx, cfg.Records, cfg.Data, passwordCost, func(ops admin.Ops) error {
			u, err := ops.CreateUser(ctx, pos[0])
			if err != nil {
				return fmt.Errorf("create user: %w", err)
			}
			fmt.Fprintf(stdout, "created user %s (id %s)\nnext: hindsight keys create --user %s\n", u.Name, u.ID, u.Name)
			return nil
		})
	case "password":
		if len(pos) != 1 {
			return cli.Usage("usage: hindsight users password NAME [--password-stdin]")
		}
		pw, err := readPassword(pos[0], *fromStdin, true, stderr)
		if err != nil {
			return err
		}
		return admin.WithRecords(ctx, cfg.Records, cfg.Data, passwordCost, func(ops admin.Ops) error {
			if err := ops.SetPassword(ctx, pos[0], pw); err != nil {
				return fmt.Errorf("set password: %w", err)
			}
			fmt.Fprintf(stdout, "set the dashboard password of %s (its dashboard sessions were signed out)\n", pos[0])
			return nil
		})
	case "list":
		return admin.WithRecords(ctx, cfg.Records, cfg.Data, passwordCost, func(ops admin.Ops) error {
			us, err := ops.Users(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tID\tCREATED")
			for _, u := range us {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", u.Name, u.ID, fmtTime(u.CreatedAt))
			}
			return tw.Flush()
		})
	}
	return cli.Usagef("unknown users subcommand %q (create, password or list)", args[0])
}

// passwordInput is where passwords are read: stdin, and whether it is a
// terminal (then the password is prompted for without echo). Tests replace it.
var passwordInput = func() (io.Reader, bool) { return os.Stdin, term.IsTerminal(int(os.Stdin.Fd())) }

// readPassword gets a dashboard password: the first line of stdin with
// --password-stdin, else a prompt (twice, without echo) when stdin is a
// terminal. Without either it returns "" (no password), or an error when
// required. A password never comes from the command line, where other users
// of the machine could read it.
func readPassword(name string, fromStdin, required bool, stderr io.Writer) (string, error) {
	in, isTerm := passwordInput()
	var pw string
	switch {
	case fromStdin:
		line, err := bufio.NewReaderSize(in, 4096).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read the password from stdin: %w", err)
		}
		pw = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if pw == "" {
			return "", errors.New("--password-stdin: stdin held no password")
		}
	case isTerm:
		prompt := func(p string) (string, error) {
			fmt.Fprint(stderr, p)
			b, err := term.ReadPassword(int(os.Stdin.Fd()))
			fmt.Fprintln(stderr)
			return string(b), err
		}
		msg := "Dashboard password for " + name + " (empty: none, sign in with API keys only): "
		if required {
			msg = "New dashboard password for " + name + ": "
		}
		var err error
		if pw, err = prompt(msg); err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		if pw == "" && !required {
			return "", nil
		}
		again, err := prompt("Again: ")
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		if again != pw {
			return "", errors.New("the two passwords differ")
		}
	case required:
		return "", cli.Usage("no password given: pipe it with --password-stdin, or run this on a terminal to be asked")
	default:
		return "", nil
	}
	if err := accounts.ValidPassword(pw); err != nil {
		return "", err
	}
	return pw, nil
}

// passwordCost is the bcrypt cost of passwords set by these commands, on the
// store directly or by the admin socket of a server serve starts; 0 means
// bcrypt's default. Tests lower it.
var passwordCost = 0

func fmtTime(ms int64) string {
	if ms == 0 {
		return "never"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05Z")
}
