package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Files written by WriteRelevanceFiles into its directory.
const (
	ResultFile   = "result.json"     // the run for machines and for --baseline
	PerQueryFile = "perquery.jsonl"  // query, relevant ids, returned ids per mode
	ReportFile   = "report.md"       // the tables and charts for people
	NDCGChart    = "ndcg.svg"        // nDCG@10 by mode and peer, with 95% intervals
	LatencyChart = "latency_cdf.svg" // query latency CDF by mode and peer
	SweepChart   = "sweep.svg"       // nDCG@10 by grid point (with --sweep)
)

// WriteRelevanceFiles writes the outcome of a relevance run into dir
// (created if needed): result.json, perquery.jsonl, report.md and the SVG
// charts it links to.
func WriteRelevanceFiles(dir string, r *RelevanceResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var pq bytes.Buffer
	if err := WritePerQuery(&pq, r.PerQuery); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, PerQueryFile), pq.Bytes(), 0o644); err != nil {
		return err
	}
	if err := writeResultJSON(dir, r); err != nil {
		return err
	}
	return WriteRelevanceReport(dir, r)
}

// WriteRelevanceReport writes report.md and its charts into dir (which
// must exist). It needs no more of r than result.json holds, so a report
// can be drawn again from a result read back with ReadResult.
func WriteRelevanceReport(dir string, r *RelevanceResult) error {
	if err := relevanceCharts(dir, r); err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, ReportFile), []byte(RelevanceMarkdown(r)), 0o644)
}

// ndcgColumn returns nDCG@10 of mode for every query of r.
func ndcgColumn(r *RelevanceResult, mode string) []float64 {
	col := make([]float64, 0, len(r.PerQuery))
	for _, q := range r.PerQuery {
		col = append(col, q.NDCG10[mode])
	}
	return col
}

func relevanceCharts(dir string, r *RelevanceResult) error {
	var items []barItem
	for _, s := range r.Summaries {
		if s.Failed != "" {
			continue
		}
		_, ci := meanCI95(ndcgColumn(r, s.Mode))
		items = append(items, barItem{Label: s.Mode, Value: s.NDCG10, Err: ci, Marked: slices.Contains(r.Peers, s.Mode)})
	}
	title := fmt.Sprintf("nDCG@10 on %s (%d queries; orange = peer; whiskers = 95%% CI)", r.Dataset, r.Queries)
	if err := horizontalBars(filepath.Join(dir, NDCGChart), title, "nDCG@10", items, 1); err != nil {
		return err
	}
	var ss []series
	for i, s := range r.Summaries {
		if lat := r.Latencies[s.Mode]; len(lat) > 0 {
			cdf := cdfSeries(s.Mode, i, lat)
			cdf.Dashed = slices.Contains(r.Peers, s.Mode) // peers dashed, Hindsight's modes solid
			ss = append(ss, cdf)
		}
	}
	if len(ss) > 0 {
		if err := lineChart(filepath.Join(dir, LatencyChart), "Query latency, "+r.Dataset+" (dashed = peer)",
			"latency per query (ms, log scale)", "fraction of queries", ss, true, false, nil); err != nil {
			return err
		}
	}
	if sw := r.Sweep; sw != nil {
		var items []barItem
		for _, row := range sw.Rows {
			label := row.Point.String()
			if row.Default {
				label += " (default)"
			}
			// No interval whiskers: every point answers the same queries,
			// so the interval of each mean says little about the
			// difference between two points (the paired test does).
			items = append(items, barItem{Label: label, Value: row.NDCG10, Marked: row.Default})
		}
		title := fmt.Sprintf("Sweep of %s on %s, best first (orange = default)", sw.Mode, r.Dataset)
		if err := horizontalBars(filepath.Join(dir, SweepChart), title, "nDCG@10", items, 1); err != nil {
			return err
		}
	}
	return nil
}

// pValue formats a p value for a table: "p = 0.031", or "p < 0.0001" at
// the resolution of the randomisation test.
func pValue(p float64) string {
	if p < 1e-4 {
		return "p < 0.0001"
	}
	return fmt.Sprintf("p = %.4f", p)
}

// RelevanceMarkdown renders r as the report.md of a run.
func RelevanceMarkdown(r *RelevanceResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Relevance on %s\n\n", r.Dataset)
	fmt.Fprintf(&b, "%d documents, %d queries", r.Docs, r.Queries)
	if q := r.Settings["qrels"]; q != "" {
		fmt.Fprintf(&b, " (qrels `%s`)", q)
	}
	b.WriteString(".")
	if c := r.Settings["command"]; c != "" {
		fmt.Fprintf(&b, " Produced by\n\n```\n%s\n```\n", c)
	}
	b.WriteString("\n")
	ref := ""
	if len(r.Summaries) > 0 {
		ref = r.Summaries[0].Mode
	}
	fmt.Fprintf(&b, "| system | nDCG@10 (95%% CI) | vs %s: ΔnDCG@10 (p) | Recall@100 | MRR@10 | Success@1 | Success@10 | p50 ms | p99 ms |\n", ref)
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	refCol := ndcgColumn(r, ref)
	for _, s := range r.Summaries {
		name := s.Mode
		if slices.Contains(r.Peers, s.Mode) {
			name += " (peer)"
		}
		col := ndcgColumn(r, s.Mode)
		_, ci := meanCI95(col)
		vs := "–"
		if s.Mode != ref && len(col) > 0 {
			if t, err := Compare(col, refCol, 1); err == nil {
				vs = fmt.Sprintf("%+.4f (%s)", t.MeanDiff, pValue(t.P))
			}
		}
		if s.Failed != "" {
			fmt.Fprintf(&b, "| %s | **failed**: %s | – | – | – | – | – | – | – |\n", name, strings.ReplaceAll(s.Failed, "|", `\|`))
			continue
		}
		if s.TimedOut > 0 {
			name += fmt.Sprintf(" (%d queries timed out, scored 0)", s.TimedOut)
		}
		fmt.Fprintf(&b, "| %s | %.4f ± %.3f | %s | %.4f | %.4f | %.4f | %.4f | %.2f | %.2f |\n", name, s.NDCG10, ci, vs, s.Recall100, s.MRR10,
			s.Success1, s.Success10, millis(s.P50), millis(s.P99))
	}
	fmt.Fprintf(&b, "\nThe third column compares each system with %s query by query (paired randomisation test, %d sign flips).", ref, testRounds)
	b.WriteString(" Metrics are means over all queries (a query a system could not answer scores 0), computed as BEIR/pytrec_eval do. " +
		"Latency is the wall time of one query as the bench calls the system (in-process for Hindsight's ranking engine and SQLite, " +
		"over loopback HTTP for a server such as Weaviate), including the query's embedding where there is one, one query at a time after a warm-up.\n\n")
	fmt.Fprintf(&b, "![nDCG@10 by mode and peer](%s)\n\n![Query latency CDF](%s)\n", NDCGChart, LatencyChart)
	kindsMarkdown(&b, r)

	if sw := r.Sweep; sw != nil {
		fmt.Fprintf(&b, "\n## Sweep of %s\n\n", sw.Mode)
		fmt.Fprintf(&b, "Every grid point answers every query with %d results; sorted by nDCG@10, default in bold.", sw.Limit)
		if sw.Note != "" {
			b.WriteString(" " + sw.Note)
		}
		b.WriteString("\n\n")
		fmt.Fprintf(&b, "| point | nDCG@10 | MRR@10 | Recall@%d | p50 ms | p99 ms |\n|---|---|---|---|---|---|\n", sw.Limit)
		for _, row := range sw.Rows {
			label := row.Point.String()
			if row.Default {
				label = "**" + label + " (default)**"
			}
			fmt.Fprintf(&b, "| %s | %.4f | %.4f | %.4f | %.2f | %.2f |\n", label, row.NDCG10, row.MRR10, row.Recall, millis(row.P50), millis(row.P99))
		}
		sweepKindsMarkdown(&b, sw.Rows, r.Kinds())
		if sw.Test == nil {
			b.WriteString("\nThe default is the best point.\n")
		} else {
			fmt.Fprintf(&b, "\nBest (`%s`) vs default (`%s`): %s. The best point was picked on these same queries, so "+
				"confirm a change on another split before adopting it.\n", sw.Rows[sw.Best].Point, sw.Rows[sw.Default].Point, sw.Test)
		}
		fmt.Fprintf(&b, "\n![Sweep](%s)\n", SweepChart)
	}

	if len(r.PeerSweeps) > 0 {
		b.WriteString("\n## Peers at their best point\n\n")
		b.WriteString("Each peer's own settings swept as Hindsight's are (every point answers every query; the best point " +
			"was picked on these same queries, which flatters the peer, as a sweep flatters Hindsight).\n\n")
		b.WriteString("| peer | default point | nDCG@10 | best point | nDCG@10 | best − default (p) | grid |\n|---|---|---|---|---|---|---|\n")
		for _, sw := range r.PeerSweeps {
			def, best := sw.Rows[sw.Default], sw.Rows[sw.Best]
			vs := "the default is the best"
			if sw.Test != nil {
				vs = fmt.Sprintf("%+.4f (%s)", sw.Test.MeanDiff, pValue(sw.Test.P))
			}
			var grid []string
			for _, row := range sw.Rows {
				grid = append(grid, fmt.Sprintf("%s: %.4f", row.Point, row.NDCG10))
			}
			fmt.Fprintf(&b, "| %s | %s | %.4f | %s | %.4f | %s | %s |\n", sw.Mode, def.Point, def.NDCG10, best.Point, best.NDCG10, vs, strings.Join(grid, "; "))
		}
		fmt.Fprintf(&b, "\nThe sweeps ask %d results per query, so Recall is not comparable with the main table's.\n", r.PeerSweeps[0].Limit)
	}

	if c := r.Baseline; c != nil {
		fmt.Fprintf(&b, "\n## Compared with %s\n\n", c.Baseline)
		for _, w := range c.Warnings {
			fmt.Fprintf(&b, "- warning: %s\n", w)
		}
		if len(c.Warnings) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("| mode | nDCG@10 baseline → now | Δ | p (randomisation) | p (t-test) | ΔRecall@100 | ΔMRR@10 | Δp50 ms |\n|---|---|---|---|---|---|---|---|\n")
		for _, d := range c.Modes {
			pr, pt := d.pValues("–")
			fmt.Fprintf(&b, "| %s | %.4f → %.4f | %s | %s | %s | %s | %s | %+.2f |\n", d.Mode, d.Base.NDCG10, d.Cur.NDCG10,
				delta4(d.Cur.NDCG10-d.Base.NDCG10), pr, pt, delta4(d.Cur.Recall100-d.Base.Recall100), delta4(d.Cur.MRR10-d.Base.MRR10), millis(d.Cur.P50-d.Base.P50))
		}
	}

	if len(r.Settings) > 0 {
		b.WriteString("\n## Settings\n\n")
		WriteSettingsTable(&b, r.Settings)
	}
	fmt.Fprintf(&b, "\n`%s` has every number above and per-query nDCG@10 (for `--baseline`); `%s` has, per query, "+
		"the relevant ids and the ids each system returned, for error analysis.\n", ResultFile, PerQueryFile)
	return b.String()
}

// WriteRun writes a run's result (v, indented, as result.json) and its
// report.md into dir, made if needed.
func WriteRun(dir string, v any, report string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeResultJSON(dir, v); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ReportFile), []byte(report), 0o644)
}

// WriteSettings writes a run's settings to b as a list sorted by key, a
// "- key: value" line each.
func WriteSettings(b *strings.Builder, settings map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(b, "- %s: %s\n", k, settings[k])
	}
}

// WriteSettingsTable writes a run's settings to b as a Markdown table sorted
// by key, pipes in a value escaped so that they do not split its cell. It
// leaves out "command": the reports show it at their top, as a code block.
func WriteSettingsTable(b *strings.Builder, settings map[string]string) {
	b.WriteString("| setting | value |\n|---|---|\n")
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if k != "command" {
			fmt.Fprintf(b, "| %s | %s |\n", k, strings.ReplaceAll(settings[k], "|", `\|`))
		}
	}
}

// writeResultJSON writes v, indented, as dir's result.json.
func writeResultJSON(dir string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ResultFile), append(b, '\n'), 0o644)
}

// kindsMarkdown writes the per-kind table and the paired tests, when the
// run's queries have kinds or it compared systems.
func kindsMarkdown(b *strings.Builder, r *RelevanceResult) {
	if kinds := r.Kinds(); len(kinds) > 0 {
		b.WriteString("\n## By query kind\n\nnDCG@10 / MRR@10 / Success@1 / Success@10 over the queries of each kind.\n\n| system |")
		for _, k := range kinds {
			fmt.Fprintf(b, " %s (%d queries) |", k.Name, k.Queries)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(kinds)) + "\n")
		for _, s := range r.Summaries {
			if s.Failed != "" {
				continue
			}
			fmt.Fprintf(b, "| %s |", s.Mode)
			for _, k := range kinds {
				m := s.ByKind[k.Name]
				fmt.Fprintf(b, " %.4f / %.4f / %.4f / %.4f |", m.NDCG10, m.MRR10, m.Success1, m.Success10)
			}
			b.WriteString("\n")
		}
	}
	if len(r.Paired) > 0 {
		fmt.Fprintf(b, "\n## Paired tests\n\nPer-query nDCG@10 of A minus B over the same queries: paired randomisation test (%d sign flips) and paired t-test.\n\n", testRounds)
		b.WriteString("| A | B | queries | mean A − B | p (randomisation) | p (t-test) |\n|---|---|---|---|---|---|\n")
		for _, c := range r.Paired {
			kind := "all"
			if c.Kind != "" {
				kind = c.Kind
			}
			pt := "–"
			if !math.IsNaN(c.Test.PT) {
				pt = fmt.Sprintf("%.4f", c.Test.PT)
			}
			fmt.Fprintf(b, "| %s | %s | %s (%d) | %+.4f | %s | %s |\n", c.A, c.B, kind, c.Test.N, c.Test.MeanDiff, pValue(c.Test.P), pt)
		}
	}
}

// sweepKindsMarkdown writes nDCG@10 per query kind of every sweep point.
func sweepKindsMarkdown(b *strings.Builder, rows []SweepRow, kinds []KindCount) {
	if len(kinds) == 0 {
		return
	}
	b.WriteString("\nnDCG@10 by query kind:\n\n| point |")
	for _, k := range kinds {
		fmt.Fprintf(b, " %s |", k.Name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(kinds)) + "\n")
	for _, row := range rows {
		label := row.Point.String()
		if row.Default {
			label = "**" + label + " (default)**"
		}
		fmt.Fprintf(b, "| %s |", label)
		for _, k := range kinds {
			fmt.Fprintf(b, " %.4f |", row.ByKind[k.Name].NDCG10)
		}
		b.WriteString("\n")
	}
}
