// Package usage sums a user's sessions into usage statistics: the totals of
// GET /api/stats and the dashboard's Usage page, computed by one function so
// the two cannot count differently, with the secrets redaction removed. The numbers are what plugins reported on
// their sessions (service-spec.md, Statistics); message tokens never add to
// them.
package usage

import (
	"cmp"
	"slices"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// UnknownModel names the sessions that recorded no model.
const UnknownModel = "unknown"

// Totals are sums over sessions.
type Totals struct {
	Sessions, Messages             int64
	Tokens                         int64 // totalTokens
	PromptTokens, CompletionTokens int64
	Cost                           float64 // USD
	DurationMs                     int64
}

func (t *Totals) add(s kv.Session) {
	t.Sessions++
	t.Messages += s.MessageCount
	t.Tokens += s.TotalTokens
	t.PromptTokens += s.PromptTokens
	t.CompletionTokens += s.CompletionTokens
	t.Cost += s.Cost
	t.DurationMs += s.DurationMs
}

// Model is the usage of one model.
type Model struct {
	Name     string
	Tokens   int64
	Cost     float64
	Sessions int64
}

// Day is the usage of the sessions started on one UTC day.
type Day struct {
	Day      string // 2006-01-02
	Tokens   int64
	Cost     float64
	Sessions int64
}

// Redaction is how many secrets one rule removed from a user's writes.
type Redaction struct {
	Rule  string
	Count int64
}

// Report is a user's usage.
type Report struct {
	All    Totals  // every session
	Period Totals  // the sessions of the period (all of them without one)
	Models []Model // per model over the period, most tokens first
	Days   []Day   // per day of the period, oldest first; nil without one
	// Redactions are the secrets redaction removed from the user's writes
	// (syncs and eval labels) since the beginning, by rule, most first.
	Redactions []Redaction
}

// Of sums the user's sessions. With days > 0 the period is the last days UTC
// days up to and including today's, by session start (createdAt); with
// days == 0 it is all time.
func Of(tx *kv.Tx, userID string, today time.Time, days int) (Report, error) {
	var r Report
	index := map[string]int{}
	if days > 0 {
		start := today.UTC().Truncate(24*time.Hour).AddDate(0, 0, -(days - 1))
		r.Days = make([]Day, days)
		for i := range r.Days {
			d := start.AddDate(0, 0, i).Format(time.DateOnly)
			r.Days[i].Day, index[d] = d, i
		}
	}
	models := map[string]*Model{}
	err := tx.Sessions(userID, func(s kv.Session) error {
		r.All.add(s)
		if days > 0 {
			i, ok := index[time.UnixMilli(s.CreatedAt).UTC().Format(time.DateOnly)]
			if !ok {
				return nil
			}
			d := &r.Days[i]
			d.Tokens += s.TotalTokens
			d.Cost += s.Cost
			d.Sessions++
		}
		r.Period.add(s)
		name := cmp.Or(s.Model, UnknownModel)
		m := models[name]
		if m == nil {
			m = &Model{Name: name}
			models[name] = m
		}
		m.Tokens += s.TotalTokens
		m.Cost += s.Cost
		m.Sessions++
		return nil
	})
	if err != nil {
		return Report{}, err
	}
	r.Models = make([]Model, 0, len(models))
	for _, m := range models {
		r.Models = append(r.Models, *m)
	}
	slices.SortFunc(r.Models, func(a, b Model) int {
		return cmp.Or(cmp.Compare(b.Tokens, a.Tokens), cmp.Compare(b.Cost, a.Cost), cmp.Compare(a.Name, b.Name))
	})
	for rule, n := range tx.Redactions(userID) {
		r.Redactions = append(r.Redactions, Redaction{Rule: rule, Count: n})
	}
	slices.SortFunc(r.Redactions, func(a, b Redaction) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Rule, b.Rule))
	})
	return r, nil
}
