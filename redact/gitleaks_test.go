package redact

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zricethezav/gitleaks/v8/detect"

	"github.com/hindsight-dev/hindsight/bench"
)

// TestFindsWhatGitleaksFinds runs gitleaks' own detector (its library, in
// this test only: the binary carries only its rules) next to the Redactor,
// whose shapes (shape.go) run each rule only at its keywords: every secret
// gitleaks reports must be redacted, unless one of Hindsight's allowlists
// (own.go) keeps it on purpose. The texts are the generated secret corpus
// and, when the datasets are there, the first megabytes of the coding
// sessions, where the rules meet real text.
func TestFindsWhatGitleaksFinds(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range bench.SecretCorpus(5, 4) {
		texts = append(texts, s.Text)
	}
	texts = append(texts, codingSessions(t, 1<<20)...)
	byID := map[string]*rule{}
	for _, x := range r.rules {
		byID[x.id] = x
	}
	checked := 0
	for _, text := range texts {
		out, _ := r.String(text)
		for _, f := range d.DetectString(text) {
			x := byID[f.RuleID]
			if x == nil {
				continue // a rule on file paths
			}
			if hindsightAllowed(x, f.Secret, f.Match, func() string { return f.Line }) {
				continue
			}
			checked++
			if strings.Count(out, f.Secret) >= strings.Count(text, f.Secret) {
				t.Errorf("gitleaks' %s found %q, which the Redactor left:\n%s", f.RuleID, f.Secret, excerpt(out, f.Secret))
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d gitleaks findings were compared", checked)
	}
	t.Logf("%d of gitleaks' findings compared", checked)
}

func excerpt(s, sub string) string {
	i := strings.Index(s, sub)
	return s[max(0, i-80):min(len(s), i+len(sub)+40)]
}

// codingSessions returns texts of the coding-sessions corpus, up to limit
// bytes. The dataset missing skips the test loudly, and fails it when
// HINDSIGHT_REQUIRE_DATASETS is set, as make test does.
func codingSessions(t *testing.T, limit int) []string {
	t.Helper()
	root := cmp.Or(os.Getenv("HINDSIGHT_DATASETS"), filepath.Join("..", "..", "shared", "datasets"))
	f, err := os.Open(filepath.Join(root, "coding-sessions", "corpus.jsonl.gz"))
	if err != nil {
		msg := fmt.Sprintf("SKIPPING: dataset coding-sessions not available (%v); set HINDSIGHT_DATASETS to its parent directory", err)
		if os.Getenv("HINDSIGHT_REQUIRE_DATASETS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 64<<20)
	var out []string
	n := 0
	for sc.Scan() && n < limit {
		var d struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		// Sessions of up to 256 KiB: gitleaks' detector is slow on large
		// ones (every matching rule over the whole text).
		if len(d.Text) > 256<<10 {
			continue
		}
		out = append(out, d.Title, d.Text)
		n += len(d.Text)
	}
	return out
}
