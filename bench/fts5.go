package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode"

	_ "modernc.org/sqlite" // pure-Go SQLite with FTS5, registered as "sqlite"
)

// Peer names of the SQLite FTS5 baseline: FTS5Name indexes each document's
// Text (on the coding-session set, every message's text and tool output);
// FTS5TextName indexes only the messages' text of a document that is a
// session (Doc.Session), what Hindsight makes searchable, and the Text of
// any other.
const (
	FTS5Name     = "sqlite-fts5"
	FTS5TextName = "sqlite-fts5-text"
)

// FTS5 is a peer that ranks with SQLite's built-in full-text search: an
// FTS5 table over title and text with the Porter stemmer
// (tokenize='porter unicode61'), queried with the terms of the query OR-ed
// and ordered by FTS5's bm25(). It runs in-process on a pure-Go SQLite
// (modernc.org/sqlite), so it is a textbook BM25 baseline that needs no
// server. Ties are broken by insertion order.
//
// FTS5 is not safe for concurrent use (see [Peer]).
type FTS5 struct {
	name   string // FTS5Name or FTS5TextName
	db     *sql.DB
	search *sql.Stmt
	// weighted holds the statements of SearchAt, by title weight.
	weighted map[float64]*sql.Stmt
}

// OpenFTS5 creates an empty FTS5 index in the SQLite file at path, which
// must not exist yet; "" keeps it in memory. The caller must Close it.
func OpenFTS5(path string) (*FTS5, error) { return openFTS5(path, FTS5Name) }

// OpenFTS5Text is OpenFTS5 for the peer that indexes sessions without their
// tool output (FTS5TextName).
func OpenFTS5Text(path string) (*FTS5, error) { return openFTS5(path, FTS5TextName) }

func openFTS5(path, name string) (*FTS5, error) {
	dsn := ":memory:"
	if path != "" {
		dsn = "file:" + path + "?mode=rwc"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// One connection: an in-memory database is per connection, and the
	// peer is used sequentially anyway.
	db.SetMaxOpenConns(1)
	for _, stmt := range []string{
		// The index is derived data of a benchmark run: no journal, no fsync.
		`PRAGMA journal_mode=OFF`,
		`PRAGMA synchronous=OFF`,
		`CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, title, text, tokenize='porter unicode61')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite: %s: %w", stmt, err)
		}
	}
	search, err := db.Prepare(`SELECT id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: prepare search: %w", err)
	}
	return &FTS5{name: name, db: db, search: search, weighted: map[float64]*sql.Stmt{}}, nil
}

// Name returns FTS5Name or FTS5TextName.
func (f *FTS5) Name() string { return f.name }

// Index inserts docs in one transaction.
func (f *FTS5) Index(ctx context.Context, docs []Doc) error {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO docs (id, title, text) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for _, d := range docs {
		text := d.Text
		if f.name == FTS5TextName && d.Session != nil {
			text = d.Session.MessageText()
		}
		if _, err := ins.ExecContext(ctx, d.ID, d.Title, text); err != nil {
			return fmt.Errorf("insert %q: %w", d.ID, err)
		}
	}
	return tx.Commit()
}

// Search returns the ids of the k best documents by bm25 for the terms of q
// (see FTS5Match), or ErrNoTerms when q has none.
func (f *FTS5) Search(ctx context.Context, q string, k int) ([]string, error) {
	return f.query(ctx, f.search, q, k)
}

func (f *FTS5) query(ctx context.Context, st *sql.Stmt, q string, k int) ([]string, error) {
	match := FTS5Match(q)
	if match == "" {
		return nil, ErrNoTerms
	}
	rows, err := st.QueryContext(ctx, match, k)
	if err != nil {
		return nil, fmt.Errorf("fts5 search: %w", err)
	}
	defer rows.Close()
	ids := make([]string, 0, k)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// FTS5TitleWeights are the title column weights the bench sweeps (the
// text column's weight is 1; bm25()'s default weighs both 1).
var FTS5TitleWeights = []float64{0.5, 1, 2, 3, 5}

// Settings implements TunablePeer: the title column's weight in bm25().
func (f *FTS5) Settings() ([]Param, Point) {
	return []Param{{Name: "title.weight", Values: FTS5TitleWeights}}, Point{{Name: "title.weight", Value: 1}}
}

// SearchAt implements TunablePeer: Search ranked by
// bm25(docs, 0, title.weight, 1).
func (f *FTS5) SearchAt(ctx context.Context, p Point, q string, k int) ([]string, error) {
	w, ok := p.Get("title.weight")
	if !ok || w < 0 {
		return nil, fmt.Errorf("fts5: bad point %s", p)
	}
	st := f.weighted[w]
	if st == nil {
		var err error
		st, err = f.db.PrepareContext(ctx, fmt.Sprintf(`SELECT id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 0, %g, 1), rowid LIMIT ?`, w))
		if err != nil {
			return nil, fmt.Errorf("sqlite: prepare search: %w", err)
		}
		f.weighted[w] = st
	}
	return f.query(ctx, st, q, k)
}

// Close closes the database.
func (f *FTS5) Close() error {
	f.search.Close()
	for _, st := range f.weighted {
		st.Close()
	}
	return f.db.Close()
}

// FTS5Match turns free text into an FTS5 MATCH expression that cannot be
// misread as query syntax: the text is split into terms the way the
// unicode61 tokenizer splits it (runs of letters, digits and private-use
// characters), each distinct term (compared case-insensitively) is written
// as a double-quoted string, and the strings are OR-ed, so
//
//	`IL-6 "and" NEAR(x)` -> `"IL" OR "6" OR "and" OR "NEAR" OR "x"`.
//
// Operators (AND, OR, NOT, NEAR), column filters, prefixes and parentheses
// in the input are thus plain terms. Text without any term gives "".
func FTS5Match(q string) string {
	terms := strings.FieldsFunc(q, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.Is(unicode.Co, r)
	})
	seen := make(map[string]bool, len(terms))
	var b strings.Builder
	for _, t := range terms {
		key := strings.ToLower(t)
		if seen[key] {
			continue
		}
		seen[key] = true
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		// Terms hold no '"' (it is a separator), so no escaping is needed;
		// double it anyway should the split ever change.
		b.WriteString(`"` + strings.ReplaceAll(t, `"`, `""`) + `"`)
	}
	return b.String()
}
