package kv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnavailable is wrapped by the errors of a store whose database (the
// records in PostgreSQL) cannot serve a request now: it cannot be reached,
// or went away in the middle of a transaction (the server is down,
// restarting, refusing connections or shutting down), or a write kept
// conflicting with other writers past its retries (maxAttempts). Nothing
// is wrong with the request: the API answers 503 with Retry-After, and the
// indexer keeps its work queued and retries.
//
// A write that failed so is not known to have failed: the connection may
// have broken after PostgreSQL committed it. Every write of the sync API
// is an idempotent upsert, so a client that sends it again stores it once.
//
// A bbolt file never returns it.
var ErrUnavailable = errors.New("records database unavailable")

// ErrBusy wraps ErrUnavailable for a write that PostgreSQL aborted for
// conflicts with other writers at each of its attempts: the database is
// up, but too busy for this write now.
var ErrBusy = fmt.Errorf("%w: too many conflicting writes", ErrUnavailable)

// markUnavailable wraps err in ErrUnavailable when it means the database
// cannot be reached ([unreachable]); other errors (a constraint violated,
// bad SQL) come back as they are.
func markUnavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// unreachable reports whether err means the database cannot be reached or
// is going away, rather than a fault of the statement: the one place that
// decides it.
//
//   - PostgreSQL said so: SQLSTATE class 08 (connection exception), 57P01
//     admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (the
//     server is starting or in recovery), 53300 too_many_connections;
//   - no connection could be made (*pgconn.ConnectError: refused, no
//     route, timed out), unless the server answered the attempt with an
//     error that is not one of the above (a wrong password, a database
//     that does not exist: configuration, not an outage);
//   - the connection broke under a statement: reset, broken pipe, closed,
//     end of file.
//
// A cancelled or expired context is the caller's, not the database's; a
// store used after Close (its pool closed) is a fault of ours, as it is in
// a bbolt file.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"),
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03",
			pe.Code == "53300":
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne *net.OpError
	switch {
	case errors.As(err, &ne),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, pgconn.ErrConnClosed):
		return true
	}
	return false
}

// connLost reports whether err is a connection the pool handed out that
// turned out broken (PostgreSQL restarted under it), as opposed to a new
// connection that could not be made. After one, the pool's other idle
// connections are likely broken too.
func connLost(err error) bool {
	var ce *pgconn.ConnectError
	return unreachable(err) && !errors.As(err, &ce)
}
