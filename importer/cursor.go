package importer

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SourceCursor is the source the Cursor plugin's sessions are stored under
// (it reports "cursor", which the server stores as cursor-sync). The plugin
// names a session by Cursor's conversation id, the composer id the IDE's
// database and the CLI's transcripts use too, so an import after live sync
// completes the plugin's sessions.
const SourceCursor = "cursor-sync"

// Cursor lists the conversations in the Cursor IDE's databases. Cursor is a
// VS Code fork and keeps its state in SQLite files named state.vscdb, one
// global (User/globalStorage) and one per workspace
// (User/workspaceStorage/<id>/, beside a workspace.json naming the folder).
// Conversations come in three generations:
//
//   - Composer, split (Cursor 0.4x and later): in the global database's table
//     cursorDiskKV, composerData:<composerId> holds the conversation (name,
//     createdAt and lastUpdatedAt in ms, modelConfig.modelName,
//     fullConversationHeadersOnly: the bubble ids in order) and
//     bubbleId:<composerId>:<bubbleId> each message (type 1 user, 2
//     assistant; text, thinking.text, toolFormerData for a tool call,
//     tokenCount, modelInfo.modelName, createdAt).
//   - Composer, inline (older): the bubbles inside composerData, in
//     conversation[], in conversationMap keyed by bubble id (in the headers'
//     order) or in tabs[].bubbles[]; tool data in
//     capabilities[].data.bubbleDataMap before composer format 3. The oldest
//     keep composerData in the workspace's ItemTable under
//     composer.composerData (allComposers[]).
//   - Chat (before Composer): ItemTable key
//     workbench.panel.aichat.view.aichat.chatdata, {tabs: [{tabId, chatTitle,
//     bubbles: [{type: "user"|"ai", text, rawText}]}]}.
//
// A conversation's project is the folder of the workspace that lists it
// (composer.composerData) or, from Cursor 3.12, its own workspaceIdentifier.
// root is Cursor's user data directory (or its User directory),
// globalStorage or workspaceStorage, one workspace's directory, or one
// state.vscdb. The databases are read with readSQLite, so a running Cursor
// holding them is never disturbed; the reader's authorizer allows only the
// two key-value tables, and only the chat keys are selected from ItemTable,
// which also holds Cursor's login.
func Cursor(root string, opts ReadOptions) ([]Item, error) {
	ctx := context.Background()
	dbs, err := cursorDatabases(root)
	if err != nil {
		return nil, fmt.Errorf("cursor history: %w", err)
	}
	// Projects first: workspaces name the composers they hold.
	projectOf := map[string]string{}
	var lists []cursorList
	for _, db := range dbs {
		l, err := listCursorDB(ctx, db)
		if err != nil {
			return nil, fmt.Errorf("cursor history: %s: %w", db.path, err)
		}
		for _, id := range l.workspaceComposers {
			if projectOf[id] == "" {
				projectOf[id] = db.project
			}
		}
		lists = append(lists, l)
	}
	var items []Item
	seen := map[string]bool{}
	add := func(id string, it Item) {
		if !seen[id] {
			seen[id] = true
			items = append(items, it)
		}
	}
	// Split composers before inline copies of the same composer.
	for pass := 0; pass < 2; pass++ {
		for _, l := range lists {
			for _, c := range l.composers {
				if c.inline != (pass == 1) {
					continue
				}
				c.project = cmpOr(c.project, projectOf[c.id], l.db.project)
				add(c.id, Item{Path: l.db.path, read: func() (Session, []Problem, error) {
					return readCursorComposer(ctx, c, opts.maxPart())
				}})
			}
		}
	}
	for _, l := range lists {
		for _, tab := range l.tabs {
			add(tab, Item{Path: l.db.path, read: func() (Session, []Problem, error) {
				return readCursorTab(ctx, l.db, tab, opts.maxPart())
			}})
		}
	}
	return items, nil
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// cursorDB is one state.vscdb and the project of its workspace ("" for the
// global database).
type cursorDB struct {
	path    string
	project string
}

// cursorDatabases finds the state.vscdb files under root.
func cursorDatabases(root string) ([]cursorDB, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []cursorDB{{path: root, project: cursorWorkspaceFolder(filepath.Dir(root))}}, nil
	}
	if isDir(filepath.Join(root, "User")) {
		root = filepath.Join(root, "User")
	}
	var dbs []cursorDB
	if p := filepath.Join(root, "globalStorage", "state.vscdb"); isFile(p) {
		dbs = append(dbs, cursorDB{path: p})
	}
	wsRoot := filepath.Join(root, "workspaceStorage")
	if filepath.Base(root) == "workspaceStorage" {
		wsRoot = root
	}
	if es, err := os.ReadDir(wsRoot); err == nil {
		for _, e := range es {
			dir := filepath.Join(wsRoot, e.Name())
			if p := filepath.Join(dir, "state.vscdb"); e.IsDir() && isFile(p) {
				dbs = append(dbs, cursorDB{path: p, project: cursorWorkspaceFolder(dir)})
			}
		}
	}
	if p := filepath.Join(root, "state.vscdb"); len(dbs) == 0 && isFile(p) {
		dbs = append(dbs, cursorDB{path: p, project: cursorWorkspaceFolder(root)})
	}
	if len(dbs) == 0 {
		return nil, fmt.Errorf("no state.vscdb under %s (want Cursor's User directory, with globalStorage and workspaceStorage)", root)
	}
	return dbs, nil
}

// cursorWorkspaceFolder reads a workspace directory's workspace.json: the
// folder it is for, or the directory of its .code-workspace file.
func cursorWorkspaceFolder(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "workspace.json"))
	if err != nil {
		return ""
	}
	var w struct {
		Folder    string `json:"folder"`
		Workspace string `json:"workspace"`
	}
	if json.Unmarshal(b, &w) != nil {
		return ""
	}
	if w.Folder != "" {
		return uriPath(w.Folder)
	}
	p := uriPath(w.Workspace)
	if i := strings.LastIndexAny(p, `/\`); i > 0 {
		return p[:i] // the folder of the .code-workspace file
	}
	return ""
}

var windowsDrive = regexp.MustCompile(`^/[A-Za-z]:`)

// uriPath turns a VS Code folder URI into a path: file:///home/u/p,
// file:///c%3A/Users/u/p (C:/Users/u/p), vscode-remote://ssh-remote+host/p
// (the remote path). The host is not parsed as a URL host: VS Code escapes a
// '+' there, which Go's parser rejects.
func uriPath(uri string) string {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || scheme == "" {
		return ""
	}
	host, path, _ := strings.Cut(rest, "/")
	p, err := url.PathUnescape("/" + path)
	if err != nil {
		return ""
	}
	if scheme == "file" && host != "" && host != "localhost" {
		if strings.HasPrefix(host, "wsl.localhost") || host == "wsl$" {
			// file://wsl.localhost/<distro>/home/u/p
			if _, after, ok := strings.Cut(strings.TrimPrefix(p, "/"), "/"); ok {
				return "/" + after
			}
		}
		return "//" + host + p // a UNC share
	}
	if windowsDrive.MatchString(p) {
		p = strings.ReplaceAll(strings.ToUpper(p[1:2])+p[2:], "/", `\`)
	}
	return p
}

// cursorTables are the tables the Cursor reader may read.
var cursorTables = []string{"cursorDiskKV", "ItemTable"}

// ItemTable keys of the conversations of older versions.
const (
	cursorComposerKey = "composer.composerData"
	cursorChatKey     = "workbench.panel.aichat.view.aichat.chatdata"
)

// cursorList is what one database holds.
type cursorList struct {
	db                 cursorDB
	composers          []cursorComposerRef
	tabs               []string // chat tab ids
	workspaceComposers []string // ids a workspace lists as its composers
}

// cursorComposerRef locates one composer: a cursorDiskKV row, or an entry of
// ItemTable's composer.composerData (inline).
type cursorComposerRef struct {
	db      string
	id      string
	inline  bool
	project string
}

// listCursorDB lists the conversations with at least one message in one
// database, in one read.
func listCursorDB(ctx context.Context, db cursorDB) (cursorList, error) {
	l := cursorList{db: db}
	err := readSQLite(ctx, db.path, cursorTables, func(conn *sql.Conn) error {
		l.composers, l.tabs, l.workspaceComposers = nil, nil, nil
		if ok, err := tableExists(ctx, conn, "cursorDiskKV"); err != nil {
			return err
		} else if ok {
			err := scanCursorKV(ctx, conn, "composerData:", func(key string, value []byte) {
				var c cursorComposer
				if json.Unmarshal(value, &c) == nil && !c.hasMessages() {
					return // opened and closed without a message; a malformed one fails when read
				}
				id := strings.TrimPrefix(key, "composerData:")
				ref := cursorComposerRef{db: db.path, id: id}
				if c.WorkspaceIdentifier != nil && c.WorkspaceIdentifier.URI != nil {
					ref.project = c.WorkspaceIdentifier.URI.FsPath
				}
				l.composers = append(l.composers, ref)
			})
			if err != nil {
				return err
			}
		}
		if ok, err := tableExists(ctx, conn, "ItemTable"); err != nil || !ok {
			return err
		}
		if v, err := cursorItem(ctx, conn, cursorComposerKey); err != nil {
			return err
		} else if v != nil {
			var ws struct {
				All      []cursorComposer `json:"allComposers"`
				Selected []string         `json:"selectedComposerIds"`
			}
			if json.Unmarshal(v, &ws) == nil {
				for _, c := range ws.All {
					l.workspaceComposers = append(l.workspaceComposers, c.ID)
					if c.ID != "" && c.hasMessages() {
						l.composers = append(l.composers, cursorComposerRef{db: db.path, id: c.ID, inline: true})
					}
				}
				l.workspaceComposers = append(l.workspaceComposers, ws.Selected...)
			}
		}
		if v, err := cursorItem(ctx, conn, cursorChatKey); err != nil {
			return err
		} else if v != nil {
			var chat cursorChat
			if json.Unmarshal(v, &chat) == nil {
				for _, tab := range chat.Tabs {
					if tab.TabID != "" && len(tab.Bubbles) > 0 {
						l.tabs = append(l.tabs, tab.TabID)
					}
				}
			}
		}
		return nil
	})
	return l, err
}

// scanCursorKV calls fn for each cursorDiskKV row whose key starts with
// prefix, in key order: a range scan of the key index.
func scanCursorKV(ctx context.Context, conn *sql.Conn, prefix string, fn func(key string, value []byte)) error {
	end := prefix[:len(prefix)-1] + string(prefix[len(prefix)-1]+1)
	rows, err := conn.QueryContext(ctx, `SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ? ORDER BY key`, prefix, end)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var value []byte
		if err := rows.Scan(&key, &value); err != nil {
			return err
		}
		fn(key, value)
	}
	return rows.Err()
}

// cursorKV returns one cursorDiskKV value, nil when the key is absent.
func cursorKV(ctx context.Context, conn *sql.Conn, key string) ([]byte, error) {
	var v []byte
	err := conn.QueryRowContext(ctx, `SELECT value FROM cursorDiskKV WHERE key = ?`, key).Scan(&v)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	return v, err
}

// cursorItem returns one ItemTable value, nil when the key is absent.
func cursorItem(ctx context.Context, conn *sql.Conn, key string) ([]byte, error) {
	var v []byte
	err := conn.QueryRowContext(ctx, `SELECT value FROM ItemTable WHERE key = ?`, key).Scan(&v)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	return v, err
}

// cursorTime is a time Cursor writes as epoch milliseconds or as an ISO
// string.
type cursorTime struct{ time.Time }

func (t *cursorTime) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var s string
	if b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
			t.Time = v
			return nil
		}
	} else {
		s = string(b)
	}
	if ms, err := strconv.ParseFloat(s, 64); err == nil && ms > 0 {
		t.Time = time.UnixMilli(int64(ms))
	}
	return nil // an unknown form leaves the time unknown
}

// cursorRole is a bubble's type: 1 or "user", 2 or "ai".
type cursorRole string

func (r *cursorRole) UnmarshalJSON(b []byte) error {
	switch strings.Trim(string(bytes.TrimSpace(b)), `"`) {
	case "1", "user":
		*r = "user"
	case "2", "ai", "assistant":
		*r = "assistant"
	default:
		*r = ""
	}
	return nil
}

type cursorComposer struct {
	ID              string                     `json:"composerId"`
	Name            string                     `json:"name"`
	Version         int                        `json:"_v"`
	CreatedAt       cursorTime                 `json:"createdAt"`
	LastUpdatedAt   cursorTime                 `json:"lastUpdatedAt"`
	CreatedOnBranch string                     `json:"createdOnBranch"`
	Headers         []cursorHeader             `json:"fullConversationHeadersOnly"`
	Conversation    []json.RawMessage          `json:"conversation"`
	ConversationMap map[string]json.RawMessage `json:"conversationMap"`
	Tabs            []cursorTab                `json:"tabs"`
	Capabilities    []struct {
		Data struct {
			BubbleDataMap json.RawMessage `json:"bubbleDataMap"`
		} `json:"data"`
	} `json:"capabilities"`
	ModelConfig *struct {
		ModelName string `json:"modelName"`
	} `json:"modelConfig"`
	WorkspaceIdentifier *struct {
		URI *struct {
			FsPath string `json:"fsPath"`
		} `json:"uri"`
	} `json:"workspaceIdentifier"`
}

type cursorHeader struct {
	BubbleID string `json:"bubbleId"`
}

func (c *cursorComposer) hasMessages() bool {
	if len(c.Headers) > 0 || len(c.Conversation) > 0 {
		return true
	}
	for _, t := range c.Tabs {
		if len(t.Bubbles) > 0 {
			return true
		}
	}
	return false
}

type cursorChat struct {
	Tabs []cursorTab `json:"tabs"`
}

type cursorTab struct {
	TabID        string            `json:"tabId"`
	ChatTitle    string            `json:"chatTitle"`
	LastSendTime cursorTime        `json:"lastSendTime"`
	Bubbles      []json.RawMessage `json:"bubbles"`
}

type cursorBubble struct {
	BubbleID string     `json:"bubbleId"`
	ID       string     `json:"id"` // the chat generation's
	Type     cursorRole `json:"type"`
	Text     string     `json:"text"`
	RawText  string     `json:"rawText"`
	InitText string     `json:"initText"`
	Delegate *struct {
		A string `json:"a"`
	} `json:"delegate"`
	Thinking *struct {
		Text string `json:"text"`
	} `json:"thinking"`
	ToolFormerData *cursorTool `json:"toolFormerData"`
	ModelInfo      *struct {
		ModelName string `json:"modelName"`
	} `json:"modelInfo"`
	ModelType  string `json:"modelType"`
	TokenCount *struct {
		InputTokens  float64 `json:"inputTokens"`
		OutputTokens float64 `json:"outputTokens"`
	} `json:"tokenCount"`
	CreatedAt  cursorTime `json:"createdAt"`
	TimingInfo *struct {
		ClientRPCSendTime float64 `json:"clientRpcSendTime"`
		ClientEndTime     float64 `json:"clientEndTime"`
	} `json:"timingInfo"`
}

// cursorTool is a tool call's record (toolFormerData, or an entry of a
// capability's bubbleDataMap).
type cursorTool struct {
	Name    string `json:"name"`
	RawArgs string `json:"rawArgs"`
	Params  string `json:"params"`
	Result  string `json:"result"`
	Status  string `json:"status"`
	Error   string `json:"error"`
}

// readCursorComposer reads one composer, with its bubbles, in one read.
func readCursorComposer(ctx context.Context, ref cursorComposerRef, maxPart int) (Session, []Problem, error) {
	var c cursorComposer
	var bubbles map[string][]byte
	err := readSQLite(ctx, ref.db, cursorTables, func(conn *sql.Conn) error {
		var raw []byte
		var err error
		if ref.inline {
			raw, err = inlineComposer(ctx, conn, ref.id)
		} else {
			raw, err = cursorKV(ctx, conn, "composerData:"+ref.id)
		}
		if err != nil {
			return err
		}
		if raw == nil {
			return fmt.Errorf("composer %s is gone", ref.id)
		}
		c = cursorComposer{}
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("composer %s: %s", ref.id, jsonError(err))
		}
		bubbles = map[string][]byte{}
		if len(c.Headers) == 0 || ref.inline {
			return nil
		}
		prefix := "bubbleId:" + ref.id + ":"
		return scanCursorKV(ctx, conn, prefix, func(key string, value []byte) {
			bubbles[strings.TrimPrefix(key, prefix)] = value
		})
	})
	if err != nil {
		return Session{}, nil, err
	}
	r := cursorReader{path: ref.db, maxPart: maxPart, tools: c.bubbleDataMap()}
	r.s = Session{ExternalID: ref.id, Source: SourceCursor, Title: c.Name, ProjectPath: ref.project,
		GitBranch: c.CreatedOnBranch, CreatedAt: c.CreatedAt.Time}
	if c.ModelConfig != nil && c.ModelConfig.ModelName != "default" {
		r.s.Model = c.ModelConfig.ModelName
	}
	switch {
	case len(c.Conversation) > 0:
		for i, b := range c.Conversation {
			r.bubble(fmt.Sprintf("conversation[%d]", i), b, "")
		}
	case len(c.Headers) > 0:
		for _, h := range c.Headers {
			raw, ok := c.ConversationMap[h.BubbleID]
			if !ok {
				raw, ok = bubbles[h.BubbleID]
			}
			if !ok {
				r.problem("bubble %s is listed but not stored: skipped", h.BubbleID)
				continue
			}
			r.bubble("bubble "+h.BubbleID, raw, h.BubbleID)
		}
	default:
		for _, tab := range c.Tabs {
			for i, b := range tab.Bubbles {
				r.bubble(fmt.Sprintf("tab %s bubble %d", tab.TabID, i), b, "")
			}
		}
	}
	end := c.LastUpdatedAt.Time
	return r.finish(end), r.probs, nil
}

// inlineComposer returns the allComposers entry of ItemTable's
// composer.composerData for id.
func inlineComposer(ctx context.Context, conn *sql.Conn, id string) ([]byte, error) {
	v, err := cursorItem(ctx, conn, cursorComposerKey)
	if err != nil || v == nil {
		return nil, err
	}
	var ws struct {
		All []json.RawMessage `json:"allComposers"`
	}
	if err := json.Unmarshal(v, &ws); err != nil {
		return nil, fmt.Errorf("%s: %s", cursorComposerKey, jsonError(err))
	}
	for _, raw := range ws.All {
		var c struct {
			ID string `json:"composerId"`
		}
		if json.Unmarshal(raw, &c) == nil && c.ID == id {
			return raw, nil
		}
	}
	return nil, nil
}

// bubbleDataMap collects the tool records of composer formats before 3, by
// bubble id; bubbleDataMap may be an object or a JSON string of one.
func (c *cursorComposer) bubbleDataMap() map[string]cursorTool {
	out := map[string]cursorTool{}
	if c.Version >= 3 {
		return out
	}
	for _, cp := range c.Capabilities {
		raw := bytes.TrimSpace(cp.Data.BubbleDataMap)
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				continue
			}
			raw = []byte(s)
		}
		var m map[string]cursorTool
		if json.Unmarshal(raw, &m) == nil {
			for k, v := range m {
				out[k] = v
			}
		}
	}
	return out
}

// readCursorTab reads one tab of the oldest chat data.
func readCursorTab(ctx context.Context, db cursorDB, tabID string, maxPart int) (Session, []Problem, error) {
	var chat cursorChat
	err := readSQLite(ctx, db.path, cursorTables, func(conn *sql.Conn) error {
		v, err := cursorItem(ctx, conn, cursorChatKey)
		if err != nil {
			return err
		}
		chat = cursorChat{}
		if err := json.Unmarshal(v, &chat); err != nil {
			return fmt.Errorf("%s: %s", cursorChatKey, jsonError(err))
		}
		return nil
	})
	if err != nil {
		return Session{}, nil, err
	}
	for _, tab := range chat.Tabs {
		if tab.TabID != tabID {
			continue
		}
		r := cursorReader{path: db.path, maxPart: maxPart}
		r.s = Session{ExternalID: tabID, Source: SourceCursor, Title: tab.ChatTitle, ProjectPath: db.project, CreatedAt: tab.LastSendTime.Time}
		for i, b := range tab.Bubbles {
			r.bubble(fmt.Sprintf("chat tab %s bubble %d", tabID, i), b, "")
		}
		return r.finish(time.Time{}), r.probs, nil
	}
	return Session{}, nil, fmt.Errorf("chat tab %s is gone", tabID)
}

// cursorReader turns bubbles into messages.
type cursorReader struct {
	path    string
	maxPart int
	tools   map[string]cursorTool
	s       Session
	probs   []Problem
	last    time.Time
}

func (r *cursorReader) problem(format string, args ...any) {
	r.probs = append(r.probs, Problem{Path: r.path, Err: fmt.Sprintf(format, args...)})
}

// bubble adds the message of one bubble; where names it in problems, id is
// its id when its container gives one.
func (r *cursorReader) bubble(where string, raw json.RawMessage, id string) {
	var b cursorBubble
	if err := json.Unmarshal(raw, &b); err != nil {
		r.problem("%s: skipped: %s", where, jsonError(err))
		return
	}
	id = cmpOr(b.BubbleID, id, b.ID)
	if id == "" {
		id = r.s.ExternalID + "-" + strconv.Itoa(len(r.s.Messages)+1)
	}
	at := b.CreatedAt.Time
	if at.IsZero() && b.TimingInfo != nil && b.TimingInfo.ClientRPCSendTime > 1e12 {
		at = time.UnixMilli(int64(b.TimingInfo.ClientRPCSendTime))
	}
	if at.IsZero() {
		at = cmpTime(r.last, r.s.CreatedAt)
	}
	r.last = at
	msg := Message{ExternalID: id, CreatedAt: at}
	switch b.Type {
	case "user":
		msg.Role = "user"
		text := cmpOr(b.Text, b.RawText)
		if text == "" && b.Delegate != nil {
			text = b.Delegate.A
		}
		if text == "" {
			text = lexicalText(b.InitText)
		}
		if strings.TrimSpace(text) == "" {
			return
		}
		msg.Parts = []Part{{Type: PartText, Content: truncate(text, r.maxPart)}}
	case "assistant":
		msg.Role = "assistant"
		if b.Thinking != nil && strings.TrimSpace(b.Thinking.Text) != "" {
			msg.Parts = append(msg.Parts, Part{Type: PartThinking, Text: truncate(b.Thinking.Text, r.maxPart)})
		}
		if text := cmpOr(b.Text, b.RawText); strings.TrimSpace(text) != "" {
			msg.Parts = append(msg.Parts, Part{Type: PartText, Content: truncate(text, r.maxPart)})
		}
		tool := b.ToolFormerData
		if t, ok := r.tools[id]; tool == nil && ok {
			tool = &t
		}
		if tool != nil && tool.Name != "" {
			msg.Parts = append(msg.Parts, tool.parts(r.maxPart)...)
		}
		if len(msg.Parts) == 0 {
			return
		}
		msg.Model = r.s.Model
		if b.ModelInfo != nil && b.ModelInfo.ModelName != "" {
			msg.Model = b.ModelInfo.ModelName
		} else if b.ModelType != "" {
			msg.Model = b.ModelType
		}
		if r.s.Model == "" {
			r.s.Model = msg.Model
		}
	default:
		r.problem("%s: skipped: neither a user nor an assistant bubble", where)
		return
	}
	if t := b.TokenCount; t != nil && (t.InputTokens > 0 || t.OutputTokens > 0) {
		msg.PromptTokens, msg.CompletionTokens = ptr(round(t.InputTokens)), ptr(round(t.OutputTokens))
		r.s.PromptTokens += *msg.PromptTokens
		r.s.CompletionTokens += *msg.CompletionTokens
	}
	r.s.Messages = append(r.s.Messages, msg)
}

func cmpTime(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// parts makes a tool record a call, with its output or error as a result.
func (t *cursorTool) parts(maxPart int) []Part {
	args := json.RawMessage(`{}`)
	switch {
	case json.Valid([]byte(t.RawArgs)) && strings.TrimSpace(t.RawArgs) != "":
		args = json.RawMessage(t.RawArgs)
	case json.Valid([]byte(t.Params)) && strings.TrimSpace(t.Params) != "":
		args = json.RawMessage(t.Params)
	case t.RawArgs != "":
		args, _ = json.Marshal(map[string]string{"input": t.RawArgs})
	}
	parts := []Part{{Type: PartToolCall, ToolName: t.Name, Args: jsonArgs(args, maxPart)}}
	out := t.Result
	switch {
	case t.Error != "" || t.Status == "error":
		out = "Error: " + cmpOr(t.Error, t.Result, "the tool failed")
	case t.Status == "cancelled" && out == "":
		out = "Cancelled"
	}
	if out != "" {
		parts = append(parts, Part{Type: PartToolResult, ToolName: t.Name, Content: truncate(out, maxPart)})
	}
	return parts
}

// lexicalText pulls the text out of a Lexical editor state (initText).
func lexicalText(s string) string {
	if s == "" {
		return ""
	}
	var node struct {
		Text     string            `json:"text"`
		Root     json.RawMessage   `json:"root"`
		Children []json.RawMessage `json:"children"`
	}
	if json.Unmarshal([]byte(s), &node) != nil {
		return ""
	}
	var out []string
	if node.Text != "" {
		out = append(out, node.Text)
	}
	if len(node.Root) > 0 {
		out = append(out, lexicalText(string(node.Root)))
	}
	for _, c := range node.Children {
		out = append(out, lexicalText(string(c)))
	}
	return strings.Join(out, "")
}

func (r *cursorReader) finish(end time.Time) Session {
	s := r.s
	s.ProjectName = projectName(s.ProjectPath)
	if s.CreatedAt.IsZero() && len(s.Messages) > 0 {
		s.CreatedAt = s.Messages[0].CreatedAt
	}
	for i := range s.Messages {
		if s.Messages[i].CreatedAt.IsZero() {
			s.Messages[i].CreatedAt = s.CreatedAt
		}
	}
	if end.IsZero() {
		end = r.last
	}
	if !s.CreatedAt.IsZero() && end.After(s.CreatedAt) {
		s.DurationMs = end.Sub(s.CreatedAt).Milliseconds()
	}
	if s.Title == "" {
		for _, m := range s.Messages {
			if m.Role == "user" {
				s.Title = Title(m.Text())
				break
			}
		}
	}
	return s
}

// cursorRoots: the Cursor IDE's User directory: ~/.config/Cursor/User on
// Linux ($XDG_CONFIG_HOME/Cursor when set), ~/Library/Application
// Support/Cursor/User on macOS, %APPDATA%\Cursor\User on Windows.
func cursorRoots(home, goos string, getenv func(string) string) []string {
	return electronUserDirs("Cursor", home, goos, getenv)
}

// electronUserDirs are where a VS Code fork named app keeps its User
// directory on goos.
func electronUserDirs(app, home, goos string, getenv func(string) string) []string {
	switch goos {
	case "darwin":
		return []string{filepath.Join(home, "Library", "Application Support", app, "User")}
	case "windows":
		var out []string
		if d := getenv("APPDATA"); d != "" {
			out = append(out, filepath.Join(d, app, "User"))
		}
		return append(out, filepath.Join(home, "AppData", "Roaming", app, "User"))
	}
	var out []string
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		out = append(out, filepath.Join(d, app, "User"))
	}
	return append(out, filepath.Join(home, ".config", app, "User"))
}
