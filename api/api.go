// Package api declares the JSON payloads of Hindsight's REST API once: what
// sync plugins (and the importer and the benchmarks) send, and what the read
// endpoints return. Field names and meanings follow service-spec.md and
// decisions.md. The package holds declarations only: ingest decodes and
// validates the sync payloads, httpd fills the read ones.
package api

import "encoding/json"

// SyncSession is a session write: the body of POST /sync/session and an entry
// of a batch's "sessions". A nil field was not sent (or was null): an update
// changes only the fields present.
//
// Numbers are float64 because plugins compute some counts as floats; the
// server rounds token counts and milliseconds to whole numbers.
type SyncSession struct {
	ExternalID       *string  `json:"externalId,omitempty"`
	SessionID        *string  `json:"sessionId,omitempty"` // alias of externalId (claude-code-sync sends it)
	Source           *string  `json:"source,omitempty"`
	Title            *string  `json:"title,omitempty"`
	Model            *string  `json:"model,omitempty"`
	Provider         *string  `json:"provider,omitempty"`
	ProjectPath      *string  `json:"projectPath,omitempty"`
	ProjectName      *string  `json:"projectName,omitempty"`
	GitBranch        *string  `json:"gitBranch,omitempty"` // the branch checked out in the project (importers, droid-sync)
	PromptTokens     *float64 `json:"promptTokens,omitempty"`
	CompletionTokens *float64 `json:"completionTokens,omitempty"`
	TotalTokens      *float64 `json:"totalTokens,omitempty"`
	Cost             *float64 `json:"cost,omitempty"`
	DurationMs       *float64 `json:"durationMs,omitempty"`
	MessageCount     *float64 `json:"messageCount,omitempty"` // checked, not stored: the read field counts stored messages
	CreatedAt        *float64 `json:"createdAt,omitempty"`    // ms; kept on first insert (single endpoints, batches with keepDates=1)
}

// SyncMessage is a message write: the body of POST /sync/message and an
// entry of a batch's "messages".
type SyncMessage struct {
	ExternalID        *string  `json:"externalId,omitempty"`
	SessionExternalID *string  `json:"sessionExternalId,omitempty"`
	Role              *string  `json:"role,omitempty"`
	Source            *string  `json:"source,omitempty"`
	TextContent       *string  `json:"textContent,omitempty"`
	Parts             Parts    `json:"parts,omitempty"`
	Model             *string  `json:"model,omitempty"`
	PromptTokens      *float64 `json:"promptTokens,omitempty"`
	CompletionTokens  *float64 `json:"completionTokens,omitempty"`
	DurationMs        *float64 `json:"durationMs,omitempty"`
	CreatedAt         *float64 `json:"createdAt,omitempty"`
}

// Parts are a message's parts, each a JSON object. Parts of the known types
// have the shape of Part; parts of other types (thinking, tool_use, file, ...)
// are stored and returned exactly as sent, so each is kept as raw JSON.
type Parts []json.RawMessage

// Part is a part of a known type: text (Content), tool-call (ToolName, Args)
// or tool-result (ToolName, Content). Read responses and the importer use
// this flat shape with Content and Args as JSON strings.
//
// Plugins also send other shapes, all accepted: Content of a text part as
// {"text": "..."}; a tool part nested in Content as an object holding
// toolName (or name), args (or input) and, for results, result or content;
// Args as an object instead of a string holding one. Content, Args, Input and
// Result are therefore raw JSON.
type Part struct {
	Type     string          `json:"type"`
	Content  json.RawMessage `json:"content,omitempty"`
	ToolName string          `json:"toolName,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	Text     *string         `json:"text,omitempty"`   // a wrapped text part's text ({"text": ...} in Content)
	Name     string          `json:"name,omitempty"`   // alias of toolName
	Input    json.RawMessage `json:"input,omitempty"`  // alias of args
	Result   json.RawMessage `json:"result,omitempty"` // a nested tool result's output
}

// SyncBatch is the body of POST /sync/batch. Sessions are applied before
// messages.
type SyncBatch struct {
	Sessions []SyncSession `json:"sessions"`
	Messages []SyncMessage `json:"messages"`
}

// Counts are the entries a sync inserted and updated; an entry re-sent with
// identical content is neither.
type Counts struct {
	Inserted int `json:"inserted"`
	Updated  int `json:"updated"`
}

// SyncBatchResult is the response to POST /sync/batch. Errors has one string
// per rejected entry, naming it; Ignored has the entries acknowledged and
// dropped because their session was deleted or its project is excluded
// (counted as neither inserted nor updated); the other entries are stored.
type SyncBatchResult struct {
	OK        bool          `json:"ok"`
	Sessions  Counts        `json:"sessions"`
	Messages  Counts        `json:"messages"`
	Errors    []string      `json:"errors"`
	Ignored   []SyncIgnored `json:"ignored"`             // [] when none; absent from servers without tombstones
	KeepDates bool          `json:"keepDates,omitempty"` // echoed for /sync/batch?keepDates=1
}

// SyncIgnored is a batch entry that was acknowledged and dropped.
type SyncIgnored struct {
	Entry      string `json:"entry"`      // its place in the request: "sessions[0]", "messages[3]"
	ExternalID string `json:"externalId"` // the entry's own externalId
	Reason     string `json:"reason"`     // "deleted" (its session was deleted) or "excluded" (its project is)
}

// SyncSessionList is the response to GET /sync/sessions/list: the external
// ids of the caller's sessions, and of the sessions they deleted (whose
// syncs are dropped; importers skip them).
type SyncSessionList struct {
	SessionIDs []string `json:"sessionIds"`
	DeletedIDs []string `json:"deletedIds"`
}

// DeletedSession is a tombstone as GET /api/sessions/deleted lists it: what
// stays of a deleted session (no title, no content).
type DeletedSession struct {
	ExternalID string `json:"externalId"`
	Source     string `json:"source"`
	DeletedAt  int64  `json:"deletedAt"` // Unix ms
	Reason     string `json:"reason"`    // "deleted" or "excluded"
}

// DeletedSessionList is the response to GET /api/sessions/deleted, newest
// first. NextCursor is set when more follow.
type DeletedSessionList struct {
	Deleted    []DeletedSession `json:"deleted"`
	NextCursor string           `json:"nextCursor,omitempty"`
}

// AllowSync is the body of POST /api/sessions/deleted/allow.
type AllowSync struct {
	ExternalIDs []string `json:"externalIds"`
}

// Session is the session read object (GET /api/sessions items,
// /api/sessions/get, search results, /api/evals).
type Session struct {
	ID               string   `json:"id"`
	AltID            string   `json:"_id,omitempty"` // semantic and hybrid results carry _id too
	ExternalID       string   `json:"externalId"`
	Source           string   `json:"source"`
	Title            string   `json:"title,omitempty"`
	ProjectPath      string   `json:"projectPath,omitempty"`
	ProjectName      string   `json:"projectName,omitempty"`
	GitBranch        string   `json:"gitBranch,omitempty"`
	Model            string   `json:"model,omitempty"`
	Provider         string   `json:"provider,omitempty"`
	PromptTokens     int64    `json:"promptTokens"`
	CompletionTokens int64    `json:"completionTokens"`
	TotalTokens      int64    `json:"totalTokens"`
	Cost             float64  `json:"cost"`
	DurationMs       int64    `json:"durationMs"`
	MessageCount     int64    `json:"messageCount"`
	Visibility       string   `json:"visibility"` // "private" or "public"
	IsPublic         bool     `json:"isPublic"`
	CreatedAt        int64    `json:"createdAt"`
	UpdatedAt        int64    `json:"updatedAt"`
	EvalReady        *bool    `json:"evalReady,omitempty"`
	EvalStatus       string   `json:"evalStatus,omitempty"`
	EvalNotes        string   `json:"evalNotes,omitempty"`
	EvalTags         []string `json:"evalTags,omitempty"`
	ExpectedOutput   string   `json:"expectedOutput,omitempty"`
	ReviewedAt       int64    `json:"reviewedAt,omitempty"`
}

// Message is a stored message as GET /api/sessions/get returns it, in
// creation order.
type Message struct {
	ID               string  `json:"id"`
	ExternalID       string  `json:"externalId"`
	Role             string  `json:"role"`
	Parts            Parts   `json:"parts"`
	TextContent      *string `json:"textContent,omitempty"`
	Model            string  `json:"model,omitempty"`
	PromptTokens     *int64  `json:"promptTokens,omitempty"`
	CompletionTokens *int64  `json:"completionTokens,omitempty"`
	DurationMs       *int64  `json:"durationMs,omitempty"`
	CreatedAt        int64   `json:"createdAt"`
}

// SessionList is the response to GET /api/sessions. NextCursor, an
// extension, is set when more sessions follow.
type SessionList struct {
	Sessions   []Session `json:"sessions"`
	NextCursor string    `json:"nextCursor,omitempty"`
}

// SessionDetail is the response to GET /api/sessions/get.
type SessionDetail struct {
	Session  Session   `json:"session"`
	Messages []Message `json:"messages"`
}

// ModelUsage is one model's entry in Stats.
type ModelUsage struct {
	Tokens   int64   `json:"tokens"`
	Cost     float64 `json:"cost"`
	Sessions int64   `json:"sessions"`
}

// Stats is the response to GET /api/stats. ModelUsage is keyed by model name
// ("unknown" for sessions that recorded none). Redactions, an extension,
// counts the secrets redaction removed from the user's writes, by rule.
type Stats struct {
	SessionCount     int64                 `json:"sessionCount"`
	MessageCount     int64                 `json:"messageCount"`
	TotalTokens      int64                 `json:"totalTokens"`
	PromptTokens     int64                 `json:"promptTokens"`
	CompletionTokens int64                 `json:"completionTokens"`
	TotalCost        float64               `json:"totalCost"`
	TotalDurationMs  int64                 `json:"totalDurationMs"`
	ModelUsage       map[string]ModelUsage `json:"modelUsage"`
	Redactions       map[string]int64      `json:"redactions"`
}
