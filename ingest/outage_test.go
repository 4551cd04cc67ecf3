package ingest_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// outageIndex is a TextIndex that counts the sessions PutSessions writes
// and stops the records' PostgreSQL after the first write, so the step's
// clear meets the outage.
type outageIndex struct {
	ingest.TextIndex
	srv *pgtest.Server

	mu   sync.Mutex
	puts map[string]int // session id -> times written
}

func (o *outageIndex) PutSessions(ctx context.Context, s []index.Session) error {
	if err := o.TextIndex.PutSessions(ctx, s); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	first := len(o.puts) == 0
	for _, x := range s {
		o.puts[x.SessionID]++
	}
	if first {
		return o.srv.Kill()
	}
	return nil
}

// signal is a log writer that closes ch at the first line containing want.
type signal struct {
	want []byte
	ch   chan struct{}
	once sync.Once
}

func (s *signal) Write(p []byte) (int, error) {
	if bytes.Contains(p, s.want) {
		s.once.Do(func() { close(s.ch) })
	}
	return len(p), nil
}

// TestPipelineClearWaitsForRecords: the records' PostgreSQL goes down
// after the index accepted a step and before the step cleared its outbox
// entries. The step waits for the database and clears them then, instead
// of failing and having its sessions indexed again once it is back: each
// session is written to the index once, and the outbox drains.
func TestPipelineClearWaitsForRecords(t *testing.T) {
	srv := pgtest.Start(t)
	dsn, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.OpenPostgres(ctx, dsn, kv.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, kvtest.Checked(t, st))
	f.batch(`{"messages":[{"sessionExternalId":"a","externalId":"m","role":"user","textContent":"walrus"},
		{"sessionExternalId":"b","externalId":"m","role":"user","textContent":"harbour"}]}`)
	ix := &outageIndex{TextIndex: openIndex(t), srv: srv, puts: map[string]int{}}
	waiting := &signal{want: []byte("clearing their outbox entries waits"), ch: make(chan struct{})}
	p := ingest.NewPipeline(st, ix, ingest.PipelineOptions{Logger: zerolog.New(waiting)})
	restarted := make(chan error, 1)
	go func() {
		<-waiting.ch // the clear met the outage
		restarted <- srv.Start(context.Background())
	}()
	if n, err := p.DrainOnce(ctx); err != nil || n != 2 {
		t.Fatalf("the step that met the outage: DrainOnce = %d, %v; want its 2 sessions, cleared once the database was back", n, err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	for {
		n, err := p.DrainOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.puts) != 2 {
		t.Errorf("sessions indexed: %v, want both", ix.puts)
	}
	for id, n := range ix.puts {
		if n != 1 {
			t.Errorf("session %s written to the index %d times, want once", id, n)
		}
	}
	_ = st.View(ctx, func(tx *kv.Tx) error {
		if tx.HasDirty() {
			t.Error("the outbox did not drain")
		}
		return nil
	})
}
