package ingest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hindsight-dev/hindsight/kv"
)

// deleteStep bounds how many sessions one deletion transaction tombstones.
const deleteStep = 1000

// Deleting a session removes it from every read at once; its index
// documents, vectors and messages are removed in the background (see
// kv.Tx.DeleteSession). In the same transaction it leaves a tombstone of
// the session's external id (kv/tombstone.go), so the deletion sticks: the
// plugin's later writes of the session and its messages are acknowledged
// and dropped (applier), and imports skip it (GET /sync/sessions/list
// names it), until the owner allows it to sync again (AllowSync).

// forget deletes the user's session sessionID and leaves its tombstone t,
// in the caller's transaction.
func forget(tx *kv.Tx, userID, sessionID string, t kv.Tombstone) error {
	if err := tx.DeleteSession(userID, sessionID); err != nil {
		return err
	}
	if err := tx.PutTombstone(userID, t); err != nil {
		return fmt.Errorf("tombstone of session %s: %w", sessionID, err)
	}
	return nil
}

// deleted is the tombstone a deletion by the owner leaves for s.
func (s *Service) deleted(ss kv.Session) kv.Tombstone {
	return kv.Tombstone{ExternalID: ss.ExternalID, Source: ss.Source, Reason: kv.ReasonDeleted, DeletedAt: s.now().UnixMilli()}
}

// DeleteSession deletes one session of the user and leaves its tombstone.
// kv.ErrNotFound if there is none.
func (s *Service) DeleteSession(ctx context.Context, userID, sessionID string) error {
	err := s.store.Commit(ctx, func(tx *kv.Tx) error {
		ss, err := tx.Session(userID, sessionID)
		if err != nil {
			return err
		}
		return forget(tx, userID, sessionID, s.deleted(ss))
	})
	if err != nil {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	s.notify()
	return nil
}

// DeleteAll deletes every session of the user (keys and the account stay)
// and leaves their tombstones: see DeleteSessions.
func (s *Service) DeleteAll(ctx context.Context, userID string, progress func(done int)) (sessions, messages int64, err error) {
	return s.DeleteSessions(ctx, userID, nil, progress)
}

// InProject selects the sessions whose projectPath is path (exactly).
func InProject(path string) func(kv.Session) bool {
	return func(s kv.Session) bool { return s.ProjectPath == path }
}

// NamedProject selects the sessions whose projectName is name (exactly).
func NamedProject(name string) func(kv.Session) bool {
	return func(s kv.Session) bool { return s.ProjectName == name }
}

// DeleteSessions deletes the user's sessions that match selects (every
// one when match is nil) and leaves their tombstones, in transactions of
// at most deleteStep sessions, calling progress after each. It returns
// how many sessions and messages it deleted. Sessions written while it
// runs are deleted too when they match.
func (s *Service) DeleteSessions(ctx context.Context, userID string, match func(kv.Session) bool, progress func(done int)) (sessions, messages int64, err error) {
	after := "" // steps go through the sessions in id order
	for {
		var ids []string
		err := s.store.View(ctx, func(tx *kv.Tx) error {
			return tx.SessionsAfter(userID, after, func(ss kv.Session) error {
				if match != nil && !match(ss) {
					return nil
				}
				if len(ids) == deleteStep {
					return errStop
				}
				ids = append(ids, ss.ID)
				return nil
			})
		})
		if err != nil && err != errStop {
			return sessions, messages, err
		}
		if len(ids) == 0 {
			if after == "" {
				return sessions, messages, nil
			}
			// Once more from the start: a session written meanwhile may
			// have an id before where the steps were.
			after = ""
			continue
		}
		var n, msgs int64
		err = s.store.Commit(ctx, func(tx *kv.Tx) error {
			n, msgs = 0, 0
			for _, id := range ids {
				ss, err := tx.Session(userID, id)
				if errors.Is(err, kv.ErrNotFound) || err == nil && match != nil && !match(ss) {
					continue // deleted or changed since it was listed
				}
				if err != nil {
					return err
				}
				if err := forget(tx, userID, id, s.deleted(ss)); err != nil {
					return err
				}
				n++
				msgs += ss.MessageCount
			}
			return nil
		})
		if err != nil {
			return sessions, messages, fmt.Errorf("delete sessions: %w", err)
		}
		sessions += n
		messages += msgs
		after = ids[len(ids)-1]
		s.notify()
		if progress != nil {
			progress(int(sessions))
		}
	}
}

type stopErr struct{}

func (stopErr) Error() string { return "stop" }

var errStop error = stopErr{}

// DeletedPosition is a place in the list of a user's deleted sessions,
// newest first: the entries after it come next. The zero value is the
// start.
type DeletedPosition struct {
	DeletedAt  int64
	ExternalID string
}

// String encodes p for a page link or an API cursor:
// "<deletedAt>.<externalId, base64url>" (external ids may hold any
// character).
func (p DeletedPosition) String() string {
	return strconv.FormatInt(p.DeletedAt, 10) + "." + base64.RawURLEncoding.EncodeToString([]byte(p.ExternalID))
}

// ParseDeletedPosition decodes what DeletedPosition.String wrote.
func ParseDeletedPosition(s string) (DeletedPosition, error) {
	ts, ext, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(ts, 10, 64)
	id, derr := base64.RawURLEncoding.DecodeString(ext)
	if !ok || err != nil || derr != nil || len(id) == 0 {
		return DeletedPosition{}, invalid("malformed position %q", s)
	}
	return DeletedPosition{DeletedAt: n, ExternalID: string(id)}, nil
}

// maxDeletedPage bounds one page of DeletedSessions.
const maxDeletedPage = 1000

// DeletedSessions returns up to limit of the user's tombstones after from,
// newest first (equal times by descending external id), and the position of
// the next page (more false when this is the last). It reads only the
// tombstones it returns, and one more.
func (s *Service) DeletedSessions(ctx context.Context, userID string, from DeletedPosition, limit int) (list []kv.Tombstone, next DeletedPosition, more bool, err error) {
	limit = min(max(limit, 1), maxDeletedPage)
	err = s.store.View(ctx, func(tx *kv.Tx) error {
		return tx.RecentTombstones(userID, kv.TombstonePosition(from), func(t kv.Tombstone) bool {
			if len(list) == limit {
				more = true
				return false
			}
			list = append(list, t)
			return true
		})
	})
	if err != nil {
		return nil, DeletedPosition{}, false, fmt.Errorf("list deleted sessions: %w", err)
	}
	if more {
		last := list[len(list)-1]
		next = DeletedPosition{DeletedAt: last.DeletedAt, ExternalID: last.ExternalID}
	}
	return list, next, more, nil
}

// Excluded reports whether t is an exclusion that still holds: its
// pattern is still among the server's exclusions, so sync cannot be
// allowed again.
func (s *Service) Excluded(t kv.Tombstone) bool {
	return t.Reason == kv.ReasonExcluded && s.exclude.Has(t.Pattern)
}

// maxAllow bounds the external ids of one AllowSync call.
const maxAllow = 10_000

// AllowSync removes the tombstones of the user's sessions externalIDs, so
// they sync (and import) again, and returns how many it removed. Ids
// without a tombstone of this user are skipped. When one names a session
// whose project the server still excludes nothing is removed and the
// error (ErrInvalid) names it.
func (s *Service) AllowSync(ctx context.Context, userID string, externalIDs []string) (int, error) {
	switch {
	case len(externalIDs) == 0:
		return 0, invalid("externalIds is empty: name the sessions to allow (their externalId, from GET /api/sessions/deleted)")
	case len(externalIDs) > maxAllow:
		return 0, invalid("externalIds has %d entries; the limit is %d per request: split it", len(externalIDs), maxAllow)
	}
	if i := slices.Index(externalIDs, ""); i >= 0 {
		return 0, invalid("externalIds[%d] is empty", i)
	}
	var n int
	err := s.store.Commit(ctx, func(tx *kv.Tx) error {
		n = 0
		for i, id := range externalIDs {
			t, err := tx.Tombstone(userID, id)
			if errors.Is(err, kv.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if s.Excluded(t) {
				return invalid("externalIds[%d] (%s): its project is excluded on this server (HINDSIGHT_EXCLUDE_PROJECTS pattern %q), "+
					"so it cannot sync again while that pattern is set; nothing was changed", i, id, t.Pattern)
			}
			removed, err := tx.RemoveTombstone(userID, id)
			if err != nil {
				return err
			}
			if removed {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("allow sync: %w", err)
	}
	return n, nil
}
