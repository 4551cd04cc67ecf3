package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/progress"
)

// Options configure Upload. The zero value takes the defaults.
type Options struct {
	Concurrency   int       // sessions uploaded at once; 0 = 4
	BatchMessages int       // messages per /sync/batch when the server keeps dates in batches; 0 = 500
	BatchBytes    int       // largest /sync/batch body the importer builds; 0 = 4 MiB
	Progress      io.Writer // progress bar over sessions; nil = none
	Label         string    // the bar's label; "" = "importing"
	// Singles forces one request per message even when the server offers
	// date-keeping batches.
	Singles bool
	// Redact, when set, is applied to every session as soon as it is read,
	// before anything of it is compared or sent (Redaction).
	Redact func(*Session)
	// done, when set, is told of each item whether all of it is on the
	// server (sent or there already; a message the server refuses counts as
	// done: sending it again would not change that). The Watcher moves its
	// offsets by it.
	done func(it Item, ok bool)
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.BatchMessages <= 0 {
		o.BatchMessages = 500
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 4 << 20
	}
	if o.Label == "" {
		o.Label = "importing"
	}
	return o
}

// Counts tally sessions or messages by outcome. A session is Imported when it
// was new, Updated when it existed and anything about it was sent, Unchanged
// when the server already had all of it, Skipped when there was nothing to
// send (unreadable, or no messages), Failed when the server refused part of
// it or could not be reached after the retries. A message is Imported when
// sent, Unchanged when the server already had it. A session is Deleted when
// its owner deleted it on the server, which keeps a tombstone of it and drops
// its syncs until sync is allowed again there: it is skipped, not sent.
type Counts struct {
	Imported, Updated, Unchanged, Skipped, Failed int
	Deleted                                       int
}

// Summary is what an import did.
type Summary struct {
	Sessions Counts
	Messages Counts
	// Problems is input that was malformed, reported and skipped.
	Problems []Problem
	// Failures says, per failed session or message, why.
	Failures []string
	// Batched: messages went in date-keeping /sync/batch requests rather than
	// one request each.
	Batched bool
	Elapsed time.Duration
}

// Upload sends the sessions of items to the server behind c. Malformed input
// and per-session failures are recorded in the summary; the error is for what
// stops the whole import: the server refusing the key, not answering, or ctx
// ending. Upload is idempotent: it sends only what the server lacks.
func Upload(ctx context.Context, c *Client, items []Item, opts Options) (*Summary, error) {
	o := opts.withDefaults()
	start := time.Now()
	existing, err := c.sessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the sessions already on the server: %w", err)
	}
	deleted, err := c.deletedIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the sessions deleted on the server: %w", err)
	}
	u := &uploader{c: c, o: o, existing: existing, deleted: deleted, sum: &Summary{}}
	if !o.Singles {
		if ok, err := c.keepsDatesInBatches(ctx); err == nil {
			u.sum.Batched = ok
		} else if Unauthorized(err) {
			return nil, err
		}
	}
	bar := progress.New(o.Progress, o.Label, len(items))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan Item)
	var wg sync.WaitGroup
	for range min(o.Concurrency, max(1, len(items))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range jobs {
				ok, err := u.session(ctx, it)
				if err != nil {
					cancel(err)
				}
				if o.done != nil {
					o.done(it, ok)
				}
				bar.Add(1)
			}
		}()
	}
feed:
	for _, it := range items {
		select {
		case jobs <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	bar.Done()
	u.sum.Elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return u.sum, err
	}
	return u.sum, nil
}

type uploader struct {
	c        *Client
	o        Options
	existing map[string]api.Session // read-only after Upload starts the workers
	deleted  map[string]bool        // external ids deleted on the server; read-only too
	mu       sync.Mutex
	sum      *Summary
}

func (u *uploader) record(f func(s *Summary)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f(u.sum)
}

// fatal reports errors that would fail every other session too: the key
// refused, the import cancelled, or the server unreachable after the retries
// (a 5xx may be one bad session; a refused connection is the server).
func fatal(err error) bool {
	var ue *url.Error
	return Unauthorized(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &ue)
}

// session reads and uploads one item and says whether all of it is on the
// server; it returns only fatal errors.
func (u *uploader) session(ctx context.Context, it Item) (ok bool, _ error) {
	if ctx.Err() != nil {
		return false, nil
	}
	s, probs, err := it.Read()
	u.record(func(sum *Summary) { sum.Problems = append(sum.Problems, probs...) })
	if err != nil {
		u.record(func(sum *Summary) {
			sum.Problems = append(sum.Problems, Problem{Path: it.Path, Err: "skipped session: " + err.Error()})
			sum.Sessions.Skipped++
		})
		return true, nil
	}
	if u.deleted[s.ExternalID] {
		u.record(func(sum *Summary) { sum.Sessions.Deleted++ })
		return true, nil
	}
	if len(s.Messages) == 0 {
		u.record(func(sum *Summary) { sum.Sessions.Skipped++ })
		return true, nil
	}
	if u.o.Redact != nil {
		u.o.Redact(&s)
	}
	fail := func(what string, err error) (bool, error) {
		u.record(func(sum *Summary) {
			sum.Failures = append(sum.Failures, fmt.Sprintf("%s (%s): %s: %v", s.ExternalID, it.Path, what, err))
		})
		if fatal(err) {
			return false, err
		}
		return false, nil
	}

	remote, known := u.existing[s.ExternalID]
	todo := s.Messages
	sendSession := !known || sessionChanged(remote, &s)
	if known {
		stored, err := u.c.messages(ctx, remote.ID)
		if err != nil {
			u.record(func(sum *Summary) { sum.Sessions.Failed++; sum.Messages.Failed += len(s.Messages) })
			return fail("read the stored session", err)
		}
		todo = missing(s.Messages, stored)
	}
	if !sendSession && len(todo) == 0 {
		u.record(func(sum *Summary) { sum.Sessions.Unchanged++; sum.Messages.Unchanged += len(s.Messages) })
		return true, nil
	}
	var res sent
	if u.sum.Batched {
		res, err = u.sendBatches(ctx, &s, todo, sendSession)
	} else {
		res, err = u.sendSingles(ctx, &s, todo, sendSession)
	}
	u.record(func(sum *Summary) {
		sum.Messages.Imported += res.imported
		sum.Messages.Unchanged += len(s.Messages) - len(todo) + res.unchanged
		sum.Messages.Failed += len(todo) - res.imported - res.unchanged
		for _, f := range res.refused {
			sum.Failures = append(sum.Failures, fmt.Sprintf("%s (%s): %s", s.ExternalID, it.Path, f))
		}
		switch {
		case err != nil || len(res.refused) > 0:
			sum.Sessions.Failed++
		case !known:
			sum.Sessions.Imported++
		default:
			sum.Sessions.Updated++
		}
	})
	if err != nil {
		return fail("upload stopped", err)
	}
	return true, nil
}

// sent is what one session's upload achieved.
type sent struct {
	imported, unchanged int
	refused             []string // messages the server rejected, with its reason
}

// sendSingles posts the session (when needed) and then each message in order,
// one request each: the order of requests is the stored order. A message the
// server rejects is recorded and skipped; an error that retries could not
// overcome stops the session.
func (u *uploader) sendSingles(ctx context.Context, s *Session, todo []Message, sendSession bool) (sent, error) {
	var res sent
	if sendSession {
		if _, err := u.c.postSession(ctx, newSessionPayload(s)); err != nil {
			return res, fmt.Errorf("session: %w", err)
		}
	}
	for i := range todo {
		p, err := newMessagePayload(s, &todo[i])
		if err != nil {
			return res, err
		}
		body, err := json.Marshal(p)
		if err != nil {
			return res, err
		}
		err = u.c.postMessage(ctx, body)
		var se *StatusError
		switch {
		case err == nil:
			res.imported++
		case errors.As(err, &se) && !retryable(se.Status) && se.Status != 401:
			res.refused = append(res.refused, fmt.Sprintf("message %s refused: %d %s", todo[i].ExternalID, se.Status, se.Message))
		default:
			return res, fmt.Errorf("message %s: %w", todo[i].ExternalID, err)
		}
	}
	return res, nil
}

// sendBatches sends the session (when needed) and the messages in
// /sync/batch?keepDates=1 requests of at most BatchMessages entries and about
// BatchBytes bytes, in order.
func (u *uploader) sendBatches(ctx context.Context, s *Session, todo []Message, sendSession bool) (sent, error) {
	var res sent
	var sessions []byte
	if sendSession {
		b, err := json.Marshal(newSessionPayload(s))
		if err != nil {
			return res, err
		}
		sessions = b
	}
	var batch [][]byte
	size := 0
	flush := func() error {
		if len(batch) == 0 && sessions == nil {
			return nil
		}
		var buf bytes.Buffer
		buf.WriteString(`{"sessions":[`)
		buf.Write(sessions)
		buf.WriteString(`],"messages":[`)
		buf.Write(bytes.Join(batch, []byte(",")))
		buf.WriteString(`]}`)
		br, err := u.c.postBatch(ctx, buf.Bytes())
		if err != nil {
			return err
		}
		if !br.KeepDates {
			return errors.New("the server stopped keeping dates in batches (was it downgraded?); re-run the import")
		}
		res.imported += br.Messages.Inserted + br.Messages.Updated
		res.unchanged += len(batch) - br.Messages.Inserted - br.Messages.Updated - countMessageErrors(br.Errors)
		for _, e := range br.Errors {
			res.refused = append(res.refused, "refused: "+e)
		}
		batch, size, sessions = batch[:0], 0, nil
		return nil
	}
	for i := range todo {
		p, err := newMessagePayload(s, &todo[i])
		if err != nil {
			return res, err
		}
		b, err := json.Marshal(p)
		if err != nil {
			return res, err
		}
		if len(batch) > 0 && (len(batch) >= u.o.BatchMessages || size+len(b) > u.o.BatchBytes) {
			if err := flush(); err != nil {
				return res, err
			}
		}
		batch = append(batch, b)
		size += len(b) + 1
	}
	return res, flush()
}

func countMessageErrors(errs []string) int {
	n := 0
	for _, e := range errs {
		if strings.HasPrefix(e, "messages[") {
			n++
		}
	}
	return n
}

// sessionChanged reports whether the stored session differs from what the
// import would send.
func sessionChanged(r api.Session, s *Session) bool {
	str := func(stored, local string) bool { return local != "" && stored != local }
	return r.Source != s.Source || str(r.Title, s.Title) || str(r.ProjectPath, s.ProjectPath) ||
		str(r.ProjectName, s.ProjectName) || str(r.GitBranch, s.GitBranch) || str(r.Model, s.Model) || str(r.Provider, s.Provider) ||
		r.PromptTokens != s.PromptTokens || r.CompletionTokens != s.CompletionTokens ||
		math.Abs(r.Cost-s.Cost) > 1e-9 || (s.DurationMs > 0 && r.DurationMs != s.DurationMs)
}

// missing returns the local messages the server does not have: not stored
// under their external id and, for user messages, not stored with the same
// text either (the Claude Code plugin names user prompts by the time it sent
// them, so an import after live sync finds them by text). A stored message
// with fewer tool results than the local one is sent again (re-sending
// replaces its parts): its tool call was stored before the result was
// written, by an earlier import of a live session or by the plugin. So is
// one whose stored text the local text continues (it was stored while the
// assistant was still writing it: Gemini rewrites a message under its id as
// it streams).
func missing(local []Message, stored []api.Message) []Message {
	localIDs := make(map[string]bool, len(local))
	for _, m := range local {
		localIDs[m.ExternalID] = true
	}
	results := make(map[string]int, len(stored))  // stored id -> its tool-result parts
	texts := make(map[string]string, len(stored)) // stored id -> its text
	userTexts := map[string]int{}                 // stored user prompts no local message claims by id
	for _, m := range stored {
		results[m.ExternalID] = storedResults(m)
		texts[m.ExternalID] = storedText(m)
		if m.Role == "user" && !localIDs[m.ExternalID] {
			userTexts[strings.TrimSpace(storedText(m))]++
		}
	}
	var out []Message
	for _, m := range local {
		if n, ok := results[m.ExternalID]; ok {
			if m.toolResults() > n || grew(texts[m.ExternalID], m.Text()) {
				out = append(out, m)
			}
			continue
		}
		if m.Role == "user" {
			if t := strings.TrimSpace(m.Text()); userTexts[t] > 0 {
				userTexts[t]--
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// grew reports whether local continues the stored text: what a message
// stored while it was being written looks like once it is complete.
func grew(stored, local string) bool {
	return stored != "" && len(local) > len(stored) && strings.HasPrefix(local, stored)
}
