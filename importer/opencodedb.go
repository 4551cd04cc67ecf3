package importer

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// opencode's SQLite layout (opencode.db, newer versions):
//
//	session(id, slug, title, directory, time_created, ...)
//	message(id, session_id, time_created, data)  data: the JSON layout's message without id
//	part(id, message_id, session_id, data)        data: the JSON layout's part without id
//	workspace(id, branch, ...)                    a session's worktree (session.workspace_id), when it has one
//
// The same database holds the user's login (tables account, credential,
// control_account, ...); the reader's authorizer allows only the three
// tables above, so those are never read.
var openCodeTables = []string{"session", "message", "part", "workspace"}

// errNotOpenCodeDB: the file has no session table (an empty file, another
// program's database).
var errNotOpenCodeDB = errors.New("not opencode's SQLite database")

// openCodeDBPath returns the opencode.db under dir: dir itself when it is
// the file, dir/opencode.db, or the one beside a storage directory; "" when
// there is none.
func openCodeDBPath(dir string) string {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return dir
	}
	candidates := []string{filepath.Join(dir, "opencode.db")}
	if filepath.Base(filepath.Clean(dir)) == "storage" {
		candidates = append(candidates, filepath.Join(filepath.Dir(filepath.Clean(dir)), "opencode.db"))
	}
	for _, p := range candidates {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	return ""
}

// openCodeDBItems lists the sessions in the database at path, oldest first,
// and returns their ids.
func openCodeDBItems(ctx context.Context, path string, opts ReadOptions) ([]Item, []string, error) {
	var ids []string
	err := readSQLite(ctx, path, openCodeTables, func(conn *sql.Conn) error {
		if ok, err := tableExists(ctx, conn, "session"); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("%s has no session table: %w", path, errNotOpenCodeDB)
			}
			return err
		}
		rows, err := conn.QueryContext(ctx, `SELECT id FROM session ORDER BY time_created, id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			got = append(got, id)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		ids = got
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	items := make([]Item, len(ids))
	for i, id := range ids {
		items[i] = Item{Path: path, read: func() (Session, []Problem, error) {
			return readOpenCodeDB(context.Background(), path, id, opts.maxPart())
		}}
	}
	return items, ids, nil
}

// readOpenCodeDB reads session id from the database at path, in one read
// transaction. A message or part row whose data is not JSON is reported
// (by its id) and skipped.
func readOpenCodeDB(ctx context.Context, path, id string, maxPart int) (Session, []Problem, error) {
	var s Session
	var probs []Problem
	err := readSQLite(ctx, path, openCodeTables, func(conn *sql.Conn) error {
		var sess ocSession
		var created sql.NullFloat64
		var slug, title, dir sql.NullString
		err := conn.QueryRowContext(ctx, `SELECT id, slug, title, directory, time_created FROM session WHERE id = ?`, id).
			Scan(&sess.ID, &slug, &title, &dir, &created)
		if err != nil {
			return fmt.Errorf("session %s: %w", id, err)
		}
		sess.Slug, sess.Title, sess.Directory, sess.Time.Created = slug.String, title.String, dir.String, created.Float64
		// Versions without workspaces have neither the column nor the table.
		var branch sql.NullString
		conn.QueryRowContext(ctx, `SELECT w.branch FROM session s JOIN workspace w ON w.id = s.workspace_id WHERE s.id = ?`, id).Scan(&branch)
		var pp []Problem
		msgs, err := openCodeDBMessages(ctx, conn, path, id, &pp)
		if err != nil {
			return err
		}
		parts, err := openCodeDBParts(ctx, conn, path, id, &pp)
		if err != nil {
			return err
		}
		s = openCodeSession(sess, msgs, func(m ocMessage) []Part { return ocParts(parts[m.ID], maxPart) })
		s.GitBranch = branch.String
		probs = pp
		return nil
	})
	if err != nil {
		return Session{}, nil, err
	}
	return s, probs, nil
}

func openCodeDBMessages(ctx context.Context, conn *sql.Conn, path, session string, probs *[]Problem) ([]ocMessage, error) {
	rows, err := conn.QueryContext(ctx, `SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id`, session)
	if err != nil {
		return nil, fmt.Errorf("messages of %s: %w", session, err)
	}
	defer rows.Close()
	var msgs []ocMessage
	for rows.Next() {
		var id string
		var created sql.NullFloat64
		var data []byte
		if err := rows.Scan(&id, &created, &data); err != nil {
			return nil, err
		}
		var m ocMessage
		if err := json.Unmarshal(data, &m); err != nil {
			*probs = append(*probs, Problem{Path: path, Err: fmt.Sprintf("message %s: skipped: data is not a message: %s", id, jsonError(err))})
			continue
		}
		m.ID, m.SessionID = id, session
		if m.Time.Created <= 0 {
			m.Time.Created = created.Float64
		}
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

// openCodeDBParts returns the parts of session's messages by message id, in
// id order (opencode's ids sort by time).
func openCodeDBParts(ctx context.Context, conn *sql.Conn, path, session string, probs *[]Problem) (map[string][]ocPart, error) {
	rows, err := conn.QueryContext(ctx, `SELECT message_id, id, data FROM part WHERE session_id = ? ORDER BY message_id, id`, session)
	if err != nil {
		return nil, fmt.Errorf("parts of %s: %w", session, err)
	}
	defer rows.Close()
	parts := map[string][]ocPart{}
	for rows.Next() {
		var msg, id string
		var data []byte
		if err := rows.Scan(&msg, &id, &data); err != nil {
			return nil, err
		}
		var p ocPart
		if err := json.Unmarshal(data, &p); err != nil {
			*probs = append(*probs, Problem{Path: path, Err: fmt.Sprintf("part %s of message %s: skipped: data is not a part: %s", id, msg, jsonError(err))})
			continue
		}
		p.ID = id
		parts[msg] = append(parts[msg], p)
	}
	return parts, rows.Err()
}
