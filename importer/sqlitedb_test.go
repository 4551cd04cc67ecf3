package importer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// execSQLite runs stmts against the database at path (created if missing)
// in the given journal mode and closes it, as an assistant would leave it.
func execSQLite(t *testing.T, path, journal string, stmts ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("PRAGMA journal_mode = " + journal); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlJSON is v as an SQL string literal holding its JSON.
func sqlJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return sqlString(string(b))
}

// Environment of the writer process (TestImportSQLiteWriterProcess).
const (
	writerDB      = "HINDSIGHT_TEST_SQLITE_WRITER_DB"
	writerJournal = "HINDSIGHT_TEST_SQLITE_WRITER_JOURNAL"
	writerCommit  = "HINDSIGHT_TEST_SQLITE_WRITER_COMMIT"
	writerBegin   = "HINDSIGHT_TEST_SQLITE_WRITER_BEGIN"
	writerPending = "HINDSIGHT_TEST_SQLITE_WRITER_PENDING"
)

// TestImportSQLiteWriterProcess is not a test: run by startWriter as a
// separate process, it plays an assistant that holds its database open. It
// commits the statements of writerCommit without checkpointing (in WAL mode
// they stay in the -wal file), then opens a transaction (BEGIN writerBegin),
// runs writerPending in it, prints "ready" and keeps everything open until
// its stdin closes.
func TestImportSQLiteWriterProcess(t *testing.T) {
	path := os.Getenv(writerDB)
	if path == "" {
		return // only a helper process for the SQLite tests
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	split := func(s string) []string {
		var out []string
		for _, x := range strings.Split(s, ";\n") {
			if strings.TrimSpace(x) != "" {
				out = append(out, x)
			}
		}
		return out
	}
	stmts := append([]string{"PRAGMA journal_mode = " + os.Getenv(writerJournal), "PRAGMA wal_autocheckpoint = 0"},
		split(os.Getenv(writerCommit))...)
	stmts = append(stmts, "BEGIN "+os.Getenv(writerBegin))
	stmts = append(stmts, split(os.Getenv(writerPending))...)
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	os.Stdout.WriteString("ready\n")
	io.Copy(io.Discard, os.Stdin)
}

// startWriter starts the writer process on the database at path and waits
// until it holds its transaction open; the process ends with the test.
// Statements are separated by ";\n".
func startWriter(t *testing.T, path, journal, commit, begin, pending string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestImportSQLiteWriterProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), writerDB+"="+path, writerJournal+"="+journal, writerCommit+"="+commit,
		writerBegin+"="+begin, writerPending+"="+pending)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "ready") {
		t.Fatalf("writer process: %q %v; stderr:\n%s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
}

// fileSums hashes the files the reader must never write.
func fileSums(t *testing.T, paths ...string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = sha256.Sum256(b)
	}
	return out
}

func countRows(ctx context.Context, conn *sql.Conn, table string) (int, error) {
	var n int
	err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n, err
}

func TestImportSQLiteReadOnlyTablesAllowed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	execSQLite(t, path, "WAL",
		"CREATE TABLE session (id TEXT)", "INSERT INTO session VALUES ('a')",
		"CREATE TABLE credential (id TEXT, token TEXT)", "INSERT INTO credential VALUES ('c', 'sk-secret')")
	ctx := context.Background()
	err := readSQLite(ctx, path, []string{"session"}, func(conn *sql.Conn) error {
		if n, err := countRows(ctx, conn, "session"); err != nil || n != 1 {
			t.Errorf("session rows = %d, %v", n, err)
		}
		if _, err := countRows(ctx, conn, "credential"); err == nil || !strings.Contains(err.Error(), "not authorized") {
			t.Errorf("reading a table not named: %v, want not authorized", err)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO session VALUES ('b')"); err == nil {
			t.Error("a write went through")
		}
		if _, err := conn.ExecContext(ctx, "ATTACH DATABASE 'other.db' AS o"); err == nil {
			t.Error("ATTACH went through")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A writer holding a transaction open with uncommitted rows, in WAL mode
// with committed rows only in the -wal file, neither blocks the reader nor
// hides the committed rows; the reader sees none of the uncommitted ones and
// writes neither file.
func TestImportSQLiteReadsBesideAWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	execSQLite(t, path, "WAL", "CREATE TABLE session (id TEXT)", "INSERT INTO session VALUES ('in-db')")
	startWriter(t, path, "WAL", "INSERT INTO session VALUES ('in-wal')", "IMMEDIATE", "INSERT INTO session VALUES ('uncommitted')")
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("want committed rows in the WAL: %v", err)
	}
	before := fileSums(t, path, path+"-wal")
	ctx := context.Background()
	var ids []string
	err := readSQLite(ctx, path, []string{"session"}, func(conn *sql.Conn) error {
		rows, err := conn.QueryContext(ctx, "SELECT id FROM session ORDER BY rowid")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			rows.Scan(&id)
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "in-db,in-wal" {
		t.Errorf("read %v, want the committed rows in-db,in-wal", ids)
	}
	after := fileSums(t, path, path+"-wal")
	for p := range before {
		if before[p] != after[p] {
			t.Errorf("%s changed while it was read", p)
		}
	}
}

// In rollback-journal mode a writer holding an exclusive lock blocks readers:
// the reader waits out the busy timeout, then reads a copy whose hot journal
// SQLite rolls back, so it sees the last committed state.
func TestImportSQLiteLockedReadsCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	execSQLite(t, path, "DELETE", "CREATE TABLE session (id TEXT)", "INSERT INTO session VALUES ('committed')")
	// Enough uncommitted rows to spill the writer's small cache into the
	// file, leaving their originals in a journal that is hot for a copy.
	pending := "INSERT INTO session VALUES ('pending');\nWITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 1000) INSERT INTO session SELECT 'pending-' || i || '-' || hex(randomblob(200)) FROM n"
	startWriter(t, path, "DELETE", "PRAGMA cache_size = 10", "EXCLUSIVE", pending)
	if fi, err := os.Stat(path + "-journal"); err != nil || fi.Size() == 0 {
		t.Fatalf("want the writer's journal: %v", err)
	}
	before := fileSums(t, path)
	ctx := context.Background()
	var n int
	err := readSQLiteWait(ctx, path, 50*time.Millisecond, []string{"session"}, func(conn *sql.Conn) error {
		var err error
		n, err = countRows(ctx, conn, "session")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("read %d rows, want the 1 committed", n)
	}
	if before[path] != fileSums(t, path)[path] {
		t.Error("the database changed while it was read")
	}
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "hindsight-sqlite-*", "x.db")); len(left) > 0 {
		t.Errorf("copies left behind: %v", left)
	}
}

func TestImportSQLiteDSN(t *testing.T) {
	dsn := sqliteDSN("/tmp/we?ird #dir/state.vscdb", true, 5*time.Second)
	if !strings.HasPrefix(dsn, "file:///tmp/we%3Fird%20%23dir/state.vscdb?") || !strings.Contains(dsn, "mode=ro") {
		t.Errorf("dsn = %s", dsn)
	}
}
