package weaviate

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-openapi/strfmt"
	"github.com/google/uuid"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/hindsight-dev/hindsight/internal/weaviatex"
)

// # Recovery after an outage
//
// Weaviate writes an object to its object store and then to the tenant's
// HNSW graph, whose commit log it buffers in the process (32 KiB per
// tenant in 1.35). Killed (SIGKILL, OOM, power), it comes back with every
// acknowledged object but without the graph nodes still in that buffer:
// such an object is listed (Hashes reports its hash, so the pipeline never
// rewrites it) but no vector search finds it, for good; Weaviate does not
// repair the graph at start when ASYNC_INDEXING is off. The flat index loses
// them the same way.
//
// So the Store keeps, per user, the ids of the last recentPerUser objects it
// sent (recorded before the request, so a write cut off mid-way counts).
// Any failed request to Weaviate marks a possible outage; the next call
// after it (Upsert, Delete, Hashes, Nearest) first checks each recorded
// object: it reads the object's stored vector and searches the tenant for
// it, and an object the search does not return is deleted and written
// again, which gives it a fresh place in the graph. A user's record is
// cleared once checked. What it cannot cover: a crash of Weaviate while
// this process is also restarted (the record is in memory), and more than
// recentPerUser objects of one user in the lost buffer.

// recentPerUser is how many of a user's last written objects are checked
// after an outage: more than a 32 KiB commit-log buffer holds (a node costs
// at least a few hundred bytes of links).
const recentPerUser = 256

// recent is the ring of one user's last written object ids (4 KiB).
type recent struct {
	ids  [recentPerUser]uuid.UUID
	next int
	full bool
}

func (r *recent) add(id uuid.UUID) {
	r.ids[r.next] = id
	r.next = (r.next + 1) % recentPerUser
	r.full = r.full || r.next == 0
}

// list returns the distinct ids, sorted.
func (r *recent) list() []uuid.UUID {
	ids := slices.Clone(r.ids[:r.next])
	if r.full {
		ids = slices.Clone(r.ids[:])
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(ids)
}

// remember records the ids of objs, written for userID.
func (s *Store) remember(userID string, objs []*models.Object) {
	if len(objs) == 0 {
		return
	}
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	r := s.recent[userID]
	if r == nil {
		r = &recent{}
		s.recent[userID] = r
	}
	for _, o := range objs {
		if id, err := uuid.Parse(o.ID.String()); err == nil { // ids are objectID's
			r.add(id)
		}
	}
}

// markOutage notes that a request failed: the next call checks the recent
// writes (see recoverWrites).
func (s *Store) markOutage() { s.outage.Store(true) }

// recoverWrites checks, after a failed request, that every recently written
// object is found by a search for its own vector, and writes again those
// that are not (see the comment at the top of this file). The caller holds
// s.gate (shared) and no user lock. An error leaves the check pending.
func (s *Store) recoverWrites(ctx context.Context) error {
	if !s.outage.Load() {
		return nil
	}
	s.recoverMu.Lock()
	defer s.recoverMu.Unlock()
	if !s.outage.Swap(false) {
		return nil // another call checked meanwhile
	}
	s.recentMu.Lock()
	users := make([]string, 0, len(s.recent))
	for u := range s.recent {
		users = append(users, u)
	}
	s.recentMu.Unlock()
	slices.Sort(users)
	for _, u := range users {
		if err := s.recoverUser(ctx, u); err != nil {
			s.markOutage()
			return fmt.Errorf("check writes made before a failed request: %w", err)
		}
	}
	return nil
}

// stored is an object read back with its vector.
type stored struct {
	SessionID  string `json:"sessionId"`
	Ordinal    int    `json:"ordinal"`
	TextHash   string `json:"textHash"`
	Additional struct {
		ID     strfmt.UUID `json:"id"`
		Vector []float32   `json:"vector"`
	} `json:"_additional"`
}

// recoverUser checks one user's recent writes (see recoverWrites), under
// the user's write lock.
func (s *Store) recoverUser(ctx context.Context, userID string) error {
	mu := s.userLock(userID)
	mu.Lock()
	defer mu.Unlock()
	s.recentMu.Lock()
	r := s.recent[userID]
	var ids []uuid.UUID
	if r != nil {
		ids = r.list()
	}
	s.recentMu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	tenant := weaviatex.TenantOf(userID)
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = weaviatex.GQLString(id.String())
	}
	var objs []stored
	args := fmt.Sprintf(`tenant:%s, where:{path:["id"], operator:ContainsAny, valueText:[%s]}, limit:%d`,
		weaviatex.GQLString(tenant), strings.Join(quoted, ","), len(ids))
	if err := s.getInto(ctx, s.class, args, "sessionId ordinal textHash _additional{id vector}", &objs); err != nil {
		if _, err := s.missingTenant(ctx, tenant, nil, err); err != nil {
			return err
		}
		objs = nil // no tenant: nothing stored to check
	}
	var lost []*models.Object
	for _, o := range objs {
		if len(o.Additional.Vector) != s.dim {
			continue // not this store's writing; nothing to restore it from
		}
		var hits []object
		args := fmt.Sprintf("tenant:%s, nearVector:{vector:%s}, limit:10", weaviatex.GQLString(tenant), weaviatex.GQLVector(o.Additional.Vector))
		if err := s.getInto(ctx, s.class, args, "_additional{id}", &hits); err != nil {
			return err
		}
		if slices.ContainsFunc(hits, func(h object) bool { return strfmt.UUID(h.Additional.ID) == o.Additional.ID }) {
			continue
		}
		lost = append(lost, &models.Object{
			Class:      s.class,
			ID:         o.Additional.ID,
			Tenant:     tenant,
			Properties: map[string]any{"sessionId": o.SessionID, "ordinal": o.Ordinal, "textHash": o.TextHash},
			Vector:     o.Additional.Vector,
		})
	}
	if len(lost) > 0 {
		// Written again over itself with the same vector, the object
		// keeps its document id and Weaviate leaves the vector index
		// alone (TestCrashFindable fails so): delete it first, so the
		// write indexes it afresh.
		del := make([]string, len(lost))
		for i, o := range lost {
			del[i] = o.ID.String()
		}
		if err := s.deleteIDs(ctx, tenant, del); err != nil {
			return err
		}
		if err := s.putObjects(ctx, lost); err != nil {
			return err
		}
	}
	s.recentMu.Lock()
	if s.recent[userID] == r {
		delete(s.recent, userID)
	}
	s.recentMu.Unlock()
	// The objects written again are as fresh as any write: checked after
	// the next outage too.
	s.remember(userID, lost)
	return nil
}
