package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/internal/retry"
	"github.com/hindsight-dev/hindsight/kv"
)

// TextIndex is the write side of the full-text index the pipeline feeds.
// *index.Index satisfies it.
type TextIndex interface {
	// Put writes everything of a session (rebuilds); PutSessions writes
	// what full-text search reads (the search queue), PutChunks what
	// only context reads (the chunk queue). The Bleve index writes all in
	// PutSessions (its chunks are scored from the records) and nothing in
	// PutChunks; the Weaviate text index writes chunk objects there.
	Put(ctx context.Context, sessions []index.Session) error
	PutSessions(ctx context.Context, sessions []index.Session) error
	PutChunks(ctx context.Context, sessions []index.Session) error
	Delete(ctx context.Context, userID string, sessionIDs []string) error
}

// Stage is a step after full-text indexing that must also accept a session
// before its outbox entry is cleared (the embedding stage). Sessions that
// no longer exist arrive with Deleted set.
type Stage interface {
	Process(ctx context.Context, docs []Doc) error
}

// Doc is one session as the pipeline hands it to index and stages.
type Doc struct {
	UserID, SessionID string
	Deleted           bool
	Session           kv.Session
	Exchanges         []Exchange
	Chunks            []Chunk
	// Volume is 0 when the doc holds the session from its start (all of
	// it, unless it is a part: more). n > 0: it holds
	// the session from the start of its full-text volume n on (loadTail),
	// Exchanges and Chunks are that part's (the chunks with the session's
	// ordinals), and the volumes before are indexed and unchanged.
	Volume int
	edits  uint64 // the session's count of edits when it was read (loadTail)
	// more: the doc is a part (loadTail with a limit): the session's text
	// goes on with the exchange that begins at message next.
	more bool
	next uint64
}

// PipelineOptions tunes the indexer; zero values take defaults.
type PipelineOptions struct {
	// Debounce is how long the indexer waits after a write before draining, so
	// a burst of single-message syncs to one session is indexed once. 0 = 200ms.
	Debounce time.Duration
	// BatchSize is how many sessions one step of either queue handles.
	// 0 = 256. A chunk step delays new search work by its length, but
	// chunk steps of 64 measured no better for search lag in bench ingest
	// (p99 0.96-0.98 s either way) and left the chunk queue slower (more,
	// smaller Bleve segments).
	BatchSize int
	// StepBytes bounds the searchable text one step indexes, so a step of
	// long sessions (a few hundred KB each) cannot hold up the queue for
	// many seconds; at least one session is always taken. 0 = 2 MiB, about
	// 350 typical sessions: BatchSize binds first for those.
	StepBytes int
	// TailBytes bounds how much of one session's text a search step reads
	// (a long session written faster than the indexer: ingest/tail.go):
	// past it the step stops at the next exchange and the next step goes
	// on from there. 0 = DefaultTailBytes; at least twice the index's
	// volume size, so that every step writes a volume. It is also no more
	// than the step's byte budget, when that is larger than the floor.
	TailBytes int
	// StepTime is about how long one bulk step may hold the indexer: a
	// live write that arrives meanwhile waits for it. A bulk step takes
	// the sessions and text the recent bulk steps indexed in StepTime
	// (within BatchSize and StepBytes, and no less than an eighth of
	// each), so on a fast machine steps are full and on a busy one they
	// shrink, with or without live traffic. 0 = 500ms.
	StepTime time.Duration
	// MaxBacklog bounds the index lag a bulk import builds up: a bulk
	// write (Admit) waits while the search queue holds more than the
	// indexer, at the speed of its recent bulk steps, clears in
	// MaxBacklog (more than BatchSize sessions before a step was
	// measured). 0 = 3s.
	MaxBacklog time.Duration
	// MaxAdmitWait bounds how long Admit holds one bulk write: past it the
	// write goes ahead (the records take it; indexing catches up later).
	// 0 = 10s.
	MaxAdmitWait time.Duration
	// Backoff bounds the retry delay after a failed step. 0 = 30s.
	MaxBackoff time.Duration
	Logger     zerolog.Logger
	// OnLag, when set, is told each indexed session's write-to-searchable
	// delay (full-text search).
	OnLag func(time.Duration)
}

// Pipeline drains kv's outbox into the text index and the stages, in two
// queues. A write puts its session on the search queue; a step of that
// queue writes the session documents (what full-text search reads) and, in
// the transaction that clears the entries, passes the sessions on to the
// chunk queue. A step of the chunk queue writes the chunk documents, where
// the text index has them (Weaviate), and runs the stages (embeddings,
// for semantic search), and runs only when the search queue is empty. A
// bulk import that outruns the indexer therefore delays semantic search,
// not full-text search; live traffic keeps both queues near empty.
//
// Live writes (kv's MarkLive: the plugins' single-entry syncs and small
// batches) are also put on each queue's live lane, and a step takes only
// live entries while there are any, so a live write waits at most for the
// bulk step under way (sized to take about StepTime), not for a bulk
// import's backlog; but the step after a live step is bulk work's, so
// bulk work keeps at least every other step while live work keeps coming.
// While the search queue holds only bulk work the chunk queue still takes
// its live entries. Bulk writes wait for room (Admit), so a bulk import
// runs at the indexer's pace instead of building a backlog.
//
// An entry is removed only after the index (and, for the chunk queue,
// every stage) accepted its session, and only if no newer write marked it
// again meanwhile. After a crash a session may be indexed twice; the index
// and the stages are idempotent, so that is safe.
type Pipeline struct {
	store *kv.Store
	index TextIndex
	// volumes is the index as one that cuts long sessions into volumes
	// (*index.Index), nil otherwise: only then does a step read a long
	// session from its index tail instead of whole.
	volumes volumeIndex
	stages  []Stage
	opts    PipelineOptions
	log     zerolog.Logger
	wake    chan struct{}

	mu       sync.Mutex
	wasLive  [2]bool         // by queue: its last step took live work, so the next takes the oldest
	speed    speed           // of recent bulk search steps
	running  bool            // Run is draining the outbox: Admit may wait for it
	backlog  int             // search queue entries left after the last search step
	inflight int             // sessions of bulk writes Admit let through, not yet committed
	written  int             // sessions of those committed since the last search step read the queue
	stepped  chan struct{}   // closed (and replaced) after each search step
	lag      []time.Duration // recent index lags (write -> searchable), for the bench
	lastErr  error           // of the search queue's last step
	chunkErr error           // of the chunk queue's last step
	indexed  uint64
}

// NewPipeline returns a pipeline; call Run to start it.
func NewPipeline(store *kv.Store, idx TextIndex, opts PipelineOptions, stages ...Stage) *Pipeline {
	if opts.Debounce <= 0 {
		opts.Debounce = 200 * time.Millisecond
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	if opts.StepBytes <= 0 {
		opts.StepBytes = 2 << 20
	}
	if opts.TailBytes <= 0 {
		opts.TailBytes = DefaultTailBytes
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.StepTime <= 0 {
		opts.StepTime = 500 * time.Millisecond
	}
	if opts.MaxBacklog <= 0 {
		opts.MaxBacklog = 3 * time.Second
	}
	if opts.MaxAdmitWait <= 0 {
		opts.MaxAdmitWait = 10 * time.Second
	}
	vi, _ := idx.(volumeIndex)
	return &Pipeline{store: store, index: idx, volumes: vi, stages: stages, opts: opts, log: opts.Logger, wake: make(chan struct{}, 1),
		stepped: make(chan struct{})}
}

// Notify tells the pipeline new work is on the outbox. It never blocks.
func (p *Pipeline) Notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run drains the outbox until ctx ends. It drains once at start (work left by
// a crash), then after every Notify (debounced), and polls every few seconds
// in case a notification was missed.
//
// The chunk queue runs in a goroutine of its own, started only while the
// search queue is empty, so full-text indexing keeps its priority; but a
// chunk step held up by a failing dependency (an embedding provider timing
// out, a vector store that is down) never holds up full-text indexing, and
// its failures back off on their own (up to MaxBackoff) with the work kept
// queued. Each queue logs when it starts failing and when it recovers, not
// at every retry.
func (p *Pipeline) Run(ctx context.Context) {
	p.setRunning(true)
	defer p.setRunning(false)
	chunkWake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.runChunks(ctx, chunkWake)
	}()
	defer wg.Wait()
	poke := func() {
		select {
		case chunkWake <- struct{}{}:
		default:
		}
	}
	var fail failures
	sched := p.retries()
	poll := time.NewTicker(5 * time.Second)
	defer poll.Stop()
	for {
		n, err := p.drain(ctx, kv.SearchQueue)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			wait := sched.NextBackOff()
			fail.failed(p.log, "full-text indexing", err, wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			continue
		case n > 0:
			fail.ok(p.log, "full-text indexing")
			sched.Reset()
			poke()   // the chunk queue may have live work to do meanwhile
			continue // more may be queued
		}
		fail.ok(p.log, "full-text indexing")
		poke() // the search queue is empty: the chunk queue's turn
		// When the whole outbox is empty, deleted sessions' index documents
		// and vectors are gone, so their records can be purged.
		if !p.busy(ctx) {
			if err := p.purge(ctx); err != nil && ctx.Err() == nil {
				p.log.Warn().Err(err).Msg("purging deleted sessions failed; retried later")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-p.wake:
			// Debounce: let a burst of writes to the same sessions coalesce.
			select {
			case <-time.After(p.opts.Debounce):
			case <-ctx.Done():
				return
			}
		}
	}
}

// setRunning says whether Run drains the outbox (Admit holds bulk writes
// only then), and wakes those Admit holds.
func (p *Pipeline) setRunning(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = on
	close(p.stepped)
	p.stepped = make(chan struct{})
}

// runChunks drains the chunk queue whenever Run signals that the search
// queue is empty, backing off on failures.
func (p *Pipeline) runChunks(ctx context.Context, wake <-chan struct{}) {
	var fail failures
	sched := p.retries()
	poll := time.NewTicker(5 * time.Second)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
		for ctx.Err() == nil && p.chunkTurn(ctx) {
			n, err := p.drain(ctx, kv.ChunkQueue)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// A dependency's Retry-After is honoured, within MaxBackoff.
				wait := min(max(sched.NextBackOff(), retryDelay(err)), p.opts.MaxBackoff)
				fail.failed(p.log, "context and semantic indexing", err, wait)
				// Wake-ups do not cut the wait short: a failing dependency
				// is not retried faster because writes keep coming.
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return
				}
				continue
			}
			fail.ok(p.log, "context and semantic indexing")
			sched.Reset()
			if n == 0 {
				break
			}
		}
	}
}

// retries is the schedule of a queue's retries after failed steps: 500 ms,
// doubling, at most MaxBackoff; reset by a step that succeeds.
func (p *Pipeline) retries() backoff.BackOff {
	return retry.Doubling(min(500*time.Millisecond, p.opts.MaxBackoff), p.opts.MaxBackoff)
}

// retryDelay is the wait a failing dependency asked for (a provider's
// Retry-After, on *vectors.ProviderError), or 0.
func retryDelay(err error) time.Duration {
	var rd interface{ RetryDelay() time.Duration }
	if errors.As(err, &rd) {
		return rd.RetryDelay()
	}
	return 0
}

// failures logs a queue's failures once per change: the first failure at
// warn, the retries at debug, the recovery at info.
type failures struct{ failing bool }

func (f *failures) failed(log zerolog.Logger, what string, err error, retry time.Duration) {
	ev := log.Debug()
	if !f.failing {
		ev = log.Warn()
		f.failing = true
	}
	ev.Err(err).Dur("retry_in", retry).Msg(what + " failed; the work stays queued and is retried")
}

func (f *failures) ok(log zerolog.Logger, what string) {
	if f.failing {
		f.failing = false
		log.Info().Msg(what + " recovered; the queued work is being done")
	}
}

// chunkTurn reports whether the chunk queue may take a step: when the
// search queue is empty, or when it holds only bulk work and the chunk
// queue has live work (so a live session's context and vectors do not
// wait for a bulk import's full-text indexing). Never while the search
// queue has live work, nor when the outbox cannot be read.
func (p *Pipeline) chunkTurn(ctx context.Context) bool {
	turn := false
	_ = p.store.View(ctx, func(tx *kv.Tx) error {
		switch {
		case tx.HasLive(kv.SearchQueue):
		case len(tx.DirtySessions(kv.SearchQueue, 1)) == 0:
			turn = true
		default:
			turn = tx.HasLive(kv.ChunkQueue)
		}
		return nil
	})
	return turn
}

// busy reports whether either queue has work (or cannot be read).
func (p *Pipeline) busy(ctx context.Context) bool {
	busy := true
	_ = p.store.View(ctx, func(tx *kv.Tx) error {
		busy = tx.HasDirty()
		return nil
	})
	return busy
}

// DrainOnce does one step and returns how many sessions it took off a
// queue: up to BatchSize sessions of the search queue or, when that is
// empty, of the chunk queue. 0 means both are empty.
func (p *Pipeline) DrainOnce(ctx context.Context) (int, error) {
	n, err := p.drain(ctx, kv.SearchQueue)
	if err != nil || n > 0 {
		return n, err
	}
	return p.drain(ctx, kv.ChunkQueue)
}

// drain does one step of queue q: a search step writes session documents,
// a chunk step writes chunk documents (PutChunks) and runs the stages.
//
// A step takes the queue's live lane when it has entries, unless the
// queue's last step did: then it is bulk work's turn, and the step takes
// the entries waiting longest (live ones among them). So live writes wait
// at most for one bulk step, and bulk work keeps at least every other
// step while live writes keep coming (on the chunk queue, while the
// search queue is empty).
func (p *Pipeline) drain(ctx context.Context, q kv.Queue) (int, error) {
	start := time.Now()
	p.mu.Lock()
	owed := p.wasLive[q]
	budget := stepBudget{p.opts.BatchSize, p.opts.StepBytes}
	if q == kv.SearchQueue {
		budget = p.bulkBudget()
	}
	written := p.written // committed: in the queue the step reads
	p.mu.Unlock()
	// Nodes sharing the records in PostgreSQL each claim a step's entries
	// (kv's Claim) before indexing them; an entry another node claimed
	// between the read and the claim is left out. Once the outbox holds
	// only such entries the step reads again, a few times at most: the
	// next read passes over the other nodes' claims. In a bbolt file Claim
	// returns the entries as read.
	var st step
	var err error
	for tries := 0; ; tries++ {
		st, err = p.take(ctx, q, owed, budget)
		if err != nil || len(st.dirty) == 0 {
			p.stepDone(q, 0, err, st.queued, written)
			return 0, err
		}
		kept, err := p.store.Claim(ctx, st.dirty)
		if err != nil {
			err = fmt.Errorf("claim %s queue entries: %w", q, err)
			p.stepDone(q, 0, err, st.queued, written)
			return 0, err
		}
		st.keep(kept)
		if len(st.dirty) > 0 || tries == 3 {
			break
		}
	}
	dirty, docs, queued, size, bulk := st.dirty, st.docs, st.queued, st.size, st.bulk
	if len(dirty) == 0 {
		p.stepDone(q, 0, nil, queued, written)
		return 0, nil
	}
	stopRenew := p.renewClaims(ctx, dirty)
	var tails []*kv.IndexTail // by doc: where the next step may start reading
	if q == kv.SearchQueue {
		tails, err = p.write(ctx, docs, p.index.PutSessions, false, true)
	} else {
		_, err = p.write(ctx, docs, p.index.PutChunks, true, false)
	}
	if err != nil {
		stopRenew()
		// Another node may take the work at once, not after the lease.
		if rerr := p.store.ReleaseClaims(context.WithoutCancel(ctx), dirty); rerr != nil {
			p.log.Debug().Err(rerr).Msg("releasing outbox claims failed; they lapse with their lease")
		}
		p.stepDone(q, 0, err, queued, written)
		return 0, err
	}
	now := time.Now()
	// The claims are renewed until the entries are cleared, which may
	// wait for the records' database to come back.
	err = p.clear(ctx, q, dirty, docs, tails)
	stopRenew()
	if err != nil {
		err = fmt.Errorf("clear %s queue: %w", q, err)
		p.stepDone(q, 0, err, queued, written)
		return 0, err
	}
	p.mu.Lock()
	p.wasLive[q] = !bulk
	if q == kv.SearchQueue {
		if bulk {
			p.speed.observe(len(dirty), size, time.Since(start))
		}
		for i, d := range dirty {
			// The lag of the oldest write this step made searchable. Entries
			// from older data files carry no time.
			// A part of a session is not all of its writes.
			if lag := now.Sub(d.Since); !docs[i].Deleted && !docs[i].more && !d.Since.IsZero() && lag >= 0 {
				p.lag = append(p.lag, lag)
				if p.opts.OnLag != nil {
					p.opts.OnLag(lag)
				}
			}
		}
		if len(p.lag) > 100_000 {
			p.lag = p.lag[len(p.lag)-50_000:]
		}
	}
	p.mu.Unlock()
	p.stepDone(q, len(dirty), nil, queued-len(dirty), written)
	return len(dirty), nil
}

// clear removes a step's entries from queue q (and passes the search
// queue's on to the chunk queue) once the index and the stages accepted
// their sessions. While the records' database cannot be reached
// (kv.ErrUnavailable) it tries again, every 100 ms doubling to 2 s, until
// the database answers or ctx ends, rather than failing the step: a failed
// step's entries would be taken again once the database is back and their
// sessions indexed a second time, by this node or, once their claims
// lapsed, by another. Retrying the clear alone indexes each entry once
// when the database is back within the claims' lease (renewed meanwhile);
// after a longer outage another node may have taken an entry, which is
// then indexed twice (harmless: the index writes are replacements). The
// clear is version-checked as always: a session written again meanwhile
// stays queued for its newer write. tails (by entry, nil for none) are
// where the next step of a long session may start reading, recorded in the
// same transaction. A search queue entry whose doc is a part of its
// session (Doc.more) stays queued, as it is: the next step reads on from
// its new mark.
func (p *Pipeline) clear(ctx context.Context, q kv.Queue, dirty []kv.Dirty, docs []Doc, tails []*kv.IndexTail) error {
	var sched backoff.BackOff
	for {
		// Small, and the indexer waits on it: ahead of queued bulk writes.
		err := p.store.CommitFirst(ctx, func(tx *kv.Tx) error {
			for i, d := range dirty {
				if tails != nil && tails[i] != nil {
					if _, err := tx.SetIndexTail(d.UserID, d.SessionID, *tails[i]); err != nil {
						return err
					}
				}
				if docs[i].more && q == kv.SearchQueue {
					if err := tx.KeepDirty(d); err != nil {
						return err
					}
					continue
				}
				if err := tx.ClearDirty(d); err != nil {
					return err
				}
				if q == kv.SearchQueue {
					if err := tx.PassOn(d); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err == nil || !errors.Is(err, kv.ErrUnavailable) || ctx.Err() != nil {
			if err == nil && sched != nil {
				p.log.Info().Int("sessions", len(dirty)).Msg("records database back: the indexed sessions' outbox entries are cleared")
			}
			return err
		}
		if sched == nil {
			sched = retry.Doubling(100*time.Millisecond, 2*time.Second)
			p.log.Warn().Err(err).Int("sessions", len(dirty)).
				Msg("records database unavailable: the sessions are indexed; clearing their outbox entries waits for it")
		}
		select {
		case <-time.After(sched.NextBackOff()):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// step is what one step of a queue took.
type step struct {
	dirty  []kv.Dirty
	docs   []Doc // dirty's sessions, in order
	queued int   // the search queue's length when read (0 for the chunk queue)
	size   int   // the docs' searchable text, bytes
	bulk   bool  // bulk work (false: the queue's live lane)
}

// take reads a step's entries of queue q and loads their sessions, within
// budget (the full budget when it takes live work).
func (p *Pipeline) take(ctx context.Context, q kv.Queue, owed bool, budget stepBudget) (step, error) {
	st := step{bulk: true}
	err := p.store.View(ctx, func(tx *kv.Tx) error {
		st.dirty = tx.DirtySessions(q, p.opts.BatchSize)
		if len(st.dirty) > 0 && st.dirty[0].Live {
			// The chunk queue's bulk work never goes before full-text
			// indexing (see chunkTurn).
			if owed && (q == kv.SearchQueue || !tx.Queued(kv.SearchQueue)) {
				st.dirty = tx.OldestDirty(q, p.opts.BatchSize)
			} else {
				st.bulk = false
				budget = stepBudget{p.opts.BatchSize, p.opts.StepBytes}
			}
		}
		st.dirty = st.dirty[:min(len(st.dirty), budget.sessions)]
		if q == kv.SearchQueue {
			st.queued = tx.QueueLen(q)
		}
		st.docs, st.size = st.docs[:0], 0
		// A long session is read from its index tail where the index cuts
		// volumes; a chunk step reads it whole when a stage (embedding)
		// needs every chunk.
		// A step reads a part of a long session's tail at most (see
		// tail.go). A chunk step reads from the tail only without stages,
		// when it writes nothing (the volume index's PutChunks), so a part
		// is as good as the rest: it clears the entry all the same.
		tail := p.volumes != nil && (q == kv.SearchQueue || len(p.stages) == 0)
		limit := 0
		if tail {
			limit = p.tailLimit(budget)
		}
		for i, d := range st.dirty {
			var doc Doc
			var err error
			if tail {
				doc, err = loadTail(tx, d.UserID, d.SessionID, limit)
			} else {
				doc, err = LoadDoc(tx, d.UserID, d.SessionID)
			}
			if err != nil {
				return err
			}
			st.docs = append(st.docs, doc)
			if st.size += doc.textBytes(); st.size >= budget.bytes {
				st.dirty = st.dirty[:i+1] // the rest waits for the next step
				break
			}
		}
		return nil
	})
	return st, err
}

// tailLimit is how much of a session's text a search step of budget
// reads (PipelineOptions.TailBytes): the option or the budget's bytes,
// whichever is less, but at least twice the index's volume size.
func (p *Pipeline) tailLimit(budget stepBudget) int {
	return max(min(p.opts.TailBytes, budget.bytes), 2*p.volumes.VolumeBytes())
}

// keep narrows the step to kept, the subsequence of its entries this node
// claimed.
func (st *step) keep(kept []kv.Dirty) {
	if len(kept) == len(st.dirty) {
		return
	}
	docs, j := st.docs[:0], 0
	st.size = 0
	for i, d := range st.dirty {
		if j < len(kept) && kept[j].UserID == d.UserID && kept[j].SessionID == d.SessionID {
			docs = append(docs, st.docs[i])
			st.size += st.docs[i].textBytes()
			j++
		}
	}
	st.dirty, st.docs = kept, docs
}

// renewClaims renews the claims on dirty's entries every third of the
// lease until the returned stop is called, so a step that runs long (a
// slow embedding provider) keeps its work. No-op in a bbolt file.
func (p *Pipeline) renewClaims(ctx context.Context, dirty []kv.Dirty) (stop func()) {
	lease := p.store.ClaimLease()
	if lease <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		failing := false // logged once per run of failures
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			lost, err := p.store.RenewClaims(ctx, dirty)
			switch {
			case err != nil && failing:
				p.log.Debug().Err(err).Msg("renewing outbox claims failed again")
			case err != nil:
				p.log.Warn().Err(err).Msg("renewing outbox claims failed; if they lapse another node may index the same sessions (harmless, only wasted)")
			case lost > 0:
				p.log.Warn().Int("sessions", lost).Msg("outbox claims lapsed and were taken by another node; those sessions may be indexed twice (harmless, only wasted)")
			}
			failing = err != nil
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// stepDone records the outcome of a step of q that took n sessions.
// After a search step it also takes the backlog (left is the queue's
// length after the step; written, the sessions of bulk writes committed
// before the step read the queue: they are in it) and wakes the bulk
// writers Admit holds.
func (p *Pipeline) stepDone(q kv.Queue, n int, err error, left, written int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q == kv.ChunkQueue {
		p.chunkErr = err
		return
	}
	p.lastErr = err
	p.indexed += uint64(n) // Indexed counts sessions made searchable
	if err == nil {
		p.backlog = max(0, left)
		p.written = max(0, p.written-written)
	}
	close(p.stepped)
	p.stepped = make(chan struct{})
}

// stepBudget bounds a step: sessions and bytes of text.
type stepBudget struct{ sessions, bytes int }

// bulkBudget bounds a bulk search step (p.mu held): what the recent bulk
// steps indexed in StepTime, within BatchSize and StepBytes and no less
// than an eighth of each; both whole until a step was measured. A live
// write that arrives during a bulk step waits for it, and a step of 256
// long sessions took up to 2 s on 2 busy cores in bench load (a live
// step: tens of ms).
func (p *Pipeline) bulkBudget() stepBudget {
	return p.speed.budget(p.opts.StepTime, stepBudget{p.opts.BatchSize, p.opts.StepBytes})
}

// speed is how fast recent bulk search steps indexed: sessions and bytes
// of text a second, a moving average over steps (0: none measured yet).
type speed struct{ sessions, bytes float64 }

func (s *speed) observe(sessions, bytes int, took time.Duration) {
	if sessions == 0 || took <= 0 {
		return
	}
	ns, nb := float64(sessions)/took.Seconds(), float64(bytes)/took.Seconds()
	if s.sessions == 0 {
		s.sessions, s.bytes = ns, nb
		return
	}
	const weight = 0.3 // of the latest step
	s.sessions += weight * (ns - s.sessions)
	s.bytes += weight * (nb - s.bytes)
}

// budget is what s indexes in d, within full and no less than an eighth
// of it; full when s is unknown.
func (s speed) budget(d time.Duration, full stepBudget) stepBudget {
	if s.sessions == 0 {
		return full
	}
	within := func(v float64, hi int) int {
		return int(min(max(v, float64(max(1, hi/8))), float64(hi)))
	}
	return stepBudget{within(s.sessions*d.Seconds(), full.sessions), within(s.bytes*d.Seconds(), full.bytes)}
}

// Admit holds a bulk write of n sessions, before it is committed, while
// the search queue holds more than the indexer clears in MaxBacklog at
// the speed of its recent bulk steps (and at least two bulk steps' worth
// is always let in; BatchSize sessions before a step was measured), for
// at most MaxAdmitWait. An import that outruns the indexer is so slowed
// to its pace, instead of piling up a backlog that delays the search of
// everything it writes: the wait moves from after the write (index lag)
// to before it. It holds nothing while Run is not draining the outbox (a
// rebuild, a shutdown) or while the last search step failed (the records
// take writes the index cannot). Live writes are not held
// (ingest.Service calls it for bulk batches only).
//
// The caller calls done once the write is committed or failed (the
// sessions it let through count as queued until then). Admit returns
// ctx's error if ctx ends first.
func (p *Pipeline) Admit(ctx context.Context, n int) (done func(), err error) {
	var timeout <-chan time.Time
	expired := false
	p.mu.Lock()
	for !expired && !p.room() {
		stepped := p.stepped
		p.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(p.opts.MaxAdmitWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-stepped:
		case <-timeout:
			expired = true
		case <-ctx.Done():
			return func() {}, ctx.Err()
		}
		p.mu.Lock()
	}
	p.inflight += n
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.inflight -= n
			p.written += n
		})
	}, nil
}

// room reports whether Admit lets a bulk write in (p.mu held).
func (p *Pipeline) room() bool {
	if !p.running || p.lastErr != nil {
		return true
	}
	limit := float64(p.opts.BatchSize) // one full step, until a step was measured
	if p.speed.sessions > 0 {
		limit = max(p.speed.sessions*p.opts.MaxBacklog.Seconds(), float64(2*p.bulkBudget().sessions))
	}
	return float64(p.backlog+p.written+p.inflight) < limit
}

// A step holding more than shortStep bytes of text writes the sessions of
// at most shortSession bytes in a batch before the others (write).
const (
	shortStep    = 256 << 10
	shortSession = 64 << 10
)

// bodyBytes is the text of sessions.
func bodyBytes(sessions []index.Session) int {
	n := 0
	for _, s := range sessions {
		n += len(s.Title) + len(s.Body)
	}
	return n
}

// write indexes docs with put (PutSessions for a search step, PutChunks for
// a chunk step, Put for a rebuild), short sessions first if shortFirst,
// then, if stages, runs the stages. It
// removes every document of deleted sessions whichever put it is given: a
// chunk step may have written chunks from a read made before the deletion.
func (p *Pipeline) write(ctx context.Context, docs []Doc, put func(context.Context, []index.Session) error, stages, shortFirst bool) ([]*kv.IndexTail, error) {
	var sessions []index.Session
	var of []int                     // sessions[j] is docs[of[j]]
	deleted := map[string][]string{} // user -> session ids
	for i, d := range docs {
		if d.Deleted {
			deleted[d.UserID] = append(deleted[d.UserID], d.SessionID)
		} else {
			sessions = append(sessions, IndexSession(d))
			of = append(of, i)
		}
	}
	// Short sessions first, in a batch of their own, when the step also
	// holds long text: a live message waits for its own analysis, not for
	// a volume of another user's long session (Put's batch is searchable
	// when it returns).
	short, long := sessions, []index.Session(nil)
	if shortFirst && len(sessions) > 1 && bodyBytes(sessions) > shortStep {
		short, long = nil, nil
		for _, s := range sessions {
			if len(s.Title)+len(s.Body) <= shortSession {
				short = append(short, s)
			} else {
				long = append(long, s)
			}
		}
	}
	for _, batch := range [][]index.Session{short, long} {
		if len(batch) == 0 {
			continue
		}
		if err := put(ctx, batch); err != nil {
			return nil, fmt.Errorf("index %d sessions: %w", len(batch), err)
		}
	}
	for uid, ids := range deleted {
		if err := p.index.Delete(ctx, uid, ids); err != nil {
			return nil, fmt.Errorf("unindex %d sessions: %w", len(ids), err)
		}
	}
	var tails []*kv.IndexTail
	if p.volumes != nil {
		tails = make([]*kv.IndexTail, len(docs))
		for j, s := range sessions {
			tails[of[j]] = indexTail(p.volumes, docs[of[j]], s)
		}
	}
	if !stages {
		return tails, nil
	}
	for _, s := range p.stages {
		if err := s.Process(ctx, docs); err != nil {
			return nil, err
		}
	}
	return tails, nil
}

// purge removes deleted sessions' records in bounded transactions.
func (p *Pipeline) purge(ctx context.Context) error {
	for ctx.Err() == nil {
		n, err := p.store.PurgeStep(ctx, 5000)
		if err != nil || n == 0 {
			return err
		}
	}
	return ctx.Err()
}

// LoadDoc reads one session and its messages and derives its searchable
// exchanges and chunks. A session that no longer exists gives Deleted.
func LoadDoc(tx *kv.Tx, userID, sessionID string) (Doc, error) {
	d := Doc{UserID: userID, SessionID: sessionID}
	s, err := tx.Session(userID, sessionID)
	if errors.Is(err, kv.ErrNotFound) {
		d.Deleted = true
		return d, nil
	}
	if err != nil {
		return d, err
	}
	d.Session = s
	var msgs []kv.Message
	if err := tx.Messages(userID, sessionID, func(m kv.Message) error {
		msgs = append(msgs, m)
		return nil
	}); err != nil {
		return d, err
	}
	d.Exchanges = Exchanges(msgs)
	d.Chunks = Chunks(d.Exchanges)
	return d, nil
}

// textBytes is the size of the searchable text of d.
func (d Doc) textBytes() int {
	n := len(d.Session.Title)
	for _, c := range d.Chunks {
		n += len(c.Text)
	}
	return n
}

// IndexSession is the index document for a loaded session.
func IndexSession(d Doc) index.Session {
	is := index.Session{UserID: d.UserID, SessionID: d.SessionID, Title: d.Session.Title, Volume: d.Volume, More: d.more}
	body := make([]byte, 0, 1024)
	for i, e := range d.Exchanges {
		if i > 0 {
			body = append(body, "\n\n"...)
			is.Breaks = append(is.Breaks, len(body))
			is.Cuts = append(is.Cuts, len(body)) // a volume begins with an exchange (loadTail)
		}
		for _, b := range e.Breaks() {
			is.Breaks = append(is.Breaks, len(body)+b)
		}
		body = append(body, e.Text()...)
	}
	is.Body = string(body)
	for _, c := range d.Chunks {
		is.Chunks = append(is.Chunks, index.Chunk{Ordinal: c.Ordinal, Text: c.Text, Breaks: c.Breaks})
	}
	return is
}

// Status reports progress, for /ready, metrics and the bench.
type Status struct {
	Indexed uint64 // sessions whose search documents were written (or removed)
	// LastErr is the last error of the search queue (full-text), ChunkErr
	// of the chunk queue (context documents and embeddings); nil when the
	// queue's last step worked.
	LastErr, ChunkErr error
}

// Status returns counters and the last errors.
func (p *Pipeline) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Status{Indexed: p.indexed, LastErr: p.lastErr, ChunkErr: p.chunkErr}
}

// Lags returns and forgets the recorded write-to-indexed delays.
func (p *Pipeline) Lags() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lag
	p.lag = nil
	return l
}

// WaitIdle blocks until the outbox is empty (tests and the bench use it).
func (p *Pipeline) WaitIdle(ctx context.Context) error {
	for {
		var busy bool
		if err := p.store.View(ctx, func(tx *kv.Tx) error {
			busy = tx.HasDirty()
			return nil
		}); err != nil {
			return err
		}
		if !busy {
			return nil
		}
		p.Notify()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
