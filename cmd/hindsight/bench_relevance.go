package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/progress"
	"github.com/hindsight-dev/hindsight/ranking"
)

// benchRelevance loads a BEIR-layout dataset into a fresh Hindsight through
// the sync API (each document a session: title = title, one user message =
// text), runs every query in every mode, and reports nDCG@10, Recall@100,
// MRR@10 and latency, with per-query results for error analysis.
func benchRelevance(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench relevance", "bench relevance --dataset DIR [flags]", stderr)
	dataset := fs.String("dataset", "", "BEIR-layout directory: corpus.jsonl[.gz], queries.jsonl, qrels/*.tsv (required)")
	modes := fs.String("modes", "fulltext", "comma-separated modes: fulltext, semantic, hybrid")
	split := fs.String("split", "", "qrels file to use (test, dev, train...); default: test, then dev, then train")
	maxDocs := fs.Int("max-docs", 0, "use a slice of at most N documents holding every judged document of the kept queries (0 = all)")
	maxQueries := fs.Int("max-queries", 0, "use at most N queries (0 = all)")
	via := fs.String("via", "inprocess", "run queries in-process (ranking engine) or over HTTP (full API path)")
	out := fs.String("out", "", "directory for per-query results and result.json (default: a temp dir, path printed)")
	asJSON := fs.Bool("json", false, "print only the JSON result")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if *dataset == "" {
		return &usageError{"--dataset is required"}
	}
	if *via != "inprocess" && *via != "http" {
		return &usageError{"--via must be inprocess or http"}
	}
	var modeList []string
	for _, m := range strings.Split(*modes, ",") {
		m = strings.TrimSpace(m)
		if _, err := ranking.ParseMode(m); err != nil || m == "" {
			return &usageError{fmt.Sprintf("unknown mode %q", m)}
		}
		modeList = append(modeList, m)
	}
	progressOut := stderr
	if *asJSON {
		progressOut = io.Discard
	}
	ds, err := bench.LoadBEIR(ctx, *dataset, bench.LoadOptions{Split: *split, MaxDocs: *maxDocs, MaxQueries: *maxQueries})
	if err != nil {
		return err
	}
	fmt.Fprintf(progressOut, "dataset %s: %d documents, %d queries (qrels %s)\n", ds.Name, len(ds.Corpus), len(ds.Queries), filepath.Base(ds.QrelsFile))

	work, err := os.MkdirTemp("", "hindsight-relevance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	c, a, stop, err := benchServer(ctx, filepath.Join(work, "data"), zerolog.Nop())
	if err != nil {
		return err
	}
	defer stop()
	if err := loadCorpus(ctx, c, ds, progressOut); err != nil {
		return err
	}
	if err := a.pipeline.WaitIdle(ctx); err != nil {
		return err
	}
	// Search results name sessions; the metrics need corpus ids (= externalIds).
	userID, docOf, err := sessionDocIDs(ctx, a.store)
	if err != nil {
		return err
	}
	search := func(ctx context.Context, mode, q string, k int) ([]string, error) {
		var ids []string
		if *via == "http" {
			r, err := httpSearch(ctx, c, mode, q, k)
			if err != nil {
				return nil, err
			}
			ids = r
		} else {
			res, err := a.search.Search(ctx, ranking.Query{UserID: userID, Text: q, Mode: ranking.Mode(mode), Limit: k})
			if errors.Is(err, index.ErrBadQuery) {
				return nil, bench.ErrNoTerms
			}
			if err != nil {
				return nil, err
			}
			for _, r := range res.Results {
				ids = append(ids, r.SessionID)
			}
		}
		docs := make([]string, 0, len(ids))
		for _, id := range ids {
			docs = append(docs, docOf[id])
		}
		return docs, nil
	}
	res, err := bench.RunRelevance(ctx, ds, search, bench.RelevanceOptions{Modes: modeList, Progress: progressOut})
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "hindsight-relevance-out-"); err != nil {
			return err
		}
	}
	if err := writeRelevanceFiles(dir, res); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	bench.PrintRelevance(stdout, res)
	fmt.Fprintf(stdout, "per-query results: %s\n", filepath.Join(dir, "perquery.jsonl"))
	return nil
}

func writeRelevanceFiles(dir string, res bench.RelevanceResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "perquery.jsonl"))
	if err != nil {
		return err
	}
	if err := bench.WritePerQuery(f, res.PerQuery); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "result.json"), b, 0o644)
}

// loadCorpus syncs the corpus in batches of 500 documents.
func loadCorpus(ctx context.Context, c *bench.Client, ds *bench.Dataset, progressOut io.Writer) error {
	const step = 500
	bar := progress.New(progressOut, "ingest", len(ds.Corpus))
	defer bar.Done()
	for i := 0; i < len(ds.Corpus); i += step {
		end := min(i+step, len(ds.Corpus))
		var sessions, messages []map[string]any
		for _, d := range ds.Corpus[i:end] {
			sessions = append(sessions, map[string]any{"externalId": d.ID, "title": d.Title, "source": "bench"})
			messages = append(messages, map[string]any{"sessionExternalId": d.ID, "externalId": d.ID + "-text", "role": "user", "textContent": d.Text})
		}
		body, _ := json.Marshal(map[string]any{"sessions": sessions, "messages": messages})
		if err := c.Post(ctx, "/sync/batch", body); err != nil {
			return err
		}
		bar.Set(end)
	}
	return nil
}

// sessionDocIDs maps the bench user's session ids to corpus ids.
func sessionDocIDs(ctx context.Context, st *kv.Store) (string, map[string]string, error) {
	m := map[string]string{}
	var uid string
	err := st.View(ctx, func(tx *kv.Tx) error {
		u, err := tx.UserByName("bench")
		if err != nil {
			return err
		}
		uid = u.ID
		return tx.Sessions(u.ID, func(s kv.Session) error {
			m[s.ID] = s.ExternalID
			return nil
		})
	})
	return uid, m, err
}

func httpSearch(ctx context.Context, c *bench.Client, mode, q string, k int) ([]string, error) {
	u := fmt.Sprintf("%s/api/search?type=%s&limit=%d&q=%s", c.URL, mode, min(k, 100), url.QueryEscape(q))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusBadRequest {
		return nil, bench.ErrNoTerms
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("search: %d %s", resp.StatusCode, b)
	}
	var r struct{ Results []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	ids := make([]string, len(r.Results))
	for i, x := range r.Results {
		ids[i] = x.ID
	}
	return ids, nil
}
