// Package admin is the admin socket: it lets the users, keys and backup
// commands work while `hindsight serve` holds the data file's lock. The
// server side ([Serve]) answers on a Unix socket inside the data directory;
// the command side ([With], [Backup]) works on the store directly when no
// server holds it, and through the socket otherwise.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// The admin socket lets user and key commands work while `serve` holds the
// data file's lock. It is a Unix socket inside the data directory, mode 0600
// from the moment it has its name (listenPrivate): whoever can open it can
// already read the data file, so it needs no key.
const Socket = "admin.sock"

// Ops are the operations the users and keys commands need, done either
// directly on the store or through a running server.
type Ops interface {
	CreateUser(ctx context.Context, name string) (kv.User, error)
	// CreateUserWithPassword adds a user with a dashboard password.
	CreateUserWithPassword(ctx context.Context, name, password string) (kv.User, error)
	// SetPassword sets a user's dashboard password and signs out that
	// user's dashboard sessions.
	SetPassword(ctx context.Context, name, password string) error
	Users(ctx context.Context) ([]kv.User, error)
	CreateKey(ctx context.Context, user, label string) (string, kv.APIKey, error)
	Keys(ctx context.Context, user string) ([]kv.APIKey, error)
	Revoke(ctx context.Context, prefix string) (kv.APIKey, error)
}

// localOps works on an opened store.
type localOps struct {
	a *accounts.Accounts
	w *accounts.Web
}

// Local returns the operations on st. Passwords are hashed at bcrypt cost
// cost (0: bcrypt's default).
func Local(st *kv.Store, a *accounts.Accounts, cost int) Ops {
	return localOps{a: a, w: accounts.NewWeb(st, accounts.WebOptions{BcryptCost: cost})}
}

func (l localOps) CreateUser(ctx context.Context, name string) (kv.User, error) {
	return l.a.CreateUser(ctx, name)
}
func (l localOps) CreateUserWithPassword(ctx context.Context, name, password string) (kv.User, error) {
	return l.w.CreateUserWithPassword(ctx, name, password)
}

// SetPassword also ends the user's dashboard sessions, in the same
// transaction. The dashboard keeps no session cache (it reads each request's
// session from the store), so a running server's signed-out browsers are
// signed out at once.
func (l localOps) SetPassword(ctx context.Context, name, password string) error {
	return l.w.SetPassword(ctx, name, password)
}
func (l localOps) Users(ctx context.Context) ([]kv.User, error) { return l.a.Users(ctx) }
func (l localOps) CreateKey(ctx context.Context, user, label string) (string, kv.APIKey, error) {
	return l.a.CreateKey(ctx, user, label)
}
func (l localOps) Keys(ctx context.Context, user string) ([]kv.APIKey, error) {
	u, err := l.a.User(ctx, user)
	if err != nil {
		return nil, err
	}
	return l.a.Keys(ctx, u.ID)
}
func (l localOps) Revoke(ctx context.Context, prefix string) (kv.APIKey, error) {
	return l.a.Revoke(ctx, "", prefix)
}

// With runs fn on the store in dir (passwords hashed at bcrypt cost cost),
// or, when a running server holds it, through that server's admin socket.
// It never waits more than a few seconds.
func With(ctx context.Context, dir string, cost int, fn func(Ops) error) error {
	st, err := kv.Open(dir, kv.Options{LockTimeout: time.Second})
	if err == nil {
		defer st.Close()
		return fn(Local(st, accounts.New(st, nil), cost))
	}
	if !errors.Is(err, kv.ErrLocked) {
		return err
	}
	rc := Remote(filepath.Join(dir, Socket))
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, perr := rc.Users(pctx); perr != nil {
		return fmt.Errorf("data directory %s is locked by another process and its admin socket does not answer (%v); stop that process or run this command on the same machine as `hindsight serve`", dir, perr)
	}
	return fn(rc)
}

// WithRecords is With for the records a --records value names
// (kv.RecordsInPostgres): in PostgreSQL fn runs on the database directly,
// beside any running server (nothing is locked: every node and command
// writes to it at once); unset, With on the bbolt file in dir.
func WithRecords(ctx context.Context, records, dir string, cost int, fn func(Ops) error) error {
	pg, err := kv.RecordsInPostgres(records)
	if err != nil {
		return err
	}
	if !pg {
		return With(ctx, dir, cost, fn)
	}
	st, err := kv.OpenPostgres(ctx, records, kv.PostgresOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(Local(st, accounts.New(st, nil), cost))
}

// Redacter rewrites the stored records with the running server's redactor
// (ingest.Service.RedactStored); nil when the server does not redact.
type Redacter func(context.Context, ingest.RedactStoredOptions) (ingest.RedactStoredResult, error)

// Serve starts the admin socket in dir for a running server over st and a
// (passwords hashed at bcrypt cost cost), redacting stored records with red.
// stop shuts it down and removes the socket.
func Serve(dir string, st *kv.Store, a *accounts.Accounts, cost int, red Redacter, log zerolog.Logger) (stop func(context.Context), err error) {
	return serve(dir, st, a, cost, red, log, net.Listen)
}

// serve is Serve with the listen call as a parameter, so a test can look at
// the socket the moment it is bound.
func serve(dir string, st *kv.Store, a *accounts.Accounts, cost int, red Redacter, log zerolog.Logger,
	listen func(network, address string) (net.Listener, error)) (stop func(context.Context), err error) {
	path := filepath.Join(dir, Socket)
	ln, err := listenPrivate(path, listen)
	if err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	ops := Local(st, a, cost)
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any, err error) {
		if err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, kv.ErrNotFound) {
				status = http.StatusNotFound
			} else if errors.Is(err, kv.ErrExists) {
				status = http.StatusConflict
			}
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(v)
	}
	// Password is only ever sent in a request body, over this socket; no
	// route logs a request, and error replies never repeat it.
	type adminReq struct{ Name, User, Label, Prefix, Password string }
	decode := func(r *http.Request) (adminReq, error) {
		var req adminReq
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
			// Not err itself: a JSON syntax error quotes a character of the
			// body, which may hold a password.
			return req, errors.New("the admin request body is not a JSON object of strings")
		}
		return req, nil
	}
	mux.HandleFunc("POST /users", func(w http.ResponseWriter, r *http.Request) {
		req, err := decode(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		u, err := ops.CreateUser(r.Context(), req.Name)
		reply(w, u, err)
	})
	// Passwords have their own routes, not an optional field of POST /users:
	// a server without them answers 404 rather than quietly creating a user
	// with no password.
	mux.HandleFunc("POST /users/with-password", func(w http.ResponseWriter, r *http.Request) {
		req, err := decode(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		u, err := ops.CreateUserWithPassword(r.Context(), req.Name, req.Password)
		reply(w, u, err)
	})
	mux.HandleFunc("POST /users/password", func(w http.ResponseWriter, r *http.Request) {
		req, err := decode(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		err = ops.SetPassword(r.Context(), req.Name, req.Password)
		reply(w, map[string]string{"name": req.Name}, err)
	})
	mux.HandleFunc("GET /users", func(w http.ResponseWriter, r *http.Request) {
		us, err := ops.Users(r.Context())
		reply(w, us, err)
	})
	mux.HandleFunc("POST /keys", func(w http.ResponseWriter, r *http.Request) {
		req, err := decode(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		key, rec, err := ops.CreateKey(r.Context(), req.User, req.Label)
		reply(w, map[string]any{"key": key, "record": rec}, err)
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		ks, err := ops.Keys(r.Context(), r.URL.Query().Get("user"))
		reply(w, ks, err)
	})
	mux.HandleFunc("POST /keys/revoke", func(w http.ResponseWriter, r *http.Request) {
		req, err := decode(r)
		if err != nil {
			reply(w, nil, err)
			return
		}
		rec, err := ops.Revoke(r.Context(), req.Prefix)
		reply(w, rec, err)
	})
	mux.HandleFunc("GET /backup", func(w http.ResponseWriter, r *http.Request) {
		// Stream a consistent copy from one read transaction; writers go on.
		w.Header().Set("Content-Type", "application/octet-stream")
		if _, err := st.Backup(r.Context(), w); err != nil {
			log.Error().Err(err).Msg("backup through the admin socket failed")
		}
	})
	var redacting sync.Mutex // one run at a time: they share the resume mark
	mux.HandleFunc("POST /redact", func(w http.ResponseWriter, r *http.Request) {
		if !redacting.TryLock() {
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]string{"error": "a redaction of the stored records is already running on this server"})
			return
		}
		defer redacting.Unlock()
		serveRedact(w, r, red)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Str("socket", path).
				Msg("admin socket stopped: users, keys and backup commands need the server stopped until it restarts")
		}
	}()
	return func(ctx context.Context) {
		srv.Shutdown(ctx)
		os.Remove(path)
	}, nil
}

// listenPrivate listens on the Unix socket path so that only this user can
// ever connect: the socket is bound inside a new directory only the owner
// may enter, made 0600 there, and only then renamed to path (a stale socket
// of a crashed server is replaced). Binding at path and changing the mode
// afterwards would leave a moment in which, under a permissive umask, anyone
// could connect.
func listenPrivate(path string, listen func(network, address string) (net.Listener, error)) (net.Listener, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".s") // short: a socket path has ~100 bytes
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o700); err != nil {
		return nil, err
	}
	bound := filepath.Join(tmp, filepath.Base(path))
	ln, err := listen("unix", bound)
	if err != nil {
		return nil, err
	}
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false) // the name it was bound at is gone; stop removes path
	}
	if err := os.Chmod(bound, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(bound, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// remoteOps talks to a running server's admin socket.
type remoteOps struct{ c *http.Client }

// Remote returns the operations of the server whose admin socket is path.
func Remote(path string) Ops { return newRemote(path) }

func newRemote(path string) remoteOps {
	return remoteOps{c: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}}
}

func (rc remoteOps) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://admin"+path, rd)
	if err != nil {
		return err
	}
	resp, err := rc.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&e)
		if e.Error == "" {
			// Not one of our error replies: most likely a server older than
			// this command, without the route.
			return fmt.Errorf("the running server's admin socket answered %q to %s %s; is it an older hindsight? Upgrade it, or stop it and run this again", resp.Status, method, path)
		}
		switch resp.StatusCode {
		case http.StatusNotFound:
			return remoteError{e.Error, kv.ErrNotFound}
		case http.StatusConflict:
			return remoteError{e.Error, kv.ErrExists}
		}
		return errors.New(e.Error)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// remoteError is an error the server sent: its message as the server wrote
// it (as the same command run locally would print it), matching kind with
// errors.Is.
type remoteError struct {
	msg  string
	kind error
}

func (e remoteError) Error() string { return e.msg }
func (e remoteError) Unwrap() error { return e.kind }

func (rc remoteOps) CreateUser(ctx context.Context, name string) (kv.User, error) {
	var u kv.User
	return u, rc.do(ctx, "POST", "/users", map[string]string{"name": name}, &u)
}
func (rc remoteOps) CreateUserWithPassword(ctx context.Context, name, password string) (kv.User, error) {
	var u kv.User
	return u, rc.do(ctx, "POST", "/users/with-password", map[string]string{"name": name, "password": password}, &u)
}
func (rc remoteOps) SetPassword(ctx context.Context, name, password string) error {
	return rc.do(ctx, "POST", "/users/password", map[string]string{"name": name, "password": password}, nil)
}
func (rc remoteOps) Users(ctx context.Context) ([]kv.User, error) {
	var us []kv.User
	return us, rc.do(ctx, "GET", "/users", nil, &us)
}
func (rc remoteOps) CreateKey(ctx context.Context, user, label string) (string, kv.APIKey, error) {
	var out struct {
		Key    string
		Record kv.APIKey
	}
	err := rc.do(ctx, "POST", "/keys", map[string]string{"user": user, "label": label}, &out)
	return out.Key, out.Record, err
}
func (rc remoteOps) Keys(ctx context.Context, user string) ([]kv.APIKey, error) {
	var ks []kv.APIKey
	return ks, rc.do(ctx, "GET", "/keys?user="+url.QueryEscape(user), nil, &ks)
}
func (rc remoteOps) Revoke(ctx context.Context, prefix string) (kv.APIKey, error) {
	var k kv.APIKey
	return k, rc.do(ctx, "POST", "/keys/revoke", map[string]string{"prefix": prefix}, &k)
}

// Backup writes a consistent copy of the records in dir to w: read directly
// when no server holds them, else streamed from the running server through
// its admin socket. via says which.
func Backup(ctx context.Context, dir string, w io.Writer) (n int64, via string, err error) {
	st, err := kv.Open(dir, kv.Options{LockTimeout: time.Second, ReadOnly: true})
	if err == nil {
		defer st.Close()
		n, err := st.Backup(ctx, w)
		return n, "read directly", err
	}
	if !errors.Is(err, kv.ErrLocked) {
		return 0, "", err
	}
	c := newRemote(filepath.Join(dir, Socket)).c
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
	n, err = io.Copy(w, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("backup stream ended after %d of %d bytes", n, resp.ContentLength)
	}
	return n, "through the running server", err
}
