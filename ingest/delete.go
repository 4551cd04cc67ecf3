package ingest

import (
	"context"
	"fmt"

	"github.com/hindsight-dev/hindsight/kv"
)

// deleteStep bounds how many sessions one deletion transaction tombstones.
const deleteStep = 1000

// DeleteSession deletes one session of the user: it vanishes from every read
// at once; its index documents, vectors and messages are removed in the
// background (see kv.Tx.DeleteSession). kv.ErrNotFound if there is none.
func (s *Service) DeleteSession(ctx context.Context, userID, sessionID string) error {
	err := s.store.Commit(ctx, func(tx *kv.Tx) error { return tx.DeleteSession(userID, sessionID) })
	if err != nil {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	s.notify()
	return nil
}

// DeleteAll deletes every session of the user (keys and the account stay), in
// transactions of at most deleteStep sessions, calling progress after each.
// It returns how many sessions and messages it deleted.
func (s *Service) DeleteAll(ctx context.Context, userID string, progress func(done int)) (sessions, messages int64, err error) {
	for {
		var ids []string
		var msgs int64
		err := s.store.View(ctx, func(tx *kv.Tx) error {
			return tx.Sessions(userID, func(ss kv.Session) error {
				if len(ids) == deleteStep {
					return errStop
				}
				ids = append(ids, ss.ID)
				msgs += ss.MessageCount
				return nil
			})
		})
		if err != nil && err != errStop {
			return sessions, messages, err
		}
		if len(ids) == 0 {
			return sessions, messages, nil
		}
		err = s.store.Commit(ctx, func(tx *kv.Tx) error {
			for _, id := range ids {
				if err := tx.DeleteSession(userID, id); err != nil && err != kv.ErrNotFound {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return sessions, messages, fmt.Errorf("delete sessions: %w", err)
		}
		sessions += int64(len(ids))
		messages += msgs
		s.notify()
		if progress != nil {
			progress(int(sessions))
		}
	}
}

type stopErr struct{}

func (stopErr) Error() string { return "stop" }

var errStop error = stopErr{}
