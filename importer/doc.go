// Package importer reads the local history of coding assistants and uploads
// it to a Hindsight server through the public sync API, keeping the original
// dates.
//
// # Reading
//
// Agents lists the assistants the importer reads: each Agent has a name
// (hindsight import <name>), the source its sessions are stored under, where
// it keeps its history on each system (Roots) and a reader (Read). Every
// reader returns Items: one per session, read on demand by Item.Read, so an
// import holds only the sessions being uploaded in memory. Malformed input
// (a line that is not JSON, a part file or a database row that cannot be
// parsed) is reported as a Problem naming file and line (or row) and is
// skipped; it never aborts a read.
//
//   - ClaudeCode: ~/.claude/projects, one JSONL transcript per session, with
//     its sub-agents' transcripts and externalised tool outputs.
//   - Codex: $CODEX_HOME/sessions and archived_sessions, one rollout per
//     session (JSONL; the first versions' JSON).
//   - Gemini: ~/.gemini/tmp/<project>/chats, JSONL sessions patched by $set
//     and $rewindTo lines (the older JSON documents), grouped by session id.
//   - Qwen: ~/.qwen/projects/<project>/chats, Claude-like records around
//     Gemini-like parts.
//   - OpenCode: opencode.db (SQLite) and the older JSON storage.
//   - Cursor: the editor's state.vscdb databases (Composer and chat data);
//     CursorAgent: the CLI's agent-transcripts (plain text or JSONL).
//   - Aider: .aider.chat.history.md in each project, one session per run.
//   - SpecStory: .specstory/history/*.md in each project, stored under the
//     assistant each file came from.
//   - Copilot: Copilot CLI's event logs (both layouts); VSCodeCopilot: VS
//     Code's chatSessions (JSON documents and JSONL patch logs).
//   - Pi: pi's session files, every branch.
//
// SQLite histories (opencode, Cursor) are read by readSQLite: read-only,
// inside one read transaction (a consistent snapshot, WAL included) or,
// when the running assistant's locks or a read-only directory prevent that,
// from a private copy taken while the files hold still; an authorizer lets
// the readers see only the conversation tables (never opencode's login
// tables), and a database locked by a running editor is never written and
// never fails the import.
//
// Aider and SpecStory keep their histories inside the user's projects, so
// their root is the home directory and walkProjects searches it, bounded:
// four levels deep, no hidden, dependency or build directories, no symbolic
// links, at most 50,000 directories.
//
// The readers produce the payloads the assistants' own sync plugins send, with
// the same external ids where the plugin's are stable (Claude Code: session
// id, assistant messages by transcript uuid, tool calls by tool_use id;
// opencode: session and message ids; Cursor: the conversation id; pi: the
// plugin's per-role counters), so importing after live sync does not
// duplicate. Codex sessions keep Codex's own session id (codex-sync, its
// plugin, is not published; its documentation names no id scheme). Where an
// assistant gives a message no id, a reader names it by its file and line:
// stable while the file only grows.
//
// A session is everything the assistant wrote for it, wherever it wrote it:
// Claude Code's sub-agent transcripts and externalised tool outputs, Gemini's
// sub-agent sessions and a session resumed into a second file, the Cursor
// CLI's sub-agent transcripts and Copilot's sub-agent events (those naming a
// parentToolCallId) are read into the one session. A sub-agent's messages
// carry Message.SubAgent, sent as a last part of type "subagent"
// ({"type":"subagent","agentId","agentType","description"}): stored and
// returned as sent, never searchable, so their text is searchable as the
// session's own is.
//
// # Following what is written (hindsight import --watch)
//
// The JSONL readers (Claude Code, Codex, Gemini, Qwen, Copilot, pi) are
// state machines fed one line at a time whose finish returns the session
// read so far and lets them go on; eachLine feeds complete lines from any
// offset and returns the bytes and lines it consumed. Their Items carry a
// followSpec (follow.go): the session's files and a tail that takes their
// lines. The Watcher (watch.go) keeps one tail per active session with the
// offset and line number it reached in each file, feeds what was appended,
// and sends what changed since the server acknowledged it, found by
// digests (digest.go); other histories are re-read whole when they change.
// Its state file (watchstate.go) keeps the acknowledged offsets, so a
// restart, an outage or a crash re-sends and never skips.
//
// # Uploading
//
// Upload sends the sessions with bounded concurrency. Each new session is
// created with POST /sync/session and its createdAt, then its messages are
// sent in order with their createdAt. Sessions the server already has are
// compared first and only what is missing is sent, so a re-run is a no-op and
// an interrupted import resumes where it stopped. Requests that fail with 429,
// a 5xx or a network error are retried with exponential backoff and jitter,
// honouring Retry-After (see Client).
//
// When the server advertises date-keeping batches (a /sync/batch?keepDates=1
// response with "keepDates": true), messages go in bounded batches instead of
// one request each; otherwise single posts are used, which keep dates on every
// server.
package importer
