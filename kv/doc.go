// Package kv is Hindsight's system of record: users, API keys, sessions, messages
// and the indexing outbox, kept in one bbolt file ([Open]) or in a PostgreSQL
// database ([OpenPostgres]).
//
// # Two stores, one contract
//
// [Tx] reads and writes named buckets of ordered keys through a small
// backend (backend.go): bbolt's own buckets, or one PostgreSQL table that
// holds every bucket's keys in the same order (postgres.go). Everything
// below holds for both; where they differ, the doc of [Store.Commit] and
// postgres.go say how. The tests run against both (internal/kvtest.Each).
//
// # Basics
//
// Every record is JSON in a bucket; message and session records, most of
// the file, are stored zstd-compressed (see codec.go: a format byte keeps
// records of older files readable), and a session's messages are keyed by a
// number given to the session, so they are written in key order
// (msgkeys.go). Reads go through [Store.View]; writes go
// through [Store.Commit], which group-commits concurrent writers into one bbolt
// transaction (one fsync for many callers). When Commit returns nil the write is
// on disk. A callback that fails or panics fails its own write only: the
// committer recovers the panic (it runs on the committer's goroutine, where no
// caller could) and commits the rest of the group without it.
//
// # Ownership
//
// Every key that holds user data starts with the user id: nothing reads a
// session or a message without naming its owner, so a handler cannot leak
// another user's data by forgetting a filter. Ids are random and opaque
// ([NewID]), fixed length, so a user id is always a clean key prefix.
//
// # Outbox
//
// A write that changes a session's searchable content marks the session dirty
// in the same transaction ([Tx.MarkDirty], or [Tx.MarkLive] for a live sync,
// which the indexer serves first). The indexer reads dirty entries
// ([Tx.DirtySessions]) and clears each one only after the index accepted it
// ([Tx.ClearDirty]), and only if no newer write marked it again meanwhile. A
// crash therefore loses nothing; at worst a session is indexed twice.
// When several nodes share the records in PostgreSQL, each claims a step's
// entries before indexing them ([Store.Claim], claims.go), so each entry is
// indexed by one node, and by another once a dead node's lease expires.
//
// # Tombstones
//
// A deleted session leaves a [Tombstone] under its owner and external id
// ([Tx.PutTombstone], in the transaction that deletes it): when, why and
// its source, never its content. Ingest drops the later writes of a
// tombstoned session, so a deletion sticks until the owner removes the
// tombstone ([Tx.RemoveTombstone]). [Tx.RecentTombstones] lists a user's
// newest first.
package kv
