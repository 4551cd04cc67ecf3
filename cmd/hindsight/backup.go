package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/hindsight-dev/hindsight/internal/cli"
	"io"
	"os"
	"syscall"

	"github.com/hindsight-dev/hindsight/admin"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/server"
)

// cmdBackup writes a consistent copy of the records file. It reads the file
// directly when no server holds it, and otherwise streams the copy from the
// running server through its admin socket, so backups need no downtime.
func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	fs := cli.NewFlags("backup", "backup --out FILE [--data DIR]", stderr)
	out := fs.String("out", "", "file to write the backup to (required; must not exist)")
	if pos, err := loadFlags(fs, args, func(ld *config.Loader) { ld.Data(&cfg); ld.Records(&cfg) }); err != nil {
		return err
	} else if len(pos) > 0 || *out == "" {
		return cli.Usage("usage: hindsight backup --out FILE [--data DIR]")
	}
	// Records in PostgreSQL are the database's to copy (pg_dump).
	if pg, err := kv.RecordsInPostgres(cfg.Records); err != nil || pg {
		return fmt.Errorf("backup: %w", cmp.Or(err, kv.ErrBackupInPostgres))
	}
	if _, err := os.Stat(*out); err == nil {
		return fmt.Errorf("backup: %s exists; choose a new file", *out)
	}
	f, err := openPartial(*out + ".partial")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	n, via, err := admin.Backup(ctx, cfg.Data, f)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		// What a stream cut short or a bad disk wrote is found now, not at
		// the restore that needs it.
		err = kv.VerifyBackup(f.Name())
	}
	if err == nil {
		err = os.Rename(f.Name(), *out)
	} else {
		os.Remove(f.Name())
	}
	if cerr := f.Close(); err == nil {
		err = cerr // closing releases the lock, after the rename
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes, %s)\nrestore with: hindsight restore %s --data NEW_DIR\n", cfg.Data, *out, n, via, *out)
	return nil
}

// openPartial opens name, the file a backup is written to before it takes
// its final name, empty and locked against another backup to the same
// file. A leftover from a killed backup is reused: the lock died with it.
func openPartial(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another backup is writing %s; wait for it, or choose another file", name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// cmdRestore installs a backup into an empty data directory. The full-text
// index is rebuilt from the records at the next start.
func cmdRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := config.Default()
	pos, err := loadFlags(cli.NewFlags("restore", "restore FILE --data DIR", stderr), args, func(ld *config.Loader) { ld.Data(&cfg); ld.Records(&cfg) })
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usage("usage: hindsight restore FILE --data DIR")
	}
	if err := dataDirOnly("restore", cfg.Records, "it installs a backup file into an empty data directory; records in PostgreSQL are restored with pg_restore (README, \"Records in PostgreSQL\"), and a backup file goes into PostgreSQL by restoring it into a new data directory, then hindsight migrate --from DIR --to postgres://..."); err != nil {
		return err
	}
	if err := server.Restore(ctx, pos[0], cfg.Data); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s; start it with: hindsight serve --data %s (the search index is rebuilt at start)\n", pos[0], cfg.Data, cfg.Data)
	return nil
}
