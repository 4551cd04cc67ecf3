package dashboard

import (
	"cmp"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// usageTotals are the numbers of GET /api/stats.
type usageTotals struct {
	Sessions, Messages                  int64
	Tokens, PromptTokens, CompletionTok int64
	Cost                                float64
	DurationMs                          int64
}

func (t *usageTotals) add(s kv.Session) {
	t.Sessions++
	t.Messages += s.MessageCount
	t.Tokens += s.TotalTokens
	t.PromptTokens += s.PromptTokens
	t.CompletionTok += s.CompletionTokens
	t.Cost += s.Cost
	t.DurationMs += s.DurationMs
}

type dayUsage struct {
	Day    string // 2006-01-02
	Tokens int64
	Cost   float64
	Count  int64
}

type modelUsage struct {
	Model    string
	Tokens   int64
	Cost     float64
	Sessions int64
}

type usagePage struct {
	basePage
	Days          int
	DayChoices    []int
	AllTime       usageTotals
	Period        usageTotals
	PerDay        []dayUsage
	PerModel      []modelUsage
	TokensChart   template.HTML
	CostChart     template.HTML
	ModelTokens   template.HTML
	ModelCost     template.HTML
	PeriodStartAt string
}

var dayChoices = []int{7, 30, 90, 365}

// usage: GET /usage?days=30 — all-time totals, and tokens and cost per day
// and per model over the last N days (by session start, UTC).
func (s *Server) usage(w http.ResponseWriter, r *http.Request, v *viewer) error {
	days := 30
	if n, err := strconv.Atoi(r.URL.Query().Get("days")); err == nil && slices.Contains(dayChoices, n) {
		days = n
	}
	p := usagePage{basePage: s.base(w, v, "Usage", "usage"), Days: days, DayChoices: dayChoices}
	today := s.cfg.Now().UTC().Truncate(24 * time.Hour)
	start := today.AddDate(0, 0, -(days - 1))
	p.PeriodStartAt = start.Format("2006-01-02")
	p.PerDay = make([]dayUsage, days)
	index := map[string]int{}
	for i := range p.PerDay {
		d := start.AddDate(0, 0, i).Format("2006-01-02")
		p.PerDay[i].Day = d
		index[d] = i
	}
	models := map[string]*modelUsage{}
	err := s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		return tx.Sessions(v.user.ID, func(ss kv.Session) error {
			p.AllTime.add(ss)
			i, ok := index[time.UnixMilli(ss.CreatedAt).UTC().Format("2006-01-02")]
			if !ok {
				return nil
			}
			p.Period.add(ss)
			d := &p.PerDay[i]
			d.Tokens += ss.TotalTokens
			d.Cost += ss.Cost
			d.Count++
			name := cmpOr(ss.Model, "unknown")
			m := models[name]
			if m == nil {
				m = &modelUsage{Model: name}
				models[name] = m
			}
			m.Tokens += ss.TotalTokens
			m.Cost += ss.Cost
			m.Sessions++
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, m := range models {
		p.PerModel = append(p.PerModel, *m)
	}
	slices.SortFunc(p.PerModel, func(a, b modelUsage) int {
		return cmp.Or(cmp.Compare(b.Tokens, a.Tokens), cmp.Compare(b.Cost, a.Cost), cmp.Compare(a.Model, b.Model))
	})
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
		mLabels[i], mTokens[i], mCost[i] = m.Model, float64(m.Tokens), m.Cost
	}
	p.ModelTokens = hbarChart{ID: "chart-model-tokens", Title: "Tokens per model", Labels: mLabels, Values: mTokens}.SVG()
	p.ModelCost = hbarChart{ID: "chart-model-cost", Title: "Cost per model (USD)", Labels: mLabels, Values: mCost, Format: formatMoney}.SVG()
	return s.render(w, http.StatusOK, "usage", p)
}
