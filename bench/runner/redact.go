package runner

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/pelletier/go-toml/v2"
	"github.com/rs/zerolog"
	"github.com/zricethezav/gitleaks/v8/config"

	"github.com/hindsight-dev/hindsight/bench"
	hconfig "github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/redact"
	"github.com/hindsight-dev/hindsight/server"
)

// RedactConfig is what bench redact measures.
type RedactConfig struct {
	Seed    uint64 // the secret corpus's seed
	PerKind int    // samples per kind; 0 = 20
	// Datasets holds coding-sessions, cosqa-dev and scifact-train (BEIR
	// layout), the clean corpora of the false-positive count, and
	// transcripts, raw assistant histories (an extra corpus: text as it lies
	// on disk, JSON and binary databases included).
	Datasets string
	// Labels lists the findings in the clean corpora that are credentials
	// the corpora really hold (a TSV of corpus, value hash, label, note);
	// every other finding is a false positive.
	Labels string
	// IngestMessages is the batch phase of each ingest run; 0 = 50,000.
	IngestMessages int
	Rounds         int // ingest runs with redaction off and on, alternated; 0 = 2 each
	Out            string
	JSON           bool
	Command        string
}

// RedactResult is every number of a bench redact run.
type RedactResult struct {
	Settings   map[string]string `json:"settings"`
	Recall     RecallResult      `json:"recall"`
	Clean      CleanResult       `json:"clean"`
	Throughput ThroughputResult  `json:"throughput"`
	Ingest     IngestOnOff       `json:"ingest"`
}

// RecallResult is redaction on the labelled secret corpus.
type RecallResult struct {
	Samples    int          `json:"samples"`
	Kinds      int          `json:"kinds"`
	Redacted   int          `json:"redacted"`
	Recall     float64      `json:"recall"`
	Idempotent bool         `json:"idempotent"` // redacting the output again changed nothing
	PerKind    []KindRecall `json:"per_kind"`
	// Misses name the samples whose secret survived (generated secrets are
	// not printed: they have real formats and would set off scanners).
	Misses []string `json:"misses"`
}

// KindRecall is one kind's recall and the rules that found it.
type KindRecall struct {
	Kind     string         `json:"kind"`
	Family   string         `json:"family"`
	Samples  int            `json:"samples"`
	Redacted int            `json:"redacted"`
	Recall   float64        `json:"recall"`
	Rules    map[string]int `json:"rules"`
}

// CleanResult is redaction on text that should hold no secret.
type CleanResult struct {
	Corpora []CleanCorpus `json:"corpora"`
	// FalsePositivesPer10MB is over the three clean corpora (the
	// transcripts, an extra, are reported apart, in Corpora).
	FalsePositivesPer10MB float64   `json:"false_positives_per_10mb"`
	Findings              []Finding `json:"findings"`
}

// CleanCorpus is one corpus's findings.
type CleanCorpus struct {
	Name                  string  `json:"name"`
	Extra                 bool    `json:"extra"` // raw histories, beyond the three clean corpora
	Bytes                 int64   `json:"bytes"`
	Texts                 int     `json:"texts"`
	Findings              int     `json:"findings"`
	Credentials           int     `json:"credentials"` // findings labelled as real credentials in the corpus
	FalsePositives        int     `json:"false_positives"`
	FalsePositivesPer10MB float64 `json:"false_positives_per_10mb"`
}

// Finding is one redaction in a clean corpus. The value is never written
// whole: some are live credentials the corpora hold.
type Finding struct {
	Corpus  string `json:"corpus"`
	Doc     string `json:"doc"`
	Rule    string `json:"rule"`
	Value   string `json:"value"`  // its first 4 characters and its length
	Hash    string `json:"sha256"` // of the value, 12 hex digits: the labels' key
	Context string `json:"context"`
	Label   string `json:"label"` // "" = false positive
	Note    string `json:"note,omitempty"`
}

// ThroughputResult is redaction speed on one core.
type ThroughputResult struct {
	Bytes       int64   `json:"bytes"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	MBPerSCore  float64 `json:"mb_per_s_per_core"`
	CPUMeasured bool    `json:"cpu_time_measured"` // false: wall time (no thread CPU clock here)
	// Peer is gitleaks' keyword prefilter alone (lower-case copy and
	// Aho-Corasick pass, as its detector runs it before any rule) on the
	// same texts on the same core.
	Peer      string  `json:"peer"`
	PeerMBPS  float64 `json:"peer_mb_per_s_per_core"`
	PeerRatio float64 `json:"redaction_over_peer_speed"`
}

// IngestOnOff is bench ingest's batch phase with redaction off and on.
type IngestOnOff struct {
	// Cost is the redaction of the same workload on one core, timed by CPU
	// clock: what redaction adds to a sync whatever else the machine runs.
	Cost IngestCost  `json:"cost"`
	Runs []IngestRun `json:"runs"`
	// The medians of the runs, and on over off.
	OffMsgsPerS float64 `json:"off_messages_per_s"`
	OnMsgsPerS  float64 `json:"on_messages_per_s"`
	Ratio       float64 `json:"on_over_off"`
	Redactions  int64   `json:"redactions_in_workload"`
}

// IngestCost is the CPU time, on one core, of decoding the batch
// workload (what every sync costs) and of redacting it.
type IngestCost struct {
	Messages         int     `json:"messages"`
	Bytes            int64   `json:"bytes"`
	DecodeCPU        float64 `json:"decode_cpu_s"`
	RedactCPU        float64 `json:"redact_cpu_s"`
	RedactMsgsPerS   float64 `json:"redact_messages_per_s_per_core"`
	RedactOverDecode float64 `json:"redact_over_decode"`
	CPUMeasured      bool    `json:"cpu_time_measured"`
}

// IngestRun is one run.
type IngestRun struct {
	Redact   bool    `json:"redact"`
	Messages int     `json:"messages"`
	MsgsPerS float64 `json:"messages_per_s"`
	P99ms    float64 `json:"p99_ms"`
}

// Redact runs bench redact: recall on the generated secret corpus, false
// positives on the clean corpora, throughput on one core against gitleaks'
// prefilter, and batch ingest with redaction off and on in the same run.
func Redact(ctx context.Context, c RedactConfig, stdout, stderr io.Writer) error {
	c.PerKind = cmp.Or(c.PerKind, 20)
	c.IngestMessages = cmp.Or(c.IngestMessages, 50_000)
	c.Rounds = cmp.Or(c.Rounds, 2)
	progressOut := stderr
	if c.JSON {
		progressOut = io.Discard
	}
	red, err := redact.New(redact.Options{})
	if err != nil {
		return err
	}
	res := RedactResult{Settings: runSettings(map[string]string{
		"command": c.Command, "seed": strconv.FormatUint(c.Seed, 10), "per kind": strconv.Itoa(c.PerKind),
		"rules": strconv.Itoa(len(red.Rules())), "load average (1 min, at start)": loadAverage(),
	})}
	fmt.Fprintln(progressOut, "recall on the generated secret corpus...")
	res.Recall = secretRecall(red, c.Seed, c.PerKind)
	fmt.Fprintln(progressOut, "false positives on the clean corpora...")
	texts, err := cleanFindings(ctx, red, c.Datasets, c.Labels, &res.Clean)
	if err != nil {
		return err
	}
	fmt.Fprintln(progressOut, "throughput on one core...")
	if res.Throughput, err = throughput(red, texts); err != nil {
		return err
	}
	if res.Ingest, err = ingestOnOff(ctx, c, progressOut); err != nil {
		return err
	}
	if c.JSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	report := redactReport(res)
	fmt.Fprint(stdout, report)
	if c.Out == "" {
		return nil
	}
	return bench.WriteRun(c.Out, res, report)
}

// secretRecall redacts every sample and checks its secret is gone, and
// that redacting the output again changes nothing.
func secretRecall(red *redact.Redactor, seed uint64, perKind int) RecallResult {
	kinds := bench.SecretKinds()
	r := RecallResult{Kinds: len(kinds), Idempotent: true}
	byKind := map[string]*KindRecall{}
	for _, k := range kinds {
		kr := &KindRecall{Kind: k.Name, Family: k.Family, Rules: map[string]int{}}
		byKind[k.Name] = kr
	}
	seen := map[string]int{}
	for _, s := range bench.SecretCorpus(seed, perKind) {
		kr := byKind[s.Kind]
		kr.Samples++
		seen[s.Kind]++
		out, counts := red.String(s.Text)
		if again, c := red.String(out); c != nil || again != out {
			r.Idempotent = false
		}
		if strings.Contains(out, s.Secret) {
			r.Misses = append(r.Misses, fmt.Sprintf("%s #%d", s.Kind, seen[s.Kind]))
			continue
		}
		kr.Redacted++
		for rule, n := range counts {
			kr.Rules[rule] += n
		}
	}
	for _, k := range kinds {
		kr := byKind[k.Name]
		kr.Recall = float64(kr.Redacted) / float64(kr.Samples)
		r.Samples += kr.Samples
		r.Redacted += kr.Redacted
		r.PerKind = append(r.PerKind, *kr)
	}
	r.Recall = float64(r.Redacted) / float64(r.Samples)
	return r
}

// cleanCorpus is a named set of texts.
type cleanCorpus struct {
	name  string
	extra bool
	texts []bench.Doc
}

// cleanFindings redacts the clean corpora, lists every finding and counts
// the false positives; it returns the texts of the three clean corpora, for
// the throughput run.
func cleanFindings(ctx context.Context, red *redact.Redactor, dir, labelsPath string, out *CleanResult) ([]string, error) {
	labels, err := readLabels(labelsPath)
	if err != nil {
		return nil, err
	}
	var corpora []cleanCorpus
	for _, name := range []string{"coding-sessions", "cosqa-dev", "scifact-train"} {
		ds, err := bench.LoadBEIR(ctx, filepath.Join(dir, name), bench.LoadOptions{})
		if err != nil {
			return nil, err
		}
		corpora = append(corpora, cleanCorpus{name: name, texts: ds.Corpus})
	}
	if held, err := rawFiles(filepath.Join(dir, "transcripts")); err == nil {
		corpora = append(corpora, cleanCorpus{name: "transcripts", extra: true, texts: held})
	}
	var texts []string
	var cleanBytes int64
	var cleanFP int
	for _, cc := range corpora {
		c := CleanCorpus{Name: cc.name, Extra: cc.extra}
		for _, d := range cc.texts {
			for _, t := range []string{d.Title, d.Text} {
				if t == "" {
					continue
				}
				c.Texts++
				c.Bytes += int64(len(t))
				if !cc.extra {
					texts = append(texts, t)
				}
				redacted, counts := red.String(t)
				if counts == nil {
					continue
				}
				for _, f := range findingsOf(t, redacted) {
					f.Corpus, f.Doc = cc.name, d.ID
					if l, ok := labels[cc.name+"\t"+f.Hash]; ok {
						f.Label, f.Note = l[0], l[1]
						c.Credentials++
					} else {
						c.FalsePositives++
					}
					c.Findings++
					out.Findings = append(out.Findings, f)
				}
			}
		}
		c.FalsePositivesPer10MB = float64(c.FalsePositives) / (float64(c.Bytes) / 10e6)
		if !cc.extra {
			cleanBytes += c.Bytes
			cleanFP += c.FalsePositives
		}
		out.Corpora = append(out.Corpora, c)
	}
	out.FalsePositivesPer10MB = float64(cleanFP) / (float64(cleanBytes) / 10e6)
	return texts, nil
}

// findingsOf recovers each redacted value of original from its redacted
// form: the text between markers is unchanged, so each marker's value is
// what lies between the text before it and the text after it.
func findingsOf(original, redacted string) []Finding {
	var out []Finding
	oi, ri := 0, 0
	markers := redact.Markers(redacted)
	for k, m := range markers {
		oi += m.Start - ri
		next := len(redacted)
		if k+1 < len(markers) {
			next = markers[k+1].Start
		}
		after := redacted[m.End:next]
		end := len(original)
		if after != "" {
			if j := strings.Index(original[oi:], after); j >= 0 {
				end = oi + j
			}
		} else if k+1 < len(markers) {
			end = oi // adjacent markers: the split is unknown; attribute to the first
		}
		value := original[oi:end]
		sum := sha256.Sum256([]byte(value))
		ctxStart := max(0, m.Start-48)
		context := strings.ReplaceAll(strings.ReplaceAll(redacted[ctxStart:m.End], "\n", `\n`), "\r", `\r`)
		out = append(out, Finding{Rule: m.Rule, Value: mask(value), Hash: hex.EncodeToString(sum[:6]), Context: context})
		oi, ri = end, m.End
	}
	return out
}

// mask shows a value's first 4 characters and its length.
func mask(v string) string {
	r := []rune(v)
	return fmt.Sprintf("%s… (%d chars)", string(r[:min(4, len(r))]), len(r))
}

// readLabels reads corpus, hash, label, note lines ('#' starts a comment).
func readLabels(path string) (map[string][2]string, error) {
	out := map[string][2]string{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 3 {
			return nil, fmt.Errorf("labels %s:%d: want corpus, sha256, label[, note] separated by tabs", path, n)
		}
		note := ""
		if len(f) > 3 {
			note = f[3]
		}
		out[f[0]+"\t"+f[1]] = [2]string{f[2], note}
	}
	return out, sc.Err()
}

// rawFiles reads every file under dir as one text (the transcripts:
// assistants' histories as they lie on disk).
func rawFiles(dir string) ([]bench.Doc, error) {
	var out []bench.Doc
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".tsv") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, bench.Doc{ID: rel, Text: string(b)})
		return nil
	})
	return out, err
}

// throughput redacts texts on one locked thread, and runs gitleaks'
// prefilter over them on the same thread.
func throughput(red *redact.Redactor, texts []string) (ThroughputResult, error) {
	var t ThroughputResult
	for _, s := range texts {
		t.Bytes += int64(len(s))
	}
	var vc config.ViperConfig
	if err := toml.Unmarshal([]byte(config.DefaultConfig), &vc); err != nil {
		return t, err
	}
	var words []string
	for _, r := range vc.Rules {
		for _, k := range r.Keywords {
			words = append(words, strings.ToLower(k))
		}
	}
	slices.Sort(words)
	trie := ahocorasick.NewTrieBuilder().AddStrings(slices.Compact(words)).Build()
	t.Peer = "gitleaks' keyword prefilter alone (strings.ToLower, then its Aho-Corasick automaton, github.com/BobuSumisu/aho-corasick)"
	var cpu, peerCPU time.Duration
	cpu, t.CPUMeasured = onOneCore(func() {
		for _, s := range texts {
			red.String(s)
		}
	})
	peerCPU, _ = onOneCore(func() {
		for _, s := range texts {
			found := map[string]bool{}
			low := strings.ToLower(s)
			for _, m := range trie.MatchString(low) {
				found[low[m.Pos():int(m.Pos())+len(m.Match())]] = true
			}
		}
	})
	t.CPUSeconds = cpu.Seconds()
	t.MBPerSCore = float64(t.Bytes) / 1e6 / cpu.Seconds()
	t.PeerMBPS = float64(t.Bytes) / 1e6 / peerCPU.Seconds()
	t.PeerRatio = t.MBPerSCore / t.PeerMBPS
	return t, nil
}

// onOneCore runs f on one locked OS thread and returns the thread's CPU
// time (or, without a thread clock, the wall time and false).
func onOneCore(f func()) (time.Duration, bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runtime.GC()
	c0, ok := threadCPU()
	w0 := time.Now()
	f()
	if c1, ok1 := threadCPU(); ok && ok1 {
		return c1 - c0, true
	}
	return time.Since(w0), false
}

// ingestOnOff runs bench ingest's batch phase against a server with
// redaction off, then on, alternated c.Rounds times each.
func ingestOnOff(ctx context.Context, c RedactConfig, progressOut io.Writer) (IngestOnOff, error) {
	var r IngestOnOff
	var err error
	fmt.Fprintln(progressOut, "redaction of the batch workload on one core...")
	if r.Cost, err = ingestCost(c.IngestMessages); err != nil {
		return r, err
	}
	var on, off []float64
	for i := range 2 * c.Rounds {
		redacting := i%2 == 1
		fmt.Fprintf(progressOut, "batch ingest, redaction %s (round %d of %d)...\n", onOff(redacting), i/2+1, c.Rounds)
		dir, err := os.MkdirTemp("", "hindsight-bench-redact-")
		if err != nil {
			return r, err
		}
		base := hconfig.Config{Redact: hconfig.Redact{Off: !redacting}}
		client, a, stop, err := startServer(ctx, filepath.Join(dir, "data"), zerolog.Nop(), base, Vectors{Embedder: "none", Store: "embedded"})
		if err != nil {
			os.RemoveAll(dir)
			return r, err
		}
		res, err := bench.RunIngest(ctx, client, dir, bench.IngestOptions{BatchMessages: c.IngestMessages, Singles: 1, Concurrency: 1, Seed: 1, Progress: progressOut})
		if err == nil && redacting {
			r.Redactions, err = totalRedactions(ctx, a)
		}
		stop()
		os.RemoveAll(dir)
		if err != nil {
			return r, fmt.Errorf("ingest with redaction %s: %w", onOff(redacting), err)
		}
		r.Runs = append(r.Runs, IngestRun{Redact: redacting, Messages: res.Batch.Messages, MsgsPerS: res.Batch.MessagesPS, P99ms: res.Batch.P99ms})
		if redacting {
			on = append(on, res.Batch.MessagesPS)
		} else {
			off = append(off, res.Batch.MessagesPS)
		}
	}
	r.OnMsgsPerS, r.OffMsgsPerS = median(on), median(off)
	r.Ratio = r.OnMsgsPerS / r.OffMsgsPerS
	return r, nil
}

// ingestCost decodes the batch workload of bench ingest (the same
// generator and seed) and redacts it, on one locked thread.
func ingestCost(messages int) (IngestCost, error) {
	red, err := redact.New(redact.Options{})
	if err != nil {
		return IngestCost{}, err
	}
	g := bench.NewGenerator(1)
	var bodies [][]byte
	var pending []bench.GenMessage
	var sessions []bench.GenSession
	flush := func() {
		b, _ := json.Marshal(map[string]any{"sessions": sessions, "messages": pending})
		bodies = append(bodies, b)
		pending, sessions = nil, nil
	}
	c := IngestCost{}
	for c.Messages < messages {
		s := g.Session(40)
		sessions = append(sessions, s)
		for _, m := range s.Messages {
			if c.Messages == messages {
				break
			}
			pending = append(pending, m)
			c.Messages++
			if len(pending) == 500 {
				flush()
			}
		}
	}
	if len(pending) > 0 {
		flush()
	}
	batches := make([]ingest.Batch, len(bodies))
	var decodeErr error
	decode, _ := onOneCore(func() {
		for i, b := range bodies {
			c.Bytes += int64(len(b))
			if batches[i], err = ingest.DecodeBatch(b, ingest.Limits{}); err != nil {
				decodeErr = err
			}
		}
	})
	if decodeErr != nil {
		return c, decodeErr
	}
	cpu, ok := onOneCore(func() {
		for i := range batches {
			ingest.RedactBatch(red, &batches[i])
		}
	})
	c.DecodeCPU, c.RedactCPU, c.CPUMeasured = decode.Seconds(), cpu.Seconds(), ok
	c.RedactMsgsPerS = float64(c.Messages) / cpu.Seconds()
	c.RedactOverDecode = cpu.Seconds() / decode.Seconds()
	return c, nil
}

// totalRedactions sums every user's redaction counts.
func totalRedactions(ctx context.Context, a *server.Server) (int64, error) {
	var n int64
	err := a.Store.View(ctx, func(tx *kv.Tx) error {
		users, err := tx.Users()
		if err != nil {
			return err
		}
		for _, u := range users {
			for _, c := range tx.Redactions(u.ID) {
				n += c
			}
		}
		return nil
	})
	return n, err
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// redactReport is the report.md of a run.
func redactReport(r RedactResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bench redact\n\n```\n%s\n```\n\n", r.Settings["command"])
	fmt.Fprintf(&b, "Commit %s, %s, %s CPUs, load average %s at start, %s.\n\n",
		r.Settings["commit"], r.Settings["go"], r.Settings["cpus"], r.Settings["load average (1 min, at start)"], r.Settings["date"])
	rc := r.Recall
	fmt.Fprintf(&b, "## Recall on generated secrets\n\n%d samples of %d kinds (seed %s, generated to each format's shape by `bench.SecretCorpus`): "+
		"**%.2f%%** redacted (%d missed); redacting the output again changes nothing: %v.\n\n",
		rc.Samples, rc.Kinds, r.Settings["seed"], 100*rc.Recall, rc.Samples-rc.Redacted, rc.Idempotent)
	b.WriteString("| kind | family | samples | redacted | recall | found by |\n|---|---|---:|---:|---:|---|\n")
	for _, k := range rc.PerKind {
		rules := slices.Sorted(func(yield func(string) bool) {
			for rule := range k.Rules {
				if !yield(rule) {
					return
				}
			}
		})
		var parts []string
		for _, rule := range rules {
			parts = append(parts, fmt.Sprintf("%s %d", rule, k.Rules[rule]))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f%% | %s |\n", k.Kind, k.Family, k.Samples, k.Redacted, 100*k.Recall, strings.Join(parts, ", "))
	}
	if len(rc.Misses) > 0 {
		fmt.Fprintf(&b, "\nMissed: %s.\n", strings.Join(rc.Misses, ", "))
	}
	c := r.Clean
	fmt.Fprintf(&b, "\n## False positives on clean text\n\n**%.2f false positives per 10 MB** over coding-sessions, CoSQA and SciFact (transcripts, raw histories, apart). "+
		"A finding is a false positive unless it is labelled as a credential the corpus really holds (`bench/testdata/redact/clean-labels.tsv`); "+
		"values are shown as their first 4 characters, as some are live keys.\n\n", c.FalsePositivesPer10MB)
	b.WriteString("| corpus | MB | texts | findings | credentials | false positives | per 10 MB |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, cc := range c.Corpora {
		fmt.Fprintf(&b, "| %s | %.1f | %d | %d | %d | %d | %.2f |\n", cc.Name, float64(cc.Bytes)/1e6, cc.Texts, cc.Findings, cc.Credentials, cc.FalsePositives, cc.FalsePositivesPer10MB)
	}
	b.WriteString("\nEvery finding:\n\n| corpus | doc | rule | value | sha256 | label | before it |\n|---|---|---|---|---|---|---|\n")
	esc := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "`", "'") }
	for _, f := range c.Findings {
		label := f.Label
		if label == "" {
			label = "**false positive**"
		}
		if f.Note != "" {
			label += ": " + f.Note
		}
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` | %s | %s | `%s` |\n", f.Corpus, esc(f.Doc), f.Rule, esc(f.Value), f.Hash, esc(label), esc(f.Context))
	}
	t := r.Throughput
	clock := "thread CPU time"
	if !t.CPUMeasured {
		clock = "wall time"
	}
	fmt.Fprintf(&b, "\n## Throughput\n\n%.1f MB of the three clean corpora, text by text on one core (%s): **%.0f MB/s per core**. "+
		"The peer, %s, on the same texts and core: %.0f MB/s; redaction runs at %.2f× its speed.\n",
		float64(t.Bytes)/1e6, clock, t.MBPerSCore, t.Peer, t.PeerMBPS, t.PeerRatio)
	in := r.Ingest
	ic := in.Cost
	fmt.Fprintf(&b, "\n## Batch ingest\n\nWhat redaction adds to a sync, on one core by its CPU clock (other load does not count): "+
		"`bench ingest`'s batch workload, %d messages (%.1f MB of `/sync/batch` bodies), is redacted in %.2f s, "+
		"**%.0f messages/s per core**, %.2f times the CPU of decoding the same bodies (%.2f s), which every sync pays.\n\n",
		ic.Messages, float64(ic.Bytes)/1e6, ic.RedactCPU, ic.RedactMsgsPerS, ic.RedactOverDecode, ic.DecodeCPU)
	fmt.Fprintf(&b, "`bench ingest`'s batch phase itself (batches of 500 messages through `POST /sync/batch` from two clients, "+
		"the server on the same machine), redaction off and on alternated in this run: **%.0f messages/s with redaction on**, %.0f off "+
		"(medians; on/off = %.2f). These are wall-clock rates on a shared machine (load average above): they move with its load "+
		"from one run to the next more than redaction moves them. The generated workload held %d secrets.\n\n"+
		"| round | redaction | messages | messages/s | p99 ms |\n|---:|---|---:|---:|---:|\n",
		in.OnMsgsPerS, in.OffMsgsPerS, in.Ratio, in.Redactions)
	for i, run := range in.Runs {
		fmt.Fprintf(&b, "| %d | %s | %d | %.0f | %.1f |\n", i/2+1, onOff(run.Redact), run.Messages, run.MsgsPerS, run.P99ms)
	}
	return b.String()
}
