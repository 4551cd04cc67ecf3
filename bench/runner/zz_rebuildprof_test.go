package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

func TestZZMakeData(t *testing.T) {
	dir := os.Getenv("RB_DATA")
	if dir == "" {
		t.Skip()
	}
	n, _ := strconv.Atoi(os.Getenv("RB_N"))
	ctx := context.Background()
	first, a, stop, err := startServer(ctx, dir, zerolog.Nop(), config.Config{}, Vectors{Embedder: "none", Store: "embedded"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	clients := []*bench.Client{first}
	for i := 1; i < 4; i++ {
		name := fmt.Sprintf("bench%d", i)
		a.Accounts.CreateUser(ctx, name)
		key, _, _ := a.Accounts.CreateKey(ctx, name, "bench")
		c := *first
		c.Key = key
		clients = append(clients, &c)
	}
	target := bench.LoadTarget{Clients: clients, Modes: []string{"fulltext"}, WaitIdle: a.Pipeline.WaitIdle, Lags: a.Pipeline.Lags,
		Search: func(ctx context.Context, user int, mode, q string, k int) (int, error) { return 0, nil },
		Disk:   func() bench.DiskUse { return bench.DiskUse{} }}
	l := bench.NewLoader(target, 1)
	if _, err := l.Step(ctx, bench.StepOptions{Sessions: n, Messages: 20, Concurrency: 8, Queries: 1, Progress: io.Discard, SkipRebuild: true}); err != nil {
		t.Fatal(err)
	}
}

func TestZZRebuild(t *testing.T) {
	dir := os.Getenv("RB_DATA")
	if dir == "" {
		t.Skip()
	}
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	c0 := zzCPU()
	n, err := timedRebuild(context.Background(), st, "/tmp/rb/idx", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuild: %d sessions in %v: %.0f sessions/s, cpu %.2f ms/session", n, time.Since(start), float64(n)/time.Since(start).Seconds(), float64((zzCPU()-c0).Microseconds())/1000/float64(n))
}

func zzCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestZZRaw(t *testing.T) {
	dir := os.Getenv("RB_DATA")
	if dir == "" {
		t.Skip()
	}
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c0 := zzCPU()
	r, err := timedRawBleve(context.Background(), st, "/tmp/rb/raw", io.Discard)
	n, took := r.Sessions, r.Took
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("raw: %d sessions in %v: %.0f sessions/s, cpu (incl. reading) %.2f ms/session", n, took, float64(n)/took.Seconds(), float64((zzCPU()-c0).Microseconds())/1000/float64(n))
}


func TestZZDump(t *testing.T) {
	dir := os.Getenv("RB_DATA")
	if dir == "" {
		t.Skip()
	}
	st, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, _ := os.Create("/tmp/rb/sessions.jsonl")
	defer f.Close()
	enc := json.NewEncoder(f)
	st.View(context.Background(), func(tx *kv.Tx) error {
		users, _ := tx.Users()
		for _, u := range users {
			tx.Sessions(u.ID, func(s kv.Session) error {
				d, err := ingest.LoadDoc(tx, u.ID, s.ID)
				if err != nil {
					return err
				}
				return enc.Encode(ingest.IndexSession(d))
			})
		}
		return nil
	})
}
