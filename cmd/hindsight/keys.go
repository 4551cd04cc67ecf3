package main

import (
	"context"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"text/tabwriter"

	"github.com/hindsight-dev/hindsight/admin"
	"github.com/hindsight-dev/hindsight/config"
)

const keysUsage = `keys create --user NAME [--label TEXT] [--data DIR|--records URL] issue a key (printed once, last line of stdout)
       keys list --user NAME [--data DIR|--records URL]                 list a user's keys
       keys revoke PREFIX [--data DIR|--records URL]                    revoke the key with this prefix`

func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Usage: hindsight "+keysUsage)
		return cli.Usage("keys needs a subcommand: create, list or revoke")
	}
	cfg := config.Default()
	fs := cli.NewFlags("keys", keysUsage, stderr)
	user := fs.String("user", "", "user name")
	label := fs.String("label", "", "a label to recognise the key by (create)")
	pos, err := loadFlags(fs, args[1:], func(ld *config.Loader) { ld.Data(&cfg); ld.Records(&cfg) })
	if err != nil {
		return err
	}
	switch args[0] {
	case "create":
		if *user == "" || len(pos) != 0 {
			return cli.Usage("usage: hindsight keys create --user NAME [--label TEXT]")
		}
		return admin.WithRecords(ctx, cfg.Records, cfg.Data, passwordCost, func(ops admin.Ops) error {
			key, rec, err := ops.CreateKey(ctx, *user, *label)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "created key %s… for user %s; it is shown only once, store it now:\n%s\n", rec.Prefix, *user, key)
			return nil
		})
	case "list":
		if *user == "" || len(pos) != 0 {
			return cli.Usage("usage: hindsight keys list --user NAME")
		}
		return admin.WithRecords(ctx, cfg.Records, cfg.Data, passwordCost, func(ops admin.Ops) error {
			ks, err := ops.Keys(ctx, *user)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PREFIX\tLABEL\tCREATED\tLAST USED\tSTATUS")
			for _, k := range ks {
				status := "active"
				if k.Revoked != 0 {
					status = "revoked " + fmtTime(k.Revoked)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Prefix, k.Label, fmtTime(k.CreatedAt), fmtTime(k.LastUsed), status)
			}
			return tw.Flush()
		})
	case "revoke":
		if len(pos) != 1 {
			return cli.Usage("usage: hindsight keys revoke PREFIX")
		}
		return admin.WithRecords(ctx, cfg.Records, cfg.Data, passwordCost, func(ops admin.Ops) error {
			k, err := ops.Revoke(ctx, pos[0])
			if err != nil {
				return fmt.Errorf("revoke: %w", err)
			}
			fmt.Fprintf(stdout, "revoked key %s (label %q)\n", k.Prefix, k.Label)
			return nil
		})
	}
	return cli.Usagef("unknown keys subcommand %q (create, list or revoke)", args[0])
}
