package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// cmdBackup writes a consistent copy of the records file. It reads the file
// directly when no server holds it, and otherwise streams the copy from the
// running server through its admin socket, so backups need no downtime.
func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("backup", "backup --out FILE [--data DIR]", stderr)
	data := dataFlag(fs)
	out := fs.String("out", "", "file to write the backup to (required; must not exist)")
	if pos, err := parse(fs, args); err != nil {
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
	n, via, err := writeBackup(ctx, *data, f)
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
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes, %s)\nrestore with: hindsight restore %s --data NEW_DIR\n", *data, *out, n, via, *out)
	return nil
}

func writeBackup(ctx context.Context, dir string, w io.Writer) (int64, string, error) {
	st, err := kv.Open(dir, kv.Options{LockTimeout: time.Second, ReadOnly: true})
	if err == nil {
		defer st.Close()
		n, err := st.Backup(ctx, w)
		return n, "read directly", err
	}
	if !errors.Is(err, kv.ErrLocked) {
		return 0, "", err
	}
	c := newRemoteOps(filepath.Join(dir, adminSocket)).c
	c.Timeout = 0 // a large file takes as long as it takes
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://admin/backup", nil)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("data directory %s is held by another process whose admin socket does not answer (%v)", dir, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return 0, "", fmt.Errorf("backup through the server: %d %s", resp.StatusCode, b)
	}
	n, err := io.Copy(w, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("backup stream ended after %d of %d bytes", n, resp.ContentLength)
	}
	return n, "through the running server", err
}

// cmdRestore installs a backup into an empty data directory. The full-text
// index is rebuilt from the records at the next start.
func cmdRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("restore", "restore FILE --data DIR", stderr)
	data := dataFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{"usage: hindsight restore FILE --data DIR"}
	}
	if err := kv.Restore(pos[0], *data); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s; start it with: hindsight serve --data %s (the search index is rebuilt at start)\n", pos[0], *data, *data)
	return nil
}
