package dashboard

import (
	"html/template"
	"net/http"
	"slices"
	"strconv"

	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/usage"
)

type usagePage struct {
	basePage
	Days          int
	DayChoices    []int
	AllTime       usage.Totals
	Period        usage.Totals
	PerDay        []usage.Day
	PerModel      []usage.Model
	TokensChart   template.HTML
	CostChart     template.HTML
	ModelTokens   template.HTML
	ModelCost     template.HTML
	PeriodStartAt string
	Redactions    []usage.Redaction
	RedactedTotal int64
	Redacting     bool // the server redacts writes
}

var dayChoices = []int{7, 30, 90, 365}

// usage: GET /usage?days=30 — all-time totals (those of GET /api/stats), and
// tokens and cost per day and per model over the last N days (by session
// start, UTC).
func (s *Server) usage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	days := 30
	if n, err := strconv.Atoi(r.URL.Query().Get("days")); err == nil && slices.Contains(dayChoices, n) {
		days = n
	}
	p := usagePage{basePage: s.base(w, v, "Usage", "usage"), Days: days, DayChoices: dayChoices}
	var rep usage.Report
	err := s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		rep, err = usage.Of(tx, v.user.ID, s.cfg.Now(), days)
		return err
	})
	if err != nil {
		return err
	}
	p.AllTime, p.Period, p.PerDay, p.PerModel = rep.All, rep.Period, rep.Days, rep.Models
	p.Redactions, p.Redacting = rep.Redactions, s.cfg.Redactor != nil
	for _, x := range rep.Redactions {
		p.RedactedTotal += x.Count
	}
	p.PeriodStartAt = rep.Days[0].Day
	labels := make([]string, days)
	tokens, costs := make([]float64, days), make([]float64, days)
	for i, d := range p.PerDay {
		labels[i] = d.Day[5:] // MM-DD
		tokens[i], costs[i] = float64(d.Tokens), d.Cost
	}
	p.TokensChart = barChart{ID: "chart-tokens", Title: "Tokens per day", Labels: labels, Values: tokens}.SVG()
	p.CostChart = barChart{ID: "chart-cost", Title: "Cost per day (USD)", Labels: labels, Values: costs, Format: formatMoney}.SVG()
	mLabels := make([]string, len(p.PerModel))
	mTokens, mCost := make([]float64, len(p.PerModel)), make([]float64, len(p.PerModel))
	for i, m := range p.PerModel {
		mLabels[i], mTokens[i], mCost[i] = m.Name, float64(m.Tokens), m.Cost
	}
	p.ModelTokens = hbarChart{ID: "chart-model-tokens", Title: "Tokens per model", Labels: mLabels, Values: mTokens}.SVG()
	p.ModelCost = hbarChart{ID: "chart-model-cost", Title: "Cost per model (USD)", Labels: mLabels, Values: mCost, Format: formatMoney}.SVG()
	return s.render(w, http.StatusOK, "usage", p)
}
