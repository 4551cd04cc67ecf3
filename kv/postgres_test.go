package kv_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

func openPG(t *testing.T, dsn string, logf func(string, ...any)) *kv.Store {
	t.Helper()
	st, err := kv.OpenPostgres(ctx, dsn, kv.PostgresOptions{Logf: logf})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return st
}

func query[T any](t *testing.T, dsn, sql string) T {
	t.Helper()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v T
	if err := conn.QueryRow(ctx, sql).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// TestPostgresMigrations: the first open applies every migration once and
// logs each; later opens, and several at once, apply none and keep the
// data; a database of a newer schema is refused.
func TestPostgresMigrations(t *testing.T) {
	dsn := pgtest.Database(t)
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	st := openPG(t, dsn, logf)
	if len(logged) != kv.SchemaVersion() {
		t.Errorf("first open logged %q, want one line per migration (%d)", logged, kv.SchemaVersion())
	}
	mustCommit(t, st, func(tx *kv.Tx) error { return tx.SetMeta("kept", []byte("yes")) })
	st.Close()

	logged = nil
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := kv.OpenPostgres(ctx, dsn, kv.PostgresOptions{Logf: func(f string, a ...any) { errs <- fmt.Errorf("reopen applied: "+f, a...) }})
			if err == nil {
				err = st.View(ctx, func(tx *kv.Tx) error {
					if string(tx.Meta("kept")) != "yes" {
						return errors.New("reopened store lost the write")
					}
					return nil
				})
				st.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := query[int64](t, dsn, `SELECT count(*) FROM schema_migrations`); n != int64(kv.SchemaVersion()) {
		t.Errorf("schema_migrations has %d rows, want %d", n, kv.SchemaVersion())
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, 'from the future')`, kv.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.OpenPostgres(ctx, dsn, kv.PostgresOptions{}); err == nil {
		t.Error("a database of a newer schema opened; want it refused")
	}
}

// TestPostgresConflictRetry: a write that a writer outside the store's
// write lock (another program on the database) conflicts with once is run
// again in a new transaction and lands once.
func TestPostgresConflictRetry(t *testing.T) {
	dsn := pgtest.Database(t)
	st := openPG(t, dsn, nil)
	defer st.Close()
	mustCommit(t, st, func(tx *kv.Tx) error { return tx.SetMeta("counter", []byte("0")) })
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	runs := 0
	err = st.Commit(ctx, func(tx *kv.Tx) error {
		runs++
		n, _ := strconv.Atoi(string(tx.Meta("counter"))) // the snapshot is taken
		if runs == 1 {
			if _, err := other.Exec(ctx, `UPDATE kv_entries SET value = '10' WHERE bucket = 'meta' AND key = $1`, []byte("counter")); err != nil {
				return err
			}
		}
		return tx.SetMeta("counter", []byte(strconv.Itoa(n+1)))
	})
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if runs != 2 {
		t.Errorf("callbacks ran %d times, want 2: the conflict was not retried", runs)
	}
	_ = st.View(ctx, func(tx *kv.Tx) error {
		if got := string(tx.Meta("counter")); got != "11" {
			t.Errorf("counter = %q, want 11 (the other writer's 10, then this write's increment)", got)
		}
		return nil
	})
}

// TestPostgresWritersTakeTurns: writers on two nodes over one database,
// each reading a counter and scanning the bucket before it writes (what
// made SERIALIZABLE abort writes of unrelated sessions under load), take
// turns on the write lock: every callback runs once, none is aborted and
// run again, no increment is lost, and reads go on meanwhile.
func TestPostgresWritersTakeTurns(t *testing.T) {
	dsn := pgtest.Database(t)
	nodes := []*kv.Store{openPG(t, dsn, nil), openPG(t, dsn, nil)}
	for _, st := range nodes {
		defer st.Close()
	}
	const perNode, increments = 6, 15
	var runs atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes)*perNode+1)
	for n, st := range nodes {
		for w := range perNode {
			wg.Go(func() {
				for i := range increments {
					err := st.Commit(ctx, func(tx *kv.Tx) error {
						runs.Add(1)
						c, _ := strconv.Atoi(string(tx.Meta("counter")))
						users, err := tx.Users() // a range read
						if err != nil {
							return err
						}
						seen := len(users)
						if err := tx.SetMeta(fmt.Sprintf("w%d-%d-%d", n, w, i), []byte(strconv.Itoa(seen))); err != nil {
							return err
						}
						return tx.SetMeta("counter", []byte(strconv.Itoa(c+1)))
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	reads := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		default:
			if err := nodes[reads%2].View(ctx, func(tx *kv.Tx) error { tx.Meta("counter"); return nil }); err != nil {
				t.Fatalf("a read while writers queue: %v", err)
			}
			reads++
		}
	}
	close(errs)
	for err := range errs {
		t.Fatalf("commit: %v", err)
	}
	want := len(nodes) * perNode * increments
	_ = nodes[0].View(ctx, func(tx *kv.Tx) error {
		if got := string(tx.Meta("counter")); got != strconv.Itoa(want) {
			t.Errorf("counter = %q, want %d", got, want)
		}
		return nil
	})
	if r := runs.Load(); int(r) != want {
		t.Errorf("callbacks ran %d times for %d commits: writers were aborted and run again", r, want)
	}
	t.Logf("%d commits, %d reads meanwhile", want, reads)
}

// TestPostgresConflictsExhausted: a write that conflicts with another
// writer at every attempt (each commits the same row between the write's
// read and its write) gives up after its retries with an error wrapping
// kv.ErrBusy, and so kv.ErrUnavailable (a 503, not a 500), and writes
// nothing.
func TestPostgresConflictsExhausted(t *testing.T) {
	dsn := pgtest.Database(t)
	st := openPG(t, dsn, nil)
	defer st.Close()
	mustCommit(t, st, func(tx *kv.Tx) error { return tx.SetMeta("x", []byte("0")) })
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	runs := 0
	err = st.Commit(ctx, func(tx *kv.Tx) error {
		runs++
		tx.Meta("x") // the snapshot is taken
		if _, err := other.Exec(ctx, `UPDATE kv_entries SET value = $1 WHERE bucket = 'meta' AND key = $2`, []byte(strconv.Itoa(runs)), []byte("x")); err != nil {
			return err
		}
		return tx.SetMeta("x", []byte("mine"))
	})
	if !errors.Is(err, kv.ErrBusy) || !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("a write that always conflicted: %v, want an error wrapping kv.ErrBusy and kv.ErrUnavailable", err)
	}
	if runs < 2 {
		t.Errorf("the callback ran %d times: the conflicts were not retried", runs)
	}
	_ = st.View(ctx, func(tx *kv.Tx) error {
		if got := string(tx.Meta("x")); got != strconv.Itoa(runs) {
			t.Errorf("x = %q, want the other writer's last value %d", got, runs)
		}
		return nil
	})
}

// TestPostgresServerGone: a store whose database stops, or whose
// connections are killed mid-transaction, returns errors wrapping
// kv.ErrUnavailable (no panic, no half-written transaction), keeps every
// write it acknowledged, and works again once the database is back.
func TestPostgresServerGone(t *testing.T) {
	srv := pgtest.Start(t)
	dsn, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := openPG(t, dsn, nil)
	defer st.Close()
	u := createUsers(t, st, 1)[0]

	// A connection killed in the middle of a write: the write fails whole.
	err = st.Commit(ctx, func(tx *kv.Tx) error {
		if err := tx.SetMeta("half", []byte("1")); err != nil {
			return err
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
			return err
		}
		return tx.SetMeta("other-half", []byte("1"))
	})
	if err == nil {
		t.Fatal("a write whose connection was killed committed")
	}
	if !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("a write whose connection was killed: %v, want it to wrap kv.ErrUnavailable", err)
	}
	// A fault of the caller's stays what it is.
	bug := errors.New("a bug")
	if err := st.Commit(ctx, func(tx *kv.Tx) error { return bug }); !errors.Is(err, bug) || errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("a write whose fn failed: %v, want the fn's error, not kv.ErrUnavailable", err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Errorf("Ping with the database up: %v", err)
	}

	// The database goes away and comes back.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, func(tx *kv.Tx) error { return tx.SetMeta("down", []byte("1")) }); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("a write with the database down: %v, want an error wrapping kv.ErrUnavailable", err)
	}
	if err := st.View(ctx, func(tx *kv.Tx) error { tx.Meta("down"); return nil }); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("a read with the database down: %v, want an error wrapping kv.ErrUnavailable", err)
	}
	if err := st.Ping(ctx); !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("Ping with the database down: %v, want an error wrapping kv.ErrUnavailable", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The pool connects again by itself: the first write after the
	// restart succeeds.
	mustCommit(t, st, func(tx *kv.Tx) error { return tx.SetMeta("up", []byte("1")) })
	if err := st.Ping(ctx); err != nil {
		t.Errorf("Ping with the database back: %v", err)
	}
	_ = st.View(ctx, func(tx *kv.Tx) error {
		if tx.Meta("half") != nil || tx.Meta("other-half") != nil {
			t.Error("part of the killed write landed")
		}
		if string(tx.Meta("up")) != "1" {
			t.Error("the write after the restart is missing")
		}
		if _, err := tx.User(u.ID); err != nil {
			t.Errorf("user written before the outage: %v", err)
		}
		return nil
	})
	if err := st.Check(); err != nil {
		t.Error(err)
	}
}

// TestPostgresConnectionsKilled: connections the pool keeps idle that the
// server ended (a restart, pg_terminate_backend) are not handed to the
// next reads and writes as failures: the pool drops them and connects
// again.
func TestPostgresConnectionsKilled(t *testing.T) {
	dsn := pgtest.Database(t)
	st := openPG(t, dsn, nil)
	defer st.Close()
	for round := range 3 {
		// Fill the pool with a few idle connections.
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = st.View(ctx, func(tx *kv.Tx) error { tx.Meta("x"); return nil })
			}()
		}
		wg.Wait()
		if n := query[int64](t, dsn, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`); n == 0 {
			t.Fatalf("round %d: no connection to terminate", round)
		}
		if err := st.View(ctx, func(tx *kv.Tx) error { tx.Meta("x"); return nil }); err != nil {
			t.Errorf("round %d: a read after the pool's connections were killed: %v", round, err)
		}
		if err := st.Commit(ctx, func(tx *kv.Tx) error { return tx.SetMeta("x", []byte(strconv.Itoa(round))) }); err != nil {
			t.Errorf("round %d: a write after the pool's connections were killed: %v", round, err)
		}
	}
}

// TestPostgresReopen: everything committed is there for a store opened
// later (another process, another node), messages and outbox included.
func TestPostgresReopen(t *testing.T) {
	dsn := pgtest.Database(t)
	st := openPG(t, dsn, nil)
	u := createUsers(t, st, 1)[0]
	s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "ext", Source: "pi", CreatedAt: 1, UpdatedAt: 2, MessageCount: 3, NextSeq: 3}
	mustCommit(t, st, func(tx *kv.Tx) error {
		if err := tx.PutSession(&s, 0); err != nil {
			return err
		}
		for i := range 3 {
			m := kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: s.ID, Seq: uint64(i), ExternalID: fmt.Sprint("m", i), Role: "user", CreatedAt: 1, UpdatedAt: 1}
			if err := tx.PutMessage(&m); err != nil {
				return err
			}
		}
		return tx.MarkDirty(u.ID, s.ID)
	})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openPG(t, dsn, nil)
	defer st.Close()
	_ = st.View(ctx, func(tx *kv.Tx) error {
		got, err := tx.Session(u.ID, s.ID)
		if err != nil || got.ExternalID != "ext" || got.MessageCount != 3 {
			t.Errorf("session after reopen: %+v, %v", got, err)
		}
		var seqs []uint64
		_ = tx.Messages(u.ID, s.ID, func(m kv.Message) error { seqs = append(seqs, m.Seq); return nil })
		if fmt.Sprint(seqs) != "[0 1 2]" {
			t.Errorf("messages after reopen: %v", seqs)
		}
		if d := tx.DirtySessions(kv.SearchQueue, 0); len(d) != 1 || d[0].SessionID != s.ID {
			t.Errorf("outbox after reopen: %+v", d)
		}
		return nil
	})
	if err := st.Check(); err != nil {
		t.Error(err)
	}
}

// TestBackupInPostgres: Backup points to pg_dump instead of writing a file.
func TestBackupInPostgres(t *testing.T) {
	st := openPG(t, pgtest.Database(t), nil)
	defer st.Close()
	if _, err := st.Backup(ctx, nil); !errors.Is(err, kv.ErrBackupInPostgres) {
		t.Errorf("Backup = %v, want ErrBackupInPostgres", err)
	}
}

func TestRecordsInPostgres(t *testing.T) {
	for _, tc := range []struct {
		in      string
		pg, bad bool
	}{
		{"", false, false},
		{"postgres://u:p@h:5432/db", true, false},
		{"postgresql://h/db?sslmode=require", true, false},
		{"/var/lib/hindsight", false, true},
		{"mysql://h/db", false, true},
	} {
		pg, err := kv.RecordsInPostgres(tc.in)
		if pg != tc.pg || (err != nil) != tc.bad {
			t.Errorf("RecordsInPostgres(%q) = %v, %v", tc.in, pg, err)
		}
	}
}

// TestPostgresTwoNodes: two stores on one database (two Hindsight nodes)
// read each other's acknowledged writes at once, and their concurrent
// read-modify-writes of one record all land (conflicts retried).
func TestPostgresTwoNodes(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := openPG(t, dsn, nil), openPG(t, dsn, nil)
	defer a.Close()
	defer b.Close()
	u := createUsers(t, a, 1)[0]
	if err := b.View(ctx, func(tx *kv.Tx) error { _, err := tx.User(u.ID); return err }); err != nil {
		t.Fatalf("node b reads the user node a acknowledged: %v", err)
	}
	const each = 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for _, st := range []*kv.Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				errs <- st.Commit(ctx, func(tx *kv.Tx) error {
					n, _ := strconv.Atoi(string(tx.Meta("counter")))
					return tx.SetMeta("counter", []byte(strconv.Itoa(n+1)))
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []*kv.Store{a, b} {
		_ = st.View(ctx, func(tx *kv.Tx) error {
			if got := string(tx.Meta("counter")); got != strconv.Itoa(2*each) {
				t.Errorf("counter = %s, want %d", got, 2*each)
			}
			return nil
		})
	}
}
