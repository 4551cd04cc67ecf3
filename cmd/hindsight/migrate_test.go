package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// TestMigrate: `hindsight migrate` copies a data directory's records into
// PostgreSQL and back; users, keys and sessions made before read the same
// through the other commands afterwards, the checksums are printed, the
// password of the address never is, and running it again writes nothing.
// It refuses a destination holding other records (exit 1) until --force,
// a source a running process holds, and a DST that is SRC; --help
// explains.
func TestMigrate(t *testing.T) {
	dir := t.TempDir()
	if _, err := runCmd(t, "users", "create", "alice", "--data", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "keys", "create", "--user", "alice", "--label", "laptop", "--data", dir); err != nil {
		t.Fatal(err)
	}
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Commit(context.Background(), func(tx *kv.Tx) error {
		u, err := tx.UserByName("alice")
		if err != nil {
			return err
		}
		s := kv.Session{ID: kv.NewID(), UserID: u.ID, ExternalID: "s1", Source: "claude", Title: "moved to postgres", CreatedAt: 1, UpdatedAt: 2}
		for i := range 30 {
			body := fmt.Sprintf("message %d about the migration", i)
			m := kv.Message{ID: kv.NewID(), UserID: u.ID, SessionID: s.ID, Seq: uint64(i), ExternalID: fmt.Sprint(i), Role: "user", TextContent: &body}
			if err := tx.PutMessage(&m); err != nil {
				return err
			}
		}
		s.MessageCount, s.NextSeq = 30, 30
		if err := tx.PutSession(&s, 0); err != nil {
			return err
		}
		return tx.MarkDirty(u.ID, s.ID)
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	// The server trusts loopback, so a password in the address is ignored
	// by it: what matters is that migrate never prints it.
	dsn := strings.Replace(pgtest.Database(t), "hindsight@", "hindsight:pw-s3cret@", 1)
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "--from", dir, "--to", dsn}, &out, &errb); err != nil {
		t.Fatalf("migrate to PostgreSQL: %v\n%s", err, errb.String())
	}
	all := out.String() + errb.String()
	t.Logf("migrate:\n%s", all)
	if strings.Contains(all, "pw-s3cret") {
		t.Errorf("migrate printed the password:\n%s", all)
	}
	for _, want := range []string{"verified", "messages", "users", "keys", "tombstones", "outbox"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("migrate's report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "DIFFERS") {
		t.Errorf("a bucket differs:\n%s", out.String())
	}
	if o, err := runCmd(t, "keys", "list", "--user", "alice", "--records", dsn); err != nil || !strings.Contains(o, "laptop") {
		t.Errorf("keys list in PostgreSQL after migrate: %q, %v", o, err)
	}

	// Again: nothing to do.
	o, err := runCmd(t, "migrate", "--from", dir, "--to", dsn)
	if err != nil || !strings.Contains(o, "already holds") {
		t.Errorf("migrate again: %q, %v", o, err)
	}

	// And back into a new data directory.
	back := t.TempDir()
	if _, err := runCmd(t, "migrate", "--from", dsn, "--to", back); err != nil {
		t.Fatalf("migrate back: %v", err)
	}
	if o, err := runCmd(t, "keys", "list", "--user", "alice", "--data", back); err != nil || !strings.Contains(o, "laptop") {
		t.Errorf("keys list in the data directory migrated back: %q, %v", o, err)
	}
	st, err = kv.Open(back, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = st.View(context.Background(), func(tx *kv.Tx) error {
		u, _ := tx.UserByName("alice")
		return tx.Sessions(u.ID, func(s kv.Session) error {
			return tx.Messages(u.ID, s.ID, func(m kv.Message) error {
				if strings.Contains(*m.TextContent, "migration") {
					n++
				}
				return nil
			})
		})
	})
	if err := st.Check(); err != nil {
		t.Errorf("check after the round trip: %v", err)
	}
	st.Close()
	if n != 30 {
		t.Errorf("%d messages read back after the round trip, want 30", n)
	}

	// A destination with other records is refused, then forced.
	other := t.TempDir()
	if _, err := runCmd(t, "users", "create", "mallory", "--data", other); err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, "migrate", "--from", dir, "--to", other)
	if !errors.Is(err, kv.ErrDestinationNotEmpty) || exitCode(err) != 1 || !strings.Contains(err.Error(), "--force") {
		t.Errorf("migrate into a directory with other records: %v (exit %d), want a refusal naming --force", err, exitCode(err))
	}
	if _, err := runCmd(t, "migrate", "--from", dir, "--to", other, "--force"); err != nil {
		t.Errorf("migrate --force: %v", err)
	}
	if o, err := runCmd(t, "users", "list", "--data", other); err != nil || strings.Contains(o, "mallory") || !strings.Contains(o, "alice") {
		t.Errorf("users after migrate --force: %q, %v; want alice only", o, err)
	}

	// A source a running process holds is refused, at once and saying so.
	held, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runCmd(t, "migrate", "--from", dir, "--to", t.TempDir())
	held.Close()
	if !errors.Is(err, kv.ErrLocked) || !strings.Contains(err.Error(), "in use") {
		t.Errorf("migrate from a held data directory: %v, want it refused as in use", err)
	}

	_, err = runCmd(t, "migrate", "--from", t.TempDir(), "--to", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "holds no records") {
		t.Errorf("migrate from a directory without records: %v, want it refused", err)
	}
	_, err = runCmd(t, "migrate", "--from", dir, "--to", dir+"/.")
	if err == nil || exitCode(err) != 2 {
		t.Errorf("migrate to itself: %v, want a usage error", err)
	}
	_, err = runCmd(t, "migrate", "--from", dir)
	if err == nil || exitCode(err) != 2 {
		t.Errorf("migrate without --to: %v, want a usage error", err)
	}
	out.Reset()
	errb.Reset()
	if err := run(context.Background(), []string{"migrate", "--help"}, &out, &errb); err != nil {
		t.Errorf("migrate --help: %v", err)
	}
	for _, want := range []string{"--from", "--force", "continues where it stopped", "pg_dump"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("migrate --help lacks %q:\n%s", want, errb.String())
		}
	}
}
