package ingest

import (
	"context"
	"slices"
	"strings"

	"github.com/hindsight-dev/hindsight/kv"
)

// RebuildBatch is how many sessions one step of a rebuild writes (and how
// much a resumed reindex redoes at most). Larger batches make fewer, larger
// Bleve segments (fewer fsyncs, less merging), but on the data of bench
// load 2000 measured no faster than 500 once two batches are written at
// once (see RebuildFrom), and they hold more memory.
const RebuildBatch = 500

// rebuildInFlight is how many batches a rebuild writes at once. The index
// analyses a batch outside its write lock (index.Index.Put), so with two,
// one batch is analysed while the other's segment is built and waits for
// its fsync, and both cores stay busy.
const rebuildInFlight = 2

// RebuildOptions tunes RebuildFrom. The zero value rebuilds everything.
type RebuildOptions struct {
	// After resumes a rebuild: only sessions whose SessionRef sorts after
	// it are indexed ("" = all).
	After string
	// Progress, when set, is called with (done, total) at the start and
	// after each batch.
	Progress func(done, total int)
	// Written, when set, is called after each batch, in order, once that
	// batch and every one before it are written, with the SessionRef of the
	// batch's last session: a mark to resume After. An error stops the
	// rebuild.
	Written func(ctx context.Context, last string) error
}

// SessionRef names a session in a rebuild's order: the user id, NUL, the
// session id, so refs sort by user, then session.
func SessionRef(userID, sessionID string) string { return userID + "\x00" + sessionID }

// Rebuild indexes every session of every user from kv, in batches, calling
// progress(done, total) as it goes. The server runs it when the index is new
// or was lost; `hindsight reindex` runs RebuildFrom, to resume.
func (p *Pipeline) Rebuild(ctx context.Context, progress func(done, total int)) error {
	return p.RebuildFrom(ctx, RebuildOptions{Progress: progress})
}

// RebuildFrom indexes every session (after o.After) of every user from kv,
// in (user, session) order and batches of RebuildBatch, and runs the
// stages on them. The work overlaps in three steps: one goroutine reads
// and decodes the next batch's records, while rebuildInFlight batches are
// written to the index; the stages and o.Written see the batches in order.
func (p *Pipeline) RebuildFrom(ctx context.Context, o RebuildOptions) error {
	var refs []string
	err := p.store.View(ctx, func(tx *kv.Tx) error {
		users, err := tx.Users()
		if err != nil {
			return err
		}
		for _, u := range users {
			if err := tx.Sessions(u.ID, func(s kv.Session) error {
				refs = append(refs, SessionRef(u.ID, s.ID))
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(refs)
	first, _ := slices.BinarySearch(refs, o.After)
	if o.After != "" && first < len(refs) && refs[first] == o.After {
		first++
	}
	if o.Progress != nil {
		o.Progress(first, len(refs))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Reading a batch (records, decompression, decoding) runs on one core,
	// overlapping with the index writes.
	type loaded struct {
		docs []Doc
		end  int
		err  error
	}
	batches := make(chan loaded, 1)
	go func() {
		defer close(batches)
		for i := first; i < len(refs); i += RebuildBatch {
			b := loaded{end: min(i+RebuildBatch, len(refs))}
			b.err = p.store.View(ctx, func(tx *kv.Tx) error {
				for _, r := range refs[i:b.end] {
					uid, sid, _ := strings.Cut(r, "\x00")
					d, err := LoadDoc(tx, uid, sid)
					if err != nil {
						return err
					}
					b.docs = append(b.docs, d)
				}
				return nil
			})
			select {
			case batches <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return
			}
		}
	}()

	type writing struct {
		loaded
		done chan error
	}
	var queue []writing // batches being written, oldest first
	// finish waits for the oldest batch, then runs what must see the
	// batches in order.
	finish := func() error {
		w := queue[0]
		queue = queue[1:]
		if err := <-w.done; err != nil {
			return err
		}
		for _, s := range p.stages {
			if err := s.Process(ctx, w.docs); err != nil {
				return err
			}
		}
		if o.Written != nil {
			last := w.docs[len(w.docs)-1]
			if err := o.Written(ctx, SessionRef(last.UserID, last.SessionID)); err != nil {
				return err
			}
		}
		if o.Progress != nil {
			o.Progress(w.end, len(refs))
		}
		return nil
	}
	// fail stops the batches still being written before returning err.
	fail := func(err error) error {
		cancel()
		for _, w := range queue {
			<-w.done
		}
		return err
	}
	for b := range batches {
		if b.err != nil {
			return fail(b.err)
		}
		w := writing{loaded: b, done: make(chan error, 1)}
		go func() {
			_, err := p.write(ctx, w.docs, p.index.Put, false, false)
			w.done <- err
		}()
		queue = append(queue, w)
		if len(queue) == rebuildInFlight {
			if err := finish(); err != nil {
				return fail(err)
			}
		}
	}
	for len(queue) > 0 {
		if err := finish(); err != nil {
			return fail(err)
		}
	}
	return ctx.Err()
}
