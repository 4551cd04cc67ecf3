package weaviatetext_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
)

// TestResetDuringRequests resets the index (drop and create both
// collections, as a rebuild starts) while writes and searches run. No
// request may fail, and the collections must end as this package creates
// them: a write checked before a drop and sent after it makes Weaviate's
// auto-schema create the collection anew without multi-tenancy, after which
// every query fails ("Unknown argument tenant") and no retry helps. The
// server's TestWeaviateTextIndex met that under load (a search's check
// between a rebuild's drop and its create).
func TestResetDuringRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("drops and creates collections repeatedly: not in -short")
	}
	srv := weaviatetest.Shared(t)
	ix, src := open(t, "TReset")
	ctx := context.Background()
	src.put(corpus...)
	if err := ix.Put(ctx, corpus); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	loop := func(f func() error) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := f(); err != nil {
				errs <- err
				return
			}
		}
	}
	wg.Add(3)
	go loop(func() error { return ix.Put(ctx, corpus[:2]) })
	go loop(func() error { return ix.Put(ctx, corpus[2:]) })
	go loop(func() error {
		_, err := ix.Search(ctx, index.Query{UserID: "u1", Text: "auth token", Kind: index.Sessions})
		return err
	})
	for range 8 {
		if err := ix.Reset(ctx); err != nil {
			t.Errorf("reset: %v", err)
			break
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a request during the resets failed: %v", err)
	}

	sessions, chunks := ix.Collections()
	for _, class := range []string{sessions, chunks} {
		resp, err := http.Get(srv.URL + "/v1/schema/" + class)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Description string `json:"description"`
			MT          struct {
				Enabled bool `json:"enabled"`
			} `json:"multiTenancyConfig"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("schema of %s: %d %v", class, resp.StatusCode, err)
		}
		if !got.MT.Enabled || !strings.HasPrefix(got.Description, "Hindsight full-text index") {
			t.Errorf("collection %s after the resets: multi-tenancy %v, description %q; want the index's own, multi-tenant", class, got.MT.Enabled, got.Description)
		}
	}
	// And it works: what is written is found.
	if err := ix.Put(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	hits, err := ix.Search(ctx, index.Query{UserID: "u1", Text: "\"parseConfigFile helper\"", Kind: index.Sessions})
	if err != nil || len(hits) != 1 || hits[0].SessionID != "s1" {
		t.Errorf("search after the resets: %v %v; want s1", hits, err)
	}
}
