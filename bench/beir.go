package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Doc is one corpus document of a BEIR dataset.
type Doc struct {
	ID, Title, Text string
	// Session is the document as a coding assistant's session, when the
	// dataset has one (sessions.jsonl; see LoadBEIR); nil for plain BEIR
	// documents.
	Session *Session
}

// Query is one query of a BEIR dataset. Kind is the query's "kind" field
// ("" when it has none): the coding-session set labels each query recall,
// identifier or topic, and the metrics are also reported per kind.
type Query struct{ ID, Text, Kind string }

// Dataset is a BEIR-layout dataset loaded into memory by [LoadBEIR].
//
// A Dataset is a plain value: it is not modified after LoadBEIR returns and
// is safe for concurrent readers.
type Dataset struct {
	// Name is the base name of the directory the dataset was loaded from.
	Name string
	// Corpus holds the loaded documents in corpus-file order. With
	// LoadOptions.MaxDocs it is a slice of the file (see LoadOptions).
	Corpus []Doc
	// Queries holds the kept queries in queries-file order. Every kept query
	// has at least one judgement with score > 0 in Qrels.
	Queries []Query
	// Qrels maps query id -> doc id -> graded relevance, for the kept queries
	// only. Judgements with score <= 0 are kept as read; the metrics in this
	// package treat them as non-relevant. A judged doc id need not be in
	// Corpus (see LoadStats.MissingDocs).
	Qrels map[string]map[string]int
	// QrelsFile is the path of the qrels file that was read.
	QrelsFile string
	// Stats counts what the loader read and dropped.
	Stats LoadStats
}

// LoadStats records how the files of a dataset mapped onto the loaded
// Dataset, so a report can say what was dropped and why.
type LoadStats struct {
	CorpusDocs      int // documents in the corpus file
	QueriesInFile   int // queries in the queries file
	UnjudgedQueries int // queries in the file without any judgement > 0; never loaded
	QrelsRows       int // judgement rows in the qrels file, header excluded
	// UnknownQueryJudgements counts judgements (distinct query-doc pairs)
	// whose query id is not in the queries file; they are ignored.
	UnknownQueryJudgements int
	// MissingDocs counts distinct doc ids judged relevant (score > 0) for a
	// kept query that do not occur in the corpus file. Such a judgement still
	// counts towards Recall's denominator and nDCG's ideal ranking, as in
	// pytrec_eval, so the affected queries cannot reach a score of 1.
	MissingDocs int
}

// LoadOptions selects which part of a BEIR dataset LoadBEIR keeps.
// The zero value loads everything with the default qrels file.
type LoadOptions struct {
	// Split names the qrels file to read: "test" reads qrels/test.tsv (a
	// ".tsv" suffix is accepted too). "" prefers test.tsv, then dev.tsv,
	// then train.tsv, then the only .tsv file in qrels/; with several other
	// files and none of those three, LoadBEIR fails and asks for a Split.
	Split string
	// MaxDocs caps len(Dataset.Corpus); 0 keeps all documents. With
	// MaxDocs > 0 the slice is chosen deterministically as follows:
	//
	//  1. Queries are considered in queries-file order. A query is kept if
	//     the set of documents judged relevant (score > 0) for the queries
	//     kept so far, together with its own such documents, still has at
	//     most MaxDocs members; otherwise it is skipped and the next query
	//     is tried. Judged documents absent from the corpus file take no
	//     room. Consideration stops once MaxQueries queries are kept.
	//  2. The corpus holds every document judged relevant for a kept query,
	//     plus "filler": the earliest documents in corpus-file order that
	//     are not judged relevant for a kept query, until MaxDocs documents
	//     are held or the file is exhausted. Documents judged for skipped
	//     queries may be filler.
	//  3. The result is in corpus-file order.
	//
	// So every kept query can be answered perfectly from the slice, and a
	// 200-document slice holds exactly 200 documents when the file has them.
	MaxDocs int
	// MaxQueries caps len(Dataset.Queries): the first MaxQueries queries
	// that have a judgement > 0 (and, with MaxDocs, fit the budget) are
	// kept. 0 keeps all.
	MaxQueries int
}

// ParseError reports malformed input at a line of a dataset file.
type ParseError struct {
	File string // path of the file
	Line int    // 1-based line number
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

func (e *ParseError) Unwrap() error { return e.Err }

// maxLineBytes bounds one line of a dataset file. BEIR corpora have
// documents of tens of kilobytes; the bound only stops a corrupt file (for
// example one without newlines) from exhausting memory.
const maxLineBytes = 64 << 20

// checkEvery is how many lines the readers process between checks of ctx.
const checkEvery = 1024

// LoadBEIR reads the BEIR-layout dataset in dir:
//
//	corpus.jsonl or corpus.jsonl.gz    {"_id", "title", "text"} per line
//	queries.jsonl or queries.jsonl.gz  {"_id", "text"} per line
//	qrels/<split>.tsv                  query-id, corpus-id, score per line
//	sessions.jsonl or .gz (optional)   {"id", "source", "title", "project",
//	                                    "messages": [{"role", "text", "tool_output"?}]}
//
// A query's "kind", when present, is kept (Query.Kind). With a sessions
// file every kept document gets its Session (the same id), so a run can sync
// it as a plugin would rather than as one text.
//
// When both a plain and a .gz file exist the plain one is read; gzip is
// recognised by its magic bytes, not by the name. An "_id" may be a JSON
// string or a JSON number (used as written, e.g. 12 -> "12"); other fields
// are ignored. A qrels line has three tab-separated columns (four, TREC
// style "qid iter docid score", is accepted too; if a line has no tabs it
// is split on white space) and an integer score. An optional header line is
// recognised as a first line whose score column is not an integer. Blank
// lines are skipped, a trailing \r and a leading UTF-8 byte order mark are
// removed. If a query-document pair is judged twice the last row wins, as
// in BEIR's loader.
//
// Malformed input, an empty or duplicate id in the corpus or queries, and a
// dataset without any judged query are errors; a malformed line is reported
// as a *ParseError naming the file and line. Only the documents that are
// kept are held in memory, so a MaxDocs slice of a large corpus is cheap;
// duplicate doc ids are detected among the kept documents.
//
// LoadBEIR checks ctx between lines and returns ctx.Err() (wrapped) when it
// is done.
func LoadBEIR(ctx context.Context, dir string, opts LoadOptions) (*Dataset, error) {
	ds, err := loadBEIR(ctx, dir, opts)
	if err != nil {
		return nil, fmt.Errorf("load BEIR dataset %s: %w", dir, err)
	}
	return ds, nil
}

func loadBEIR(ctx context.Context, dir string, opts LoadOptions) (*Dataset, error) {
	if opts.MaxDocs < 0 || opts.MaxQueries < 0 {
		return nil, fmt.Errorf("MaxDocs (%d) and MaxQueries (%d) must not be negative", opts.MaxDocs, opts.MaxQueries)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	qrelsPath, err := findQrels(dir, opts.Split)
	if err != nil {
		return nil, err
	}
	corpusPath, err := findJSONL(dir, "corpus")
	if err != nil {
		return nil, err
	}
	queriesPath, err := findJSONL(dir, "queries")
	if err != nil {
		return nil, err
	}

	ds := &Dataset{Name: filepath.Base(abs), QrelsFile: qrelsPath}
	qrels, err := readQrels(ctx, qrelsPath, &ds.Stats)
	if err != nil {
		return nil, err
	}
	all, err := readQueries(ctx, queriesPath)
	if err != nil {
		return nil, err
	}
	ds.Stats.QueriesInFile = len(all)

	// Candidates: queries with a positive judgement, in file order.
	var candidates []Query
	known := make(map[string]bool, len(all))
	for _, q := range all {
		known[q.ID] = true
		if hasPositive(qrels[q.ID]) {
			candidates = append(candidates, q)
		} else {
			ds.Stats.UnjudgedQueries++
		}
	}
	for qid, docs := range qrels {
		if !known[qid] {
			ds.Stats.UnknownQueryJudgements += len(docs)
		}
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("%s: no query in %s has a judgement with score > 0", qrelsPath, queriesPath)
	}

	if opts.MaxDocs == 0 {
		ds.Queries = candidates
		if opts.MaxQueries > 0 && len(ds.Queries) > opts.MaxQueries {
			ds.Queries = ds.Queries[:opts.MaxQueries]
		}
		ds.Corpus, ds.Stats.CorpusDocs, err = readCorpus(ctx, corpusPath, func(string) bool { return true })
		if err != nil {
			return nil, err
		}
	} else {
		if err := loadSlice(ctx, ds, corpusPath, candidates, qrels, opts); err != nil {
			return nil, err
		}
	}

	if err := attachSessions(ctx, dir, ds); err != nil {
		return nil, err
	}
	ds.Qrels = make(map[string]map[string]int, len(ds.Queries))
	for _, q := range ds.Queries {
		ds.Qrels[q.ID] = qrels[q.ID]
	}
	inCorpus := make(map[string]bool, len(ds.Corpus))
	for _, d := range ds.Corpus {
		inCorpus[d.ID] = true
	}
	for id := range relevantDocs(ds.Queries, qrels) {
		if !inCorpus[id] {
			ds.Stats.MissingDocs++
		}
	}
	return ds, nil
}

// loadSlice fills ds.Queries and ds.Corpus following the MaxDocs rule
// documented on LoadOptions, in one pass over the corpus file. It holds the
// documents judged relevant for any candidate query plus at most MaxDocs
// others, which is all the rule can select.
func loadSlice(ctx context.Context, ds *Dataset, corpusPath string, candidates []Query, qrels map[string]map[string]int, opts LoadOptions) error {
	judged := relevantDocs(candidates, qrels)
	others := 0
	held, total, err := readCorpus(ctx, corpusPath, func(id string) bool {
		if judged[id] {
			return true
		}
		if others < opts.MaxDocs {
			others++
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	ds.Stats.CorpusDocs = total
	present := make(map[string]bool, len(held))
	for _, d := range held {
		present[d.ID] = true
	}

	kept := make(map[string]bool) // docs judged relevant for a kept query
	for _, q := range candidates {
		if opts.MaxQueries > 0 && len(ds.Queries) == opts.MaxQueries {
			break
		}
		var add []string
		for id, s := range qrels[q.ID] {
			if s > 0 && present[id] && !kept[id] {
				add = append(add, id)
			}
		}
		if len(kept)+len(add) > opts.MaxDocs {
			continue
		}
		for _, id := range add {
			kept[id] = true
		}
		ds.Queries = append(ds.Queries, q)
	}
	if len(ds.Queries) == 0 {
		return fmt.Errorf("MaxDocs %d is too small: every judged query needs more documents", opts.MaxDocs)
	}

	filler := opts.MaxDocs - len(kept)
	for _, d := range held {
		switch {
		case kept[d.ID]:
			ds.Corpus = append(ds.Corpus, d)
		case filler > 0:
			ds.Corpus = append(ds.Corpus, d)
			filler--
		}
	}
	return nil
}

// relevantDocs returns the ids of the documents judged relevant (score > 0)
// for any of qs.
func relevantDocs(qs []Query, qrels map[string]map[string]int) map[string]bool {
	ids := make(map[string]bool)
	for _, q := range qs {
		for id, s := range qrels[q.ID] {
			if s > 0 {
				ids[id] = true
			}
		}
	}
	return ids
}

func hasPositive(judgements map[string]int) bool {
	for _, s := range judgements {
		if s > 0 {
			return true
		}
	}
	return false
}

// findJSONL returns the path of dir/base.jsonl, or else dir/base.jsonl.gz;
// the error wraps os.ErrNotExist when there is neither.
func findJSONL(dir, base string) (string, error) {
	plain := filepath.Join(dir, base+".jsonl")
	for _, p := range []string{plain, plain + ".gz"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("neither %s nor %s.gz exists: %w", plain, plain, os.ErrNotExist)
}

// findQrels picks the qrels file as documented on LoadOptions.Split.
func findQrels(dir, split string) (string, error) {
	qdir := filepath.Join(dir, "qrels")
	entries, err := os.ReadDir(qdir)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".tsv") {
			names = append(names, e.Name())
		}
	}
	if split != "" {
		want := strings.TrimSuffix(split, ".tsv") + ".tsv"
		if !slices.Contains(names, want) {
			return "", fmt.Errorf("split %q: %s has no %s (found %s)", split, qdir, want, listOrNone(names))
		}
		return filepath.Join(qdir, want), nil
	}
	for _, want := range []string{"test.tsv", "dev.tsv", "train.tsv"} {
		if slices.Contains(names, want) {
			return filepath.Join(qdir, want), nil
		}
	}
	if len(names) == 1 {
		return filepath.Join(qdir, names[0]), nil
	}
	return "", fmt.Errorf("%s: no test.tsv, dev.tsv or train.tsv, and %s; set LoadOptions.Split", qdir, listOrNone(names))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "no .tsv files"
	}
	return strings.Join(names, ", ")
}

// readQrels reads a qrels file into query id -> doc id -> score.
func readQrels(ctx context.Context, path string, st *LoadStats) (map[string]map[string]int, error) {
	qrels := make(map[string]map[string]int)
	first := true
	err := eachLine(ctx, path, func(line []byte) error {
		isFirst := first
		first = false
		s := string(line)
		f := strings.Split(s, "\t")
		if len(f) == 1 {
			f = strings.Fields(s)
		}
		var qid, did, score string
		switch len(f) {
		case 3:
			qid, did, score = f[0], f[1], f[2]
		case 4:
			qid, did, score = f[0], f[2], f[3]
		default:
			return fmt.Errorf("want 3 columns (query-id, corpus-id, score), got %d", len(f))
		}
		qid, did, score = strings.TrimSpace(qid), strings.TrimSpace(did), strings.TrimSpace(score)
		n, err := strconv.Atoi(score)
		if err != nil {
			if isFirst {
				return nil // header line
			}
			return fmt.Errorf("score %q is not an integer", score)
		}
		if qid == "" || did == "" {
			return errors.New("empty query-id or corpus-id")
		}
		st.QrelsRows++
		m := qrels[qid]
		if m == nil {
			m = make(map[string]int)
			qrels[qid] = m
		}
		m[did] = n
		return nil
	})
	return qrels, err
}

// jsonlRecord is one line of corpus.jsonl or queries.jsonl.
type jsonlRecord struct {
	ID    json.RawMessage `json:"_id"`
	Title string          `json:"title"`
	Text  string          `json:"text"`
	Kind  string          `json:"kind"` // queries only
}

func decodeRecord(line []byte) (id string, rec jsonlRecord, err error) {
	if err := json.Unmarshal(line, &rec); err != nil {
		return "", rec, fmt.Errorf("invalid JSON: %w", err)
	}
	id, err = decodeID(rec.ID)
	return id, rec, err
}

// decodeID turns a JSON string or number into an id; a number is used as
// written.
func decodeID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New(`missing "_id"`)
	}
	var id string
	switch c := raw[0]; {
	case c == '"':
		if err := json.Unmarshal(raw, &id); err != nil {
			return "", fmt.Errorf(`"_id": %w`, err)
		}
	case c == '-' || ('0' <= c && c <= '9'):
		id = string(raw) // json.Unmarshal has validated the number
	default:
		return "", fmt.Errorf(`"_id" must be a string or a number, got %s`, raw)
	}
	if strings.TrimSpace(id) == "" {
		return "", errors.New(`empty "_id"`)
	}
	return id, nil
}

// readQueries reads every query of a queries file, in file order.
func readQueries(ctx context.Context, path string) ([]Query, error) {
	var qs []Query
	seen := make(map[string]int) // id -> line
	err := eachLineNumbered(ctx, path, func(n int, line []byte) error {
		id, rec, err := decodeRecord(line)
		if err != nil {
			return err
		}
		if prev, dup := seen[id]; dup {
			return fmt.Errorf("duplicate query id %q (first on line %d)", id, prev)
		}
		seen[id] = n
		qs = append(qs, Query{ID: id, Text: rec.Text, Kind: rec.Kind})
		return nil
	})
	return qs, err
}

// readCorpus streams a corpus file and returns, in file order, the
// documents for which keep returns true, and the number of documents in the
// file. keep is called once per document, in file order.
func readCorpus(ctx context.Context, path string, keep func(id string) bool) ([]Doc, int, error) {
	var docs []Doc
	seen := make(map[string]int) // kept id -> line
	total := 0
	err := eachLineNumbered(ctx, path, func(n int, line []byte) error {
		id, rec, err := decodeRecord(line)
		if err != nil {
			return err
		}
		total++
		if !keep(id) {
			return nil
		}
		if prev, dup := seen[id]; dup {
			return fmt.Errorf("duplicate doc id %q (first on line %d)", id, prev)
		}
		seen[id] = n
		docs = append(docs, Doc{ID: id, Title: rec.Title, Text: rec.Text})
		return nil
	})
	return docs, total, err
}

func eachLine(ctx context.Context, path string, fn func(line []byte) error) error {
	return eachLineNumbered(ctx, path, func(_ int, line []byte) error { return fn(line) })
}

// eachLineNumbered calls fn for every non-blank line of the (possibly
// gzipped) file at path, with its 1-based line number. The line is only
// valid during the call. An error from fn or from reading is returned as a
// *ParseError; a done ctx is returned as ctx.Err().
func eachLineNumbered(ctx context.Context, path string, fn func(n int, line []byte) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 1<<16)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		if n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line := sc.Bytes()
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return &ParseError{File: path, Line: n, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line longer than %d bytes: %w", maxLineBytes, err)
		}
		return &ParseError{File: path, Line: n + 1, Err: err}
	}
	return ctx.Err()
}
