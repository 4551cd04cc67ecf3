package bench

import (
	"fmt"
	"io"
	"strings"
)

// ImportRSSLimit is the bound on the importer's memory: a 1 GB history
// imports with a peak resident set under it.
const ImportRSSLimit = 200 << 20

// ImportRun is one measured import: a generated history of one format, or
// one agent's real transcripts.
type ImportRun struct {
	Agent    string `json:"agent"`
	Kind     string `json:"kind"` // generated or real
	Files    int    `json:"files"`
	Sessions int    `json:"sessions"` // sessions the importer found
	Messages int    `json:"messages"` // messages it uploaded
	Bytes    int64  `json:"bytes"`
	// ReadMBps reads the files' bytes and nothing more: the ceiling the
	// disk and page cache set, measured in the same run.
	ReadMBps float64 `json:"read_mb_per_s"`
	// Parse: the importer's readers alone, in the bench process, every
	// session read once, nothing sent.
	ParseMBps       float64 `json:"parse_mb_per_s"`
	ParseSessionsPS float64 `json:"parse_sessions_per_s"`
	ParseCPUSeconds float64 `json:"parse_cpu_s"` // the bench process's CPU time while parsing (the server idle)
	// Import: `hindsight import AGENT` in a process of its own against the
	// bench's server, to the last acknowledged write.
	ImportSeconds    float64 `json:"import_s"`
	ImportCPUSeconds float64 `json:"import_cpu_s"` // the import process's user and system time
	ImportMBps       float64 `json:"import_mb_per_s"`
	ImportSessionsPS float64 `json:"import_sessions_per_s"`
	ImportMessagesPS float64 `json:"import_messages_per_s"`
	PeakRSSBytes     int64   `json:"import_peak_rss_bytes"` // the import process's high-water mark, VmHWM (0: not measured)
	Note             string  `json:"note,omitempty"`
}

// ImportResult is what bench import measured.
type ImportResult struct {
	Command  string            `json:"command"`
	Size     int64             `json:"generated_bytes_target"`
	Settings map[string]string `json:"settings"`
	Runs     []ImportRun       `json:"runs"`
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// PrintImport writes the runs as a table.
func PrintImport(w io.Writer, r *ImportResult) {
	fmt.Fprint(w, importTable(r))
}

func importTable(r *ImportResult) string {
	var b strings.Builder
	b.WriteString("| history | files | sessions | messages | MB | read MB/s | parse MB/s (× read) | parse sessions/s | parse MB per CPU-s | import MB/s (× parse) | import sessions/s | import messages/s | import MB per CPU-s | import peak RSS MB |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range r.Runs {
		ratio := func(a, of float64) string {
			if of <= 0 {
				return ""
			}
			return fmt.Sprintf(" (%.2f×)", a/of)
		}
		rss := "-"
		if run.PeakRSSBytes > 0 {
			rss = fmt.Sprintf("%.0f", mb(run.PeakRSSBytes))
			if run.Bytes >= 1<<30 {
				if run.PeakRSSBytes < ImportRSSLimit {
					rss += " (under 200)"
				} else {
					rss += " (**over 200**)"
				}
			}
		}
		perCPU := func(s float64) float64 {
			if s <= 0 {
				return 0
			}
			return mb(run.Bytes) / s
		}
		fmt.Fprintf(&b, "| %s %s | %d | %d | %d | %.1f | %.0f | %.1f%s | %.0f | %.1f | %.1f%s | %.1f | %.0f | %.1f | %s |\n",
			run.Kind, run.Agent, run.Files, run.Sessions, run.Messages, mb(run.Bytes), run.ReadMBps,
			run.ParseMBps, ratio(run.ParseMBps, run.ReadMBps), run.ParseSessionsPS, perCPU(run.ParseCPUSeconds),
			run.ImportMBps, ratio(run.ImportMBps, run.ParseMBps), run.ImportSessionsPS, run.ImportMessagesPS, perCPU(run.ImportCPUSeconds), rss)
	}
	var notes []string
	for _, run := range r.Runs {
		if run.Note != "" {
			notes = append(notes, fmt.Sprintf("- %s %s: %s", run.Kind, run.Agent, run.Note))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	return b.String()
}

// WriteImportReport writes report.md and result.json into dir.
func WriteImportReport(dir string, r *ImportResult) error {
	var b strings.Builder
	b.WriteString("# Import: throughput and memory of `hindsight import`\n\nProduced by\n\n```\n" + r.Command + "\n```\n\n")
	fmt.Fprintf(&b, `Generated histories (about %.0f MB of each format, written in the assistant's own layout under a
temporary $HOME: sessions of the load generator with the tool outputs real transcripts have, a few
KB mostly and a tail of file dumps past the 256 KB part cap) and the real transcripts of the
datasets (their directory layouts rebuilt from manifest.tsv) are imported by `+"`hindsight import AGENT`"+`, run
as a process of its own against a server in the bench process. **read** reads the files' bytes
only (the page cache's ceiling, same run); **parse** is the importer's readers alone, in the bench
process, every session read once and nothing sent; **import** is the whole command, to the last
acknowledged write, through the server's date-keeping batches; its peak RSS is the import
process's high-water mark as the kernel counts it (VmHWM, read every 20 ms while it runs). Each phase starts once the server
has indexed what came before. Ratios are against the column before, measured in the same run;
MB per CPU-second (the bench process's CPU time while parsing, the import process's own) is
steadier than wall time when other work shares the cores. The real transcripts are small (a few MB per agent), so their
import figures are dominated by the process's start and the server's round trips.

`, mb(r.Size))
	b.WriteString(importTable(r))
	b.WriteString("\nSettings:\n\n")
	WriteSettings(&b, r.Settings)
	return WriteRun(dir, r, b.String())
}
