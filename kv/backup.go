package kv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// A backup file is the store's bbolt file as one read transaction sees it,
// followed by a trailer that makes a damaged or cut-off copy detectable:
//
//	"HSBACKUP" | length of the bbolt part, uint64 big-endian | SHA-256 of it
//
// Files without the trailer (backups of older versions, or a copy of a
// stopped server's file) restore too, after the structural check alone.
const (
	backupMagic      = "HSBACKUP"
	backupTrailerLen = len(backupMagic) + 8 + sha256.Size
)

// ErrBackupInPostgres is Backup's error when the records are in
// PostgreSQL, whose own tools copy a database consistently while it runs.
var ErrBackupInPostgres = errors.New("the records are in PostgreSQL: back them up with pg_dump and restore them with pg_restore (see README, \"Records in PostgreSQL\")")

// Backup writes a consistent copy of the whole file to w from one read
// transaction, so writers keep going while it runs, and the trailer
// described above. It returns the bytes written. ErrBackupInPostgres when
// the records are in PostgreSQL.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.db == nil {
		return 0, ErrBackupInPostgres
	}
	h := sha256.New()
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(io.MultiWriter(w, h))
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	t := binary.BigEndian.AppendUint64([]byte(backupMagic), uint64(n))
	m, err := w.Write(h.Sum(t))
	if err != nil {
		return n + int64(m), fmt.Errorf("backup: %w", err)
	}
	return n + int64(m), nil
}

// backupInfo is what verifying a backup file found: how many of its bytes
// are the bbolt file, and their SHA-256.
type backupInfo struct {
	size int64
	sum  []byte
}

// VerifyBackup checks that the file at path is a whole, undamaged backup
// that is safe to open, without opening it as a store. Its errors say what
// is wrong in words an operator can act on.
func VerifyBackup(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = verifyBackup(path, f)
	return err
}

func verifyBackup(path string, f *os.File) (backupInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return backupInfo{}, err
	}
	if !fi.Mode().IsRegular() {
		return backupInfo{}, fmt.Errorf("%s is not a regular file", path)
	}
	size := fi.Size()
	if size == 0 {
		return backupInfo{}, fmt.Errorf("%s is empty (0 bytes), so there is nothing to restore; an interrupted `hindsight backup` leaves such a file (as FILE.partial): take the backup again", path)
	}
	var want []byte // the trailer's checksum, if there is one
	if size >= int64(backupTrailerLen) {
		t := make([]byte, backupTrailerLen)
		if _, err := f.ReadAt(t, size-int64(backupTrailerLen)); err != nil {
			return backupInfo{}, fmt.Errorf("read %s: %w", path, err)
		}
		if string(t[:len(backupMagic)]) == backupMagic {
			n := binary.BigEndian.Uint64(t[len(backupMagic):])
			if n != uint64(size)-uint64(backupTrailerLen) {
				return backupInfo{}, fmt.Errorf("%s is truncated or damaged: its trailer gives %d bytes of records, the file holds %d", path, n, size-int64(backupTrailerLen))
			}
			size, want = int64(n), t[len(backupMagic)+8:]
		}
	}
	m, err := boltMetaOf(f, size)
	switch {
	case errors.Is(err, errNotBolt) && want == nil:
		return backupInfo{}, fmt.Errorf("%s is not a Hindsight backup: %w", path, err)
	case errors.Is(err, errTruncated):
		return backupInfo{}, fmt.Errorf("%s is %w; take the backup again", path, err)
	case err != nil:
		return backupInfo{}, fmt.Errorf("%s is damaged: %w", path, err)
	case want == nil && size%int64(m.pageSize) != 0:
		return backupInfo{}, fmt.Errorf("%s is truncated or damaged: it has no backup trailer, and %d bytes is not a whole number of %d-byte pages", path, size, m.pageSize)
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
		return backupInfo{}, fmt.Errorf("read %s: %w", path, err)
	}
	sum := h.Sum(nil)
	if want != nil && !bytes.Equal(sum, want) {
		return backupInfo{}, fmt.Errorf("%s is damaged: its contents do not match the checksum written with it", path)
	}
	if err := checkBoltFile(f, size); err != nil {
		return backupInfo{}, fmt.Errorf("%s is damaged: %w", path, err)
	}
	return backupInfo{size: size, sum: sum}, nil
}

// Restore installs the backup file src as the store of dir, which must not
// hold a store yet. src is verified first (VerifyBackup), so a bad file is
// refused before anything is written; then the copy is checked to be what
// was verified, opened and passed through Check before it takes the final
// name. On any failure dir is left as it was: a directory restore created is
// removed again, and no temporary directory stays behind.
func Restore(src, dir string) (err error) {
	dst := filepath.Join(dir, FileName)
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("restore: %s already exists: restore into an empty directory", dst)
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer f.Close()
	info, err := verifyBackup(src, f)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}

	if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
		defer func() {
			if err != nil {
				os.Remove(dir) // only if still empty: then restore made it
			}
		}()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	tmpDir, err := os.MkdirTemp(dir, ".restore-")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, FileName)
	h := sha256.New()
	if err := copyFile(io.NewSectionReader(f, 0, info.size), tmp, h); err != nil {
		return fmt.Errorf("restore: copy %s: %w", src, err)
	}
	if !bytes.Equal(h.Sum(nil), info.sum) {
		return fmt.Errorf("restore: %s changed while it was being restored; try again", src)
	}
	// The index does not travel with a backup; the next start finds it
	// missing and rebuilds it from these records.
	if err := openAndCheck(tmpDir); err != nil {
		return fmt.Errorf("restore: backup %s fails verification: %w", src, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return syncDir(dir)
}

// openAndCheck opens the store in dir (which creates any bucket a backup of
// an older version lacks) and runs Check. checkBoltFile has passed, so
// bbolt will not fault on the file; should a record still make a decoder
// panic or fault, that is an error here, not a crash.
func openAndCheck(dir string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the records are damaged: %v", p)
		}
	}()
	st, err := Open(dir, Options{})
	if err != nil {
		return err
	}
	err = st.Check()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyFile writes r to a new file dst (and to h), durably.
func copyFile(r io.Reader, dst string, h hash.Hash) error {
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.MultiWriter(out, h), r); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
