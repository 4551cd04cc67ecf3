package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/redact"
)

// A secret split so that this file holds none whole.
var awsKeyID = "AKIA" + "QYLPMN5HHHFPZAM2"

func newRedactor(t *testing.T) *redact.Redactor {
	t.Helper()
	r, err := redact.New(redact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A batch is redacted before it is stored, and counted once per stored
// change: a batch re-sent unchanged adds nothing.
func TestBatchIsRedacted(t *testing.T) {
	f := newFixture(t)
	f.svc.Redact(newRedactor(t))
	body := fmt.Sprintf(`{"sessions":[{"externalId":"s1","title":"key %[1]s","projectPath":"/srv/<private>acme</private>"}],
		"messages":[{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"use %[1]s"},
		{"sessionExternalId":"s1","externalId":"m2","role":"assistant","parts":[{"type":"tool-call","toolName":"Bash","args":{"env":"AWS_ACCESS_KEY_ID=%[1]s"}},{"type":"reasoning","text":"%[1]s"}]}]}`, awsKeyID)
	for range 2 {
		b, err := ingest.DecodeBatch([]byte(body), ingest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.svc.Batch(ctx, f.user, b); err != nil {
			t.Fatal(err)
		}
	}
	var stored strings.Builder
	var counts map[string]int64
	f.st.View(ctx, func(tx *kv.Tx) error {
		return tx.Sessions(f.user, func(s kv.Session) error {
			fmt.Fprintf(&stored, "%+v\n", s)
			counts = tx.Redactions(f.user)
			return tx.Messages(f.user, s.ID, func(m kv.Message) error {
				fmt.Fprintf(&stored, "%+v %s\n", m, m.Parts)
				return nil
			})
		})
	})
	if strings.Contains(stored.String(), awsKeyID) || strings.Contains(stored.String(), "acme") {
		t.Fatalf("stored:\n%s", stored.String())
	}
	if counts["aws-access-token"] != 4 || counts["private"] != 1 {
		t.Errorf("counts %v, want 4 aws-access-token (title, text, arguments, raw part) and 1 private, once", counts)
	}
}

// An interrupted RedactStored resumes after the last step it finished and
// together the two runs redact every session once.
func TestRedactStoredResumes(t *testing.T) {
	f := newFixture(t)
	const sessions = 150 // three steps
	for i := range sessions {
		f.message(fmt.Sprintf(`{"sessionExternalId":"s%d","externalId":"m","role":"user","textContent":"key %s"}`, i, awsKeyID))
	}
	// As if indexed: nothing on the outbox.
	if err := f.st.Commit(ctx, func(tx *kv.Tx) error {
		for _, d := range tx.DirtySessions(kv.SearchQueue, 1000) {
			if err := tx.ClearDirty(d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.svc.Redact(newRedactor(t))
	cctx, cancel := context.WithCancel(ctx)
	first, err := f.svc.RedactStored(cctx, ingest.RedactStoredOptions{Progress: func(done, total int) {
		if done > 0 {
			cancel() // after the first step
		}
	}})
	if !errors.Is(err, context.Canceled) || first.Sessions == 0 || first.Sessions >= sessions {
		t.Fatalf("first run: %+v %v, want a step done and then cancelled", first, err)
	}
	second, err := f.svc.RedactStored(ctx, ingest.RedactStoredOptions{})
	if err != nil || !second.Resumed {
		t.Fatalf("second run: %+v %v, want it to resume", second, err)
	}
	if first.Sessions+second.Sessions != sessions || first.Counts["aws-access-token"]+second.Counts["aws-access-token"] != sessions {
		t.Errorf("runs redacted %d + %d sessions (%v, %v), want %d once each", first.Sessions, second.Sessions, first.Counts, second.Counts, sessions)
	}
	third, err := f.svc.RedactStored(ctx, ingest.RedactStoredOptions{})
	if err != nil || third.Resumed || third.Sessions != 0 {
		t.Errorf("third run: %+v %v, want a fresh run with nothing to do", third, err)
	}
	f.st.View(ctx, func(tx *kv.Tx) error {
		if n := tx.Redactions(f.user)["aws-access-token"]; n != sessions {
			t.Errorf("redaction totals %d, want %d", n, sessions)
		}
		if tx.OutboxLen() != sessions {
			t.Errorf("%d sessions on the outbox, want every changed one (%d)", tx.OutboxLen(), sessions)
		}
		return nil
	})
}
