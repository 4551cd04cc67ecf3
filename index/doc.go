// Package index is Hindsight's full-text index: Bleve (v2.5.7, scorch) with
// BM25 scoring, an English analyzer that also splits identifiers, per-user
// filtered search over sessions or their message chunks, and snippets.
//
// It knows nothing of the rest of the project: it takes plain ids and
// strings, and the index it keeps is derived data that kv can rebuild.
//
// # Basics
//
//	ix, err := index.Open(filepath.Join(dataDir, "index"), index.Options{Logger: log})
//	...
//	defer ix.Close()
//	err = ix.Put(ctx, []index.Session{{UserID: u, SessionID: s, Title: t, Body: body, Chunks: chunks}})
//	hits, err := ix.Search(ctx, index.Query{UserID: u, Text: "flaky auth test", Kind: index.Sessions})
//	if errors.Is(err, index.ErrBadQuery) { /* 400 with err's message */ }
//
// Put replaces everything previously indexed for a session (idempotent, so
// a pipeline may redo a batch after a crash); Delete removes sessions.
// Every query names its user: each Bleve query is a conjunction of a
// keyword term on userId (boost 0, so it filters without scoring) and the
// text query, and a hit whose document id names another owner is an error,
// not a result.
//
// # Analysis
//
// Scored text goes through AnalyzerName: Bleve's Unicode tokenizer, wrapped
// to also emit connector-joined compounds whole (codeTokenizer); Bleve's
// English possessive filter; identifier splitting (identSplitFilter);
// lower-casing; Bleve's English stop words; Porter stemming (memoised). So
// parseConfigFile, parse_config_file, parse-config-file, config.parse.file,
// src/parse/config_file.go and the words "parse config file" share the terms
// pars, config and file, while the whole identifier is a term too and an
// exact search ranks the exact spelling first. Sub-words take consecutive
// positions after the whole token's, so phrase queries match across
// spellings. The components are registered with Bleve once, in init; a
// stored index mapping refers to them by name.
//
// Query text is not Bleve syntax: see Query.Text, MaxQueryBytes and
// MaxQueryTerms.
//
// # Scoring
//
// The index mappings set ScoringModel "bm25", Bleve's BM25 (k1 1.2, b 0.75:
// Bleve package variables, left alone because they are process-global).
// Bleve derives the average document length from the per-segment sizes of
// the field's dictionary, so scores shift slightly as segments merge
// (Recall@100 on SciFact moves by ±0.001 between runs; nDCG@10 does not).
// Bleve's variant takes sqrt(tf), weights each query term by idf·queryNorm
// on top of its BM25 idf, and multiplies a disjunction by the fraction of
// its terms that matched. Rescaling the query terms to textbook BM25 (boost
// 1/idf) measured worse on both datasets below (SciFact 0.662, CoSQA
// 0.368), so Bleve's variant is kept.
//
// The title is folded into the one scored field, written DefaultTitleBoost
// times before the body: one field measured at nDCG@10 0.680 on
// SciFact train against 0.581 for a separate title^2 clause. Title
// repetition measured, on SciFact train: once 0.683, twice 0.686, three
// times 0.688; twice is the default, taking most of the gain without
// leaning further on one dataset (CoSQA has no titles).
//
// Bleve has no dynamic pruning (WAND, MaxScore): a disjunction costs the
// sum of its posting lists. When a query mixes words found in more than a
// tenth of the documents with rarer ones, a document must also contain a
// rarer one (a zero-boost clause, so scores do not change; wordsQuery in
// query.go).
//
// Measured with relevance_test.go (HINDSIGHT_RELEVANCE=1), Kind Sessions,
// limit 100, defaults:
//
//	SciFact train  nDCG@10 0.686  Recall@100 0.928  MRR@10 0.654
//	CoSQA dev      nDCG@10 0.380  Recall@100 0.834  MRR@10 0.324
//
// Without identifier handling (Bleve's "en" analyzer) CoSQA reads 0.335;
// without the whole compound tokens (parse-config-file) SciFact reads 0.691
// and CoSQA 0.377: they stay, for exact matches of kebab-case names and
// paths.
//
// # Two indexes
//
// Sessions and chunks live in two Bleve indexes under the directory. Chunk
// documents repeat the session text in short pieces: in one shared index
// they would double document frequencies, pull the average document length
// that BM25 normalises session scores by towards chunk size, and make the
// kind a filter on every query. Separate indexes keep each kind's
// statistics its own, and make Count and Search by kind free.
//
// # Snippets
//
// With Query.Explain, the hits' stored title and body (chunk text for
// chunks) are loaded and re-analysed with the same analyzer; the best window
// of about 240 bytes (most distinct query terms, then most matches) is
// HTML-escaped with <mark> around matches. Bleve's highlighter would need the
// scored field stored and term locations loaded on every hit; this costs
// only the few hits asked for and yields matchedIn from the same pass.
//
// With Options.Text (the server sets it) the index stores no text at all:
// the hits' title and body (or chunk text) come from the TextSource, the
// records the index is derived from, in one call per search. Stored text
// took a quarter of the index (on 3,000 generated sessions: 22.4 KB per
// session with it, 16.5 KB without); what remains is mostly the term
// vectors (positions), which phrase queries need: without them the chunk
// index measured 3.2 KB per session instead of 9.0 KB.
//
// # Performance
//
// A search without Explain reads no stored fields: the session id, the
// ordinal and the owner are decoded from the document id. Its cost is
// proportional to the postings it walks, so it grows with the number of
// documents that contain the query's words; quoted phrases of common words
// are the expensive case, since Bleve reads the positions of every document
// that has all of their words. Explain re-analyses the stored text of the
// hits it returns (a few milliseconds for 20 long sessions).
//
// Queries of plain words (no phrase, no exclusion), the common case, do not
// go through Bleve's searchers: searchWords reads the segments of the scorch
// snapshot directly, intersects each word's posting bitmap with the user's
// documents (and with the selective words' documents, per the plan above),
// decodes only those postings and sums scores term at a time into an array.
// It computes Bleve's scores exactly, summed in Bleve's order, and breaks
// ties as Bleve's collector does, so results are identical
// (TestSearchWordsMatchesBleve checks that on every run, and is what a Bleve
// upgrade that changes scoring would fail); it spends about 2.6 times less
// CPU than Bleve's per-posting searcher, scorer and collector. A posting of
// a query word still costs about 20 ns whether the user owns it or not
// (zap cannot jump within a block), so latency grows with all users' postings
// of the query words. An index that is not scorch falls back to Bleve.
//
// Put analyses and builds the two batches concurrently. Its cost is Bleve's
// (segment building, analysis, background merges) and grows with the text:
// chunk documents about double it, term vectors add about a fifth,
// identifier handling about a quarter. Use batches of 200-1000 sessions
// (500 is a good default); small batches pay the per-batch flush and
// existing-chunk look-up each time. bench_test.go has synthetic load
// benchmarks (sessions of 20 messages); relevance_test.go reports Put
// throughput and query latency on real text.
//
// # Caveats
//
//   - BM25 statistics (document frequencies, average length) are global
//     across users. Results are strictly per user, but a user's scores
//     (visible with Explain) depend slightly on other users' text.
//   - Put and Delete write the sessions index and the chunks index one
//     after the other; a failure between them leaves the two out of step
//     until the same call is repeated.
//   - Options.TitleBoost applies at indexing time; change it, then rebuild.
//   - Only one process may open a directory at a time.
package index
