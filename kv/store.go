package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrNotFound: the record does not exist for this owner.
	ErrNotFound = errors.New("not found")
	// ErrExists: a record with the same unique name already exists.
	ErrExists = errors.New("already exists")
	// ErrLocked: another process (usually a running `hindsight serve`) holds the data file.
	ErrLocked = errors.New("data file is locked by another process")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
)

var (
	bucketUsers            = []byte("users")              // user id -> User
	bucketUserNames        = []byte("usernames")          // name -> user id
	bucketKeys             = []byte("keys")               // key hash (hex) -> APIKey
	bucketSessions         = []byte("sessions")           // uid+sid -> Session
	bucketExternal         = []byte("sessext")            // uid+externalId -> sid
	bucketOrder            = []byte("sessorder")          // uid+updatedAt(8, big endian)+sid -> nil
	bucketSessionNum       = []byte("sessnum")            // uid+sid -> number(8): its messages' key prefix is uid+number (msgkeys.go)
	bucketMessages         = []byte("messages")           // uid+number(8)+seq(8) -> Message; uid+sid+seq(8) in older files
	bucketMsgExt           = []byte("msgext")             // uid+number(8)+externalId -> seq(8); uid+sid+externalId in older files
	bucketOutbox           = []byte("outbox")             // uid+sid -> version(8) | since(8, Unix ns): SearchQueue
	bucketOutboxChunks     = []byte("outbox.chunks")      // same layout: ChunkQueue
	bucketOutboxLive       = []byte("outbox.live")        // uid+sid -> version(8) of its newest live write: SearchQueue's live lane
	bucketOutboxChunksLive = []byte("outbox.chunks.live") // same: ChunkQueue's live lane
	bucketPurge            = []byte("purge")              // uid+sid -> nil: deleted sessions whose messages are still being removed
	bucketMeta             = []byte("meta")               // schema and component metadata
	// bucketTombstones and bucketTombstoneOrder (tombstone.go) and
	// bucketWebSessions (web.go) are declared beside their code.
)

var allBuckets = [][]byte{bucketUsers, bucketUserNames, bucketKeys, bucketSessions, bucketExternal,
	bucketOrder, bucketSessionNum, bucketMessages, bucketMsgExt, bucketOutbox, bucketOutboxChunks, bucketOutboxLive, bucketOutboxChunksLive, bucketPurge, bucketTombstones, bucketTombstoneOrder, bucketMeta, bucketWebSessions,
	bucketRedactions, bucketIndexTail}

// Options configures Open.
type Options struct {
	// LockTimeout bounds the wait for the file lock; after it Open returns
	// ErrLocked. 0 means 1 second: a command must never hang on a locked file.
	LockTimeout time.Duration
	// ReadOnly opens the file without taking the write lock exclusively.
	ReadOnly bool
	// MaxGroup caps how many concurrent writes share one transaction; 0 means 256.
	MaxGroup int
}

// Store is the record store, in a bbolt file ([Open]) or in PostgreSQL
// ([OpenPostgres]). It is safe for concurrent use.
type Store struct {
	be   backend
	db   *bolt.DB // the bbolt file; nil when the records are in PostgreSQL
	path string   // the bbolt file's path; "" in PostgreSQL
	// pg is the PostgreSQL backend (nil for a bbolt file). It commits each
	// write in a transaction of its own, on the caller's goroutine: the
	// database orders concurrent writers, so there is no committer.
	pg *pgBackend
	// claims: this node's claims on outbox entries (claims.go); nil for a
	// bbolt file, which one process owns.
	claims *claimer
	// inflight counts the PostgreSQL commits under way, so Close waits
	// for them before closing the pool.
	inflight sync.WaitGroup
	// codec compresses message records; it changes once, when the store
	// takes a dictionary (takeDictionary, on the committer).
	codec     atomic.Pointer[codec]
	dictTried bool // the committer tried to take a dictionary
	calls     chan *call
	urgent    chan *call // CommitFirst's calls
	stop      chan struct{}
	wg        sync.WaitGroup
	once      sync.Once
	group     int

	// mu orders Commit's enqueue against Close, so no call is queued after
	// the committer has gone.
	mu     sync.RWMutex
	closed bool
}

type call struct {
	fn   func(*Tx) error
	done chan error
}

// allocStep is how much bbolt grows the file by beyond what it needs.
const allocStep = 4 << 20

// FileName is the name of the bbolt file inside a data directory.
const FileName = "hindsight.db"

// Open opens (creating if needed) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	if opts.LockTimeout == 0 {
		opts.LockTimeout = time.Second
	}
	if opts.MaxGroup == 0 {
		opts.MaxGroup = 256
	}
	if !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        opts.LockTimeout,
		ReadOnly:       opts.ReadOnly,
		FreelistType:   bolt.FreelistMapType,
		NoFreelistSync: true, // the freelist is rebuilt on open; saves a page write per commit
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// bbolt grows the file in steps of AllocSize (16 MB by default) past
	// what it needs. The step is a hole on disk until written, but it is in
	// the file's size, which is what an operator sees and a copy moves: a
	// tenth of the file at 10,000 sessions. Smaller steps cost one truncate
	// and fsync per step, a few hundred per gigabyte.
	db.AllocSize = allocStep
	if !opts.ReadOnly {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range allBuckets {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("init buckets: %w", err)
		}
	}
	be := boltBackend{db}
	cd, err := readCodec(context.Background(), be)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{be: be, db: db, path: path, calls: make(chan *call, 4096), urgent: make(chan *call, 1024), stop: make(chan struct{}), group: opts.MaxGroup}
	s.codec.Store(cd)
	s.wg.Add(1)
	go s.committer()
	return s, nil
}

// readCodec returns the codec for the dictionary the store holds.
func readCodec(ctx context.Context, be backend) (*codec, error) {
	var cd *codec
	err := be.view(ctx, func(t txn) error {
		var err error
		cd, err = loadCodec(t)
		return err
	})
	return cd, err
}

// Path is the bbolt file's path, "" when the records are in PostgreSQL.
func (s *Store) Path() string { return s.path }

// Close waits for pending commits and closes the file (or the connections
// to PostgreSQL). Safe to call twice.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stop)
		s.wg.Wait()
		s.inflight.Wait()
		err = s.be.close()
	})
	return err
}

// View runs fn in a read-only transaction. Data read inside fn is only valid
// for the life of the transaction unless copied (records are decoded copies).
func (s *Store) View(ctx context.Context, fn func(*Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	begun := time.Now()
	return s.be.view(ctx, func(t txn) error { return fn(&Tx{t: t, codec: s.codec.Load(), begun: begun, claims: s.claims}) })
}

// Commit runs fn in a read-write transaction and returns once that transaction
// is durably committed. Concurrent Commit calls are grouped into one bbolt
// transaction (one fsync). If fn returns an error or panics its own changes
// are rolled back and other callers are unaffected; a panic comes back as a
// *PanicError. Like bbolt's Batch, fn may run more than once (when it or
// another fn of the same group fails), so it must reset any state it
// computes on every run.
//
// In PostgreSQL each Commit is a SERIALIZABLE transaction of its own under
// the write lock writers on every node take turns on, and fn runs again, in
// a new transaction, when the database aborts it for a serialization
// failure or a deadlock (with a writer outside the lock): the same
// contract, fn may run more than once.
func (s *Store) Commit(ctx context.Context, fn func(*Tx) error) error {
	return s.commit(ctx, s.calls, fn)
}

// CommitFirst is Commit for a small write that someone is waiting on (a
// live sync, the indexer clearing its outbox entries): it goes ahead of the
// writes queued by Commit, in a transaction with only other CommitFirst
// calls, so it waits for the transaction under way but not for a group of
// bulk writes. The committer alternates between the two queues while both
// have calls, so neither starves.
func (s *Store) CommitFirst(ctx context.Context, fn func(*Tx) error) error {
	return s.commit(ctx, s.urgent, fn)
}

func (s *Store) commit(ctx context.Context, queue chan *call, fn func(*Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.pg != nil {
		return s.commitPostgres(ctx, fn)
	}
	c := &call{fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	select {
	case queue <- c:
	case <-ctx.Done():
		s.mu.RUnlock()
		return ctx.Err()
	}
	s.mu.RUnlock()
	// Once queued the write will be attempted; wait for its outcome even if the
	// caller's context ends, so "cancelled" never hides a committed write.
	return <-c.done
}

// committer is the single writer: it takes every queued call and runs them in
// one transaction, so a burst of N writers costs one fsync, and an idle store
// commits a lone writer at once (no batching delay). CommitFirst's calls go
// first, in groups of their own; after such a group, Commit's queue is
// served next if it has calls.
func (s *Store) committer() {
	defer s.wg.Done()
	afterUrgent := false
	for {
		var first *call
		urgent := false
		if afterUrgent {
			select {
			case first = <-s.calls:
			default:
			}
		} else {
			select {
			case first = <-s.urgent:
				urgent = true
			default:
			}
		}
		if first == nil {
			select {
			case first = <-s.urgent:
				urgent = true
			case first = <-s.calls:
			case <-s.stop:
				// Drain what was queued before Close.
				for {
					select {
					case c := <-s.urgent:
						s.run([]*call{c})
					case c := <-s.calls:
						s.run([]*call{c})
					default:
						return
					}
				}
			}
		}
		group := []*call{first}
	fill:
		for len(group) < s.group {
			select {
			case c := <-s.urgent:
				group = append(group, c)
			default:
				if urgent {
					break fill
				}
				select {
				case c := <-s.calls:
					group = append(group, c)
				default:
					break fill
				}
			}
		}
		afterUrgent = urgent
		s.run(group)
		s.takeDictionary()
	}
}

// run commits group in one transaction. A call that fails (returns an error
// or panics) is taken out and the rest are retried as a group, as bbolt's
// Batch does. A call that failed first in line saw only committed data, so
// its error stands; one that failed later may have failed on the writes of
// the calls before it, so it is run again alone once they have committed.
func (s *Store) run(group []*call) {
	var alone []*call
	for len(group) > 0 {
		failed := -1
		err := s.be.update(context.Background(), func(t txn) error {
			tx := &Tx{t: t, codec: s.codec.Load()}
			for i, c := range group {
				if err := safely(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			// Committed, or the commit itself failed (disk full, I/O error)
			// and nobody's write landed.
			for _, c := range group {
				c.done <- err
			}
			break
		}
		if failed == 0 {
			group[0].done <- err
		} else {
			alone = append(alone, group[failed])
		}
		group = slices.Delete(group, failed, failed+1)
	}
	for _, c := range alone {
		s.run([]*call{c})
	}
}

// PanicError is what Commit returns when its callback panicked. The callback
// runs on the committer goroutine, where no handler's recover can reach, so
// the committer recovers it: the panic fails that one write (rolled back)
// instead of the process and every write grouped with it.
type PanicError struct {
	Value any    // what the callback panicked with
	Stack []byte // the committer's stack at the panic, for the log
}

func (e *PanicError) Error() string { return fmt.Sprintf("commit callback panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is sees it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func safely(fn func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(tx)
}

// Tx is a transaction handle passed to View and Commit callbacks. It must not
// be used after the callback returns.
type Tx struct {
	t     txn
	codec *codec
	begun time.Time // when View was called (zero in write transactions)
	// claims is the store's (claims.go), nil for a bbolt file.
	claims *claimer
	// prefixes caches msgPrefix in write transactions: uid+sid -> prefix.
	prefixes map[string][]byte
}

func (tx *Tx) bucket(name []byte) bucket { return tx.t.bucket(name) }
