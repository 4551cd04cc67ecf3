package kv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
)

// TestUnreachable: which errors mean the records' database cannot be
// reached (a 503 and a retry) and which are faults of the statement or the
// caller (a 500, or the caller's own cancellation).
func TestUnreachable(t *testing.T) {
	// A real connection refused: a port that was free a moment ago.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, refused := pgconn.Connect(context.Background(), "postgres://nobody@"+addr+"/none?sslmode=disable&connect_timeout=60")
	var ce *pgconn.ConnectError
	if !errors.As(refused, &ce) {
		t.Fatalf("connecting to a closed port: %T %v, want a *pgconn.ConnectError", refused, refused)
	}
	pg := func(code string) error { return &pgconn.PgError{Severity: "FATAL", Code: code, Message: code} }
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", refused, true},
		{"connection refused, wrapped", fmt.Errorf("records: begin read: %w", refused), true},
		{"admin_shutdown 57P01", pg("57P01"), true},
		{"crash_shutdown 57P02", pg("57P02"), true},
		{"cannot_connect_now 57P03", pg("57P03"), true},
		{"connection_failure 08006", pg("08006"), true},
		{"sqlclient_unable_to_establish_sqlconnection 08001", pg("08001"), true},
		{"too_many_connections 53300", pg("53300"), true},
		{"admin_shutdown, wrapped", fmt.Errorf("records: read sessions: %w", pg("57P01")), true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), true},
		{"unexpected EOF", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), true},
		{"conn closed", fmt.Errorf("begin: %w", pgconn.ErrConnClosed), true},
		{"unique_violation 23505", pg("23505"), false},
		{"syntax_error 42601", pg("42601"), false},
		{"undefined_table 42P01", pg("42P01"), false},
		{"serialization_failure 40001", pg("40001"), false},
		{"invalid_password 28P01", pg("28P01"), false},
		{"invalid_catalog_name 3D000", pg("3D000"), false},
		{"the store's pool closed (used after Close)", fmt.Errorf("acquire: %w", puddle.ErrClosedPool), false},
		{"caller cancelled", context.Canceled, false},
		{"caller's deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), false},
		{"not found", ErrNotFound, false},
		{"a bug", errors.New("decode session: bad length"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unreachable(tt.err); got != tt.want {
				t.Errorf("unreachable(%v) = %v, want %v", tt.err, got, tt.want)
			}
			marked := markUnavailable(tt.err)
			if got := errors.Is(marked, ErrUnavailable); got != tt.want {
				t.Errorf("markUnavailable(%v) wraps ErrUnavailable: %v, want %v", tt.err, got, tt.want)
			}
			if tt.err != nil && !errors.Is(marked, tt.err) {
				t.Errorf("markUnavailable(%v) = %v, lost the cause", tt.err, marked)
			}
		})
	}
	if once, again := markUnavailable(refused), markUnavailable(markUnavailable(refused)); again.Error() != once.Error() {
		t.Errorf("marking twice: %v, want it marked once", again)
	}
}
