// Package evals is eval labelling: which labels a session may carry, how a
// change to them applies, and which sessions the Evals view holds. The REST
// API (PATCH /api/sessions/eval, /api/evals, /api/export/evals) and the
// dashboard's Evals pages both go through it, so the two front ends cannot
// disagree on a limit or on when a status is set (decisions.md, Eval
// labelling and datasets).
package evals

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/redact"
)

// Statuses are the eval statuses, in the order pages offer them.
var Statuses = []string{kv.EvalGolden, kv.EvalCorrect, kv.EvalIncorrect, kv.EvalNeedsReview}

// Limits of one labelling request.
const (
	MaxIDs       = 500     // sessions named in one request (the /api/sessions page maximum)
	MaxTags      = 50      // tags per session
	MaxTagChars  = 100     // characters (not bytes) per tag
	MaxTextBytes = 1 << 20 // evalNotes and expectedOutput each
)

// InvalidError is a labelling request the caller must fix; its message names
// the field.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// NotFoundError is an id that is not one of the user's sessions (it does not
// exist, was deleted, or is somebody else's: the message does not say which).
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return "no session with id " + strconv.Quote(e.ID) + " in this account; nothing was changed"
}

func (e *NotFoundError) Unwrap() error { return kv.ErrNotFound }

// Patch is a change to sessions' eval labels. A nil field leaves the stored
// value alone; an empty one clears it.
type Patch struct {
	Ready          *bool
	Status         *string
	Notes          *string
	Tags           *[]string
	ExpectedOutput *string
}

// Validate checks p against the limits and normalises its tags (trimmed,
// duplicates dropped, in order). It is the one check both front ends make
// before Label.
func (p *Patch) Validate() error {
	if p.Status != nil && !slices.Contains(Statuses, *p.Status) {
		return invalid("evalStatus must be one of %s", strings.Join(Statuses, ", "))
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"evalNotes", p.Notes}, {"expectedOutput", p.ExpectedOutput}} {
		if f.v != nil && len(*f.v) > MaxTextBytes {
			return invalid("%s is %d bytes; the limit is %d MiB", f.name, len(*f.v), MaxTextBytes>>20)
		}
	}
	if p.Tags != nil {
		tags, err := cleanTags(*p.Tags)
		if err != nil {
			return err
		}
		p.Tags = &tags
	}
	if p.Ready == nil && p.Status == nil && p.Notes == nil && p.Tags == nil && p.ExpectedOutput == nil {
		return invalid("nothing to change: send at least one of evalReady, evalStatus, evalNotes, evalTags, expectedOutput")
	}
	return nil
}

// cleanTags trims every tag and drops repeats. A blank tag, one longer than
// MaxTagChars, one holding a comma (the tags filter's separator) or more than
// MaxTags distinct tags are refused.
func cleanTags(tags []string) ([]string, error) {
	clean := make([]string, 0, len(tags))
	for i, t := range tags {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			return nil, invalid("evalTags[%d] is empty", i)
		case utf8.RuneCountInString(t) > MaxTagChars:
			return nil, invalid("evalTags[%d] is longer than %d characters", i, MaxTagChars)
		case strings.Contains(t, ","):
			return nil, invalid("evalTags[%d] holds a comma, which the tags filter uses as a separator", i)
		}
		if !slices.Contains(clean, t) {
			clean = append(clean, t)
		}
	}
	if len(clean) > MaxTags {
		return nil, invalid("at most %d evalTags, got %d", MaxTags, len(clean))
	}
	return clean, nil
}

// CheckIDs drops repeated ids and refuses an empty list, a blank id or more
// than MaxIDs.
func CheckIDs(ids []string) ([]string, error) {
	ids = Dedupe(ids)
	switch {
	case len(ids) == 0:
		return nil, invalid("ids is empty: name at least one session")
	case len(ids) > MaxIDs:
		return nil, invalid("at most %d ids per request, got %d: split the request", MaxIDs, len(ids))
	case slices.Contains(ids, ""):
		return nil, invalid("ids holds an empty string")
	}
	return ids, nil
}

// Dedupe drops repeats from list in place, keeping the first of each.
func Dedupe(list []string) []string {
	seen := make(map[string]bool, len(list))
	out := list[:0]
	for _, v := range list {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// Apply returns e with p applied at time now (ms). An eval-ready session
// always has a status: one without gets needs_review (a status kept from an
// earlier review stays). reviewedAt becomes now when the status or the notes
// change.
func (p Patch) Apply(e kv.Eval, now int64) kv.Eval {
	old := e
	if p.Ready != nil {
		e.Ready = *p.Ready
	}
	if p.Status != nil {
		e.Status = *p.Status
	}
	if e.Ready && e.Status == "" {
		e.Status = kv.EvalNeedsReview
	}
	if p.Notes != nil {
		e.Notes = *p.Notes
	}
	if p.Tags != nil {
		e.Tags = nil
		if len(*p.Tags) > 0 {
			e.Tags = slices.Clone(*p.Tags)
		}
	}
	if p.ExpectedOutput != nil {
		e.ExpectedOutput = *p.ExpectedOutput
	}
	if e.Status != old.Status || e.Notes != old.Notes {
		e.ReviewedAt = now
	}
	return e
}

func sameEval(a, b kv.Eval) bool {
	return a.Ready == b.Ready && a.Status == b.Status && a.Notes == b.Notes && slices.Equal(a.Tags, b.Tags) &&
		a.ExpectedOutput == b.ExpectedOutput && a.ReviewedAt == b.ReviewedAt
}

// Label applies p (validated) to the user's sessions ids inside tx. Every id
// must be the user's: otherwise it returns a *NotFoundError before writing
// anything, and the caller's transaction rolls back. Labels are not session
// content, so updatedAt, the session order and the index are left alone. It
// returns the sessions as stored, in ids order, and how many changed.
//
// Notes and expected output are typed by people, who paste secrets as
// readily into them as into a prompt: red (nil: none) redacts them before
// they are stored, and what it removed is counted in tx when a session
// changes.
func Label(tx *kv.Tx, userID string, ids []string, p Patch, now int64, red *redact.Redactor) ([]kv.Session, int, error) {
	var found redact.Counts
	if red != nil {
		for _, f := range []**string{&p.Notes, &p.ExpectedOutput} {
			if *f == nil {
				continue
			}
			out, c := red.String(**f)
			if c != nil {
				*f = &out
				found.Add(c)
			}
		}
	}
	sessions := make([]kv.Session, 0, len(ids))
	for _, id := range ids {
		s, err := tx.Session(userID, id)
		if errors.Is(err, kv.ErrNotFound) {
			return nil, 0, &NotFoundError{ID: id}
		} else if err != nil {
			return nil, 0, err
		}
		sessions = append(sessions, s)
	}
	changed := 0
	for i, s := range sessions {
		e := p.Apply(s.Eval, now)
		if sameEval(e, s.Eval) {
			continue
		}
		stored, err := tx.PutSessionEval(userID, s.ID, e)
		if err != nil {
			return nil, 0, fmt.Errorf("label session %s: %w", s.ID, err)
		}
		sessions[i] = stored
		changed++
	}
	if changed > 0 && len(found) > 0 {
		if err := tx.AddRedactions(userID, found); err != nil {
			return nil, 0, err
		}
	}
	return sessions, changed, nil
}

// Filter selects sessions of the Evals view. Every condition set must hold:
// the status is any of Statuses, the session carries all of Tags, source and
// model match exactly, and createdAt lies in [From, To].
type Filter struct {
	Statuses []string
	Tags     []string
	Source   string
	Model    string
	From, To int64 // ms, inclusive; To 0 means no upper bound
}

// Check refuses a status that is not an eval status and a date range that
// ends before it starts.
func (f Filter) Check() error {
	for _, st := range f.Statuses {
		if !slices.Contains(Statuses, st) {
			return invalid("status %q is not an eval status: use %s (comma-separated for several)", st, strings.Join(Statuses, ", "))
		}
	}
	if f.To != 0 && f.From > f.To {
		return invalid("date_from is after date_to")
	}
	return nil
}

// Match reports whether s meets every condition of f (eval-ready or not).
func (f Filter) Match(s kv.Session) bool {
	switch {
	case len(f.Statuses) > 0 && !slices.Contains(f.Statuses, s.Status),
		f.Source != "" && s.Source != f.Source,
		f.Model != "" && s.Model != f.Model,
		s.CreatedAt < f.From,
		f.To != 0 && s.CreatedAt > f.To:
		return false
	}
	for _, t := range f.Tags {
		if !slices.Contains(s.Tags, t) {
			return false
		}
	}
	return true
}

// List returns the user's eval-ready sessions that f matches, most recently
// reviewed first: the Evals view.
func List(tx *kv.Tx, userID string, f Filter) ([]kv.Session, error) {
	var out []kv.Session
	err := tx.Sessions(userID, func(s kv.Session) error {
		if s.Ready && f.Match(s) {
			out = append(out, s)
		}
		return nil
	})
	slices.SortFunc(out, ByReview)
	return out, err
}

// ByReview orders sessions most recently reviewed first (never-reviewed
// last), then most recently updated, then by id.
func ByReview(a, b kv.Session) int {
	return cmp.Or(cmp.Compare(b.ReviewedAt, a.ReviewedAt), cmp.Compare(b.UpdatedAt, a.UpdatedAt), strings.Compare(a.ID, b.ID))
}
