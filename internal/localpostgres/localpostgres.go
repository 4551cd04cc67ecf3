// Package localpostgres runs a PostgreSQL server on this machine for the
// tests and the benchmarks: Debian's initdb and pg_ctl on a data directory
// in a temporary directory, listening on 127.0.0.1 at a free port, with its
// socket in that directory too. [Launch] starts one; [Server.Remove] stops
// it and removes its directory. The tests' helpers (a shared server per
// test package, skipping without PostgreSQL) are in package pgtest, which
// wraps this one; this package does not import testing, so a binary
// (hindsight-bench) can link it.
//
// PostgreSQL refuses to run as root; when the caller runs as root (CI
// does) the server runs as Debian's postgres account, which owns the
// temporary directory.
package localpostgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// superuser is the role initdb creates; connections are trusted (loopback
// and the socket in the server's own directory only).
const superuser = "hindsight"

// Binaries returns the directory holding initdb and pg_ctl: Debian's
// /usr/lib/postgresql/VERSION/bin (the newest), else the directory of an
// initdb on PATH.
func Binaries() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if d := filepath.Dir(p); executable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL found (neither /usr/lib/postgresql/*/bin/initdb nor initdb on PATH): install Debian's postgresql package (make postgres)")
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Server is a running PostgreSQL.
type Server struct {
	bin  string // directory of initdb and pg_ctl
	dir  string // the temporary directory: data/, the socket, the log
	port int
	cred *syscall.Credential // the account the server runs as; nil: this process's
	opts Options

	mu  sync.Mutex
	dbs int // databases made by Database, for their names
}

// Options are how a launched server runs.
type Options struct {
	// Durable keeps fsync and full-page writes on, as a deployment runs
	// them: for measurements (hindsight-bench nodes compares the records in
	// PostgreSQL with bbolt's, which syncs every commit). Tests leave it
	// off: see Start.
	Durable bool
}

// Launch initialises a cluster in a new temporary directory and starts it.
func Launch(ctx context.Context) (*Server, error) {
	return LaunchWith(ctx, Options{})
}

// LaunchWith is Launch with options.
func LaunchWith(ctx context.Context, o Options) (*Server, error) {
	bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, opts: o}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresAccount(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.run(ctx, "initdb", "-D", s.data(), "-U", superuser, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// postgresAccount is Debian's postgres account, which the server runs as
// when the tests run as root.
func postgresAccount() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, and PostgreSQL refuses to: no postgres account to run it as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres account: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }
func (s *Server) log() string  { return filepath.Join(s.dir, "server.log") }

// run runs one of PostgreSQL's programs as the server's account.
func (s *Server) run(ctx context.Context, prog string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, prog), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", prog, err, out.Bytes())
	}
	return nil
}

// Start starts the server (again, after Stop or Kill) on its port. fsync is
// off unless Options.Durable: the tests kill processes, not machines, and
// what a killed server wrote is in the page cache for the next start.
func (s *Server) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s", s.port, s.dir)
	if !s.opts.Durable {
		opts += " -c fsync=off -c full_page_writes=off"
	}
	if err := s.run(ctx, "pg_ctl", "start", "-w", "-D", s.data(), "-l", s.log(), "-o", opts); err != nil {
		return fmt.Errorf("start PostgreSQL: %w\n%s", err, s.Tail(4<<10))
	}
	return nil
}

// Stop shuts the server down, ending every connection (fast mode).
func (s *Server) Stop() error {
	if err := s.run(context.Background(), "pg_ctl", "stop", "-w", "-D", s.data(), "-m", "fast"); err != nil {
		return fmt.Errorf("stop PostgreSQL: %w", err)
	}
	return nil
}

// Kill stops the server as a crash would (immediate mode: no checkpoint,
// recovery from the WAL at the next start).
func (s *Server) Kill() error {
	if err := s.run(context.Background(), "pg_ctl", "stop", "-w", "-D", s.data(), "-m", "immediate"); err != nil {
		return fmt.Errorf("kill PostgreSQL: %w", err)
	}
	return nil
}

// Remove stops the server if it runs and removes its directory.
func (s *Server) Remove() error {
	var err error
	if s.run(context.Background(), "pg_ctl", "status", "-D", s.data()) == nil {
		err = s.Stop()
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

// Tail returns up to the last n bytes of the server's log.
func (s *Server) Tail(n int) string {
	b, _ := os.ReadFile(s.log())
	return string(b[max(0, len(b)-n):])
}

// DSN is the address of database db on the server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.port, db)
}

// CreateDatabase creates a fresh database and returns its address.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.dbs++
	name := fmt.Sprintf("test_%d", s.dbs)
	s.mu.Unlock()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.DSN(name), nil
}
