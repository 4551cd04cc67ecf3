package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
)

// WatchRoot is one assistant's history a Watcher follows: the agent and the
// directory (or file) its sessions are read from.
type WatchRoot struct {
	Agent Agent
	Dir   string
}

// Watcher follows assistants' history as they write it and syncs what they
// add (hindsight import --watch).
//
// Sessions written as JSONL that only grows (Item.follow) are followed a
// line at a time: per session the Watcher keeps the reader, and per file the
// byte offset and line number it has read, so an append is read from where
// the last read stopped, never from the start. What changed is found by
// digests of what the server acknowledged (a new message, a tool result
// added to its call, a message rewritten as it streamed, a session's totals)
// and only that is sent. Other histories (SQLite databases, Markdown, JSON
// documents) are re-read whole when they change, at most one pass every
// four times as long as the last took, and only their sessions whose digest
// changed are uploaded.
//
// Sending: a change of at most liveMessages messages goes as single
// /sync/session and /sync/message requests, which the server treats as live
// (committed and indexed ahead of bulk work) and which keep the messages'
// own dates; larger ones (a catch-up after a restart or an outage) go in
// /sync/batch?keepDates=1 batches, bulk work that keeps dates too. A session
// the Watcher meets for the first time is compared with the server first
// (as Upload does), so it completes what an import or a plugin stored.
//
// Nothing is lost: offsets and digests in the state file (watchState) move
// only once the server has acknowledged what they cover. While the server
// is unreachable or failing, the pending changes stay queued (the readers
// keep them; the state can rebuild them) and are retried on the Client's
// retry schedule without end; each request is tried once, so a stopped
// server never holds the loop. A file that is truncated or replaced under
// its name (rotated) is read again from its start, after what was appended
// to the old file before the rename has been read from it.
//
// Resources: one fsnotify watch per directory (every directory under a root
// whose agent has WatchTree, new ones added as they appear; else the
// directories holding sessions), at most MaxWatches; readers of files idle
// for IdleAfter are dropped (a later append rebuilds one from the offsets,
// reading the part of the file the server has once more, locally, without
// sending it); a full listing every Rescan finds what the watches missed.
type Watcher struct {
	Client *Client
	Roots  []WatchRoot
	// State is the state file (DefaultWatchState).
	State string
	Read  ReadOptions
	// Redact, when set, is applied to what is sent (not to what is
	// compared: digests are of the assistant's own text).
	Redact func(*Session)
	Log    zerolog.Logger
	// Debounce gathers the events of a burst into one pass; 0 = 50 ms.
	Debounce time.Duration
	// Rescan lists every root again; 0 = 5 minutes.
	Rescan time.Duration
	// IdleAfter drops the reader of a session not written to for that
	// long; 0 = 10 minutes.
	IdleAfter time.Duration
	// MaxWatches bounds the directories watched; 0 = 8192.
	MaxWatches int
}

// liveMessages is the most messages a change sends as single, live
// requests; more go in date-keeping batches.
const liveMessages = 50

func (w *Watcher) withDefaults() Watcher {
	o := *w
	if o.Debounce <= 0 {
		o.Debounce = 50 * time.Millisecond
	}
	if o.Rescan <= 0 {
		o.Rescan = 5 * time.Minute
	}
	if o.IdleAfter <= 0 {
		o.IdleAfter = 10 * time.Minute
	}
	if o.MaxWatches <= 0 {
		o.MaxWatches = 8192
	}
	return o
}

// Run follows the roots until ctx ends (then it saves its state and returns
// nil) or the server refuses the key.
func (w *Watcher) Run(ctx context.Context) error {
	o := w.withDefaults()
	st, err := loadWatchState(o.State)
	if err != nil {
		return err
	}
	fw, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer fw.Close()
	c := *o.Client
	c.Retry.Attempts = 1 // the Watcher retries, on the same schedule
	r := &watchRun{
		w: &o, c: &c, fw: fw, st: st, sched: o.Client.Retry.withDefaults().schedule(),
		followers: map[string]*follower{}, byFile: map[string]*follower{}, wholes: map[string]*whole{},
		dirs: map[string]*rootState{}, dirty: map[*follower]bool{}, dirtyWhole: map[string]bool{},
		relist: map[*rootState]bool{}, newFiles: map[string]*rootState{}, first: true,
	}
	defer r.closeAll()
	for _, root := range o.Roots {
		rs := &rootState{agent: root.Agent, dir: filepath.Clean(root.Dir)}
		r.roots = append(r.roots, rs)
		if fi, err := os.Stat(rs.dir); err == nil && fi.IsDir() && rs.agent.WatchTree {
			r.watchTree(rs, rs.dir)
		} else if err == nil && fi.IsDir() && !rs.agent.InProjects {
			r.watchDir(rs, rs.dir)
		}
		r.relist[rs] = true
	}
	o.Log.Info().Int("roots", len(r.roots)).Int("watches", len(r.dirs)).Str("state", o.State).Msg("watching")

	timer := time.NewTimer(0)
	defer timer.Stop()
	var due time.Time
	schedule := func(d time.Duration) {
		at := time.Now().Add(d)
		if due.IsZero() || at.Before(due) {
			due = at
			timer.Reset(d)
		}
	}
	due = time.Now()
	rescan := time.NewTicker(o.Rescan)
	defer rescan.Stop()
	sweep := time.NewTicker(min(o.IdleAfter/4, time.Minute))
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return r.saveState(true)
		case ev, ok := <-fw.Events:
			if !ok {
				return errors.New("watch: the file watcher stopped")
			}
			if r.event(ev) {
				schedule(o.Debounce)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return errors.New("watch: the file watcher stopped")
			}
			o.Log.Warn().Err(err).Msg("file watcher; listing every root again")
			for _, rs := range r.roots {
				r.relist[rs] = true
			}
			schedule(o.Debounce)
		case <-timer.C:
			due = time.Time{}
			next, err := r.pass(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return r.saveState(true)
				}
				r.saveState(true)
				return err
			}
			if err := r.saveState(false); err != nil {
				o.Log.Error().Err(err).Msg("state not saved")
			}
			if r.stateDirty {
				next = min(next, time.Second)
			}
			if next < never {
				schedule(next)
			}
		case <-rescan.C:
			for _, rs := range r.roots {
				r.relist[rs] = true
			}
			schedule(0)
		case <-sweep.C:
			r.sweep()
			if r.stateDirty {
				schedule(0)
			}
		}
	}
}

const never = time.Duration(1<<63 - 1)

// rootState is a root being watched.
type rootState struct {
	agent     Agent
	dir       string
	wholeNext time.Time // no whole-file pass before then (the CPU bound)
}

// follower is one session followed a line at a time.
type follower struct {
	key   string
	root  *rootState
	spec  *followSpec
	files []*ffile
	t     *tail // nil while the session is idle
	// acked: per message id, the digest of what the server acknowledged,
	// and the digest of the session's fields.
	acked     map[string]uint64
	sessAcked uint64
	// fresh: nothing of it is known to be on the server (never synced by a
	// watcher, or a file was replaced): compare with the server first.
	fresh   bool
	reset   bool      // read it again from the start of its files at the next pass
	pending bool      // a change the server has not acknowledged
	used    time.Time // when its files were last written
	// What a catch-up read, acknowledged once Upload says so.
	candidate     map[string]uint64
	sessCandidate uint64
}

// ffile is one file of a followed session.
type ffile struct {
	tailFile
	f       *os.File // held while the reader lives: a renamed file is read to its end
	id      fileID
	fed     int64 // bytes the reader has taken (a line boundary)
	line    int   // the number of the next line
	size    int64
	mtime   time.Time
	seen    bool // opened at least once
	rotated bool // the name now points to another file, or to none
}

// whole is a file re-read whole when it changes.
type whole struct {
	root  *rootState
	items []Item // its sessions as last listed
}

type watchRun struct {
	w     *Watcher
	c     *Client
	fw    *fsnotify.Watcher
	st    *watchState
	sched backoff.BackOff
	roots []*rootState

	followers  map[string]*follower
	byFile     map[string]*follower
	wholes     map[string]*whole
	dirs       map[string]*rootState // watched directories
	full       bool                  // MaxWatches reached (logged once)
	dirty      map[*follower]bool
	dirtyWhole map[string]bool
	relist     map[*rootState]bool
	newFiles   map[string]*rootState // unknown files in the projects of InProjects agents
	first      bool                  // the first pass: sessions new to the watcher go through Upload
	batches    *bool                 // the server keeps dates in batches (asked once)
	again      bool                  // a follower must be read again: another pass at once

	stateDirty bool
	saved      time.Time
}

// watchTree watches dir and every directory below it (not hidden ones).
func (r *watchRun) watchTree(rs *rootState, dir string) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !r.watchDir(rs, p) && r.full {
			return filepath.SkipAll
		}
		return nil
	})
}

// watchDir adds a watch on dir; false when there is no room left.
func (r *watchRun) watchDir(rs *rootState, dir string) bool {
	if _, ok := r.dirs[dir]; ok {
		return true
	}
	if len(r.dirs) >= r.w.MaxWatches {
		if !r.full {
			r.full = true
			r.w.Log.Warn().Int("watches", len(r.dirs)).Msg("watch limit reached: directories beyond it are found by the periodic listing")
		}
		return false
	}
	if err := r.fw.Add(dir); err != nil {
		r.w.Log.Debug().Err(err).Str("dir", dir).Msg("not watched")
		return true
	}
	r.dirs[dir] = rs
	return true
}

// rootOf finds the root a path belongs to.
func (r *watchRun) rootOf(p string) *rootState {
	if rs := r.dirs[filepath.Dir(p)]; rs != nil {
		return rs
	}
	return r.dirs[p]
}

// event takes one file-system event; it reports whether a pass is due.
func (r *watchRun) event(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	p := filepath.Clean(ev.Name)
	rs := r.rootOf(p)
	if rs == nil {
		return false
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			if rs.agent.WatchTree {
				// A new project or date directory: files may be in it
				// already, written before the watch was added.
				r.watchTree(rs, p)
				r.relist[rs] = true
				return true
			}
			return false
		}
	}
	if f := r.byFile[p]; f != nil {
		r.dirty[f] = true
		return true
	}
	if strings.HasSuffix(p, "-shm") {
		return false // SQLite's shared memory: readers write it too
	}
	base := strings.TrimSuffix(strings.TrimSuffix(p, "-wal"), "-journal")
	if r.wholes[base] != nil {
		r.dirtyWhole[base] = true
		return true
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		return false
	}
	if rs.agent.InProjects {
		r.newFiles[p] = rs
	} else {
		r.relist[rs] = true
	}
	return true
}

// list lists a root (or, for InProjects agents, one file) and takes its
// sessions: new followed sessions and new files of known ones, and whole
// files.
func (r *watchRun) list(rs *rootState, path string) {
	items, err := rs.agent.Read(path, r.w.Read)
	if err != nil {
		if path == rs.dir {
			r.w.Log.Warn().Err(err).Str("agent", rs.agent.Name).Msg("cannot list the history")
		}
		return
	}
	wholeItems := map[string][]Item{}
	for _, it := range items {
		if it.follow == nil {
			wholeItems[it.Path] = append(wholeItems[it.Path], it)
			continue
		}
		key := rs.agent.Name + "\x00" + it.Path
		f := r.followers[key]
		if f == nil {
			f = &follower{key: key, root: rs, spec: it.follow}
			r.followers[key] = f
		}
		for _, tf := range it.follow.files {
			if r.byFile[tf.path] != nil {
				continue
			}
			f.files = append(f.files, &ffile{tailFile: tf, line: 1})
			r.byFile[tf.path] = f
			r.dirty[f] = true
			if !rs.agent.WatchTree {
				r.watchDir(rs, filepath.Dir(tf.path))
			}
		}
	}
	for p, its := range wholeItems {
		wh := r.wholes[p]
		if wh == nil {
			wh = &whole{root: rs}
			r.wholes[p] = wh
			r.dirtyWhole[p] = true
			if !rs.agent.WatchTree {
				r.watchDir(rs, filepath.Dir(p))
			}
		}
		wh.items = its
	}
}

// pass does what is due: listings, then followed sessions, then whole
// files. It returns when the next pass is due (a retry, or a whole file
// held back by the CPU bound; never when nothing waits) and an error only
// for what stops the Watcher (the key refused).
func (r *watchRun) pass(ctx context.Context) (time.Duration, error) {
	for rs := range r.relist {
		r.list(rs, rs.dir)
		delete(r.relist, rs)
	}
	for p, rs := range r.newFiles {
		r.list(rs, p)
		delete(r.newFiles, p)
	}
	failed := false
	fail := func(err error) error {
		if Unauthorized(err) {
			return fmt.Errorf("the server refused the API key: %w", err)
		}
		if ctx.Err() == nil {
			r.w.Log.Warn().Err(err).Msg("not acknowledged; will retry")
		}
		failed = true
		return nil
	}
	if err := r.followPass(ctx, fail); err != nil {
		return 0, err
	}
	wait, err := r.wholePass(ctx, fail)
	if err != nil {
		return 0, err
	}
	r.first = false
	if r.again {
		r.again, wait = false, 0
	}
	if failed {
		return min(wait, r.sched.NextBackOff()), nil
	}
	r.sched.Reset()
	return wait, nil
}

// followPass reads what was appended to the dirty followed sessions and
// sends what changed.
func (r *watchRun) followPass(ctx context.Context, fail func(error) error) error {
	var fresh []*follower
	keys := make([]*follower, 0, len(r.dirty))
	for f := range r.dirty {
		keys = append(keys, f)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].key < keys[j].key })
	for _, f := range keys {
		if ctx.Err() != nil {
			return nil
		}
		if f.reset {
			r.drop(f)
			f.reset = false
		}
		if f.t == nil && !f.fresh && r.unchanged(f) {
			delete(r.dirty, f) // nothing since the server acknowledged it
			continue
		}
		if f.t == nil {
			if r.first && r.noState(f) {
				fresh = append(fresh, f) // read lazily, through Upload
				continue
			}
			r.load(f)
		}
		r.grow(f)
		if f.reset {
			r.again = true // read again from the start, next pass
			continue
		}
		if f.fresh {
			fresh = append(fresh, f)
			continue
		}
		s := f.t.finish()
		if err := r.sendChanges(ctx, f, &s); err != nil {
			if err := fail(err); err != nil {
				return err
			}
			continue
		}
		r.settle(f)
	}
	if len(fresh) > 0 {
		return r.catchUp(ctx, fresh, fail)
	}
	return nil
}

// noState reports whether none of f's files is in the state: a session
// this watcher has never synced.
func (r *watchRun) noState(f *follower) bool {
	for _, ff := range f.files {
		if r.st.Files[ff.path] != nil {
			return false
		}
	}
	return true
}

// unchanged reports whether every file of f is as the state says the
// server last acknowledged it, all of it read: nothing to do.
func (r *watchRun) unchanged(f *follower) bool {
	for _, ff := range f.files {
		st := r.st.Files[ff.path]
		fi, err := os.Stat(ff.path)
		if st == nil || err != nil || idOf(fi) != st.id() || fi.Size() != st.Size || !fi.ModTime().Equal(st.MTime) {
			return false
		}
	}
	return true
}

// load makes f's reader and feeds it, quietly, the lines the server has
// acknowledged (by the state), taking what they make as acknowledged.
func (r *watchRun) load(f *follower) {
	f.t = f.spec.tail()
	f.acked = map[string]uint64{}
	baseline := false
	for _, ff := range f.files {
		ff.fed, ff.line, ff.rotated = 0, 1, false
		if err := ff.open(); err != nil {
			continue
		}
		if ff.mtime.After(f.used) {
			f.used = ff.mtime
		}
		st := r.st.Files[ff.path]
		switch {
		case st == nil:
		case st.id() == ff.id && ff.size >= st.Offset:
			if st.Offset > 0 {
				if f.t.file != nil {
					f.t.file(ff.tailFile)
				}
				n, lines, err := eachLine(io.NewSectionReader(ff.f, 0, st.Offset), 1, false, f.t.line)
				if err == nil {
					ff.fed, ff.line = n, 1+lines
				}
			}
			baseline = true
		default:
			// Replaced or truncated while no one watched: what the server
			// has of it is unknown.
			f.fresh = true
			delete(r.st.Files, ff.path)
			r.stateDirty = true
		}
	}
	f.t.problems() // reported when they were first read
	if !baseline {
		f.fresh = true
		return
	}
	s := f.t.finish()
	for i := range s.Messages {
		f.acked[s.Messages[i].ExternalID] = messageDigest(&s.Messages[i])
	}
	if len(s.Messages) > 0 {
		f.sessAcked = sessionDigest(&s)
	}
}

// open opens the file (when it is not open) and reads its size.
func (ff *ffile) open() error {
	if ff.f == nil {
		fh, err := os.Open(ff.path)
		if err != nil {
			return err
		}
		ff.f = fh
	}
	fi, err := ff.f.Stat()
	if err != nil {
		return err
	}
	ff.id, ff.size, ff.mtime, ff.seen = idOf(fi), fi.Size(), fi.ModTime(), true
	return nil
}

func (ff *ffile) close() {
	if ff.f != nil {
		ff.f.Close()
		ff.f = nil
	}
}

// grow feeds f's reader what was appended to its files since it last read
// them. A file renamed or removed is read to its end through the handle
// held on it; a truncated one marks f to be read again from the start.
func (r *watchRun) grow(f *follower) {
	for _, ff := range f.files {
		if err := ff.open(); err != nil {
			if errors.Is(err, fs.ErrNotExist) && r.st.Files[ff.path] != nil {
				ff.rotated = true // removed while its reader was dropped
			}
			continue // not there (yet)
		}
		if ff.mtime.After(f.used) {
			f.used = ff.mtime
		}
		if ff.size < ff.fed {
			r.w.Log.Info().Str("file", ff.path).Msg("truncated: reading it again from the start")
			f.reset, r.dirty[f] = true, true
			continue
		}
		if pi, err := os.Stat(ff.path); err != nil || idOf(pi) != ff.id || (ff.id == fileID{} && pi.Size() < ff.size) {
			ff.rotated = true
		}
		if ff.size > ff.fed {
			if f.t.file != nil {
				f.t.file(ff.tailFile)
			}
			n, lines, err := eachLine(io.NewSectionReader(ff.f, ff.fed, ff.size-ff.fed), ff.line, false, f.t.line)
			if err != nil {
				r.w.Log.Warn().Err(err).Str("file", ff.path).Msg("read")
			}
			ff.fed += n
			ff.line += lines
		}
	}
	for _, p := range f.t.problems() {
		r.w.Log.Warn().Str("at", p.String()).Msg("skipped malformed input")
	}
}

// sendChanges sends what of s differs from what the server acknowledged.
func (r *watchRun) sendChanges(ctx context.Context, f *follower, s *Session) error {
	if len(s.Messages) == 0 {
		return nil // an empty session is not sent (Upload skips them too)
	}
	var todo []Message
	digests := make([]uint64, 0)
	for i := range s.Messages {
		m := &s.Messages[i]
		if d := messageDigest(m); f.acked[m.ExternalID] != d {
			todo = append(todo, *m)
			digests = append(digests, d)
		}
	}
	sd := sessionDigest(s)
	if len(todo) == 0 && sd == f.sessAcked {
		return nil
	}
	f.pending = true
	if err := r.send(ctx, s, todo, sd != f.sessAcked); err != nil {
		return err
	}
	for i := range todo {
		f.acked[todo[i].ExternalID] = digests[i]
	}
	f.sessAcked = sd
	r.w.Log.Info().Str("agent", f.root.agent.Name).Str("session", s.ExternalID).Int("messages", len(todo)).Msg("synced")
	return nil
}

// send sends a session's fields (when sendSession) and the messages todo:
// as live single requests, or in date-keeping batches when there are many.
func (r *watchRun) send(ctx context.Context, s *Session, todo []Message, sendSession bool) error {
	sc := cloneSession(*s, todo)
	if r.w.Redact != nil {
		r.w.Redact(&sc)
	}
	u := &uploader{c: r.c, o: Options{}.withDefaults(), sum: &Summary{}}
	var res sent
	var err error
	if len(todo) > liveMessages && r.keepsDates(ctx) {
		res, err = u.sendBatches(ctx, &sc, sc.Messages, sendSession)
	} else {
		res, err = u.sendSingles(ctx, &sc, sc.Messages, sendSession)
	}
	for _, why := range res.refused {
		r.w.Log.Warn().Str("session", s.ExternalID).Str("refused", why).Msg("the server refused a message; not retried")
	}
	return err
}

// keepsDates asks the server once whether it keeps dates in batches.
func (r *watchRun) keepsDates(ctx context.Context) bool {
	if r.batches == nil {
		ok, err := r.c.keepsDatesInBatches(ctx)
		if err != nil {
			return false // ask again next time
		}
		r.batches = &ok
	}
	return *r.batches
}

// settle records that the server has everything f's reader has read: the
// files' offsets move up to what was fed.
func (r *watchRun) settle(f *follower) {
	f.pending, f.fresh = false, false
	delete(r.dirty, f)
	for _, ff := range f.files {
		if !ff.seen {
			continue
		}
		r.st.Files[ff.path] = &fileState{Agent: f.root.agent.Name, Dev: ff.id.dev, Inode: ff.id.ino,
			Offset: ff.fed, Line: ff.line, Size: ff.size, MTime: ff.mtime}
		r.stateDirty = true
	}
	// A file renamed away has been read to its end: its name now holds
	// another file (read from its start, compared with the server) or none.
	rotated := false
	for _, ff := range f.files {
		if ff.rotated {
			rotated = true
			delete(r.st.Files, ff.path)
			r.w.Log.Info().Str("file", ff.path).Msg("renamed or removed: read to its end")
		}
	}
	if rotated {
		r.drop(f)
		kept := f.files[:0]
		for _, ff := range f.files {
			if _, err := os.Stat(ff.path); err == nil {
				ff.rotated, ff.fed, ff.line = false, 0, 1
				kept = append(kept, ff)
			} else {
				delete(r.byFile, ff.path)
			}
		}
		f.files = kept
		if len(kept) == 0 {
			delete(r.followers, f.key)
			return
		}
		f.fresh, r.dirty[f], r.again = true, true, true
		return
	}
	if f.t != nil && time.Since(f.used) > r.w.IdleAfter {
		r.drop(f) // an old session read once: no need to keep it
	}
}

// drop frees f's reader and closes its files; the state can rebuild it.
func (r *watchRun) drop(f *follower) {
	for _, ff := range f.files {
		ff.close()
	}
	f.t, f.acked = nil, nil
}

// catchUp sends sessions the watcher has not synced before. In the first
// pass they go through Upload, read one at a time by its workers (a first
// watch of a long history is an import); later ones, new files, are looked
// up on the server and sent as live changes when the server lacks them.
func (r *watchRun) catchUp(ctx context.Context, fresh []*follower, fail func(error) error) error {
	var viaUpload []*follower
	if r.first {
		viaUpload = fresh
	} else {
		var list struct{ SessionIDs, DeletedIDs []string }
		if err := r.c.do(ctx, "GET", "/sync/sessions/list", nil, &list); err != nil {
			return fail(err)
		}
		on := map[string]bool{}
		for _, id := range append(list.SessionIDs, list.DeletedIDs...) {
			on[id] = true
		}
		for _, f := range fresh {
			if f.t == nil {
				r.load(f)
				r.grow(f)
			}
			s := f.t.finish()
			if on[s.ExternalID] {
				viaUpload = append(viaUpload, f)
				continue
			}
			f.acked = map[string]uint64{}
			f.sessAcked = 0
			if err := r.sendChanges(ctx, f, &s); err != nil {
				if err := fail(err); err != nil {
					return err
				}
				continue
			}
			r.settle(f)
		}
	}
	if len(viaUpload) == 0 {
		return nil
	}
	// Each item reads its session in an Upload worker (a follower is read
	// by one worker only, and touches nothing shared): its digests wait for
	// done, its reader is dropped at once unless it is being written, so a
	// first watch of a long history holds a few sessions at a time, as an
	// import does.
	var mu sync.Mutex
	ok := map[*follower]bool{}
	byPath := map[string]*follower{}
	items := make([]Item, len(viaUpload))
	for i, f := range viaUpload {
		byPath[f.key] = f
		items[i] = Item{Path: f.key, read: func() (Session, []Problem, error) {
			r.readAll(f)
			s := f.t.finish()
			f.candidate = make(map[string]uint64, len(s.Messages))
			for i := range s.Messages {
				f.candidate[s.Messages[i].ExternalID] = messageDigest(&s.Messages[i])
			}
			f.sessCandidate = 0
			if len(s.Messages) > 0 {
				f.sessCandidate = sessionDigest(&s)
			}
			for _, ff := range f.files {
				ff.close()
			}
			if time.Since(f.used) > r.w.IdleAfter {
				f.t = nil
			}
			return s, nil, nil
		}}
	}
	opts := Options{Redact: r.w.Redact, done: func(it Item, done bool) {
		mu.Lock()
		ok[byPath[it.Path]] = done
		mu.Unlock()
	}}
	r.w.Log.Info().Int("sessions", len(items)).Msg("comparing the sessions new to this watcher with the server")
	sum, err := Upload(ctx, r.c, items, opts)
	if sum != nil {
		r.w.Log.Info().Int("imported", sum.Sessions.Imported).Int("updated", sum.Sessions.Updated).
			Int("unchanged", sum.Sessions.Unchanged).Int("messages", sum.Messages.Imported).Msg("caught up")
	}
	for _, f := range viaUpload {
		if !ok[f] {
			f.pending, f.t, f.candidate = true, nil, nil
			continue
		}
		f.acked, f.sessAcked, f.candidate = f.candidate, f.sessCandidate, nil
		if f.t == nil {
			f.acked = nil
		}
		r.settle(f)
	}
	if err != nil {
		return fail(err)
	}
	if len(ok) < len(items) {
		return fail(errors.New("the upload stopped before every session was sent"))
	}
	return nil
}

// readAll makes f's reader and feeds it its files from the start, to where
// they end now. It touches only f (catch-up reads run in Upload's workers).
func (r *watchRun) readAll(f *follower) {
	f.t = f.spec.tail()
	for _, ff := range f.files {
		ff.fed, ff.line, ff.rotated = 0, 1, false
		if err := ff.open(); err != nil {
			continue
		}
		if ff.mtime.After(f.used) {
			f.used = ff.mtime
		}
		if ff.size == 0 {
			continue
		}
		if f.t.file != nil {
			f.t.file(ff.tailFile)
		}
		n, lines, err := eachLine(io.NewSectionReader(ff.f, 0, ff.size), 1, false, f.t.line)
		if err != nil {
			r.w.Log.Warn().Err(err).Str("file", ff.path).Msg("read")
		}
		ff.fed, ff.line = n, 1+lines
	}
	for _, p := range f.t.problems() {
		r.w.Log.Warn().Str("at", p.String()).Msg("skipped malformed input")
	}
}

// stamp describes a whole file as it is now: size and time, with its
// SQLite WAL's; "" when it is gone.
func stamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	s := fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
	if wi, err := os.Stat(path + "-wal"); err == nil {
		s += fmt.Sprintf(",wal %d@%d", wi.Size(), wi.ModTime().UnixNano())
	}
	return s
}

// wholePass re-reads the whole files that changed and uploads their
// sessions whose digest changed. A root's files are re-read at most once
// every four times as long as its last pass took.
func (r *watchRun) wholePass(ctx context.Context, fail func(error) error) (time.Duration, error) {
	wait := never
	now := time.Now()
	var paths []string
	for p := range r.dirtyWhole {
		wh := r.wholes[p]
		if wh == nil {
			delete(r.dirtyWhole, p)
			continue
		}
		if now.Before(wh.root.wholeNext) {
			wait = min(wait, wh.root.wholeNext.Sub(now))
			continue
		}
		paths = append(paths, p)
	}
	if len(paths) == 0 {
		return wait, nil
	}
	sort.Strings(paths)
	start := time.Now()
	relisted := map[*rootState]bool{}
	type pending struct {
		path, id, digest string
		ok               bool
	}
	var items []Item
	var pend []*pending
	stamps := map[string]string{}
	for _, p := range paths {
		delete(r.dirtyWhole, p)
		wh := r.wholes[p]
		sp := stamp(p)
		ss := r.st.Snapshots[p]
		if sp == "" {
			delete(r.wholes, p)
			delete(r.st.Snapshots, p)
			r.stateDirty = true
			continue
		}
		if ss != nil && ss.Stamp == sp {
			continue
		}
		// The sessions in it now: a database may have new ones.
		if wh.root.agent.InProjects {
			r.list(wh.root, p)
		} else if !relisted[wh.root] {
			relisted[wh.root] = true
			r.list(wh.root, wh.root.dir)
		}
		if ss == nil {
			ss = &snapshotState{Agent: wh.root.agent.Name, Sessions: map[string]string{}}
			r.st.Snapshots[p] = ss
		}
		stamps[p] = sp
		// Read each session once to find the changed ones (one in memory at
		// a time); Upload reads those again and sends what the server lacks.
		for _, it := range r.wholes[p].items {
			s, _, err := it.Read()
			if err != nil {
				r.w.Log.Warn().Err(err).Str("file", p).Msg("cannot read a session")
				continue
			}
			if ss.Sessions[s.ExternalID] == wholeDigest(&s) {
				continue
			}
			pd := &pending{path: p}
			pend = append(pend, pd)
			items = append(items, Item{Path: fmt.Sprintf("%s#%d", p, len(items)), read: func() (Session, []Problem, error) {
				s, probs, err := it.Read()
				if err == nil {
					pd.id, pd.digest = s.ExternalID, wholeDigest(&s)
				}
				return s, probs, err
			}})
		}
	}
	if len(items) > 0 {
		var mu sync.Mutex
		index := map[string]*pending{}
		for i, it := range items {
			index[it.Path] = pend[i]
		}
		sum, err := Upload(ctx, r.c, items, Options{Redact: r.w.Redact, done: func(it Item, done bool) {
			mu.Lock()
			index[it.Path].ok = done
			mu.Unlock()
		}})
		if sum != nil {
			for _, pr := range sum.Problems {
				r.w.Log.Debug().Str("at", pr.String()).Msg("skipped malformed input")
			}
			if sum.Messages.Imported > 0 || sum.Sessions.Failed > 0 {
				r.w.Log.Info().Int("sessions", len(items)).Int("messages", sum.Messages.Imported).Msg("synced re-read files")
			}
		}
		if err != nil {
			if ferr := fail(err); ferr != nil {
				return 0, ferr
			}
		}
	}
	allOK := map[string]bool{}
	for p := range stamps {
		allOK[p] = true
	}
	for _, pd := range pend {
		if pd.ok && pd.id != "" {
			r.st.Snapshots[pd.path].Sessions[pd.id] = pd.digest
			r.stateDirty = true
		} else if !pd.ok {
			allOK[pd.path] = false
			r.dirtyWhole[pd.path] = true
		}
	}
	for p, good := range allOK {
		if good {
			r.st.Snapshots[p].Stamp = stamps[p]
			r.stateDirty = true
		}
	}
	took := time.Since(start)
	for _, p := range paths {
		if wh := r.wholes[p]; wh != nil {
			wh.root.wholeNext = time.Now().Add(max(4*took, time.Second))
		}
	}
	for _, good := range allOK {
		if !good {
			if ferr := fail(errors.New("some re-read sessions were not acknowledged")); ferr != nil {
				return 0, ferr
			}
			break
		}
	}
	return wait, nil
}

// sweep drops the readers of sessions idle for IdleAfter.
func (r *watchRun) sweep() {
	for _, f := range r.followers {
		if f.t != nil && !f.pending && !r.dirty[f] && time.Since(f.used) > r.w.IdleAfter {
			r.drop(f)
		}
	}
	r.saveState(false)
}

// saveState writes the state when it changed, at most once a second
// unless forced.
func (r *watchRun) saveState(force bool) error {
	if !r.stateDirty || (!force && time.Since(r.saved) < time.Second) {
		return nil
	}
	if err := r.st.save(r.w.State); err != nil {
		return err
	}
	r.stateDirty, r.saved = false, time.Now()
	return nil
}

func (r *watchRun) closeAll() {
	for _, f := range r.followers {
		for _, ff := range f.files {
			ff.close()
		}
	}
}
