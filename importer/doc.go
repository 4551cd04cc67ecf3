// Package importer reads the local history of coding assistants and uploads
// it to a Hindsight server through the public sync API, keeping the original
// dates.
//
// # Reading
//
// ClaudeCode lists Claude Code's JSONL transcripts (~/.claude/projects) and
// OpenCode lists opencode's JSON storage (storage/session, message, part).
// Both return Items: one per session, read on demand by Item.Read, so an
// import holds only the sessions being uploaded in memory. Malformed input (a
// line that is not JSON, a part file that cannot be parsed) is reported as a
// Problem naming file and line and is skipped; it never aborts a read.
//
// The readers produce the payloads the assistants' own sync plugins send, with
// the same external ids where the plugin's are stable (Claude Code: assistant
// messages by transcript uuid, tool calls by tool_use id; opencode: session and
// message ids), so importing after live sync does not duplicate.
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
