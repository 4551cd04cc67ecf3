// Package exporter turns kv records into export files: one session as json,
// markdown or jsonl ([WriteSession]), and evaluation datasets of many sessions
// as deepeval, chat-jsonl, text, openai-evals or promptfoo ([WriteEval]).
//
// # Streaming
//
// Every writer reads messages from a [Messages] iterator and writes as it
// goes, so memory does not grow with the size of the export. A writer holds at
// most one message, plus, for the formats that repeat earlier messages as
// context (deepeval, openai-evals, promptfoo), a window of recent messages
// bounded by [Options.MaxContextMessages] and [Options.MaxContextBytes]. The
// functions are pure: they read nothing but their arguments and write nothing
// but w.
//
// # Message text
//
// A message's text is its text parts, or its textContent when it has no text
// part (the rule of ingest.MessageText, but for every role). Tool calls and
// tool results are added as "[tool-call NAME] ARGS" and "[tool-result NAME]
// CONTENT" when [Options.IncludeTools] is set; other part types (thinking,
// files, ...) are never exported. Unless [Options.KeepHomeDirs] is set, home
// directories in every exported string become /home/user, /Users/user or
// C:\Users\user ([Anonymize]).
//
// # Exchanges
//
// The eval formats pair messages into exchanges: each user message pairs with
// the assistant messages that follow it up to the next user message; several
// assistant messages are joined with a blank line, and tool, system and
// unknown messages in between are context, not output. A user message that no
// assistant message answers before the next user message is not an exchange
// (it stays in the context of later ones); messages without text are skipped
// entirely. A session's expectedOutput belongs to its last exchange.
package exporter
