package dashboard

import (
	"cmp"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hindsight-dev/hindsight/kv"
)

// evalStatuses in the order pages offer them.
var evalStatuses = []string{kv.EvalGolden, kv.EvalCorrect, kv.EvalIncorrect, kv.EvalNeedsReview}

// evalFilter selects eval-ready sessions: every non-empty field must match.
type evalFilter struct {
	Status, Tag, Source, Model string
}

func (f evalFilter) match(s kv.Session) bool {
	return s.Ready && (f.Status == "" || s.Status == f.Status) && (f.Tag == "" || slices.Contains(s.Tags, f.Tag)) &&
		(f.Source == "" || s.Source == f.Source) && (f.Model == "" || s.Model == f.Model)
}

func (f evalFilter) values() url.Values {
	u := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "tag": f.Tag, "source": f.Source, "model": f.Model} {
		if v != "" {
			u.Set(k, v)
		}
	}
	return u
}

func evalFilterOf(get func(string) string) evalFilter {
	return evalFilter{Status: get("status"), Tag: get("tag"), Source: get("source"), Model: get("model")}
}

// evalSessions returns the user's eval-ready sessions that f matches, most
// recently reviewed first.
func evalSessions(tx *kv.Tx, userID string, f evalFilter) ([]kv.Session, error) {
	var out []kv.Session
	err := tx.Sessions(userID, func(s kv.Session) error {
		if f.match(s) {
			out = append(out, s)
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b kv.Session) int {
		return cmp.Or(cmp.Compare(b.ReviewedAt, a.ReviewedAt), cmp.Compare(b.UpdatedAt, a.UpdatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, err
}

type statusCount struct {
	Status string // "" = all
	Count  int
	URL    string
	Active bool
}

type evalsPage struct {
	basePage
	Filter   evalFilter
	Rows     []kv.Session
	Counts   []statusCount
	Tags     []string
	Sources  []string
	Models   []string
	Statuses []string
	Formats  []evalFormat
	More     []evalFormat
}

type evalFormat struct{ Name, Label string }

// The three formats of the spec, then the extras.
var (
	specEvalFormats  = []evalFormat{{"deepeval", "DeepEval JSON"}, {"chat-jsonl", "Chat JSONL"}, {"text", "Plain text"}}
	extraEvalFormats = []evalFormat{{"openai-evals", "OpenAI Evals JSONL"}, {"promptfoo", "promptfoo JSON"}}
)

// evals: GET /evals?status=&tag=&source=&model=
func (s *Server) evals(w http.ResponseWriter, r *http.Request, v *viewer) error {
	q := r.URL.Query()
	p := evalsPage{basePage: s.base(w, v, "Evals", "evals"), Filter: evalFilterOf(q.Get), Statuses: evalStatuses,
		Formats: specEvalFormats, More: extraEvalFormats}
	if p.Filter.Status != "" && !slices.Contains(evalStatuses, p.Filter.Status) {
		return errBadRequest("Unknown eval status " + strconv.Quote(p.Filter.Status) + ".")
	}
	// Flash messages from the redirect after a POST; only numbers are shown.
	if n, err := strconv.Atoi(q.Get("saved")); err == nil {
		p.Flash = "Saved labels on " + plural(n, "session") + "."
	}
	if n, err := strconv.Atoi(q.Get("removed")); err == nil {
		p.Flash = "Removed " + plural(n, "session") + " from Evals."
	}
	counts := map[string]int{}
	tags, sources, models := map[string]bool{}, map[string]bool{}, map[string]bool{}
	err := s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		all, err := evalSessions(tx, v.user.ID, evalFilter{})
		if err != nil {
			return err
		}
		for _, ss := range all {
			for _, t := range ss.Tags {
				tags[t] = true
			}
			sources[ss.Source], models[ss.Model] = true, true
			// Status counts follow the other filters, so each tab says what it would show.
			f := p.Filter
			f.Status = ""
			if f.match(ss) {
				counts[ss.Status]++
				counts[""]++
			}
			if p.Filter.match(ss) {
				p.Rows = append(p.Rows, ss)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, st := range append([]string{""}, evalStatuses...) {
		f := p.Filter
		f.Status = st
		u := "/evals"
		if vals := f.values(); len(vals) > 0 {
			u += "?" + vals.Encode()
		}
		p.Counts = append(p.Counts, statusCount{Status: st, Count: counts[st], URL: u, Active: st == p.Filter.Status})
	}
	p.Tags, p.Sources, p.Models = sortedKeys(tags), sortedKeys(sources), sortedKeys(models)
	return s.render(w, http.StatusOK, "evals", p)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func sortedKeys(m map[string]bool) []string {
	delete(m, "")
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// postedFilter is the filter an Evals form was showing (fields f_status,
// f_tag, f_source, f_model, apart from the label fields).
func postedFilter(r *http.Request) evalFilter {
	return evalFilterOf(func(k string) string { return r.PostFormValue("f_" + k) })
}

// selection is what an Evals form acts on: the checked ids, or with all=1
// every session the form's filter matches.
func (s *Server) selection(r *http.Request, tx *kv.Tx, v *viewer) ([]kv.Session, error) {
	f := postedFilter(r)
	if r.PostFormValue("all") == "1" {
		return evalSessions(tx, v.user.ID, f)
	}
	var out []kv.Session
	seen := map[string]bool{}
	for _, id := range r.PostForm["id"] {
		if seen[id] {
			continue
		}
		seen[id] = true
		ss, err := tx.Session(v.user.ID, id)
		if errors.Is(err, kv.ErrNotFound) {
			continue // another user's id, or deleted meanwhile: never acted on
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ss)
	}
	return out, nil
}

// labelEvals: POST /evals/label — set status, notes, tags and expected
// output on the selected sessions (empty fields are left as they are), or
// remove them from Evals (action=remove).
func (s *Server) labelEvals(w http.ResponseWriter, r *http.Request, v *viewer) error {
	var patch evalPatch
	remove := r.PostFormValue("action") == "remove"
	if remove {
		patch.Ready = ptr(false)
	} else {
		var err error
		if patch, err = parseEvalForm(r, false); err != nil {
			return err
		}
	}
	var n int
	err := s.cfg.Store.Commit(r.Context(), func(tx *kv.Tx) error {
		sel, err := s.selection(r, tx, v)
		if err != nil {
			return err
		}
		ids := make([]string, len(sel))
		for i, ss := range sel {
			ids[i] = ss.ID
		}
		n, err = applyEval(tx, v.user.ID, ids, patch, s.cfg.Now().UnixMilli())
		return err
	})
	if err != nil {
		return err
	}
	back := postedFilter(r).values()
	if n == 0 {
		return errBadRequest("No session was selected: tick the sessions to change (or \"all in this view\") and try again.")
	}
	if remove {
		back.Set("removed", strconv.Itoa(n))
	} else {
		back.Set("saved", strconv.Itoa(n))
	}
	return redirect(w, r, "/evals?"+back.Encode())
}

// sessionEval: POST /sessions/{id}/eval — mark eval-ready (action=ready),
// remove from Evals (action=unready), or save the labels form (action=label:
// every field is set as given, so a field can be cleared).
func (s *Server) sessionEval(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ss, _, err := s.loadSession(r, v, false)
	if err != nil {
		return err
	}
	var patch evalPatch
	action := r.PostFormValue("action")
	switch action {
	case "ready":
		patch.Ready = ptr(true)
	case "unready":
		patch.Ready = ptr(false)
	case "label":
		if patch, err = parseEvalForm(r, true); err != nil {
			return err
		}
		patch.Ready = ptr(true)
	default:
		return errBadRequest("Unknown action.")
	}
	err = s.cfg.Store.Commit(r.Context(), func(tx *kv.Tx) error {
		_, err := applyEval(tx, v.user.ID, []string{ss.ID}, patch, s.cfg.Now().UnixMilli())
		return err
	})
	if err != nil {
		return err
	}
	return redirect(w, r, "/sessions/"+url.PathEscape(ss.ID)+"?saved="+action)
}

// Label limits.
const (
	maxTags      = 32
	maxTagLen    = 64
	maxNotesLen  = 64 << 10
	maxExpectLen = 1 << 20
)

// parseEvalForm reads status, notes, tags and expected output. With
// setAll, every field is set as given (empty clears it); otherwise empty
// fields are left unchanged.
func parseEvalForm(r *http.Request, setAll bool) (evalPatch, error) {
	var p evalPatch
	status := r.PostFormValue("status")
	if status != "" {
		if !slices.Contains(evalStatuses, status) {
			return p, errBadRequest("Unknown eval status " + strconv.Quote(status) + ".")
		}
		p.Status = &status
	}
	notes := strings.TrimSpace(r.PostFormValue("notes"))
	if len(notes) > maxNotesLen {
		return p, errBadRequest("Notes are limited to 64 KiB.")
	}
	expected := strings.TrimSpace(r.PostFormValue("expected"))
	if len(expected) > maxExpectLen {
		return p, errBadRequest("The expected output is limited to 1 MiB.")
	}
	tags, err := parseTags(r.PostFormValue("tags"))
	if err != nil {
		return p, err
	}
	if setAll || notes != "" {
		p.Notes = &notes
	}
	if setAll || expected != "" {
		p.Expected = &expected
	}
	if setAll || len(tags) > 0 {
		p.Tags = &tags
	}
	return p, nil
}

// parseTags splits comma-separated tags, trimmed and without duplicates.
func parseTags(s string) ([]string, error) {
	tags := []string{}
	for t := range strings.SplitSeq(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" || slices.Contains(tags, t) {
			continue
		}
		if len(t) > maxTagLen {
			return nil, errBadRequest("A tag is limited to 64 characters.")
		}
		tags = append(tags, t)
	}
	if len(tags) > maxTags {
		return nil, errBadRequest("At most 32 tags.")
	}
	return tags, nil
}

func ptr[T any](v T) *T { return &v }

// evalPatch is a change to sessions' eval metadata; nil fields are left
// alone. It follows decisions.md (Eval labelling): reviewedAt becomes now
// when the status or the notes change, and marking a session eval-ready
// without a status gives it needs_review.
type evalPatch struct {
	Ready    *bool
	Status   *string
	Notes    *string
	Tags     *[]string
	Expected *string
}

// applyEval applies p to the user's sessions ids and returns how many it
// changed. Ids that are not the user's are skipped. kv.PutSessionEval
// leaves updatedAt, the session order and the index alone.
func applyEval(tx *kv.Tx, userID string, ids []string, p evalPatch, now int64) (int, error) {
	n := 0
	for _, id := range ids {
		s, err := tx.Session(userID, id)
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		e := s.Eval
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
			e.Tags = slices.Clone(*p.Tags)
		}
		if p.Expected != nil {
			e.ExpectedOutput = *p.Expected
		}
		if e.Status != s.Status || e.Notes != s.Notes {
			e.ReviewedAt = now
		}
		if _, err := tx.PutSessionEval(userID, id, e); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
