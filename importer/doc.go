// Package importer reads the local history of coding assistants and uploads
// it to a Hindsight server through the public sync API, keeping the original
// dates.
//
// # Reading
//
// Agents lists the assistants the importer reads: each Agent has a name
// (hindsight import <name>), the source its sessions are stored under, where
// it keeps its history on each system (Roots) and a reader (Read): ClaudeCode,
// Codex, Gemini, Qwen, OpenCode, ... Every reader returns Items: one per
// session, read on demand by Item.Read, so an import holds only the sessions
// being uploaded in memory. Malformed input (a line that is not JSON, a part
// file that cannot be parsed) is reported as a Problem naming file and line
// and is skipped; it never aborts a read.
//
// The readers produce the payloads the assistants' own sync plugins send, with
// the same external ids where the plugin's are stable (Claude Code: session
// id, assistant messages by transcript uuid, tool calls by tool_use id;
// opencode: session and message ids), so importing after live sync does not
// duplicate. Codex sessions keep Codex's own session id (codex-sync, its
// plugin, is not published; its documentation names no id scheme). Where an assistant gives a
// message no id, a reader names it by its file and line: stable while the
// file only grows.
//
// A session is everything the assistant wrote for it, wherever it wrote it:
// Claude Code's sub-agent transcripts and externalised tool outputs, Gemini's
// sub-agent sessions and a session resumed into a second file are read into
// the one session. A sub-agent's messages carry Message.SubAgent, sent as a
// last part of type "subagent" ({"type":"subagent","agentId","agentType",
// "description"}): stored and returned as sent, never searchable, so their
// text is searchable as the session's own is.
//
// # Following appended files
//
// The JSONL readers are state machines fed one line at a time (line(n, raw))
// whose finish returns the session read so far and lets them go on; eachLine
// feeds complete lines from any offset and returns the bytes and lines it
// consumed. A follower (hindsight import --watch, to come) keeps one reader
// per file with the offset and line number it reached, feeds what was
// appended, and uploads the difference.
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
