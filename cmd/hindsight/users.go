package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

const usersUsage = `users create NAME [--data DIR]   add a user
       users list [--data DIR]          list users`

func cmdUsers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Usage: hindsight "+usersUsage)
		return &usageError{"users needs a subcommand: create or list"}
	}
	fs := newFlags("users", usersUsage, stderr)
	data := dataFlag(fs)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	switch args[0] {
	case "create":
		if len(pos) != 1 {
			return &usageError{"usage: hindsight users create NAME"}
		}
		return withAdmin(ctx, *data, func(ops adminOps) error {
			u, err := ops.CreateUser(ctx, pos[0])
			if err != nil {
				return fmt.Errorf("create user: %w", err)
			}
			fmt.Fprintf(stdout, "created user %s (id %s)\nnext: hindsight keys create --user %s\n", u.Name, u.ID, u.Name)
			return nil
		})
	case "list":
		return withAdmin(ctx, *data, func(ops adminOps) error {
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
	return &usageError{fmt.Sprintf("unknown users subcommand %q (create or list)", args[0])}
}

func fmtTime(ms int64) string {
	if ms == 0 {
		return "never"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05Z")
}
