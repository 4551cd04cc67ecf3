package kv

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole file to w from one read
// transaction, so writers keep going while it runs. It returns the bytes
// written.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// Restore installs the backup file src as the store of dir, which must not
// hold a store yet. The copy is verified (it opens and passes Check) before it
// takes the final name, so a bad backup never becomes a data directory.
func Restore(src, dir string) error {
	dst := filepath.Join(dir, FileName)
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("restore: %s already exists: restore into an empty directory", dst)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmpDir, err := os.MkdirTemp(dir, ".restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	if err := copyFile(src, filepath.Join(tmpDir, FileName)); err != nil {
		return fmt.Errorf("restore: copy %s: %w", src, err)
	}
	st, err := Open(tmpDir, Options{})
	if err != nil {
		return fmt.Errorf("restore: %s is not a Hindsight backup: %w", src, err)
	}
	// The index does not travel with a backup; the next start finds it
	// missing and rebuilds it from these records.
	err = st.Check()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: backup %s fails verification: %w", src, err)
	}
	return os.Rename(filepath.Join(tmpDir, FileName), dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
