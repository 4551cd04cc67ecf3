// Package index is Hindsight's full-text index: Bleve (v2.5.7, scorch)
// storage with textbook BM25 scoring of its own, an English analyzer that
// also splits identifiers, per-user filtered search over sessions or their
// message chunks, and snippets. It keeps what BM25 scores and, for
// quoted phrases, the adjacent word pairs of each message: no positions
// and no text.
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
// Every query names its user: only the user's documents are candidates (a
// Bleve query for phrases and exclusions is a conjunction of a keyword
// term on userId and the pairs or words query), a hit whose document id names
// another owner is an error, not a result, and the statistics every score
// is computed with are the user's own (see Scoring): another user's
// documents change neither a user's results nor the scores shown.
//
// # Analysis
//
// Scored text goes through AnalyzerName: Bleve's Unicode tokenizer, wrapped
// to also emit connector-joined compounds whole (codeTokenizer); Bleve's
// English possessive filter; identifier splitting (identSplitFilter);
// lower-casing; Porter stemming (memoised). So parseConfigFile,
// parse_config_file, parse-config-file, config.parse.file,
// src/parse/config_file.go and the words "parse config file" share the terms
// pars, config and file, while the whole identifier is a term too. Sub-words
// take consecutive positions after the whole token's, so phrase queries
// match across spellings. The components are registered with Bleve once, in
// init; a stored index mapping refers to them by name. Analyzer (and
// Analyze) give the analyzer's terms for a text to code outside the index.
//
// There are no stop words: "if", "not", "in", "for", "or" are code, and
// BM25's idf already gives words found everywhere almost no weight.
// Dropping Bleve's English stop list raised CoSQA dev and left SciFact
// train level when it was measured (that run was not kept as a result
// file). A query of common words only is now a query, not ErrBadQuery.
//
// Query text is not Bleve syntax: see Query.Text, MaxQueryBytes and
// MaxQueryTerms.
//
// # Scoring
//
// Scoring is textbook BM25 (scoring.go; Robertson's, as Lucene and SQLite
// FTS5 compute it): per distinct query term, idf = ln(1 + (N − df + 0.5) /
// (df + 0.5)) times tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl)), k1 1.2,
// b 0.75, summed; no query norm, no coordination factor. |d| is the number
// of tokens the analyzer emitted for the document. N, df and avgdl are
// the querying user's: N the user's live documents, df(t) those of them
// holding t, avgdl the mean |d| over them, from a keyword field holding
// each document's length (fieldLength), read once per segment. So are
// the chunk statistics and which words count as frequent (below), so a
// user's results and scores are those the user would get alone on the
// server (TestTenantStatistics). Computed over every user's documents, as
// they were before, they let another user's corpus move a user's
// ranking, and the scores (which explain and the MCP search tool return)
// told whether other users' sessions held a word. Every term's
// contribution is below idf·(k1+1): the bound pruning (see Performance)
// works with.
//
// It replaced Bleve's BM25 variant, which takes sqrt(tf), weights each term
// by idf twice (its BM25 idf times idf·queryNorm), multiplies a disjunction
// by the share of terms matched, and divides lengths by an "average" that is
// the field's dictionary size per document: 18 on SciFact train, whose mean
// document is 181 tokens, so length normalisation was about ten times too
// strong and moved as segments merged. Each step (textbook BM25 with the
// true average length; tf, not sqrt(tf); lengths in tokens, not distinct
// positions; query compounds scored by their parts; no stop words) was
// measured on SciFact train and CoSQA dev when it was made and kept only
// if it was at least level on both; those runs were not kept as result
// files. Today's figures are in bench/results (scifact-train, cosqa-dev,
// coding-dev: the binary's commit is in each report's settings).
//
// k1 and b are the textbook values, not fitted: a small grid around them,
// measured with the first step's analysis, found no setting better on both
// sets.
//
// A compound in a query (IL-6, parse-config-file, src/index/words.go) is
// looked up by its parts only: the whole would count the same evidence a
// second time, as a rare term (it lowered SciFact train when measured;
// CoSQA has none). A quoted phrase still asks for the exact spelling.
//
// The title is folded into the one scored field, written DefaultTitleBoost
// times before the body: under Bleve's scoring one field measured well
// ahead of a separate title^2 clause on SciFact train. With today's
// scoring the title written once reads nDCG@10 0.7014, twice 0.7051, three
// times 0.7087 on SciFact train (bench/results/scifact-train, its
// title.boost sweep; CoSQA has no titles); twice stays the default, as
// before, rather than leaning further on the one dataset with titles.
//
// Every query is evaluated by words.go on the scorch segments: plain words
// directly; quoted phrases and exclusions first find their documents with
// Bleve's searchers over the word pairs (unscored, same snapshot; see
// Phrases), which then only restrict the candidates, and the phrase words
// are scored like the others. The pairs are a field of their own, never
// scored: the scores of every query, and the results of a query without
// a phrase, are what they were without them.
// TestSearchMatchesReference pins the definition: Search must return the
// documents and scores an exhaustive reference scorer computes over every
// document.
//
// A disjunction costs the sum of its posting lists, so when a query mixes
// words found in more than a tenth of the user's documents with rarer
// ones, a document must also contain a rarer one (wordsPlan; measured on
// SciFact and CoSQA: nDCG@10 and Recall@100 unchanged). The tenth is of
// the user's documents: a word another user wrote everywhere does not
// make the user's query drop the user's documents holding only that word
// (TestTenantFrequentWords).
//
// Where the ranking stands is committed: testdata/rank_stats.txt holds
// nDCG@10, Recall@100 and MRR@10 on SciFact train, CoSQA dev and the
// coding-session set (per query kind too), Kind Sessions, 100 hits, the
// defaults, and testdata/rank/ the top 10 of every query. Today:
//
//	SciFact train    nDCG@10 0.7051  Recall@100 0.9266  MRR@10 0.6772
//	CoSQA dev        nDCG@10 0.3953  Recall@100 0.8180  MRR@10 0.3435
//	coding sessions  nDCG@10 0.8416  Recall@100 0.9922  MRR@10 0.8129
//
// TestRankingGoldens checks them (it needs HINDSIGHT_DATASETS), so a change
// to analysis, scoring or pruning that moves any query's top 10 or a
// metric fails until the goldens are rewritten (go test ./index -run
// TestRankingGoldens -update) and the diff is committed with it; see
// testdata/README.md. Through the server (`hindsight bench relevance`,
// bench/results: scifact-train, cosqa-dev, coding-dev) the same defaults
// read 0.7051, 0.3951 and 0.8416 (CoSQA differs in a tie between two
// ingests), and SQLite FTS5 in the same runs 0.7009, 0.3836 and 0.8040.
//
// Identifier handling is most of CoSQA's figure: Bleve's "en" analyzer,
// without it, read well below under Bleve's scoring. The whole compound
// tokens stay in the index, for exact phrase matches of kebab-case names
// and paths.
//
// # Phrases
//
// A quoted phrase matches a session that holds it within its title or
// within one message (Session.Breaks), never across two messages, two
// copies of the title, or the title and the body; a chunk that holds it
// within one of its messages (Chunk.Breaks). Search returns every session
// (and chunk) that holds it, ranked, however many hold its words
// (TestPhrasesMatchFullScan: 10,200 sessions of one user hold the words of
// "flaky socket timeout", about a hundred the phrase, hundreds more its
// words across two messages or its two pairs apart; the sessions and
// chunks returned are those a scan of every message finds, for a second
// user's 400 sessions holding it under the same ids too). A one-word
// phrase is the word.
//
// Each session document keeps, in a keyword field without frequencies
// (fieldPairs, pairs.go), the distinct pairs of terms at adjacent
// positions of each message and of the title (the title's apart, so that
// a phrase's pairs are all in the body or all in the title). A phrase's
// candidates are the documents holding, for each two adjacent positions,
// one of their pairs: for two words that is the answer; for more, a
// candidate could hold "a b" and "b c" in different messages, so
// candidates are read from the TextSource best first and checked message
// by message (each message's tokens on their own), more read
// (checkGrowth times as many) while fewer than the limit pass. A source
// that is also a MessageSource (the records, ingest.Texts) gives a
// session's title and messages one at a time, and the check stops at the
// message that decides it (textMatcher): a session holding the phrase in
// its first message costs that message, not the session. A
// search reads at most maxChecked (1,000) sessions' text: past that it
// returns what passed with ErrPartial, which the API and MCP answers
// carry as "partial" (see README); it never stops silently. An excluded
// phrase of up to two words is excluded by its pairs; a longer one is
// checked on the hits the same way. Chunks with a phrase read every
// candidate session (up to maxChecked, past which the answer is partial),
// so every chunk holding the phrase is a candidate.
//
// The pairs' cost, measured with bench load (bench/results/phrase-load,
// 10,000 / 100,000 generated sessions, 2 shared cores at load average
// 10-13): the index takes 3.1 / 2.1 KiB per session (0.59 / 0.40 times
// its text), against 0.9 / 0.7 KiB without them (bench/results/load).
// Phrases many sessions hold (an error message, a topic) answer in p50
// 6.1 / 11.5 ms, p99 28 / 57 ms, the check of their best candidates'
// first messages being most of it; phrases whose pairs no session holds
// in p99 4.5 / 3.4 ms. The generator's sentences are word salad from 45
// words, so a run of their words has pairs that thousands of sessions
// hold and few the phrase: p99 2.7 / 8.0 s, reading up to maxChecked
// sessions (1 of 50 partial at 100,000). Positions on the pairs (Bleve
// term vectors on fieldPairs, a phrase then a phrase query over its
// pairs) would need no text for any phrase, at the size positions cost.
//
// # One index, no positions, no text
//
// The directory holds one Bleve index of session documents: postings with
// frequencies and norms, the keyword fields (the pairs among them), and
// nothing else. On 10,000 generated sessions (5.4 KB of searchable text
// each) the index with term vectors (positions) took 1.66 times the text
// it indexes, without them 0.18 times (before the pairs); a second index
// of chunk documents took another 1.84 times with positions, 0.55 without
// (more documents, and a word in ten chunks is ten postings). What each
// served is done from the records' text:
//
//   - Phrases: their pairs and the text (see Phrases).
//   - Chunks (Kind Chunks, what /api/context reads). The best
//     chunkSessions(limit) sessions for the query's words are found in the
//     index, their chunks read from the TextSource, analysed and scored
//     with BM25: each term's idf over the user's sessions, and the mean
//     length of the user's chunks, which the session documents carry as
//     two number fields (fieldChunks, fieldChunkLength); both come from
//     the session search, on the same snapshot. Reading 25 sessions costs a few
//     milliseconds; the context endpoint returns a handful of sessions by
//     their best chunk, so a chunk of a session far down the session
//     ranking is not missed in practice.
//
// # Snippets
//
// With Query.Explain, the hits' title and body (chunk text for chunks) are
// read from the TextSource, the records the index is derived from (or,
// without one, from the stored fields), in one call per search, and
// re-analysed with the same analyzer; the best window of about 240 bytes
// (most distinct query terms, then most matches) is HTML-escaped with
// <mark> around matches. Bleve's highlighter would need the scored field
// stored and term locations loaded on every hit; this costs only the few
// hits asked for and yields matchedIn from the same pass.
//
// # Performance
//
// A search without Explain reads no stored fields: the session id, the
// ordinal and the owner are decoded from the document id. Its cost is
// proportional to the postings it walks, so it grows with the number of
// documents that contain the query's words; quoted phrases of three words
// or more whose pairs many documents hold apart but few together are the
// expensive case, since their best candidates are read and analysed until
// enough hold the phrase (up to maxChecked). Explain re-analyses the text of
// the hits it returns (a few milliseconds for 20 long sessions).
//
// Queries do not go through Bleve's searchers (but for the phrase and
// exclusion filters): searchWords reads the segments of the scorch
// snapshot directly and intersects the user's documents with the selective
// words' documents (per the plan above) and the phrase filter into the
// candidates. Zap cannot reach a posting's frequency and norm without
// decoding its chunk of about 1,024 postings from the start, so an
// evaluator over zap's iterators reads every posting of a common word
// (about 20 ns each, whether the user owns it or not): its cost grows with
// all users' postings of the query words, whatever it prunes.
//
// Top-k evaluation therefore reads a second form of the postings
// (blockmax.go), cut in each user's view of a segment: the user's
// documents numbered by rank, 64 of the user's own to a block, so that a
// query goes through as many blocks as its user's documents fill, not the
// whole index's, and bounds them by the user's postings only. The first
// query of a term by a user in a segment decodes the term's postings once
// into the user's blocks: per posting a byte for the frequency (the
// lengths come from fieldLength, once per segment), per block a mask of
// the documents holding the term, the index of its first posting and the
// largest tf part of BM25 its postings reach, and per eighth of a block
// (8 documents) that maximum as a share of the block's, a byte each. A
// document's posting in a block is then a bit test and a count of the
// bits below it. Terms with postings in under a quarter of the blocks keep
// only those blocks (binary search); a term the user's documents lack is
// cached as empty, and a segment without any of the user's documents is
// not read. Each user's view (rank to document, document to rank, lengths
// by rank, and the totals of the user's lengths and chunks) is cached
// too, so a query on warm caches reads no dictionary and decodes no
// posting list: the user's N and avgdl are sums of the views' totals over
// the segments, a term's df the number of its postings in the user's
// blocks. Segments are immutable (deletions only hide documents, so the
// maxima still bound the live ones). In a segment with deletions, the
// user's live documents (a word per block) and their totals are cached
// per (segment, user) until the segment loses more documents, and a
// term's df there is the count of its blocks' masks and the live ones,
// cached in the term's blocks for that number of deletions: the warm path
// does no work in proportion to the user's documents. The entries are
// kept in a cache bounded to blockCacheBytes per index, least recently
// used out first, the entries of merged-away segments dropped once they
// outnumber the live ones.
//
// A query goes through each segment block by block, all its words' entries
// for a block read together: the user's live documents, narrowed by the
// phrase filter and the plan, are the block's candidates, and the block's
// bound is the sum of idf times the block maximum over the words its
// candidates hold. It scores the blocks document at a time: a thirty-second
// of them best bound first (picked by a histogram of the bounds), so that
// θ, the limit-th best score reached, rises early, stopping as soon as the
// best bound left is below θ; then, unless few are left above θ, the
// others in index order (reading blocks in order is several times faster
// than jumping between them), skipping those whose bound is below θ. A
// block with at least 12 candidates is scored an eighth at a time, and an
// eighth whose words' maxima there sum below θ is passed over: with words
// most documents hold, a block's maxima come from different documents and
// nearly every block's bound reaches θ, while an eighth's bound is that of
// a handful of documents. In a block (or eighth), a candidate whose own
// words' maxima sum below θ is dropped before any posting is read; the
// others' words are summed rarest first, and a document is dropped as soon
// as its partial sum plus the maxima of its words left is below θ. Comparisons are strict with a margin far above
// rounding and a kept document is summed in the same order as in the
// exhaustive evaluation (zap's iterators, term at a time, kept as the
// reference), so results are the exhaustive ones to the bit, ties
// included (TestPruningMatchesExhaustive: 10,000 generated sessions in
// several segments, 4 users, 1,000 load-bench queries with phrases and
// exclusions mixed in, deletions after the blocks were cached, then a
// cache small enough to evict; top 100, ids and scores compared with ==;
// 2,000 sessions and 300 queries under the race detector). The total
// matches of a search (debug log only) are counted exactly only when the
// debug log is on.
//
// Measured with TestSearchPerf (bench corpus, 4 users, limit 20, one
// goroutine per query, 2 cores at a load average under 1, 5 passes over
// the load mix at 300,000 sessions): blocks in the segment's numbering,
// every user's documents in them, had p99 0.77 ms and 0.27-0.29 ms of CPU
// per query; per-user blocks 0.49-0.51 ms and 0.15-0.16 ms (the pass over
// the blocks a query makes before scoring went from 130-200 to 35-63 µs);
// with the eighths' bounds 0.40-0.41 ms and 0.14 ms, identifier queries
// (words in 88% of sessions) from p99 0.54 to 0.21 ms. At 10,000 sessions
// p99 is 0.2 ms and CPU 0.04-0.05 ms either way. Computing the eighths'
// bounds of every block in that first pass doubled it and was dropped. A
// query on a cold cache pays the decoding of its words' posting lists (by
// user: each user's first query of a word decodes the word's list), and
// so does the first query of a word after a merge made a new segment.
//
// What is left grows with the candidates: title queries ("Debug scheduler
// retry backoff in data-pipeline"), whose rare word a few thousand of the
// user's sessions share and whose common words nearly all do, still visit
// most of the user's blocks (the blocks' maxima of the common words reach
// θ) with about 3 candidates each, too few for the eighths to pay.
//
// Put analyses the documents on every core (analysis happens when the
// documents are built, so that their length is known for fieldLength).
// Its cost is Bleve's (segment building, analysis, background merges) and
// grows with the text; identifier handling is about a quarter of it. Use
// batches of 200-1000 sessions (500 is a good default); small batches pay
// the per-batch flush each time. bench_test.go has synthetic load
// benchmarks (sessions of 20 messages); hindsight bench relevance reports
// query latency on real text.
//
// # Caveats
//
//   - The statistics being per user, a user with few sessions gets the
//     noisy idf of a small collection, as the user would alone.
//   - Phrases, snippets and chunks read the TextSource: a session written
//     to the records but not yet re-indexed is checked and scored on its
//     new text, ranked by its old document, and found by its old pairs
//     (the pipeline catches up).
//   - A caller that gives no Breaks makes its body one message: phrases
//     may then span its messages.
//   - Options.TitleBoost applies at indexing time; change it, then rebuild.
//   - Only one process may open a directory at a time.
package index
