package importer

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Some assistants keep their history in SQLite (Cursor's state.vscdb,
// opencode.db) and keep the database open while they run, usually in WAL
// mode with the newest rows only in the -wal file. readSQLite reads such a
// database without ever writing it and without failing because the
// assistant holds it:
//
//   - In place: the file is opened read-only (mode=ro) and everything is read
//     inside one read transaction, so the reader sees one committed state,
//     WAL included, whatever the assistant writes meanwhile. In WAL mode a
//     writer never blocks a reader; in rollback-journal mode a writer blocks
//     readers only while it commits, which the busy timeout waits out. A
//     read-only connection never checkpoints or deletes the WAL; it may set
//     its read mark in the -shm file, as every SQLite reader does.
//   - From a copy: when the file cannot be read in place (a lock held longer
//     than the busy timeout, a WAL database in a read-only directory without
//     its -shm, a hot journal a read-only connection may not roll back), the
//     database and its -wal and -journal are copied into a private temporary
//     directory and the copy is read, then removed. The copy is taken only
//     while the files' sizes and modification times stay the same across it,
//     so it is not torn by a concurrent write; opening it lets SQLite replay
//     the WAL or roll back the journal in the copy, never in the original.

// sqliteBusy is how long a read waits for a lock held by the assistant
// before falling back to a copy.
const sqliteBusy = 5 * time.Second

// readSQLite runs read against a consistent read-only view of the SQLite
// database at path (see above). read gets a connection inside an open read
// transaction on which SQLite's authorizer allows only reading the tables
// named (and the schema): any other table, and any write, fails to compile.
// That is how the readers keep to the conversation tables of a database
// that also holds credentials (opencode's account and credential tables).
func readSQLite(ctx context.Context, path string, tables []string, read func(*sql.Conn) error) error {
	return readSQLiteWait(ctx, path, sqliteBusy, tables, read)
}

func readSQLiteWait(ctx context.Context, path string, busy time.Duration, tables []string, read func(*sql.Conn) error) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	allow := onlyReading(tables)
	err := readSQLiteAt(ctx, sqliteDSN(path, true, busy), allow, read)
	if err == nil || !retryFromCopy(err) {
		return err
	}
	dir, cerr := copySQLite(ctx, path)
	if cerr != nil {
		return fmt.Errorf("read %s in place: %w; copy it: %v", path, err, cerr)
	}
	defer os.RemoveAll(dir)
	if err := readSQLiteAt(ctx, sqliteDSN(filepath.Join(dir, filepath.Base(path)), false, busy), allow, read); err != nil {
		return fmt.Errorf("read a copy of %s: %w", path, err)
	}
	return nil
}

// onlyReading is an authorizer that allows selecting from tables (and the
// schema), the functions queries use, and beginning and ending the read
// transaction; it denies everything else.
func onlyReading(tables []string) sqlite.AuthorizerFn {
	ok := map[string]bool{"sqlite_master": true, "sqlite_schema": true}
	for _, t := range tables {
		ok[t] = true
	}
	return func(action sqlite.AuthorizerActionCode, arg1, _, _, _ string) sqlite.AuthorizerReturnCode {
		switch action {
		case sqlite.AuthSelect, sqlite.AuthFunction, sqlite.AuthTransaction:
			return sqlite.AuthorizerOK
		case sqlite.AuthRead:
			if ok[arg1] {
				return sqlite.AuthorizerOK
			}
		}
		return sqlite.AuthorizerDeny
	}
}

// sqliteDSN names path as a SQLite URI (escaped, so '?' or '#' in a path
// cannot be taken for parameters); readOnly adds mode=ro.
func sqliteDSN(path string, readOnly bool, busy time.Duration) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/...
	}
	q := url.Values{}
	if readOnly {
		q.Set("mode", "ro")
	}
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	return (&url.URL{Scheme: "file", Path: p, RawQuery: q.Encode()}).String()
}

// readSQLiteAt opens dsn on one connection, installs the authorizer allow
// and runs read in a read transaction.
func readSQLiteAt(ctx context.Context, dsn string, allow sqlite.AuthorizerFn, read func(*sql.Conn) error) error {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		r, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("the SQLite driver cannot restrict what a query reads")
		}
		return r.RegisterAuthorizer(allow)
	})
	if err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	// ROLLBACK of a read transaction only releases its snapshot.
	defer conn.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck
	return read(conn)
}

// retryFromCopy reports whether err means the file could not be read in
// place but a copy could be: it is locked, or opening it read-only needs a
// write (a missing -shm, a hot journal).
func retryFromCopy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_READONLY,
		sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_IOERR:
		return true
	}
	return false
}

// sqliteCompanions are the files that hold a database's committed state
// besides the main file. The -shm is only an index the copy rebuilds.
var sqliteCompanions = [...]string{"", "-wal", "-journal"}

// copySQLite copies the database at path with its -wal and -journal into a
// new private temporary directory and returns the directory. It retries
// while the files change under the copy.
func copySQLite(ctx context.Context, path string) (string, error) {
	dir, err := os.MkdirTemp("", "hindsight-sqlite-")
	if err != nil {
		return "", err
	}
	for attempt := 0; ; attempt++ {
		before := statAll(path)
		err = copyFiles(path, dir)
		if err == nil && sameStats(before, statAll(path)) {
			return dir, nil
		}
		if err == nil {
			err = errors.New("the database kept changing while it was copied")
		}
		if attempt == 4 {
			os.RemoveAll(dir)
			return "", err
		}
		select {
		case <-ctx.Done():
			os.RemoveAll(dir)
			return "", ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
}

type fileStat struct {
	exists bool
	size   int64
	mod    time.Time
}

func statAll(path string) [len(sqliteCompanions)]fileStat {
	var out [len(sqliteCompanions)]fileStat
	for i, suffix := range sqliteCompanions {
		if fi, err := os.Stat(path + suffix); err == nil {
			out[i] = fileStat{true, fi.Size(), fi.ModTime()}
		}
	}
	return out
}

func sameStats(a, b [len(sqliteCompanions)]fileStat) bool {
	for i := range a {
		if a[i].exists != b[i].exists || a[i].size != b[i].size || !a[i].mod.Equal(b[i].mod) {
			return false
		}
	}
	return true
}

// copyFiles copies path and its companions that exist into dir, the
// companions first: a writer changes them before the main file.
func copyFiles(path, dir string) error {
	for i := len(sqliteCompanions) - 1; i >= 0; i-- {
		src := path + sqliteCompanions[i]
		dst := filepath.Join(dir, filepath.Base(path)+sqliteCompanions[i])
		if err := copyFile(src, dst); err != nil {
			if i > 0 && errors.Is(err, os.ErrNotExist) {
				os.Remove(dst)
				continue
			}
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tableExists reports whether the database behind conn has table name.
func tableExists(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}
