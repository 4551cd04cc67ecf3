package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/hindsight-dev/hindsight/admin"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/server"
)

// cmdBackup writes a consistent copy of the records file. It reads the file
// directly when no server holds it, and otherwise streams the copy from the
// running server through its admin socket, so backups need no downtime.
func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	fs := newFlags("backup", "backup --out FILE [--data DIR]", stderr)
	out := fs.String("out", "", "file to write the backup to (required; must not exist)")
	if pos, err := loadFlags(fs, args, func(ld *config.Loader) { ld.Data(&cfg) }); err != nil {
		return err
	} else if len(pos) > 0 || *out == "" {
		return &usageError{"usage: hindsight backup --out FILE [--data DIR]"}
	}
	f, err := os.OpenFile(*out+".partial", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := os.Stat(*out); err == nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("backup: %s exists; choose a new file", *out)
	}
	n, via, err := admin.Backup(ctx, cfg.Data, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), *out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes, %s)\nrestore with: hindsight restore %s --data NEW_DIR\n", cfg.Data, *out, n, via, *out)
	return nil
}

// cmdRestore installs a backup into an empty data directory. The full-text
// index is rebuilt from the records at the next start.
func cmdRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	pos, err := loadFlags(newFlags("restore", "restore FILE --data DIR", stderr), args, func(ld *config.Loader) { ld.Data(&cfg) })
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{"usage: hindsight restore FILE --data DIR"}
	}
	if err := server.Restore(ctx, pos[0], cfg.Data); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s; start it with: hindsight serve --data %s (the search index is rebuilt at start)\n", pos[0], cfg.Data, cfg.Data)
	return nil
}
