package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The records in PostgreSQL: every bucket's keys in one table,
//
//	kv_entries (bucket text, key bytea, value bytea, primary key (bucket, key))
//
// whose primary-key index keeps each bucket's keys in byte order (bytea
// compares as bytes.Compare does), and one sequence, kv_sequence, for every
// bucket's NextSequence (bbolt's are per bucket; all the domain needs is a
// number larger than any before, which one sequence gives every bucket).
// The records are stored as they are in bbolt (codec.go), so the domain
// code above the buckets is one and the same.
//
// Each Commit is a SERIALIZABLE transaction taken under an advisory lock that
// writers on every node take turns on (pgWriteLock), and each View a read-only
// REPEATABLE READ one (a snapshot, as bbolt's read transactions are).
// Cursors read rows in batches (16 growing to 256, key > the last one read),
// never a round trip per row.
//
// The store takes no compression dictionary here (codec.go): every node
// would sample its own and the records of one could not be read by
// another. Records are still compressed one by one.
//
// The SQL is plain and runs on PostgreSQL 12 and later. On engines that
// speak PostgreSQL's protocol but are not PostgreSQL (CockroachDB, YugabyteDB)
// what would differ: pg_advisory_lock, which serializes migrations between
// nodes starting at once and writers always, is a no-op or missing there
// (writers then conflict and retry, as they did before it was taken); a sequence is slow
// on CockroachDB (unique_rowid() is its idiom); COLLATE "C" on the bucket
// column may be refused. The retry on SQLSTATE 40001 is what such an
// engine needs, as PostgreSQL does.

// pgMigrations are the schema's versions, applied in order at open, each
// in a transaction that records it in schema_migrations. Forward-only: a
// released migration is never edited, a change is a new one.
var pgMigrations = []struct {
	version int
	name    string
	stmts   []string
}{
	{1, "kv entries and sequence", []string{
		`CREATE TABLE kv_entries (
			bucket text COLLATE "C" NOT NULL,
			key    bytea NOT NULL,
			value  bytea NOT NULL,
			PRIMARY KEY (bucket, key)
		)`,
		`CREATE SEQUENCE kv_sequence`,
	}},
}

// pgMigrationLock is the advisory lock key that serializes migrations
// between nodes opening the same database at once ("hindsig" in ASCII).
const pgMigrationLock = 0x68696e64736967

// PostgresOptions configures OpenPostgres.
type PostgresOptions struct {
	// Logf, when set, is told each schema migration applied at open.
	Logf func(format string, args ...any)
	// MaxConns caps the connection pool; 0 means pgx's default (the
	// larger of 4 and the number of CPUs).
	MaxConns int32
	// Node names this process among the nodes sharing the database in its
	// claims on outbox entries (claims.go); "" means a random id, which
	// is what a node wants: two processes given one id would not exclude
	// each other.
	Node string
	// Lease is how long a claim on an outbox entry holds unless renewed;
	// 0 means DefaultLease.
	Lease time.Duration
	// Now is the clock leases are read on; nil means time.Now (tests
	// set it to expire a lease without waiting).
	Now func() time.Time
}

// RecordsInPostgres reads a --records value (HINDSIGHT_RECORDS): true for
// a PostgreSQL address (postgres:// or postgresql://), false for "" (the
// bbolt file in the data directory), an error for anything else.
func RecordsInPostgres(records string) (bool, error) {
	switch {
	case records == "":
		return false, nil
	case strings.HasPrefix(records, "postgres://") || strings.HasPrefix(records, "postgresql://"):
		return true, nil
	}
	return false, fmt.Errorf("HINDSIGHT_RECORDS (--records): want a PostgreSQL address, postgres://user:password@host:port/database, or nothing for the bbolt file in the data directory")
}

// OpenPostgres opens the store in the PostgreSQL database dsn names
// (postgres://user:password@host:port/db?sslmode=...), applying the schema
// migrations it lacks first. Several processes (nodes) may open the same
// database; their indexers claim the outbox entries they index (claims.go).
func OpenPostgres(ctx context.Context, dsn string, opts PostgresOptions) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("records in PostgreSQL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("records in PostgreSQL: %w", err)
	}
	if err := migrate(ctx, pool, opts.Logf); err != nil {
		pool.Close()
		return nil, fmt.Errorf("records in PostgreSQL: %w", markUnavailable(err))
	}
	be := &pgBackend{pool: pool, turn: make(chan struct{}, 1)}
	cd, err := readCodec(ctx, be)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("records in PostgreSQL: %w", err)
	}
	cl := &claimer{node: opts.Node, lease: opts.Lease, now: opts.Now}
	if cl.node == "" {
		cl.node = NewID()
	}
	if cl.lease <= 0 {
		cl.lease = DefaultLease
	}
	if cl.now == nil {
		cl.now = time.Now
	}
	s := &Store{be: be, pg: be, claims: cl, stop: make(chan struct{})}
	s.codec.Store(cd)
	return s, nil
}

// Ping checks that the records' database answers: nil for a bbolt file,
// an error wrapping ErrUnavailable when PostgreSQL cannot be reached.
func (s *Store) Ping(ctx context.Context) error {
	if s.pg == nil {
		return nil
	}
	err := s.pg.pool.Ping(ctx)
	s.pg.lost(err)
	return markUnavailable(err)
}

// SchemaVersion is the newest schema migration this version of Hindsight
// knows; OpenPostgres brings a database to it.
func SchemaVersion() int { return pgMigrations[len(pgMigrations)-1].version }

// migrate applies the migrations the database lacks, holding an advisory
// lock so two nodes starting at once do not both apply one. A database of
// a newer schema than this binary knows is refused: an older binary must
// not write records it may not understand.
func migrate(ctx context.Context, pool *pgxpool.Pool, logf func(string, ...any)) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(pgMigrationLock)); err != nil {
		return fmt.Errorf("lock for migrations: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(pgMigrationLock))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > SchemaVersion() {
		return fmt.Errorf("the database's schema is version %d, newer than this Hindsight knows (%d): upgrade Hindsight", current, SchemaVersion())
	}
	for _, m := range pgMigrations {
		if m.version <= current {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, stmt := range m.stmts {
				if _, err := tx.Exec(ctx, stmt); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		if logf != nil {
			logf("records: applied schema migration %d (%s)", m.version, m.name)
		}
	}
	return nil
}

// commitPostgres is Commit in PostgreSQL: fn in a SERIALIZABLE transaction
// of its own under the write lock, run again when the database aborts it.
func (s *Store) commitPostgres(ctx context.Context, fn func(*Tx) error) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	s.inflight.Add(1)
	s.mu.RUnlock()
	defer s.inflight.Done()
	return s.pg.update(ctx, func(t txn) error {
		return safely(fn, &Tx{t: t, codec: s.codec.Load(), claims: s.claims})
	})
}

// pgBackend keeps the buckets in PostgreSQL.
type pgBackend struct {
	pool *pgxpool.Pool
	// turn is this node's writers' queue for the write lock (pgWriteLock):
	// one of them at a time holds a connection waiting for it, so writers
	// queued behind a long write do not hold every pooled connection and
	// reads go on.
	turn chan struct{}
}

func (b *pgBackend) close() error {
	b.pool.Close()
	return nil
}

// view runs fn in a read-only snapshot. The database's errors wrap
// ErrUnavailable when they mean it cannot be reached (unavailable.go);
// fn's own errors come back as they are.
func (b *pgBackend) view(ctx context.Context, fn func(txn) error) error {
	tx, err := b.begin(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return markUnavailable(fmt.Errorf("records: begin read: %w", err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	t := &pgTxn{ctx: ctx, tx: tx}
	err = fn(t)
	if t.err != nil {
		// A read failed: fn saw nothing (or less than there is), so what
		// it concluded does not stand.
		b.lost(t.err)
		return markUnavailable(t.err)
	}
	return err // fn's own, as it is
}

// beginAttempts bounds how often begin tries the pool's connections after
// one turned out broken.
const beginAttempts = 3

// begin begins a transaction. A connection the pool kept from before
// PostgreSQL restarted fails at its first statement; then the pool's idle
// connections are dropped (lost) and begin tries again on a new one:
// nothing of the transaction ran, so trying again is always safe. When the
// server is down it fails at once (a connection refused), not after
// retries.
func (b *pgBackend) begin(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	for attempt := 1; ; attempt++ {
		tx, err := b.pool.BeginTx(ctx, opts)
		if err == nil || !b.lost(err) || attempt == beginAttempts || ctx.Err() != nil {
			return tx, err
		}
	}
}

// lost reports whether err is a pooled connection found broken, and then
// drops the pool's connections, which the same restart broke too (those
// in use are closed when released): the next statements connect anew
// instead of each failing once on a dead connection.
func (b *pgBackend) lost(err error) bool {
	if err == nil || !connLost(err) {
		return false
	}
	b.pool.Reset()
	return true
}

// maxAttempts bounds how often a write is retried after serialization
// failures; the backoff between attempts grows from 1 ms to 128 ms. A
// write that conflicted every time wraps ErrBusy.
const maxAttempts = 20

// update runs fn in a SERIALIZABLE transaction that holds the write lock
// (writers take turns across nodes: pgWriteLock), again (in a new one) when
// PostgreSQL aborts it for a serialization failure or a deadlock. The
// transaction runs without ctx's cancellation: once begun it is committed
// or rolled back, never cut off in the middle of COMMIT, so a cancelled
// caller is never told a write failed that landed. ctx only bounds the
// wait for the lock and stops the retries.
//
// Errors that mean the database cannot be reached wrap ErrUnavailable
// (updateOnce); one raised by COMMIT leaves the outcome unknown.
func (b *pgBackend) update(ctx context.Context, fn func(txn) error) error {
	run := context.WithoutCancel(ctx)
	for attempt := 1; ; attempt++ {
		err := b.updateOnce(ctx, run, fn)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return err
		}
		if attempt == maxAttempts {
			// Not a fault of the write: the database is too busy with
			// conflicting writers now. The caller may send it again.
			return fmt.Errorf("%w: %d attempts conflicted with other writers: %w", ErrBusy, maxAttempts, err)
		}
		d := time.Duration(1<<min(attempt-1, 7)) * time.Millisecond
		time.Sleep(d/2 + rand.N(d/2+1))
	}
}

// updateOnce runs fn in one transaction, taken while this connection holds
// the write lock (pgWriteLock). The database's errors (the lock, begin, a
// statement, commit) wrap ErrUnavailable when they mean it cannot be
// reached; fn's own errors come back as they are. wait bounds the wait for
// the lock (the caller's context: nothing has run yet); ctx, the
// transaction.
func (b *pgBackend) updateOnce(wait, ctx context.Context, fn func(txn) error) error {
	conn, err := b.writer(wait)
	if err != nil {
		return markUnavailable(fmt.Errorf("records: take the write lock: %w", err))
	}
	defer b.unlock(ctx, conn)
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		b.lost(err)
		return markUnavailable(fmt.Errorf("records: begin write: %w", err))
	}
	t := &pgTxn{ctx: ctx, tx: tx, write: true}
	err = fn(t)
	if t.err != nil {
		b.lost(t.err)
		tx.Rollback(ctx)
		return markUnavailable(t.err)
	}
	if err != nil {
		tx.Rollback(ctx)
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		b.lost(err)
		return markUnavailable(fmt.Errorf("records: commit: %w", err))
	}
	return nil
}

// pgWriteLock is the advisory lock key every write transaction holds, on
// every node: writers take turns, as bbolt's single writer does. Taken
// before BEGIN, so a transaction's snapshot comes after the last writer's
// commit and SERIALIZABLE has nothing to abort among writers: without it,
// writes of different sessions conflicted through the one table's index
// pages and a batch under load could exhaust its attempts (bench/results/nodes).
const pgWriteLock = pgMigrationLock + 1

// writer returns a pooled connection holding the write lock (and this
// node's turn), retrying like begin when the pool's connection turns out
// broken.
func (b *pgBackend) writer(ctx context.Context) (*pgxpool.Conn, error) {
	select {
	case b.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	conn, err := b.lockedConn(ctx)
	if err != nil {
		<-b.turn
	}
	return conn, err
}

func (b *pgBackend) lockedConn(ctx context.Context) (*pgxpool.Conn, error) {
	for attempt := 1; ; attempt++ {
		conn, err := b.pool.Acquire(ctx)
		if err == nil {
			if _, err = conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(pgWriteLock)); err == nil {
				return conn, nil
			}
			// Cut off or broken while waiting: a closed connection
			// holds no lock, so the lock cannot outlive this.
			conn.Conn().Close(context.WithoutCancel(ctx))
			conn.Release()
		}
		if !b.lost(err) || attempt == beginAttempts || ctx.Err() != nil {
			return nil, err
		}
	}
}

// unlock releases the write lock, the connection and the node's turn. A
// connection that cannot release the lock is closed, which releases it with
// its session.
func (b *pgBackend) unlock(ctx context.Context, conn *pgxpool.Conn) {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(pgWriteLock)); err != nil {
		conn.Conn().Close(ctx)
	}
	conn.Release()
	<-b.turn
}

// retryable reports whether err is PostgreSQL aborting a transaction that
// may succeed when run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == "40001" || pe.Code == "40P01" // serialization_failure, deadlock_detected
}

// pgTxn is one transaction. The bucket interface has reads without errors
// (bbolt's reads cannot fail), so the first error of any statement is kept
// here: every later statement is skipped (PostgreSQL would refuse it in an
// aborted transaction anyway), and view and update return it instead of
// what fn returned, so a failed read never passes for a missing key.
type pgTxn struct {
	ctx   context.Context
	tx    pgx.Tx
	write bool
	err   error
	// gen counts writes, so a cursor knows the rows it holds may be stale.
	gen uint64
}

func (t *pgTxn) bucket(name []byte) bucket { return &pgBucket{t: t, name: string(name)} }
func (t *pgTxn) writable() bool            { return t.write }

func (t *pgTxn) fail(what string, err error) error {
	if t.err == nil {
		t.err = fmt.Errorf("records: %s: %w", what, err)
	}
	return t.err
}

type pgBucket struct {
	t    *pgTxn
	name string
}

func (b *pgBucket) Get(key []byte) []byte {
	if b.t.err != nil {
		return nil
	}
	var v []byte
	err := b.t.tx.QueryRow(b.t.ctx, `SELECT value FROM kv_entries WHERE bucket = $1 AND key = $2`, b.name, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		b.t.fail("read "+b.name, err)
		return nil
	}
	if v == nil {
		v = []byte{}
	}
	return v
}

func (b *pgBucket) Put(key, value []byte) error {
	if b.t.err != nil {
		return b.t.err
	}
	if value == nil {
		value = []byte{} // the column is NOT NULL; bbolt reads nil back as empty too
	}
	b.t.gen++
	_, err := b.t.tx.Exec(b.t.ctx, `INSERT INTO kv_entries (bucket, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value`, b.name, key, value)
	if err != nil {
		return b.t.fail("write "+b.name, err)
	}
	return nil
}

func (b *pgBucket) Delete(key []byte) error {
	if b.t.err != nil {
		return b.t.err
	}
	b.t.gen++
	if _, err := b.t.tx.Exec(b.t.ctx, `DELETE FROM kv_entries WHERE bucket = $1 AND key = $2`, b.name, key); err != nil {
		return b.t.fail("delete from "+b.name, err)
	}
	return nil
}

func (b *pgBucket) NextSequence() (uint64, error) {
	if b.t.err != nil {
		return 0, b.t.err
	}
	var n int64
	if err := b.t.tx.QueryRow(b.t.ctx, `SELECT nextval('kv_sequence')`).Scan(&n); err != nil {
		return 0, b.t.fail("next sequence of "+b.name, err)
	}
	return uint64(n), nil
}

func (b *pgBucket) KeyN() int {
	if b.t.err != nil {
		return 0
	}
	var n int64
	if err := b.t.tx.QueryRow(b.t.ctx, `SELECT count(*) FROM kv_entries WHERE bucket = $1`, b.name).Scan(&n); err != nil {
		b.t.fail("count "+b.name, err)
		return 0
	}
	return int(n)
}

func (b *pgBucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return b.t.err
}

func (b *pgBucket) Cursor() cursor { return &pgCursor{b: b, i: -1} }

// Cursor batches: the first read of a walk is small (most walks are a
// prefix: one session's messages, one user's keys), the next ones grow.
const (
	pgFirstBatch = 16
	pgMaxBatch   = 256
)

type pgRow struct{ key, value []byte }

// pgCursor holds a batch of rows in key order and its place in it. The
// rows are read again, from the current key, when the transaction wrote
// since they were read.
type pgCursor struct {
	b     *pgBucket
	rows  []pgRow
	i     int    // the current row; -1 when not on one
	gen   uint64 // b.t.gen when rows were read
	batch int
	// atFirst, atLast: rows reach the bucket's first (last) key.
	atFirst, atLast bool
}

func (c *pgCursor) cur() ([]byte, []byte) {
	if c.i < 0 || c.i >= len(c.rows) {
		c.i = -1
		return nil, nil
	}
	r := c.rows[c.i]
	return r.key, r.value
}

func (c *pgCursor) First() ([]byte, []byte) {
	c.batch = 0
	c.read("", nil, true)
	c.atFirst = true
	return c.cur()
}

func (c *pgCursor) Last() ([]byte, []byte) {
	c.batch = 0
	c.read("", nil, false)
	c.atLast = true
	return c.cur()
}

func (c *pgCursor) Seek(seek []byte) ([]byte, []byte) {
	c.batch = 0
	c.read(">=", seek, true)
	return c.cur()
}

func (c *pgCursor) Next() ([]byte, []byte) {
	if c.i < 0 {
		return nil, nil
	}
	switch {
	case c.gen != c.b.t.gen:
		c.read(">", c.rows[c.i].key, true)
	case c.i+1 < len(c.rows):
		c.i++
	case c.atLast:
		c.i = -1
	default:
		c.read(">", c.rows[c.i].key, true)
	}
	return c.cur()
}

func (c *pgCursor) Prev() ([]byte, []byte) {
	if c.i < 0 {
		return nil, nil
	}
	switch {
	case c.gen != c.b.t.gen:
		c.read("<", c.rows[c.i].key, false)
	case c.i > 0:
		c.i--
	case c.atFirst:
		c.i = -1
	default:
		c.read("<", c.rows[c.i].key, false)
	}
	return c.cur()
}

// read replaces the rows with the next batch from key (op: ">=", ">",
// "<", or "" for the bucket's end), ascending when asc, and places the
// cursor on its first row in that direction.
func (c *pgCursor) read(op string, key []byte, asc bool) {
	t := c.b.t
	c.rows, c.i = c.rows[:0], -1
	if t.err != nil {
		return
	}
	c.batch = min(max(2*c.batch, pgFirstBatch), pgMaxBatch)
	order := "ASC"
	if !asc {
		order = "DESC"
	}
	q := `SELECT key, value FROM kv_entries WHERE bucket = $1`
	args := []any{c.b.name}
	if op != "" {
		q += ` AND key ` + op + ` $2`
		args = append(args, key)
	}
	q += fmt.Sprintf(` ORDER BY key %s LIMIT %d`, order, c.batch)
	rows, err := t.tx.Query(t.ctx, q, args...)
	if err != nil {
		t.fail("read "+c.b.name, err)
		return
	}
	var r pgRow
	_, err = pgx.ForEachRow(rows, []any{&r.key, &r.value}, func() error {
		if r.value == nil {
			r.value = []byte{}
		}
		c.rows = append(c.rows, r)
		r = pgRow{}
		return nil
	})
	if err != nil {
		t.fail("read "+c.b.name, err)
		c.rows = c.rows[:0]
		return
	}
	c.gen = t.gen
	full := len(c.rows) == c.batch
	if asc {
		c.atFirst, c.atLast = false, !full
		if len(c.rows) > 0 {
			c.i = 0
		}
		return
	}
	for i, j := 0, len(c.rows)-1; i < j; i, j = i+1, j-1 {
		c.rows[i], c.rows[j] = c.rows[j], c.rows[i]
	}
	c.atFirst, c.atLast = !full, false
	c.i = len(c.rows) - 1
}
