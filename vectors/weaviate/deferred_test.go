package weaviate_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/vectors"
	"github.com/hindsight-dev/hindsight/vectors/weaviate"
)

// TestDeferredWithoutServer: with nothing listening, OpenDeferred still
// returns a store; its calls fail with ErrNotConnected naming the URL, Err
// says why, and Close stops the background attempts at once.
func TestDeferredWithoutServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now

	ctx := context.Background()
	prepared := false
	d, err := weaviate.OpenDeferred(ctx, weaviate.Config{URL: url}, weaviate.DeferredOptions{
		Prepare:    func(context.Context, vectors.Store) error { prepared = true; return nil },
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("OpenDeferred with the server down: %v", err)
	}
	if d.Err() == nil || !strings.Contains(d.Err().Error(), "does not answer") {
		t.Errorf("Err() = %v, want why it is not connected", d.Err())
	}
	if _, err := d.Nearest(ctx, "u", []float32{1}, 1); !errors.Is(err, weaviate.ErrNotConnected) || !strings.Contains(err.Error(), url) {
		t.Errorf("Nearest: %v, want ErrNotConnected naming %s", err, url)
	}
	if err := d.Upsert(ctx, "u", map[string][]vectors.Vector{"s": nil}); !errors.Is(err, weaviate.ErrNotConnected) {
		t.Errorf("Upsert: %v", err)
	}
	if _, err := d.Hashes(ctx, "u", "s"); !errors.Is(err, weaviate.ErrNotConnected) {
		t.Errorf("Hashes: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // a few background attempts
	done := make(chan error)
	go func() { done <- d.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(2 * time.Minute): // a bound on liveness, not a timing
		t.Fatal("Close did not stop the background attempts")
	}
	if prepared {
		t.Error("Prepare ran without a server")
	}

	// A URL that can never work is refused at once, as Open refuses it.
	if _, err := weaviate.OpenDeferred(ctx, weaviate.Config{URL: "ftp://x"}, weaviate.DeferredOptions{}); err == nil {
		t.Error("OpenDeferred accepted an ftp URL")
	}
}
