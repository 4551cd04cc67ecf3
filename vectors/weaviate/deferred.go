package weaviate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/internal/retry"
	"github.com/hindsight-dev/hindsight/internal/weaviatex"
	"github.com/hindsight-dev/hindsight/vectors"
)

// ErrNotConnected is what a Deferred store's calls fail with until the
// server has answered.
var ErrNotConnected = errors.New("weaviate not connected yet")

// DeferredOptions tune OpenDeferred. Zero values take defaults.
type DeferredOptions struct {
	// Prepare runs on a freshly opened store before it is used (the
	// server's check of the recorded model). An error wrapping
	// vectors.ErrModelMismatch is final: the store stays unavailable and
	// reports it, since only an operator can resolve it.
	Prepare func(ctx context.Context, st vectors.Store) error
	// FirstTimeout bounds the attempt made in OpenDeferred; 0 = 5 seconds.
	FirstTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between later attempts,
	// doubling from the first; 0 = 1 second and 30 seconds.
	MinBackoff, MaxBackoff time.Duration
	Logger                 zerolog.Logger
}

// Deferred is a vectors.Store in Weaviate that does not need the server to
// be up when it is opened, so a service can start (and serve full-text
// search and writes) while Weaviate is still down. Until it connects its
// calls fail with an error wrapping ErrNotConnected, which callers treat as
// any failure of the store: work stays queued, searches degrade. It keeps
// trying in the background, with backoff, and logs when it connects.
//
// Once connected it is the Store it opened: a later outage surfaces as
// that Store's errors, and its HTTP client reconnects by itself when the
// server returns.
type Deferred struct {
	cfg   Config
	opts  DeferredOptions
	where string

	mu  sync.RWMutex
	st  *Store
	err error // why st is nil

	stop context.CancelFunc
	done chan struct{}
}

var _ vectors.Store = (*Deferred)(nil)

// OpenDeferred tries once to open the store at cfg (and prepare it); when
// the server does not answer it returns a Deferred that keeps trying in the
// background. Other errors (a bad URL or collection, a model mismatch, a
// server too old) are returned at once, as Open returns them.
func OpenDeferred(ctx context.Context, cfg Config, opts DeferredOptions) (*Deferred, error) {
	if opts.FirstTimeout <= 0 {
		opts.FirstTimeout = 5 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	d := &Deferred{cfg: cfg, opts: opts, where: weaviatex.RedactURL(cfg.URL), done: make(chan struct{})}
	first, cancel := context.WithTimeout(ctx, opts.FirstTimeout)
	st, err := d.open(first)
	cancel()
	if err == nil {
		d.st = st
		close(d.done)
		d.stop = func() {}
		return d, nil
	}
	if !unreachable(err) || ctx.Err() != nil {
		return nil, err
	}
	d.err = err
	opts.Logger.Warn().Str("weaviate", d.where).Err(err).
		Msg("weaviate does not answer: starting without it; semantic search is unavailable and embeddings wait until it does")
	bg, stop := context.WithCancel(context.Background())
	d.stop = stop
	go d.connect(bg)
	return d, nil
}

// unreachable reports whether err is the server not answering (as opposed
// to answering with something we refuse).
func unreachable(err error) bool {
	var nr *weaviatex.NotReadyError
	return errors.As(err, &nr) || errors.Is(err, context.DeadlineExceeded)
}

func (d *Deferred) open(ctx context.Context) (*Store, error) {
	st, err := Open(ctx, d.cfg)
	if err != nil {
		return nil, err
	}
	if d.opts.Prepare != nil {
		if err := d.opts.Prepare(ctx, st); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

// connect retries until the store opens, ctx ends, or the store answers
// with vectors of another model (final: an operator must act). Any other
// failure (the server down, starting, or briefly refusing) is retried; the
// log says when the reason changes, not at every attempt.
func (d *Deferred) connect(ctx context.Context) {
	defer close(d.done)
	sched := retry.Doubling(d.opts.MinBackoff, d.opts.MaxBackoff)
	last := d.err.Error()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(sched.NextBackOff()):
		}
		st, err := d.open(ctx)
		if ctx.Err() != nil {
			if st != nil {
				st.Close()
			}
			return
		}
		d.mu.Lock()
		d.st, d.err = st, err
		d.mu.Unlock()
		switch {
		case err == nil:
			d.opts.Logger.Info().Str("weaviate", d.where).Msg("weaviate answers: semantic search and embedding resume")
			return
		case errors.Is(err, vectors.ErrModelMismatch):
			d.opts.Logger.Error().Str("weaviate", d.where).Err(err).
				Msg("weaviate holds vectors of another model; semantic search stays unavailable (run hindsight reembed, or restore the previous embedder settings)")
			return
		case err.Error() != last:
			last = err.Error()
			d.opts.Logger.Warn().Str("weaviate", d.where).Err(err).Msg("weaviate still unavailable; retrying")
		}
	}
}

// Err is why the store cannot be used yet (nil once connected): for /ready.
func (d *Deferred) Err() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.st != nil {
		return nil
	}
	return d.err
}

// store returns the connected store or the error that says why there is none.
func (d *Deferred) store() (*Store, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.st != nil {
		return d.st, nil
	}
	return nil, fmt.Errorf("%w (%s): %v", ErrNotConnected, d.where, d.err)
}

// Where is the server's URL without credentials.
func (d *Deferred) Where() string { return d.where }

// Collection is the collection the vectors are kept in.
func (d *Deferred) Collection() string { return collectionOf(d.cfg) }

// Nearest implements vectors.Searcher.
func (d *Deferred) Nearest(ctx context.Context, userID string, q []float32, k int) ([]vectors.Hit, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return st.Nearest(ctx, userID, q, k)
}

// Upsert implements vectors.Store.
func (d *Deferred) Upsert(ctx context.Context, userID string, sessions map[string][]vectors.Vector) error {
	st, err := d.store()
	if err != nil {
		return err
	}
	return st.Upsert(ctx, userID, sessions)
}

// Delete implements vectors.Store.
func (d *Deferred) Delete(ctx context.Context, userID string, sessionIDs []string) error {
	st, err := d.store()
	if err != nil {
		return err
	}
	return st.Delete(ctx, userID, sessionIDs)
}

// Hashes implements vectors.Store.
func (d *Deferred) Hashes(ctx context.Context, userID, sessionID string) (map[int]string, error) {
	st, err := d.store()
	if err != nil {
		return nil, err
	}
	return st.Hashes(ctx, userID, sessionID)
}

// Meta implements vectors.Store.
func (d *Deferred) Meta(ctx context.Context) (string, int, error) {
	st, err := d.store()
	if err != nil {
		return "", 0, err
	}
	return st.Meta(ctx)
}

// SetMeta implements vectors.Store.
func (d *Deferred) SetMeta(ctx context.Context, model string, dim int) error {
	st, err := d.store()
	if err != nil {
		return err
	}
	return st.SetMeta(ctx, model, dim)
}

// Reset implements vectors.Store.
func (d *Deferred) Reset(ctx context.Context) error {
	st, err := d.store()
	if err != nil {
		return err
	}
	return st.Reset(ctx)
}

// Close stops the background attempts and closes the store.
func (d *Deferred) Close() error {
	d.stop()
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.st == nil {
		return nil
	}
	return d.st.Close()
}
