package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// Charts written by WriteLoadFiles.
const (
	GrowthLatencyChart = "growth_latency.svg" // query latency and index lag vs sessions
	GrowthMemoryChart  = "growth_memory.svg"  // heap and disk bytes per session vs sessions
	GrowthIngestChart  = "growth_ingest.svg"  // ingest and rebuild throughput vs sessions
)

// LoadResult is a load run: one LoadStep per size.
type LoadResult struct {
	Modes    []string          `json:"modes"`
	Settings map[string]string `json:"settings,omitempty"`
	Steps    []LoadStep        `json:"steps"`
	// Growth holds, per cost, the exponent b of cost ∝ sessions^b fitted
	// over the steps (see GrowthExponent); empty with fewer than 2 steps.
	Growth map[string]float64 `json:"growth_exponents,omitempty"`
	// Restore is the restore drill after the last step (--restore).
	Restore *RestoreTiming `json:"restore,omitempty"`
}

// RestoreTiming is what recovering a lost node from a backup takes: a hot
// backup of the records, `hindsight restore` of the file, and a server on
// the restored records until /ready (the full-text index rebuilt).
type RestoreTiming struct {
	Sessions    int     `json:"sessions"`
	BackupBytes int64   `json:"backup_bytes"`
	BackupS     float64 `json:"backup_s"`
	RestoreS    float64 `json:"restore_s"`
	ReadyS      float64 `json:"ready_s"`
	TotalS      float64 `json:"total_s"`
}

// growthMetric is a cost tracked across sizes.
type growthMetric struct {
	name string
	get  func(LoadStep) float64
}

func (r *LoadResult) metrics() []growthMetric {
	var ms []growthMetric
	for _, m := range r.Modes {
		ms = append(ms,
			growthMetric{m + " query p50", func(s LoadStep) float64 { return s.Query[m+"/inprocess"].P50ms }},
			growthMetric{m + " query p99", func(s LoadStep) float64 { return s.Query[m+"/inprocess"].P99ms }},
			growthMetric{m + " first-pass p99", func(s LoadStep) float64 { return s.Query[m+"/first"].P99ms }},
		)
	}
	return append(ms,
		growthMetric{"index lag p50", func(s LoadStep) float64 { return s.LagP50ms }},
		growthMetric{"index lag p99", func(s LoadStep) float64 { return s.LagP99ms }},
		growthMetric{"live message p99", liveP99},
		growthMetric{"ingest messages/s", func(s LoadStep) float64 { return s.IngestMsgsPS }},
		growthMetric{"to searchable messages/s", func(s LoadStep) float64 { return s.SearchableMsgsPS }},
		growthMetric{"heap bytes", func(s LoadStep) float64 { return float64(s.HeapBytes) }},
		growthMetric{"resident bytes", func(s LoadStep) float64 { return float64(s.RSSBytes) }},
		growthMetric{"disk bytes", func(s LoadStep) float64 { return float64(s.RecordsBytes + s.IndexBytes) }},
	)
}

// liveP99 is a step's live probe p99 (0 when it has none).
func liveP99(s LoadStep) float64 {
	if s.Live == nil {
		return 0
	}
	return s.Live.P99ms
}

// Finish computes Growth from Steps.
func (r *LoadResult) Finish() {
	r.Growth = nil
	if len(r.Steps) < 2 {
		return
	}
	r.Growth = map[string]float64{}
	for _, m := range r.metrics() {
		xs := make([]float64, len(r.Steps))
		ys := make([]float64, len(r.Steps))
		for i, s := range r.Steps {
			xs[i], ys[i] = float64(s.Sessions), m.get(s)
		}
		if b, ok := GrowthExponent(xs, ys); ok {
			r.Growth[m.name] = math.Round(b*100) / 100
		}
	}
}

// GrowthExponent fits y = a * x^b by least squares on log y against log x
// and returns b: 0 means the cost does not grow with x, 1 that it grows in
// proportion, 0.5 like a square root. It needs at least two distinct
// positive xs and positive ys; otherwise ok is false.
func GrowthExponent(xs, ys []float64) (b float64, ok bool) {
	if len(xs) != len(ys) || len(xs) < 2 {
		return 0, false
	}
	var sx, sy, sxx, sxy float64
	n := float64(len(xs))
	for i := range xs {
		if xs[i] <= 0 || ys[i] <= 0 {
			return 0, false
		}
		lx, ly := math.Log(xs[i]), math.Log(ys[i])
		sx += lx
		sy += ly
		sxx += lx * lx
		sxy += lx * ly
	}
	den := n*sxx - sx*sx
	if den <= 1e-12 {
		return 0, false
	}
	return (n*sxy - sx*sy) / den, true
}

// PrintGrowth writes the fitted growth exponents, one per line.
func PrintGrowth(w io.Writer, r *LoadResult) {
	if len(r.Growth) == 0 {
		return
	}
	first, last := r.Steps[0], r.Steps[len(r.Steps)-1]
	fmt.Fprintf(w, "growth from %d to %d sessions (cost ∝ sessions^b):\n", first.Sessions, last.Sessions)
	for _, m := range r.metrics() {
		if b, ok := r.Growth[m.name]; ok {
			fmt.Fprintf(w, "  %-26s b = %5.2f   (%s → %s)\n", m.name, b, humanFloat(m.get(first)), humanFloat(m.get(last)))
		}
	}
}

func humanFloat(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.2fG", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.1fk", x/1e3)
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// humanCount writes 10000 as 10k and 1500000 as 1.5M.
func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return strconv.FormatFloat(float64(n)/1e6, 'g', -1, 64) + "M"
	case n >= 1000 && n%100 == 0:
		return strconv.FormatFloat(float64(n)/1e3, 'g', -1, 64) + "k"
	}
	return strconv.Itoa(n)
}

// WriteLoadFiles writes result.json, report.md and the growth charts of r
// into dir (created if needed).
func WriteLoadFiles(dir string, r *LoadResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeResultJSON(dir, r); err != nil {
		return err
	}
	if err := loadCharts(dir, r); err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, ReportFile), []byte(LoadMarkdown(r)), 0o644)
}

func stepSeries(name string, color int, steps []LoadStep, get func(LoadStep) float64, dashed bool) series {
	s := series{Name: name, Color: color, Dashed: dashed, Points: true}
	for _, st := range steps {
		if y := get(st); y > 0 {
			s.XYs = append(s.XYs, plotter.XY{X: float64(st.Sessions), Y: y})
		}
	}
	return s
}

func loadCharts(dir string, r *LoadResult) error {
	if len(r.Steps) == 0 {
		return nil
	}
	// Label the x axis at the measured sizes.
	var ticks []plot.Tick
	for _, s := range r.Steps {
		ticks = append(ticks, plot.Tick{Value: float64(s.Sessions), Label: humanCount(s.Sessions)})
	}
	var lat []series
	for i, m := range r.Modes {
		lat = append(lat,
			stepSeries(m+" query p50", i, r.Steps, func(s LoadStep) float64 { return s.Query[m+"/inprocess"].P50ms }, false),
			stepSeries(m+" query p99", i, r.Steps, func(s LoadStep) float64 { return s.Query[m+"/inprocess"].P99ms }, true),
		)
	}
	lat = append(lat,
		stepSeries("index lag p50", len(r.Modes), r.Steps, func(s LoadStep) float64 { return s.LagP50ms }, false),
		stepSeries("index lag p99", len(r.Modes), r.Steps, func(s LoadStep) float64 { return s.LagP99ms }, true),
		stepSeries("live message p99", len(r.Modes)+1, r.Steps, liveP99, true),
	)
	if err := lineChart(filepath.Join(dir, GrowthLatencyChart), "Latency as the data grows (in-process queries)",
		"sessions (log scale)", "ms (log scale)", lat, true, true, ticks); err != nil {
		return err
	}
	mem := []series{
		stepSeries("Go heap in use per session", 0, r.Steps, func(s LoadStep) float64 { return s.HeapPerSession / 1024 }, false),
		stepSeries("resident memory (RSS) per session", 1, r.Steps, func(s LoadStep) float64 { return s.RSSPerSession / 1024 }, false),
		stepSeries("disk (records + index) per session", 2, r.Steps, func(s LoadStep) float64 { return s.BytesPerSession / 1024 }, false),
		// The data itself, for scale (absent from results made before it was measured).
		stepSeries("raw payload (synced JSON) per session", 3, r.Steps, func(s LoadStep) float64 {
			if s.PerSession == nil {
				return 0
			}
			return s.PerSession.Raw / 1024
		}, true),
	}
	if err := lineChart(filepath.Join(dir, GrowthMemoryChart), "Memory and disk per session as the data grows",
		"sessions (log scale)", "KiB per session", mem, true, false, ticks); err != nil {
		return err
	}
	thr := []series{
		stepSeries("ingest messages/s (REST /sync/batch)", 0, r.Steps, func(s LoadStep) float64 { return s.IngestMsgsPS }, false),
		stepSeries("index rebuild sessions/s", 1, r.Steps, func(s LoadStep) float64 { return s.RebuildPS }, false),
	}
	return lineChart(filepath.Join(dir, GrowthIngestChart), "Throughput as the data grows",
		"sessions (log scale)", "per second (log scale)", thr, true, true, ticks)
}

// LoadMarkdown renders r as the report.md of a load run.
func LoadMarkdown(r *LoadResult) string {
	var b strings.Builder
	b.WriteString("# Load: cost as the data grows\n\n")
	if c := r.Settings["command"]; c != "" {
		fmt.Fprintf(&b, "Produced by\n\n```\n%s\n```\n\n", c)
	}
	b.WriteString("Generated coding sessions (prompts, code blocks, stack traces, tool calls; long-tailed lengths; several users) " +
		"are synced through the REST API (`/sync/batch`) until the size is reached; then the index lag of that ingest, " +
		"query latency per mode and memory and disk are measured. The rebuild re-indexes every session from the records " +
		"into a fresh index (`hindsight reindex`); raw Bleve then indexes the same documents, already read and built in " +
		"memory, with Bleve's plain batch API into fresh indexes with the same mappings: the ceiling Bleve's own analysis " +
		"and segment building set on the rebuild, timed in the same run. CPU ms/session is the process's CPU time over " +
		"each, steadier than wall time on a shared machine.\n\n")
	b.WriteString("| sessions | messages | ingest msg/s | to searchable msg/s | index lag p50 / p99 ms | live message p50 / p99 / max ms |")
	sep := "|---|---|---|---|---|---|"
	for _, m := range r.Modes {
		fmt.Fprintf(&b, " %s p50 / p99 ms (first pass, cold) | %s p50 / p99 ms (in-process; CPU ms a query) | %s p50 / p99 ms (HTTP) |", m, m, m)
		sep += "---|---|---|"
	}
	b.WriteString(" rebuild sessions/s | raw Bleve sessions/s (rebuild ×) | CPU ms/session rebuild / raw Bleve | heap KiB/session | RSS KiB/session | disk KiB/session |\n")
	b.WriteString(sep + "---|---|---|---|---|---|\n")
	for _, s := range r.Steps {
		live := "–"
		if l := s.Live; l != nil && l.N > 0 {
			live = fmt.Sprintf("%.0f / %.0f / %.0f", l.P50ms, l.P99ms, l.Maxms)
		}
		searchable := "–" // results made before it was measured
		if s.SearchableMsgsPS > 0 {
			searchable = fmt.Sprintf("%.0f", s.SearchableMsgsPS)
		}
		fmt.Fprintf(&b, "| %d | %d | %.0f | %s | %.0f / %.0f | %s |", s.Sessions, s.Messages, s.IngestMsgsPS, searchable, s.LagP50ms, s.LagP99ms, live)
		for _, m := range r.Modes {
			f, a, h := s.Query[m+"/first"], s.Query[m+"/inprocess"], s.Query[m+"/http"]
			first := "–" // results made before the first pass was timed apart
			if f.P99ms > 0 {
				first = fmt.Sprintf("%.2f / %.2f", f.P50ms, f.P99ms)
			}
			steady := fmt.Sprintf("%.2f / %.2f", a.P50ms, a.P99ms)
			if a.CPUms > 0 { // results made before CPU was counted have none
				steady += fmt.Sprintf(" (CPU %.2f)", a.CPUms)
			}
			fmt.Fprintf(&b, " %s | %s | %.2f / %.2f |", first, steady, h.P50ms, h.P99ms)
		}
		rebuild := "–"
		if s.RebuildPS > 0 {
			rebuild = fmt.Sprintf("%.0f", s.RebuildPS)
		}
		raw, cpu := "–", "–"
		if s.RawBlevePS > 0 {
			raw = fmt.Sprintf("%.0f (%.2f×)", s.RawBlevePS, s.RebuildToRaw)
			cpu = fmt.Sprintf("%.2f / %.2f", s.RebuildCPUms, s.RawBleveCPUms)
		}
		fmt.Fprintf(&b, " %s | %s | %s | %.1f | %.1f | %.1f |\n", rebuild, raw, cpu, s.HeapPerSession/1024, s.RSSPerSession/1024, s.BytesPerSession/1024)
	}
	if len(r.Steps) > 0 && r.Steps[0].Phrase != nil {
		b.WriteString("\n" + phraseIntro + "\n\n")
		writePhraseTable(&b, r.Steps)
	}
	if len(r.Steps) > 0 && r.Steps[0].PerSession != nil {
		b.WriteString("\nDisk per session, against the data: the raw payload is the JSON the sync API received, the searchable " +
			"text the title and message text the index scores (once). Records are the bbolt file, the index the Bleve index " +
			"(or, in Weaviate mode, the launched Weaviate's data), vectors what the vector store keeps in the data directory.\n\n" +
			"| sessions | raw payload KiB | searchable text KiB | records KiB (× raw) | index KiB (× text) | vectors KiB | total KiB |\n" +
			"|---|---|---|---|---|---|---|\n")
		for _, s := range r.Steps {
			if p := s.PerSession; p != nil {
				fmt.Fprintf(&b, "| %d | %.1f | %.1f | %.1f (%.2f×) | %.1f (%.2f×) | %.1f | %.1f |\n", s.Sessions,
					p.Raw/1024, p.Text/1024, p.Records/1024, p.RecordsToRaw, p.Index/1024, p.IndexToText, p.Vectors/1024, p.Total/1024)
			}
		}
	}
	if len(r.Growth) > 0 {
		first, last := r.Steps[0], r.Steps[len(r.Steps)-1]
		fmt.Fprintf(&b, "\nGrowth from %d to %d sessions, fitted as cost ∝ sessions^b over all steps "+
			"(b = 0: flat, 1: proportional to the data):\n\n| cost | b | first → last |\n|---|---|---|\n", first.Sessions, last.Sessions)
		for _, m := range r.metrics() {
			if g, ok := r.Growth[m.name]; ok {
				fmt.Fprintf(&b, "| %s | %.2f | %s → %s |\n", m.name, g, humanFloat(m.get(first)), humanFloat(m.get(last)))
			}
		}
	}
	if rt := r.Restore; rt != nil {
		fmt.Fprintf(&b, "\nRestore drill after the last step (%d sessions): a hot backup of the records while serving, "+
			"`hindsight restore` of the file into an empty directory, then a server on the restored records until `/ready` "+
			"answers 200 (the full-text index rebuilt from the records).\n\n"+
			"| backup | backup size | restore | start to ready | total |\n|---|---|---|---|---|\n"+
			"| %.1f s | %.1f MiB | %.1f s | %.1f s | %.1f s |\n",
			rt.Sessions, rt.BackupS, float64(rt.BackupBytes)/(1<<20), rt.RestoreS, rt.ReadyS, rt.TotalS)
	}
	b.WriteString("\nEach step's queries run three times, one at a time: first in-process right after the ingest (cold: the " +
		"evaluator's block maxima of the segments just written are built on first use, pages are read in), then in-process " +
		"and over HTTP again, the steady state.\n")
	b.WriteString("\nIndex lag is measured under a bulk ingest at full speed, from each write's commit until its session is searchable: " +
		"the backlog such an import builds up, not the lag of one live message. Where the server holds bulk writes while " +
		"the indexer catches up (ingest.Pipeline.Admit), ingest msg/s is the indexer's pace; to searchable msg/s is the " +
		"ingest's messages over the time from its first write until every session is indexed, the speed of the import as " +
		"a whole either way. The live message column is that: during the ingest another client syncs one " +
		"message a second (POST /sync/message, as the plugins do) and polls full-text search over HTTP until it is found; " +
		"the delay runs from sending the message. Heap is what the Go process allocates; RSS also counts the resident pages of the " +
		"memory-mapped records (bbolt) and index files, so with memory to spare it follows the disk size.\n")
	fmt.Fprintf(&b, "\n![Latency](%s)\n\n![Memory and disk per session](%s)\n\n![Throughput](%s)\n", GrowthLatencyChart, GrowthMemoryChart, GrowthIngestChart)
	if len(r.Settings) > 0 {
		b.WriteString("\n## Settings\n\n")
		WriteSettingsTable(&b, r.Settings)
	}
	return b.String()
}

// phraseIntro explains the phrase table.
const phraseIntro = "Quoted phrases (`bench.PhraseQuery`), full-text, in process, after the plain queries, against the plain " +
	"full-text in-process figures of the same step: \"match\" is an error message or a topic the generator writes in " +
	"many sessions; \"none\" the words of two topics joined, which no session holds together; \"run\" 2 to 4 " +
	"consecutive words of a generated message (word salad from 45 words: thousands of sessions hold its word pairs, " +
	"few the phrase) and \"decoy\" a topic and two sentence words, whose pairs many sessions hold in some message but " +
	"few in one: for these two the pairs' positions are read for every document holding all its pairs (no text is read). Found counts " +
	"the queries that returned a session, partial those whose answer said the search stopped at its budget. The same " +
	"queries run twice: the first pass meets word blocks and pair positions no query read before (cold, as a plain " +
	"query's first pass), the second (\"again\") is the steady state."

// writePhraseTable writes one row per step and phrase kind.
func writePhraseTable(b *strings.Builder, steps []LoadStep) {
	b.WriteString("| sessions | kind | queries | found | partial | p50 / p99 ms | again p50 / p99 ms | plain full-text p50 / p99 ms | p99 × plain |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range steps {
		plain := s.Query["fulltext/inprocess"]
		for _, k := range PhraseKinds {
			p, ok := s.Phrase[k]
			if !ok {
				continue
			}
			ratio := "–"
			if plain.P99ms > 0 {
				ratio = fmt.Sprintf("%.2f", p.P99ms/plain.P99ms)
			}
			again := "–"
			if st, ok := s.PhraseSteady[k]; ok {
				again = fmt.Sprintf("%.2f / %.2f", st.P50ms, st.P99ms)
			}
			fmt.Fprintf(b, "| %d | %s | %d | %d | %d | %.2f / %.2f | %s | %.2f / %.2f | %s |\n", s.Sessions, k, p.Queries, p.Found,
				p.Partial, p.P50ms, p.P99ms, again, plain.P50ms, plain.P99ms, ratio)
		}
	}
}
