// Package index is Hindsight's full-text index: Bleve (scorch) storage
// with textbook BM25 scoring of its own, an English analyzer that also
// splits identifiers, per-user search over sessions or their message
// chunks, exact quoted phrases, and snippets. It keeps what BM25 scores
// and, for phrases, each message's adjacent word pairs with their
// positions; no text. The design, its measurements and a glossary of the
// words the code uses (block, part, view, rank, θ, floor, probe) are in
// docs/index.md.
//
// It knows nothing of the rest of the project: it takes plain ids and
// strings, and the index it keeps is derived data that kv can rebuild.
//
//	ix, err := index.Open(filepath.Join(dataDir, "index"), index.Options{Text: records, Logger: log})
//	...
//	defer ix.Close()
//	err = ix.Put(ctx, []index.Session{{UserID: u, SessionID: s, Title: t, Body: body, Breaks: breaks, Chunks: chunks}})
//	hits, err := ix.Search(ctx, index.Query{UserID: u, Text: `flaky "socket timeout"`, Kind: index.Sessions})
//	if errors.Is(err, index.ErrBadQuery) { /* 400 with err's message */ }
//	if errors.Is(err, index.ErrPartial) { /* hits are right; say there may be more */ }
//
// The contracts:
//
//   - Put replaces everything indexed for a session (idempotent, so a
//     pipeline may redo a batch after a crash); Delete removes sessions. A
//     search sees every Put and Delete that returned before it started.
//   - Every query names its user. Only the user's documents are
//     candidates, and the BM25 statistics (N, df, avgdl, the chunk
//     statistics, which words count as frequent) are the user's own:
//     another user's documents change neither a user's results nor the
//     scores shown (TestTenantStatistics). Each user's words and pairs are
//     terms of their own, so a user's first query of a word decodes the
//     user's postings of it, never another user's
//     (TestFirstQueryDecodesOwnPostings).
//   - Scores are textbook BM25 (scoring.go), and the pruned evaluation
//     returns the exhaustive one's documents and scores to the bit
//     (TestPruningMatchesExhaustive, TestSearchMatchesReference).
//   - A quoted phrase matches within the title or within one message
//     (Session.Breaks; Chunk.Breaks for chunks), never across two, and
//     Search returns every session holding it however many hold its words
//     (TestPhrasesMatchFullScan). A search that stops at a budget returns
//     what it found with ErrPartial, never a silent short answer.
//   - Query text is not Bleve syntax: see Query.Text, MaxQueryBytes and
//     MaxQueryTerms.
//   - Ranking is pinned by goldens (testdata/rank_stats.txt,
//     testdata/rank/; TestRankingGoldens, rewritten with -update).
//   - Options.TitleBoost applies at indexing time; change it, then
//     rebuild. Only one process may open a directory at a time.
package index
