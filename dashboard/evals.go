package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/hindsight-dev/hindsight/evals"
	"github.com/hindsight-dev/hindsight/kv"
)

// evalStatuses in the order pages offer them.
var evalStatuses = evals.Statuses

// evalFilter is the Evals view's filter as pages and forms carry it: one
// status and one tag at most; an empty field matches anything.
type evalFilter struct {
	Status, Tag, Source, Model string
}

// selects is f as the labelling domain's filter.
func (f evalFilter) selects() evals.Filter {
	sel := evals.Filter{Source: f.Source, Model: f.Model}
	if f.Status != "" {
		sel.Statuses = []string{f.Status}
	}
	if f.Tag != "" {
		sel.Tags = []string{f.Tag}
	}
	return sel
}

func (f evalFilter) match(s kv.Session) bool { return s.Ready && f.selects().Match(s) }

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
		all, err := evals.List(tx, v.user.ID, evals.Filter{})
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
// every session the form's filter matches. A checked id that is not one of
// the user's sessions (somebody else's, or deleted meanwhile) is a 404 and
// nothing is acted on, as in the REST API.
func (s *Server) selection(r *http.Request, tx *kv.Tx, v *viewer) ([]kv.Session, error) {
	if r.PostFormValue("all") == "1" {
		return evals.List(tx, v.user.ID, postedFilter(r).selects())
	}
	if len(r.PostForm["id"]) == 0 {
		return nil, nil
	}
	ids, err := evals.CheckIDs(slices.Clone(r.PostForm["id"]))
	if err != nil {
		return nil, errBadRequest(err.Error())
	}
	out := make([]kv.Session, 0, len(ids))
	for _, id := range ids {
		ss, err := tx.Session(v.user.ID, id)
		if errors.Is(err, kv.ErrNotFound) {
			return nil, errNotFound((&evals.NotFoundError{ID: id}).Error())
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
	var patch evals.Patch
	remove := r.PostFormValue("action") == "remove"
	if remove {
		patch.Ready = new(false)
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
		n = len(ids)
		_, _, err = evals.Label(tx, v.user.ID, ids, patch, s.cfg.Now().UnixMilli(), s.cfg.Redactor)
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
	var patch evals.Patch
	action := r.PostFormValue("action")
	switch action {
	case "ready":
		patch.Ready = new(true)
	case "unready":
		patch.Ready = new(false)
	case "label":
		if patch, err = parseEvalForm(r, true); err != nil {
			return err
		}
		patch.Ready = new(true)
	default:
		return errBadRequest("Unknown action.")
	}
	err = s.cfg.Store.Commit(r.Context(), func(tx *kv.Tx) error {
		_, _, err := evals.Label(tx, v.user.ID, []string{ss.ID}, patch, s.cfg.Now().UnixMilli(), s.cfg.Redactor)
		return err
	})
	if err != nil {
		return err
	}
	return redirect(w, r, "/sessions/"+url.PathEscape(ss.ID)+"?saved="+action)
}

// parseEvalForm reads status, notes, tags and expected output, and checks
// them as the REST API does (evals.Patch.Validate). With setAll, every field
// is set as given (empty clears it); otherwise empty fields are left
// unchanged, and a form that changes nothing is refused.
func parseEvalForm(r *http.Request, setAll bool) (evals.Patch, error) {
	var p evals.Patch
	if status := r.PostFormValue("status"); status != "" {
		p.Status = &status
	}
	notes := strings.TrimSpace(r.PostFormValue("notes"))
	expected := strings.TrimSpace(r.PostFormValue("expected"))
	tags := parseTags(r.PostFormValue("tags"))
	if setAll || notes != "" {
		p.Notes = &notes
	}
	if setAll || expected != "" {
		p.ExpectedOutput = &expected
	}
	if setAll || len(tags) > 0 {
		p.Tags = &tags
	}
	if err := p.Validate(); err != nil {
		return p, errBadRequest("The labels were not saved: " + err.Error() + ".")
	}
	return p, nil
}

// parseTags splits the form's comma-separated tags, dropping blanks; Validate
// trims them, drops repeats and applies the limits.
func parseTags(s string) []string {
	tags := []string{}
	for t := range strings.SplitSeq(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tags
}
