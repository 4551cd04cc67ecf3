package kv

import (
	"crypto/rand"
	"encoding/json"
	"strings"
)

// IDLen is the length of every service-assigned id (users, sessions, messages).
const IDLen = 16

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// NewID returns a random, opaque id of IDLen characters from [a-z0-9]
// (about 82 bits of entropy). Ids reveal nothing about other users or counts.
func NewID() string {
	var b [IDLen]byte
	// 252 is the largest multiple of 36 below 256: rejecting larger bytes keeps
	// every character equally likely.
	var buf [IDLen * 2]byte
	n := 0
	for n < IDLen {
		if _, err := rand.Read(buf[:]); err != nil {
			panic("kv: crypto/rand failed: " + err.Error()) // never happens on supported platforms
		}
		for _, c := range buf {
			if c < 252 && n < IDLen {
				b[n] = idAlphabet[c%36]
				n++
			}
		}
	}
	return string(b[:])
}

// User is an account. Sessions, messages and keys belong to exactly one user.
type User struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	CreatedAt int64  `json:"createdAt"`
	// PasswordHash is a bcrypt hash, empty until a password is set (dashboard sign-in).
	PasswordHash string `json:"passwordHash,omitempty"`
}

// APIKey is stored under the SHA-256 of the key; the key itself is never stored.
type APIKey struct {
	Hash      string `json:"hash"`   // hex SHA-256 of the full key
	Prefix    string `json:"prefix"` // first characters of the key, shown in listings
	UserID    string `json:"userId"`
	Label     string `json:"label,omitempty"`
	CreatedAt int64  `json:"createdAt"`
	LastUsed  int64  `json:"lastUsed,omitempty"`
	Revoked   int64  `json:"revoked,omitempty"` // revocation time; 0 = active
}

// Eval statuses a session can carry.
const (
	EvalGolden      = "golden"
	EvalCorrect     = "correct"
	EvalIncorrect   = "incorrect"
	EvalNeedsReview = "needs_review"
)

// Eval is a session's evaluation metadata (set through the labelling API).
type Eval struct {
	Ready          bool     `json:"evalReady,omitempty"`
	Status         string   `json:"evalStatus,omitempty"`
	Notes          string   `json:"evalNotes,omitempty"`
	Tags           []string `json:"evalTags,omitempty"`
	ExpectedOutput string   `json:"expectedOutput,omitempty"`
	ReviewedAt     int64    `json:"reviewedAt,omitempty"`
}

// Session is one coding-assistant session. Token and cost totals are what the
// plugin reported for the session; message tokens never add to them.
type Session struct {
	ID               string  `json:"id"`
	UserID           string  `json:"userId"`
	ExternalID       string  `json:"externalId"`
	Source           string  `json:"source"`
	Title            string  `json:"title,omitempty"`
	Model            string  `json:"model,omitempty"`
	Provider         string  `json:"provider,omitempty"`
	ProjectPath      string  `json:"projectPath,omitempty"`
	ProjectName      string  `json:"projectName,omitempty"`
	GitBranch        string  `json:"gitBranch,omitempty"`
	PromptTokens     int64   `json:"promptTokens"`
	CompletionTokens int64   `json:"completionTokens"`
	TotalTokens      int64   `json:"totalTokens"`
	Cost             float64 `json:"cost"`
	DurationMs       int64   `json:"durationMs"`
	MessageCount     int64   `json:"messageCount"`
	Public           bool    `json:"public,omitempty"`
	CreatedAt        int64   `json:"createdAt"`
	UpdatedAt        int64   `json:"updatedAt"`
	// NextSeq is the sequence number the next new message of this session gets.
	NextSeq uint64 `json:"nextSeq"`
	// Deleted marks a tombstone: the session is gone for every reader while
	// its messages are purged in bounded transactions.
	Deleted bool `json:"deleted,omitempty"`
	Eval
}

// Untitled is what a session without a title is called wherever it is
// shown.
const Untitled = "Untitled session"

// DisplayTitle is the title a session is shown under: its title without
// surrounding white space, or [Untitled] when that leaves nothing. Every
// front end, export and context answer shows this, so a session is called
// the same everywhere.
func (s Session) DisplayTitle() string {
	if t := strings.TrimSpace(s.Title); t != "" {
		return t
	}
	return Untitled
}

// ProjectLabel is the project a session is filed and shown under: its
// project name, else its project path ("" when it has neither). The
// dashboard's project filter, the MCP tools and context answers use it.
func (s Session) ProjectLabel() string {
	if s.ProjectName != "" {
		return s.ProjectName
	}
	return s.ProjectPath
}

// Part types the service understands; any other type is kept as sent in Raw.
const (
	PartText       = "text"
	PartToolCall   = "tool-call"
	PartToolResult = "tool-result"
)

// Part is one piece of a message. Text, tool-call and tool-result parts are
// normalised (Content, ToolName, Args); parts of any other type (thinking,
// tool_use, file, ...) keep their original JSON in Raw and are returned as sent.
type Part struct {
	Type     string          `json:"type"`
	Content  string          `json:"content,omitempty"`
	ToolName string          `json:"toolName,omitempty"`
	Args     string          `json:"args,omitempty"` // arguments serialised as JSON
	Raw      json.RawMessage `json:"raw,omitempty"`
}

// Message is one message of a session, kept in the order it was first received.
type Message struct {
	ID               string  `json:"id"`
	UserID           string  `json:"userId"`
	SessionID        string  `json:"sessionId"`
	Seq              uint64  `json:"seq"`
	ExternalID       string  `json:"externalId"`
	Role             string  `json:"role"`
	Parts            []Part  `json:"parts,omitempty"`
	TextContent      *string `json:"textContent,omitempty"`
	Model            string  `json:"model,omitempty"`
	Source           string  `json:"source,omitempty"`
	PromptTokens     *int64  `json:"promptTokens,omitempty"`
	CompletionTokens *int64  `json:"completionTokens,omitempty"`
	DurationMs       *int64  `json:"durationMs,omitempty"`
	CreatedAt        int64   `json:"createdAt"`
	UpdatedAt        int64   `json:"updatedAt"`
}

// Roles a message can have.
var Roles = []string{"user", "assistant", "system", "tool", "unknown"}
