package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/redact"
)

// redactMark is the kv meta key of a stored-records redaction under way:
// the SessionRef of the last session it finished, so an interrupted run
// resumes after it (as reindex's mark does).
const redactMark = "redact.mark"

// redactStep is how many sessions one step of RedactStored reads.
const redactStep = 64

// RedactStoredOptions configure RedactStored.
type RedactStoredOptions struct {
	// DryRun counts what would be redacted and writes nothing.
	DryRun bool
	// Progress, when set, is called with (done, total) sessions.
	Progress func(done, total int)
}

// RedactStoredResult is what RedactStored did (or, with DryRun, would do).
type RedactStoredResult struct {
	Sessions int           `json:"sessions"` // sessions with text redacted
	Messages int           `json:"messages"` // messages rewritten
	Counts   redact.Counts `json:"counts"`   // secrets by rule
	Resumed  bool          `json:"resumed"`  // it went on from an interrupted run
}

// RedactStored applies the service's redactor to the records already stored
// (written before redaction was on, or before a rule was added): session
// titles, project paths and names, eval notes and expected output, and
// every message's text and parts. A changed session is put on the outbox,
// so the pipeline re-indexes it (the old text leaves the index) and
// re-embeds the windows whose text changed. Counts are added to each
// user's redaction totals in the transaction that rewrites the records.
//
// Sessions are read outside the commit queue (a View per step) and only
// those holding something to redact are rewritten, each re-read inside the
// write so a sync arriving meanwhile is redacted too, never overwritten. An
// interrupted run resumes after the last step it finished.
func (s *Service) RedactStored(ctx context.Context, o RedactStoredOptions) (RedactStoredResult, error) {
	var res RedactStoredResult
	if s.redactor == nil {
		return res, fmt.Errorf("redaction is off (HINDSIGHT_REDACT=off): nothing to redact with")
	}
	var refs []string
	var mark string
	err := s.store.View(ctx, func(tx *kv.Tx) error {
		users, err := tx.Users()
		if err != nil {
			return err
		}
		for _, u := range users {
			if err := tx.Sessions(u.ID, func(ss kv.Session) error {
				refs = append(refs, SessionRef(u.ID, ss.ID))
				return nil
			}); err != nil {
				return err
			}
		}
		mark = string(tx.Meta(redactMark))
		return nil
	})
	if err != nil {
		return res, err
	}
	slices.Sort(refs)
	first := 0
	if mark != "" && !o.DryRun {
		first, _ = slices.BinarySearch(refs, mark)
		if first < len(refs) && refs[first] == mark {
			first++
		}
		res.Resumed = true
	}
	progress := func(done int) {
		if o.Progress != nil {
			o.Progress(done, len(refs))
		}
	}
	progress(first)
	for i := first; i < len(refs); i += redactStep {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		step := refs[i:min(i+redactStep, len(refs))]
		todo, err := s.redactCandidates(ctx, step)
		if err != nil {
			return res, err
		}
		if o.DryRun {
			for _, c := range todo {
				res.Sessions++
				res.Messages += len(c.seqs)
				res.Counts.Add(c.counts)
			}
			progress(i + len(step))
			continue
		}
		var stepRes RedactStoredResult
		err = s.store.Commit(ctx, func(tx *kv.Tx) error {
			stepRes = RedactStoredResult{} // Commit may run this more than once
			for _, c := range todo {
				if err := s.rewrite(tx, c, &stepRes); err != nil {
					return err
				}
			}
			return tx.SetMeta(redactMark, []byte(step[len(step)-1]))
		})
		if err != nil {
			return res, fmt.Errorf("redact stored sessions: %w", err)
		}
		res.Sessions += stepRes.Sessions
		res.Messages += stepRes.Messages
		res.Counts.Add(stepRes.Counts)
		if stepRes.Sessions > 0 {
			s.notify()
		}
		progress(i + len(step))
	}
	if !o.DryRun {
		if err := s.store.Commit(ctx, func(tx *kv.Tx) error { return tx.SetMeta(redactMark, nil) }); err != nil {
			return res, err
		}
	}
	return res, nil
}

// candidate is a stored session with something to redact: in its own
// record (session true) and in its messages seqs.
type candidate struct {
	userID, sessionID string
	session           bool
	seqs              []uint64
	counts            redact.Counts // what a dry run reports
}

// redactCandidates reads the sessions refs and returns those holding
// something to redact.
func (s *Service) redactCandidates(ctx context.Context, refs []string) ([]candidate, error) {
	var out []candidate
	err := s.store.View(ctx, func(tx *kv.Tx) error {
		for _, ref := range refs {
			uid, sid, _ := strings.Cut(ref, "\x00")
			ss, err := tx.Session(uid, sid)
			if err != nil {
				continue // deleted since it was listed
			}
			c := candidate{userID: uid, sessionID: sid}
			if _, n := s.redactSessionRecord(&ss); n != nil {
				c.session = true
				c.counts.Add(n)
			}
			err = tx.Messages(uid, sid, func(m kv.Message) error {
				if n := RedactMessage(s.redactor, &m); n != nil {
					c.seqs = append(c.seqs, m.Seq)
					c.counts.Add(n)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if c.session || len(c.seqs) > 0 {
				out = append(out, c)
			}
		}
		return nil
	})
	return out, err
}

// rewrite redacts candidate c as it is stored now, inside tx.
func (s *Service) rewrite(tx *kv.Tx, c candidate, res *RedactStoredResult) error {
	ss, err := tx.Session(c.userID, c.sessionID)
	if err != nil {
		return nil // deleted meanwhile
	}
	var found redact.Counts
	changed, n := s.redactSessionRecord(&ss)
	found.Add(n)
	for _, seq := range c.seqs {
		m, err := tx.Message(c.userID, c.sessionID, seq)
		if err != nil {
			continue
		}
		n := RedactMessage(s.redactor, &m)
		if n == nil {
			continue
		}
		if err := tx.PutMessage(&m); err != nil {
			return err
		}
		found.Add(n)
		res.Messages++
		changed = true
	}
	if !changed {
		return nil
	}
	// The session keeps its updatedAt: redaction is not activity, and the
	// listing order stays as it was.
	if err := tx.PutSession(&ss, ss.UpdatedAt); err != nil {
		return err
	}
	if err := tx.MarkDirty(c.userID, c.sessionID); err != nil {
		return err
	}
	if err := tx.AddRedactions(c.userID, found); err != nil {
		return err
	}
	res.Sessions++
	res.Counts.Add(found)
	return nil
}

// redactSessionRecord redacts a stored session's texts in place: its
// title, project path and name, and its eval notes and expected output.
func (s *Service) redactSessionRecord(ss *kv.Session) (bool, redact.Counts) {
	var found redact.Counts
	for _, p := range []*string{&ss.Title, &ss.ProjectPath, &ss.ProjectName, &ss.Notes, &ss.ExpectedOutput} {
		out, n := s.redactor.String(*p)
		if n != nil {
			*p = out
			found.Add(n)
		}
	}
	return found != nil, found
}

// RedactMessage redacts a stored message's text and parts in place and
// returns what it removed (nil: nothing).
func RedactMessage(r *redact.Redactor, m *kv.Message) redact.Counts {
	var found redact.Counts
	if m.TextContent != nil {
		out, n := r.String(*m.TextContent)
		if n != nil {
			m.TextContent = &out
			found.Add(n)
		}
	}
	for i := range m.Parts {
		found.Add(RedactPart(r, &m.Parts[i]))
	}
	return found
}
