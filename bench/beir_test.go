package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/internal/datasetstest"
)

func docIDs(ds *Dataset) []string {
	ids := make([]string, len(ds.Corpus))
	for i, d := range ds.Corpus {
		ids[i] = d.ID
	}
	return ids
}

func queryIDs(ds *Dataset) []string {
	ids := make([]string, len(ds.Queries))
	for i, q := range ds.Queries {
		ids[i] = q.ID
	}
	return ids
}

// checkDataset asserts the invariants LoadBEIR promises for every dataset.
func checkDataset(t *testing.T, ds *Dataset, opts LoadOptions) {
	t.Helper()
	if len(ds.Queries) == 0 {
		t.Fatal("no queries")
	}
	if opts.MaxDocs > 0 && len(ds.Corpus) > opts.MaxDocs {
		t.Errorf("len(Corpus) = %d > MaxDocs %d", len(ds.Corpus), opts.MaxDocs)
	}
	if opts.MaxQueries > 0 && len(ds.Queries) > opts.MaxQueries {
		t.Errorf("len(Queries) = %d > MaxQueries %d", len(ds.Queries), opts.MaxQueries)
	}
	if len(ds.Qrels) != len(ds.Queries) {
		t.Errorf("len(Qrels) = %d, want one entry per query (%d)", len(ds.Qrels), len(ds.Queries))
	}
	inCorpus := make(map[string]bool, len(ds.Corpus))
	for _, d := range ds.Corpus {
		if inCorpus[d.ID] {
			t.Errorf("duplicate doc %q in Corpus", d.ID)
		}
		inCorpus[d.ID] = true
	}
	missing := make(map[string]bool)
	for _, q := range ds.Queries {
		if !hasPositive(ds.Qrels[q.ID]) {
			t.Errorf("query %q has no judgement > 0", q.ID)
		}
		for id, s := range ds.Qrels[q.ID] {
			if s > 0 && !inCorpus[id] {
				missing[id] = true
			}
		}
	}
	if len(missing) != ds.Stats.MissingDocs {
		t.Errorf("%d judged docs missing from Corpus, Stats.MissingDocs = %d", len(missing), ds.Stats.MissingDocs)
	}
}

func TestLoadBEIRFixtures(t *testing.T) {
	tiny := filepath.Join("testdata", "tiny")
	tinyGz := filepath.Join("testdata", "tiny-gz")
	tests := []struct {
		name        string
		dir         string
		opts        LoadOptions
		wantQueries []string
		wantDocs    []string
		wantQrels   map[string]map[string]int
		wantFile    string
		wantStats   LoadStats
	}{
		{
			// test.tsv is preferred over train.tsv. q3 has only a 0
			// judgement and q4 none in test.tsv, so both are dropped; the
			// "qx" row names no query. Numeric ids 2 and 4 become "2", "4".
			name:        "plain, default split",
			dir:         tiny,
			wantQueries: []string{"q1", "2"},
			wantDocs:    []string{"d1", "2", "d3", "4", "d5"},
			wantQrels:   map[string]map[string]int{"q1": {"d1": 2, "d3": 1}, "2": {"2": 1}},
			wantFile:    "test.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 2, QrelsRows: 5, UnknownQueryJudgements: 1},
		},
		{
			name:        "plain, explicit train split without header",
			dir:         tiny,
			opts:        LoadOptions{Split: "train"},
			wantQueries: []string{"q4"},
			wantDocs:    []string{"d1", "2", "d3", "4", "d5"},
			wantQrels:   map[string]map[string]int{"q4": {"4": 1}},
			wantFile:    "train.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 3, QrelsRows: 1},
		},
		{
			name:        "split given with .tsv suffix",
			dir:         tiny,
			opts:        LoadOptions{Split: "train.tsv"},
			wantQueries: []string{"q4"},
			wantDocs:    []string{"d1", "2", "d3", "4", "d5"},
			wantQrels:   map[string]map[string]int{"q4": {"4": 1}},
			wantFile:    "train.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 3, QrelsRows: 1},
		},
		{
			name:        "MaxQueries",
			dir:         tiny,
			opts:        LoadOptions{MaxQueries: 1},
			wantQueries: []string{"q1"},
			wantDocs:    []string{"d1", "2", "d3", "4", "d5"},
			wantQrels:   map[string]map[string]int{"q1": {"d1": 2, "d3": 1}},
			wantFile:    "test.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 2, QrelsRows: 5, UnknownQueryJudgements: 1},
		},
		{
			// q1 needs {d1, d3}, "2" needs {2}: 3 judged docs fill the budget.
			name:        "MaxDocs exactly the judged docs",
			dir:         tiny,
			opts:        LoadOptions{MaxDocs: 3},
			wantQueries: []string{"q1", "2"},
			wantDocs:    []string{"d1", "2", "d3"},
			wantQrels:   map[string]map[string]int{"q1": {"d1": 2, "d3": 1}, "2": {"2": 1}},
			wantFile:    "test.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 2, QrelsRows: 5, UnknownQueryJudgements: 1},
		},
		{
			// 3 judged docs plus 1 filler: the earliest unjudged doc, "4".
			name:        "MaxDocs with filler",
			dir:         tiny,
			opts:        LoadOptions{MaxDocs: 4},
			wantQueries: []string{"q1", "2"},
			wantDocs:    []string{"d1", "2", "d3", "4"},
			wantQrels:   map[string]map[string]int{"q1": {"d1": 2, "d3": 1}, "2": {"2": 1}},
			wantFile:    "test.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 2, QrelsRows: 5, UnknownQueryJudgements: 1},
		},
		{
			// q1 (2 docs) fits, "2" would make 3 > 2 and is skipped.
			name:        "MaxDocs skips a query that does not fit",
			dir:         tiny,
			opts:        LoadOptions{MaxDocs: 2},
			wantQueries: []string{"q1"},
			wantDocs:    []string{"d1", "d3"},
			wantQrels:   map[string]map[string]int{"q1": {"d1": 2, "d3": 1}},
			wantFile:    "test.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 2, QrelsRows: 5, UnknownQueryJudgements: 1},
		},
		{
			// q1 needs 2 > 1 and is skipped; the later query "2" fits.
			name:        "MaxDocs keeps a later query that fits",
			dir:         tiny,
			opts:        LoadOptions{MaxDocs: 1},
			wantQueries: []string{"2"},
			wantDocs:    []string{"2"},
			wantQrels:   map[string]map[string]int{"2": {"2": 1}},
			wantFile:    "test.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 2, QrelsRows: 5, UnknownQueryJudgements: 1},
		},
		{
			// Only q1 is kept, so doc "2" (relevant for the dropped query
			// "2") is filler, and the earliest one.
			name:        "MaxDocs and MaxQueries",
			dir:         tiny,
			opts:        LoadOptions{MaxDocs: 3, MaxQueries: 1},
			wantQueries: []string{"q1"},
			wantDocs:    []string{"d1", "2", "d3"},
			wantQrels:   map[string]map[string]int{"q1": {"d1": 2, "d3": 1}},
			wantFile:    "test.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 2, QrelsRows: 5, UnknownQueryJudgements: 1},
		},
		{
			name:        "MaxDocs larger than the corpus",
			dir:         tiny,
			opts:        LoadOptions{MaxDocs: 100},
			wantQueries: []string{"q1", "2"},
			wantDocs:    []string{"d1", "2", "d3", "4", "d5"},
			wantQrels:   map[string]map[string]int{"q1": {"d1": 2, "d3": 1}, "2": {"2": 1}},
			wantFile:    "test.tsv",
			wantStats:   LoadStats{CorpusDocs: 5, QueriesInFile: 4, UnjudgedQueries: 2, QrelsRows: 5, UnknownQueryJudgements: 1},
		},
		{
			// Gzipped corpus and queries, numeric ids, CRLF line ends and a
			// blank line; dev.tsv (no header) is preferred over train.tsv.
			name:        "gzipped",
			dir:         tinyGz,
			wantQueries: []string{"1", "2"},
			wantDocs:    []string{"10", "11", "12"},
			wantQrels:   map[string]map[string]int{"1": {"10": 1, "12": 2}, "2": {"11": 1}},
			wantFile:    "dev.tsv",
			wantStats:   LoadStats{CorpusDocs: 3, QueriesInFile: 3, UnjudgedQueries: 1, QrelsRows: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := LoadBEIR(t.Context(), tt.dir, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, ds, tt.opts)
			if got, want := ds.Name, filepath.Base(tt.dir); got != want {
				t.Errorf("Name = %q, want %q", got, want)
			}
			if got := queryIDs(ds); !slices.Equal(got, tt.wantQueries) {
				t.Errorf("queries = %q, want %q", got, tt.wantQueries)
			}
			if got := docIDs(ds); !slices.Equal(got, tt.wantDocs) {
				t.Errorf("docs = %q, want %q", got, tt.wantDocs)
			}
			if !reflect.DeepEqual(ds.Qrels, tt.wantQrels) {
				t.Errorf("Qrels = %v, want %v", ds.Qrels, tt.wantQrels)
			}
			if got, want := ds.QrelsFile, filepath.Join(tt.dir, "qrels", tt.wantFile); got != want {
				t.Errorf("QrelsFile = %q, want %q", got, want)
			}
			if ds.Stats != tt.wantStats {
				t.Errorf("Stats = %+v, want %+v", ds.Stats, tt.wantStats)
			}
		})
	}
}

func TestLoadBEIRFields(t *testing.T) {
	ds, err := LoadBEIR(t.Context(), filepath.Join("testdata", "tiny"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantDocs := []Doc{
		{ID: "d1", Title: "Flaky auth test", Text: "The auth test fails when the token cache is cold."},
		{ID: "2", Title: "Retry budget", Text: "Retries back off exponentially."},
		{ID: "d3", Title: "", Text: "No title here."}, // no title; metadata ignored
		{ID: "4", Title: "", Text: "Filler document four."},
		{ID: "d5", Title: "Filler", Text: "Filler document five."},
	}
	if !slices.Equal(ds.Corpus, wantDocs) {
		t.Errorf("Corpus = %+v\nwant %+v", ds.Corpus, wantDocs)
	}
	wantQueries := []Query{{ID: "q1", Text: "why does the auth test flake"}, {ID: "2", Text: "retry policy"}}
	if !slices.Equal(ds.Queries, wantQueries) {
		t.Errorf("Queries = %+v, want %+v", ds.Queries, wantQueries)
	}

	gz, err := LoadBEIR(t.Context(), filepath.Join("testdata", "tiny-gz"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The \r of the CRLF line end is gone and the text is not HTML-mangled.
	if got, want := gz.Corpus[2], (Doc{ID: "12", Title: "Twelve", Text: "Document <twelve> & more."}); got != want {
		t.Errorf("Corpus[2] = %+v, want %+v", got, want)
	}
}

func TestLoadBEIRMalformedFixture(t *testing.T) {
	dir := filepath.Join("testdata", "malformed")
	_, err := LoadBEIR(t.Context(), dir, LoadOptions{})
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *ParseError", err)
	}
	if want := filepath.Join(dir, "corpus.jsonl"); pe.File != want || pe.Line != 3 {
		t.Errorf("error at %s:%d, want %s:3", pe.File, pe.Line, want)
	}
	if !strings.Contains(err.Error(), "corpus.jsonl:3: invalid JSON") {
		t.Errorf("err = %q, want it to name corpus.jsonl:3 and invalid JSON", err)
	}
}

// writeDataset writes files (path relative to the returned directory ->
// content) into a fresh directory; a path ending in .gz is gzipped.
func writeDataset(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(content)
		if strings.HasSuffix(name, ".gz") {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			if _, err := zw.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			data = buf.Bytes()
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// validFiles returns a minimal valid dataset with one override applied.
func validFiles(override map[string]string) map[string]string {
	files := map[string]string{
		"corpus.jsonl":     `{"_id": "d1", "text": "one"}` + "\n" + `{"_id": "d2", "text": "two"}` + "\n",
		"queries.jsonl":    `{"_id": "q1", "text": "query"}` + "\n",
		"qrels/test.tsv":   "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
		"qrels/README.txt": "not a .tsv file, ignored",
	}
	for k, v := range override {
		if v == "" {
			delete(files, k)
			continue
		}
		files[k] = v
	}
	return files
}

func TestLoadBEIRErrors(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		opts     LoadOptions
		wantFile string // base name of the file a *ParseError must name; "" = not a ParseError
		wantLine int
		wantErr  string // substring of the message
	}{
		{
			name:     "invalid JSON in queries",
			files:    validFiles(map[string]string{"queries.jsonl": "{\"_id\": \"q1\", \"text\": \"a\"}\n\n{\"_id\": \"q2\", \n"}),
			wantFile: "queries.jsonl", wantLine: 3, wantErr: "invalid JSON",
		},
		{
			name:     "missing _id",
			files:    validFiles(map[string]string{"corpus.jsonl": `{"text": "no id"}` + "\n"}),
			wantFile: "corpus.jsonl", wantLine: 1, wantErr: `missing "_id"`,
		},
		{
			name:     "null _id",
			files:    validFiles(map[string]string{"corpus.jsonl": `{"_id": null, "text": "x"}` + "\n"}),
			wantFile: "corpus.jsonl", wantLine: 1, wantErr: `missing "_id"`,
		},
		{
			name:     "empty _id",
			files:    validFiles(map[string]string{"corpus.jsonl": `{"_id": "d1", "text": "x"}` + "\n" + `{"_id": " ", "text": "x"}` + "\n"}),
			wantFile: "corpus.jsonl", wantLine: 2, wantErr: `empty "_id"`,
		},
		{
			name:     "boolean _id",
			files:    validFiles(map[string]string{"corpus.jsonl": `{"_id": true, "text": "x"}` + "\n"}),
			wantFile: "corpus.jsonl", wantLine: 1, wantErr: "must be a string or a number",
		},
		{
			name:     "title of the wrong type",
			files:    validFiles(map[string]string{"corpus.jsonl": `{"_id": "d1", "title": 7, "text": "x"}` + "\n"}),
			wantFile: "corpus.jsonl", wantLine: 1, wantErr: "invalid JSON",
		},
		{
			name:     "duplicate doc id",
			files:    validFiles(map[string]string{"corpus.jsonl": `{"_id": "d1", "text": "x"}` + "\n" + `{"_id": 5, "text": "y"}` + "\n" + `{"_id": "5", "text": "z"}` + "\n"}),
			wantFile: "corpus.jsonl", wantLine: 3, wantErr: `duplicate doc id "5" (first on line 2)`,
		},
		{
			name:     "duplicate query id",
			files:    validFiles(map[string]string{"queries.jsonl": `{"_id": "q1", "text": "x"}` + "\n" + `{"_id": "q1", "text": "y"}` + "\n"}),
			wantFile: "queries.jsonl", wantLine: 2, wantErr: `duplicate query id "q1"`,
		},
		{
			name:     "gzipped corpus with a malformed line",
			files:    validFiles(map[string]string{"corpus.jsonl": "", "corpus.jsonl.gz": `{"_id": "d1", "text": "x"}` + "\n" + "not json\n"}),
			wantFile: "corpus.jsonl.gz", wantLine: 2, wantErr: "invalid JSON",
		},
		{
			name:     "qrels with two columns",
			files:    validFiles(map[string]string{"qrels/test.tsv": "q1\td1\t1\nq1\td2\n"}),
			wantFile: "test.tsv", wantLine: 2, wantErr: "want 3 columns",
		},
		{
			name:     "qrels score not an integer after the first line",
			files:    validFiles(map[string]string{"qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\thigh\n"}),
			wantFile: "test.tsv", wantLine: 3, wantErr: `score "high" is not an integer`,
		},
		{
			name:     "qrels empty id",
			files:    validFiles(map[string]string{"qrels/test.tsv": "q1\t\t1\n"}),
			wantFile: "test.tsv", wantLine: 1, wantErr: "empty query-id or corpus-id",
		},
		{
			name:    "no corpus",
			files:   validFiles(map[string]string{"corpus.jsonl": ""}),
			wantErr: "corpus.jsonl.gz exists",
		},
		{
			name:    "no queries",
			files:   validFiles(map[string]string{"queries.jsonl": ""}),
			wantErr: "queries.jsonl.gz exists",
		},
		{
			name:    "no qrels directory",
			files:   validFiles(map[string]string{"qrels/test.tsv": "", "qrels/README.txt": ""}),
			wantErr: "qrels: no such file or directory",
		},
		{
			name:    "unknown split",
			files:   validFiles(nil),
			opts:    LoadOptions{Split: "dev"},
			wantErr: `split "dev"`,
		},
		{
			name:    "several qrels files, none preferred",
			files:   validFiles(map[string]string{"qrels/test.tsv": "", "qrels/a.tsv": "q1\td1\t1\n", "qrels/b.tsv": "q1\td1\t1\n"}),
			wantErr: "a.tsv, b.tsv; set LoadOptions.Split",
		},
		{
			name:    "no judged query",
			files:   validFiles(map[string]string{"qrels/test.tsv": "q1\td1\t0\nq9\td1\t1\n"}),
			wantErr: "no query in",
		},
		{
			name:    "MaxDocs too small for every query",
			files:   validFiles(map[string]string{"qrels/test.tsv": "q1\td1\t1\nq1\td2\t1\n"}),
			opts:    LoadOptions{MaxDocs: 1},
			wantErr: "MaxDocs 1 is too small",
		},
		{
			name:    "negative MaxDocs",
			files:   validFiles(nil),
			opts:    LoadOptions{MaxDocs: -1},
			wantErr: "must not be negative",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDataset(t, tt.files)
			ds, err := LoadBEIR(t.Context(), dir, tt.opts)
			if err == nil {
				t.Fatalf("LoadBEIR succeeded with %d docs, want an error containing %q", len(ds.Corpus), tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantErr)
			}
			var pe *ParseError
			isParse := errors.As(err, &pe)
			switch {
			case tt.wantFile == "" && isParse:
				t.Errorf("err = %v is a *ParseError, want another error", err)
			case tt.wantFile != "" && !isParse:
				t.Errorf("err = %v, want a *ParseError", err)
			case tt.wantFile != "":
				if filepath.Base(pe.File) != tt.wantFile || pe.Line != tt.wantLine {
					t.Errorf("error at %s:%d, want %s:%d", pe.File, pe.Line, tt.wantFile, tt.wantLine)
				}
				if want := pe.File + ":" + strconv.Itoa(pe.Line) + ":"; !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestLoadBEIRFormats(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // far beyond bufio.Scanner's 64 KiB default
	tests := []struct {
		name      string
		files     map[string]string
		opts      LoadOptions
		wantDocs  []string
		wantQrels map[string]map[string]int
		check     func(t *testing.T, ds *Dataset)
	}{
		{
			name:      "TREC-style four-column qrels",
			files:     validFiles(map[string]string{"qrels/test.tsv": "q1 0 d2 1\nq1 0 d1 0\n"}),
			wantDocs:  []string{"d1", "d2"},
			wantQrels: map[string]map[string]int{"q1": {"d2": 1, "d1": 0}},
		},
		{
			name:      "space-separated qrels, header-less, repeated pair: last row wins",
			files:     validFiles(map[string]string{"qrels/test.tsv": "q1 d1 1\nq1 d2 1\nq1 d1 3\n"}),
			wantDocs:  []string{"d1", "d2"},
			wantQrels: map[string]map[string]int{"q1": {"d1": 3, "d2": 1}},
		},
		{
			name: "the only .tsv file, with a byte order mark and a blank last line",
			files: validFiles(map[string]string{
				"qrels/test.tsv":      "",
				"qrels/judgments.tsv": "\ufeffquery-id\tcorpus-id\tscore\nq1\td2\t1\n\n",
			}),
			wantDocs:  []string{"d1", "d2"},
			wantQrels: map[string]map[string]int{"q1": {"d2": 1}},
			check: func(t *testing.T, ds *Dataset) {
				if filepath.Base(ds.QrelsFile) != "judgments.tsv" {
					t.Errorf("QrelsFile = %q, want judgments.tsv", ds.QrelsFile)
				}
			},
		},
		{
			name: "plain file preferred over .gz",
			files: validFiles(map[string]string{
				"corpus.jsonl.gz": `{"_id": "gz", "text": "x"}` + "\n",
			}),
			wantDocs:  []string{"d1", "d2"},
			wantQrels: map[string]map[string]int{"q1": {"d1": 1}},
		},
		{
			name:      "a 3 MiB line",
			files:     validFiles(map[string]string{"corpus.jsonl": `{"_id": "d1", "text": "` + long + `"}` + "\n"}),
			wantDocs:  []string{"d1"},
			wantQrels: map[string]map[string]int{"q1": {"d1": 1}},
			check: func(t *testing.T, ds *Dataset) {
				if len(ds.Corpus[0].Text) != len(long) {
					t.Errorf("len(Text) = %d, want %d", len(ds.Corpus[0].Text), len(long))
				}
			},
		},
		{
			name:      "judged doc missing from the corpus",
			files:     validFiles(map[string]string{"qrels/test.tsv": "q1\td1\t1\nq1\tgone\t1\n"}),
			wantDocs:  []string{"d1", "d2"},
			wantQrels: map[string]map[string]int{"q1": {"d1": 1, "gone": 1}},
			check: func(t *testing.T, ds *Dataset) {
				if ds.Stats.MissingDocs != 1 {
					t.Errorf("Stats.MissingDocs = %d, want 1", ds.Stats.MissingDocs)
				}
			},
		},
		{
			// The missing doc takes no room in the slice: d1 plus one filler.
			name:      "judged doc missing from the corpus, sliced",
			files:     validFiles(map[string]string{"qrels/test.tsv": "q1\td1\t1\nq1\tgone\t1\n"}),
			opts:      LoadOptions{MaxDocs: 2},
			wantDocs:  []string{"d1", "d2"},
			wantQrels: map[string]map[string]int{"q1": {"d1": 1, "gone": 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := LoadBEIR(t.Context(), writeDataset(t, tt.files), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, ds, tt.opts)
			if got := docIDs(ds); !slices.Equal(got, tt.wantDocs) {
				t.Errorf("docs = %q, want %q", got, tt.wantDocs)
			}
			if !reflect.DeepEqual(ds.Qrels, tt.wantQrels) {
				t.Errorf("Qrels = %v, want %v", ds.Qrels, tt.wantQrels)
			}
			if tt.check != nil {
				tt.check(t, ds)
			}
		})
	}
}

func TestLoadBEIRCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := LoadBEIR(ctx, filepath.Join("testdata", "tiny"), LoadOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestLoadBEIRSharedDatasets(t *testing.T) {
	tests := []struct {
		name                        string // dataset directory
		label                       string
		opts                        LoadOptions
		wantDocs, wantQueries       int
		wantJudgements              int
		wantQrelsFile               string
		wantFirstQuery, wantLastDoc string
		wantStats                   LoadStats
	}{
		{
			name: "scifact-train", label: "all", wantDocs: 5183, wantQueries: 809, wantJudgements: 919,
			wantQrelsFile: "train.tsv", wantFirstQuery: "0",
			wantStats: LoadStats{CorpusDocs: 5183, QueriesInFile: 809, QrelsRows: 919},
		},
		{
			name: "cosqa-dev", label: "all", wantDocs: 6267, wantQueries: 500, wantJudgements: 500,
			wantQrelsFile: "dev.tsv", wantFirstQuery: "cosqa-train-8333",
			wantStats: LoadStats{CorpusDocs: 6267, QueriesInFile: 500, QrelsRows: 500},
		},
		{
			// Computed independently with a Python script over the files:
			// 310 queries whose relevant docs are exactly 200 distinct docs,
			// so the slice has no filler.
			name: "scifact-train", label: "MaxDocs=200", opts: LoadOptions{MaxDocs: 200},
			wantDocs: 200, wantQueries: 310, wantJudgements: -1,
			wantQrelsFile: "train.tsv", wantFirstQuery: "0", wantLastDoc: "56893404",
			wantStats: LoadStats{CorpusDocs: 5183, QueriesInFile: 809, QrelsRows: 919},
		},
		{
			// 50 queries need 41 distinct docs; 959 filler docs follow.
			name: "scifact-train", label: "MaxDocs=1000,MaxQueries=50", opts: LoadOptions{MaxDocs: 1000, MaxQueries: 50},
			wantDocs: 1000, wantQueries: 50, wantJudgements: -1,
			wantQrelsFile: "train.tsv", wantFirstQuery: "0", wantLastDoc: "56893404",
			wantStats: LoadStats{CorpusDocs: 5183, QueriesInFile: 809, QrelsRows: 919},
		},
		{
			name: "cosqa-dev", label: "MaxDocs=300", opts: LoadOptions{MaxDocs: 300},
			wantDocs: 300, wantQueries: 320, wantJudgements: -1,
			wantQrelsFile: "dev.tsv", wantFirstQuery: "cosqa-train-8333", wantLastDoc: "c6189",
			wantStats: LoadStats{CorpusDocs: 6267, QueriesInFile: 500, QrelsRows: 500},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.label, func(t *testing.T) {
			dir := datasetstest.Path(t, tt.name)
			ds, err := LoadBEIR(t.Context(), dir, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkDataset(t, ds, tt.opts)
			if ds.Name != tt.name {
				t.Errorf("Name = %q, want %q", ds.Name, tt.name)
			}
			if len(ds.Corpus) != tt.wantDocs || len(ds.Queries) != tt.wantQueries {
				t.Errorf("%d docs, %d queries; want %d, %d", len(ds.Corpus), len(ds.Queries), tt.wantDocs, tt.wantQueries)
			}
			judgements := 0
			for _, m := range ds.Qrels {
				judgements += len(m)
			}
			if tt.wantJudgements >= 0 && judgements != tt.wantJudgements {
				t.Errorf("%d judgements, want %d", judgements, tt.wantJudgements)
			}
			if filepath.Base(ds.QrelsFile) != tt.wantQrelsFile {
				t.Errorf("QrelsFile = %q, want %s", ds.QrelsFile, tt.wantQrelsFile)
			}
			if ds.Queries[0].ID != tt.wantFirstQuery {
				t.Errorf("first query %q, want %q", ds.Queries[0].ID, tt.wantFirstQuery)
			}
			if tt.wantLastDoc != "" && ds.Corpus[len(ds.Corpus)-1].ID != tt.wantLastDoc {
				t.Errorf("last doc %q, want %q", ds.Corpus[len(ds.Corpus)-1].ID, tt.wantLastDoc)
			}
			if ds.Stats != tt.wantStats {
				t.Errorf("Stats = %+v, want %+v", ds.Stats, tt.wantStats)
			}
			for _, d := range ds.Corpus {
				if d.Text == "" {
					t.Fatalf("doc %q has no text", d.ID)
				}
			}
		})
	}
}

func TestLoadBEIRSciFactContent(t *testing.T) {
	ds, err := LoadBEIR(t.Context(), datasetstest.Path(t, "scifact-train"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := ds.Corpus[0]
	if first.ID != "4983" || !strings.HasPrefix(first.Title, "Microstructural development of human newborn cerebral white matter") ||
		!strings.HasPrefix(first.Text, "Alterations of the architecture of cerebral white matter") {
		t.Errorf("Corpus[0] = %.120q %.120q %.120q", first.ID, first.Title, first.Text)
	}
	if got, want := ds.Queries[0], (Query{ID: "0", Text: "0-dimensional biomaterials lack inductive properties."}); got != want {
		t.Errorf("Queries[0] = %+v, want %+v", got, want)
	}
	if got := ds.Qrels["0"]["31715818"]; got != 1 {
		t.Errorf(`Qrels["0"]["31715818"] = %d, want 1`, got)
	}
}

func TestLoadBEIRDeterministic(t *testing.T) {
	dir := datasetstest.Path(t, "scifact-train")
	opts := LoadOptions{MaxDocs: 500, MaxQueries: 100}
	a, err := LoadBEIR(t.Context(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadBEIR(t.Context(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two loads with the same options differ")
	}
}
