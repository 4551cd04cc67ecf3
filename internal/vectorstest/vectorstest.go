// Package vectorstest is the conformance suite every vectors.Store
// implementation runs in its tests, so the embedded store and the Weaviate
// store are held to one contract:
//
//	func TestConformance(t *testing.T) {
//		vectorstest.Run(t, func(t *testing.T) vectorstest.Opener {
//			path := filepath.Join(t.TempDir(), "vectors.db")
//			return func(t *testing.T) vectors.Store {
//				st, err := vectors.OpenEmbedded(path, vectors.EmbeddedOptions{})
//				if err != nil {
//					t.Fatal(err)
//				}
//				return st
//			}
//		})
//	}
package vectorstest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hindsight-dev/hindsight/vectors"
)

// Opener opens the store prepared for one subtest. Each call returns a new
// handle on the same data; the suite closes one handle before it opens the
// next (to check persistence) and closes the last one itself.
type Opener func(t *testing.T) vectors.Store

// Dim and Model are what the suite records with SetMeta.
const (
	Dim   = 8
	Model = "conformance-model"
)

// Run runs the suite. prepare is called once per subtest and must return an
// opener of an empty store that no other subtest sees.
func Run(t *testing.T, prepare func(t *testing.T) Opener) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"Meta", testMeta},
		{"UpsertBeforeMeta", testUpsertBeforeMeta},
		{"UpsertAndHashes", testUpsertAndHashes},
		{"UpsertReplacesSession", testUpsertReplaces},
		{"UpsertEmptyListRemovesSession", testUpsertEmptyList},
		{"UpsertIsAllOrNothing", testAllOrNothing},
		{"UpsertKeepsUnchangedVectors", testKeep},
		{"InvalidVectors", testInvalid},
		{"Delete", testDelete},
		{"NearestOrderAndScores", testNearestScores},
		{"NearestMatchesBruteForce", testBruteForce},
		{"UserIsolation", testIsolation},
		{"EmptyUser", testEmptyUser},
		{"KLargerThanCount", testKLarger},
		{"DimensionMismatch", testDimensionMismatch},
		{"Persistence", testPersistence},
		{"Reset", testReset},
		{"Cancelled", testCancelled},
		{"Closed", testClosed},
		{"ConcurrentUpsertAndQuery", testConcurrent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, prepare(t)) })
	}
}

// openReady opens the store, records the suite's model and closes it at
// cleanup.
func openReady(t *testing.T, open Opener) vectors.Store {
	t.Helper()
	st := openClosing(t, open)
	if err := st.SetMeta(context.Background(), Model, Dim); err != nil {
		t.Fatalf("SetMeta: %v", err)
	}
	return st
}

func openClosing(t *testing.T, open Opener) vectors.Store {
	t.Helper()
	st := open(t)
	t.Cleanup(func() { st.Close() })
	return st
}

// vec is a Dim-long vector with the given leading components.
func vec(xs ...float32) []float32 {
	v := make([]float32, Dim)
	copy(v, xs)
	return v
}

// randomVec is a random non-zero vector.
func randomVec(r *rand.Rand) []float32 {
	v := make([]float32, Dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	v[0] += 0.01 // never all zero
	return v
}

func chunks(sid string, vals ...[]float32) []vectors.Vector {
	out := make([]vectors.Vector, len(vals))
	for i, v := range vals {
		out[i] = vectors.Vector{SessionID: sid, Ordinal: i, TextHash: fmt.Sprintf("h-%s-%d", sid, i), Values: v}
	}
	return out
}

func upsert(t *testing.T, st vectors.Store, user string, sessions map[string][]vectors.Vector) {
	t.Helper()
	if err := st.Upsert(context.Background(), user, sessions); err != nil {
		t.Fatalf("Upsert(%s): %v", user, err)
	}
}

func nearest(t *testing.T, st vectors.Store, user string, q []float32, k int) []vectors.Hit {
	t.Helper()
	hits, err := st.Nearest(context.Background(), user, q, k)
	if err != nil {
		t.Fatalf("Nearest(%s, k=%d): %v", user, k, err)
	}
	if hits == nil {
		t.Fatalf("Nearest(%s, k=%d) = nil, want a non-nil (possibly empty) slice", user, k)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Fatalf("Nearest(%s): hits not best first: %v", user, hits)
		}
	}
	return hits
}

func hashes(t *testing.T, st vectors.Store, user, sid string) map[int]string {
	t.Helper()
	h, err := st.Hashes(context.Background(), user, sid)
	if err != nil {
		t.Fatalf("Hashes(%s, %s): %v", user, sid, err)
	}
	if h == nil {
		t.Fatalf("Hashes(%s, %s) = nil, want a non-nil map", user, sid)
	}
	return h
}

type ref struct {
	sid string
	ord int
}

func refs(hits []vectors.Hit) []ref {
	out := make([]ref, len(hits))
	for i, h := range hits {
		out[i] = ref{h.SessionID, h.Ordinal}
	}
	return out
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

const scoreTolerance = 1e-5

func testMeta(t *testing.T, open Opener) {
	ctx := context.Background()
	st := openClosing(t, open)
	model, dim, err := st.Meta(ctx)
	if err != nil || model != "" || dim != 0 {
		t.Fatalf("fresh Meta = %q, %d, %v; want \"\", 0, nil", model, dim, err)
	}
	if err := st.SetMeta(ctx, Model, Dim); err != nil {
		t.Fatalf("SetMeta: %v", err)
	}
	if err := st.SetMeta(ctx, Model, Dim); err != nil {
		t.Fatalf("SetMeta again with the same values: %v", err)
	}
	if model, dim, err = st.Meta(ctx); err != nil || model != Model || dim != Dim {
		t.Fatalf("Meta = %q, %d, %v; want %q, %d", model, dim, err, Model, Dim)
	}
	// Relabelling an empty store is allowed.
	if err := st.SetMeta(ctx, "other", 2*Dim); err != nil {
		t.Fatalf("SetMeta on an empty store: %v", err)
	}
	if err := st.SetMeta(ctx, Model, Dim); err != nil {
		t.Fatalf("SetMeta back: %v", err)
	}
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	for _, c := range []struct {
		model string
		dim   int
	}{{"other", Dim}, {Model, 2 * Dim}} {
		if err := st.SetMeta(ctx, c.model, c.dim); !errors.Is(err, vectors.ErrModelMismatch) {
			t.Errorf("SetMeta(%q, %d) with vectors stored = %v, want ErrModelMismatch", c.model, c.dim, err)
		}
		if err := vectors.EnsureMeta(ctx, st, c.model, c.dim); !errors.Is(err, vectors.ErrModelMismatch) {
			t.Errorf("EnsureMeta(%q, %d) with vectors stored = %v, want ErrModelMismatch", c.model, c.dim, err)
		}
	}
	if err := vectors.EnsureMeta(ctx, st, Model, Dim); err != nil {
		t.Errorf("EnsureMeta with the recorded model: %v", err)
	}
	if model, dim, _ = st.Meta(ctx); model != Model || dim != Dim {
		t.Errorf("Meta after refused changes = %q, %d", model, dim)
	}
}

func testUpsertBeforeMeta(t *testing.T, open Opener) {
	st := openClosing(t, open)
	err := st.Upsert(context.Background(), "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	if !errors.Is(err, vectors.ErrNoMeta) {
		t.Fatalf("Upsert before SetMeta = %v, want ErrNoMeta", err)
	}
	hits, err := st.Nearest(context.Background(), "u1", vec(1), 5)
	if err != nil || len(hits) != 0 {
		t.Fatalf("Nearest before SetMeta = %v, %v; want no hits, no error", hits, err)
	}
}

func testUpsertAndHashes(t *testing.T, open Opener) {
	st := openReady(t, open)
	upsert(t, st, "u1", map[string][]vectors.Vector{
		"s1": chunks("s1", vec(1), vec(0, 1), vec(0, 0, 1)),
		// SessionID may be left to the map key.
		"s2": {{Ordinal: 4, TextHash: "x4", Values: vec(1, 1)}, {Ordinal: 2, TextHash: "x2", Values: vec(1, -1)}},
	})
	if got, want := hashes(t, st, "u1", "s1"), map[int]string{0: "h-s1-0", 1: "h-s1-1", 2: "h-s1-2"}; !maps.Equal(got, want) {
		t.Errorf("Hashes(s1) = %v, want %v", got, want)
	}
	if got, want := hashes(t, st, "u1", "s2"), map[int]string{2: "x2", 4: "x4"}; !maps.Equal(got, want) {
		t.Errorf("Hashes(s2) = %v, want %v", got, want)
	}
	if got := hashes(t, st, "u1", "unknown"); len(got) != 0 {
		t.Errorf("Hashes(unknown) = %v, want empty", got)
	}
	if got := hashes(t, st, "u2", "s1"); len(got) != 0 {
		t.Errorf("Hashes of another user = %v, want empty", got)
	}
	// Repeating the write changes nothing.
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1), vec(0, 1), vec(0, 0, 1))})
	if got := nearest(t, st, "u1", vec(1), 10); len(got) != 5 {
		t.Errorf("after a repeated Upsert: %d hits, want 5: %v", len(got), got)
	}
}

// A vector given without values keeps the stored one of that ordinal, if its
// hash matches; a session that grew re-embeds only its new chunks.
func testKeep(t *testing.T, open Opener) {
	st := openReady(t, open)
	ctx := context.Background()
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1), vec(0, 1), vec(0, 0, 1))})
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": {
		{Ordinal: 0, TextHash: "h-s1-0"},                             // kept
		{Ordinal: 1, TextHash: "new-1", Values: vec(0, 0, 0, 1)},     // changed
		{Ordinal: 3, TextHash: "h-s1-3", Values: vec(0, 0, 0, 0, 1)}, // added; ordinal 2 dropped
	}})
	if got, want := hashes(t, st, "u1", "s1"), map[int]string{0: "h-s1-0", 1: "new-1", 3: "h-s1-3"}; !maps.Equal(got, want) {
		t.Errorf("Hashes after a keeping Upsert = %v, want %v", got, want)
	}
	if hits := nearest(t, st, "u1", vec(1), 1); len(hits) != 1 || hits[0].Ordinal != 0 || hits[0].Score < 0.999 {
		t.Errorf("the kept vector is not searchable as before: %v", hits)
	}
	for _, bad := range []vectors.Vector{
		{Ordinal: 0, TextHash: "other-hash"}, // stored with another hash
		{Ordinal: 7, TextHash: "h-s1-7"},     // nothing stored to keep
	} {
		err := st.Upsert(ctx, "u1", map[string][]vectors.Vector{"s1": {bad, {Ordinal: 9, TextHash: "x", Values: vec(1, 1)}}})
		if !errors.Is(err, vectors.ErrInvalidVector) {
			t.Errorf("keeping %+v: err = %v, want ErrInvalidVector", bad, err)
		}
	}
	if got := hashes(t, st, "u1", "s1"); len(got) != 3 || got[9] != "" {
		t.Errorf("a refused keeping Upsert changed the session: %v", got)
	}
}

func testUpsertReplaces(t *testing.T, open Opener) {
	st := openReady(t, open)
	upsert(t, st, "u1", map[string][]vectors.Vector{
		"s1": chunks("s1", vec(1), vec(0, 1), vec(0, 0, 1)),
		"s2": chunks("s2", vec(1, 1)),
	})
	// Query once so a store with a cache has it loaded before the replace.
	if got := nearest(t, st, "u1", vec(1), 10); len(got) != 4 {
		t.Fatalf("before replace: %d hits, want 4", len(got))
	}
	// s1 now has one chunk, with a new vector and hash; s2 is not listed.
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": {{SessionID: "s1", Ordinal: 0, TextHash: "new", Values: vec(0, 0, 0, 1)}}})
	if got, want := hashes(t, st, "u1", "s1"), map[int]string{0: "new"}; !maps.Equal(got, want) {
		t.Errorf("Hashes(s1) after replace = %v, want %v", got, want)
	}
	if got := hashes(t, st, "u1", "s2"); len(got) != 1 {
		t.Errorf("unlisted session s2 changed: %v", got)
	}
	hits := nearest(t, st, "u1", vec(0, 0, 0, 1), 10)
	if got, want := refs(hits), []ref{{"s1", 0}, {"s2", 0}}; !slices.Equal(got, want) {
		t.Fatalf("after replace: hits %v, want %v", got, want)
	}
	if math.Abs(hits[0].Score-1) > scoreTolerance {
		t.Errorf("replaced vector scores %v against itself, want 1 (old vector still served?)", hits[0].Score)
	}
}

func testUpsertEmptyList(t *testing.T, open Opener) {
	st := openReady(t, open)
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1), vec(0, 1)), "s2": chunks("s2", vec(1))})
	nearest(t, st, "u1", vec(1), 10)
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": nil})
	if got := hashes(t, st, "u1", "s1"); len(got) != 0 {
		t.Errorf("Hashes(s1) after an empty Upsert = %v, want empty", got)
	}
	if got, want := refs(nearest(t, st, "u1", vec(1), 10)), []ref{{"s2", 0}}; !slices.Equal(got, want) {
		t.Errorf("hits = %v, want %v", got, want)
	}
}

func testAllOrNothing(t *testing.T, open Opener) {
	st := openReady(t, open)
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	err := st.Upsert(context.Background(), "u1", map[string][]vectors.Vector{
		"s1": chunks("s1", vec(0, 1), vec(0, 0, 1)),
		"s2": chunks("s2", vec(1), make([]float32, Dim+1)),
	})
	if err == nil {
		t.Fatal("Upsert with one bad vector succeeded")
	}
	if got := hashes(t, st, "u1", "s1"); len(got) != 1 {
		t.Errorf("failed Upsert changed s1: %v", got)
	}
	if got := hashes(t, st, "u1", "s2"); len(got) != 0 {
		t.Errorf("failed Upsert wrote s2: %v", got)
	}
}

func testInvalid(t *testing.T, open Opener) {
	st := openReady(t, open)
	nan := vec(1)
	nan[1] = float32(math.NaN())
	cases := []struct {
		name string
		vs   []vectors.Vector
	}{
		{"zero vector", []vectors.Vector{{Ordinal: 0, Values: vec()}}},
		{"NaN", []vectors.Vector{{Ordinal: 0, Values: nan}}},
		{"negative ordinal", []vectors.Vector{{Ordinal: -1, Values: vec(1)}}},
		{"repeated ordinal", []vectors.Vector{{Ordinal: 3, Values: vec(1)}, {Ordinal: 3, Values: vec(0, 1)}}},
		{"other session", []vectors.Vector{{SessionID: "s9", Ordinal: 0, Values: vec(1)}}},
	}
	for _, c := range cases {
		err := st.Upsert(context.Background(), "u1", map[string][]vectors.Vector{"s1": c.vs})
		if !errors.Is(err, vectors.ErrInvalidVector) {
			t.Errorf("%s: Upsert = %v, want ErrInvalidVector", c.name, err)
		}
	}
	if _, err := st.Nearest(context.Background(), "u1", vec(), 3); !errors.Is(err, vectors.ErrInvalidVector) {
		t.Errorf("Nearest with a zero query = %v, want ErrInvalidVector", err)
	}
}

func testDelete(t *testing.T, open Opener) {
	st := openReady(t, open)
	upsert(t, st, "u1", map[string][]vectors.Vector{
		"s1": chunks("s1", vec(1), vec(0, 1)),
		"s2": chunks("s2", vec(1, 1)),
		"s3": chunks("s3", vec(1, 0, 1)),
	})
	upsert(t, st, "u2", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	nearest(t, st, "u1", vec(1), 10)
	if err := st.Delete(context.Background(), "u1", []string{"s1", "s3", "never-existed"}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got, want := refs(nearest(t, st, "u1", vec(1), 10)), []ref{{"s2", 0}}; !slices.Equal(got, want) {
		t.Errorf("after Delete: %v, want %v", got, want)
	}
	if got := hashes(t, st, "u1", "s1"); len(got) != 0 {
		t.Errorf("Hashes of a deleted session = %v", got)
	}
	if got := nearest(t, st, "u2", vec(1), 10); len(got) != 1 {
		t.Errorf("Delete for u1 touched u2's session of the same id: %v", got)
	}
	if err := st.Delete(context.Background(), "u1", []string{"s1"}); err != nil {
		t.Errorf("repeated Delete: %v", err)
	}
	if err := st.Delete(context.Background(), "u1", nil); err != nil {
		t.Errorf("Delete of nothing: %v", err)
	}
}

func testNearestScores(t *testing.T, open Opener) {
	st := openReady(t, open)
	// Unnormalised inputs: the store compares directions only.
	upsert(t, st, "u1", map[string][]vectors.Vector{
		"a": chunks("a", vec(10), vec(0, 3)),
		"b": chunks("b", vec(1, 1), vec(-2), vec(3, 4)),
	})
	q := vec(2) // direction (1, 0, ...)
	want := []struct {
		ref   ref
		score float64
	}{
		{ref{"a", 0}, 1},
		{ref{"b", 0}, 1 / math.Sqrt2},
		{ref{"b", 2}, 0.6},
		{ref{"a", 1}, 0},
		{ref{"b", 1}, -1},
	}
	hits := nearest(t, st, "u1", q, 5)
	if len(hits) != len(want) {
		t.Fatalf("got %d hits, want %d: %v", len(hits), len(want), hits)
	}
	for i, w := range want {
		if refs(hits)[i] != w.ref || math.Abs(hits[i].Score-w.score) > scoreTolerance {
			t.Errorf("hit %d = %+v, want %v score %.4f", i, hits[i], w.ref, w.score)
		}
	}
	top := nearest(t, st, "u1", q, 2)
	if got := refs(top); !slices.Equal(got, []ref{want[0].ref, want[1].ref}) {
		t.Errorf("k=2: %v, want the first two of %v", got, want)
	}
	if got := nearest(t, st, "u1", q, 0); len(got) != 0 {
		t.Errorf("k=0: %v, want none", got)
	}
}

func testBruteForce(t *testing.T, open Opener) {
	st := openReady(t, open)
	r := rand.New(rand.NewPCG(1, 2))
	all := map[ref][]float32{}
	sessions := map[string][]vectors.Vector{}
	for s := range 40 {
		sid := fmt.Sprintf("s%02d", s)
		for o := range 1 + s%5 {
			v := randomVec(r)
			sessions[sid] = append(sessions[sid], vectors.Vector{SessionID: sid, Ordinal: o, TextHash: "h", Values: v})
			all[ref{sid, o}] = v
		}
	}
	upsert(t, st, "u1", sessions)
	for range 10 {
		q := randomVec(r)
		type scored struct {
			ref   ref
			score float64
		}
		var want []scored
		for rf, v := range all {
			want = append(want, scored{rf, cosine(q, v)})
		}
		slices.SortFunc(want, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
		hits := nearest(t, st, "u1", q, 7)
		if len(hits) != 7 {
			t.Fatalf("got %d hits, want 7", len(hits))
		}
		for i, h := range hits {
			if math.Abs(h.Score-want[i].score) > scoreTolerance {
				t.Fatalf("hit %d = %+v, want score %.6f (%v)", i, h, want[i].score, want[i].ref)
			}
			if got := cosine(q, all[ref{h.SessionID, h.Ordinal}]); math.Abs(got-h.Score) > scoreTolerance {
				t.Fatalf("hit %d = %+v but its cosine is %.6f", i, h, got)
			}
		}
	}
}

func testIsolation(t *testing.T, open Opener) {
	st := openReady(t, open)
	// Same session ids under both users, and ids that share prefixes.
	upsert(t, st, "alice", map[string][]vectors.Vector{"s1": chunks("s1", vec(1)), "s10": chunks("s10", vec(1, 1))})
	upsert(t, st, "bob", map[string][]vectors.Vector{"s1": chunks("s1", vec(0, 1))})
	upsert(t, st, "ali", map[string][]vectors.Vector{"ce": chunks("ce", vec(1))})
	for _, c := range []struct {
		user string
		want []ref
	}{
		{"alice", []ref{{"s1", 0}, {"s10", 0}}},
		{"bob", []ref{{"s1", 0}}},
		{"ali", []ref{{"ce", 0}}},
		{"al", nil},
	} {
		hits := nearest(t, st, c.user, vec(1, 0.1), 10)
		got := refs(hits)
		slices.SortFunc(got, func(a, b ref) int { return cmp.Compare(a.sid, b.sid) })
		if !slices.Equal(got, c.want) {
			t.Errorf("user %s sees %v, want %v", c.user, got, c.want)
		}
		if c.user == "bob" && len(hits) == 1 && math.Abs(hits[0].Score-cosine(vec(1, 0.1), vec(0, 1))) > scoreTolerance {
			t.Errorf("bob's hit scored with another user's vector: %v", hits)
		}
	}
	if got := hashes(t, st, "bob", "s10"); len(got) != 0 {
		t.Errorf("bob reads alice's hashes: %v", got)
	}
}

func testEmptyUser(t *testing.T, open Opener) {
	st := openReady(t, open)
	if got := nearest(t, st, "nobody", vec(1), 10); len(got) != 0 {
		t.Errorf("user with no vectors: %v", got)
	}
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	if err := st.Delete(context.Background(), "u1", []string{"s1"}); err != nil {
		t.Fatal(err)
	}
	if got := nearest(t, st, "u1", vec(1), 10); len(got) != 0 {
		t.Errorf("user whose vectors were all deleted: %v", got)
	}
}

func testKLarger(t *testing.T, open Opener) {
	st := openReady(t, open)
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1), vec(0, 1), vec(1, 1))})
	if got := nearest(t, st, "u1", vec(1), 1000); len(got) != 3 {
		t.Errorf("k=1000 over 3 vectors: %d hits", len(got))
	}
}

func testDimensionMismatch(t *testing.T, open Opener) {
	st := openReady(t, open)
	for _, n := range []int{Dim - 1, Dim + 1} {
		err := st.Upsert(context.Background(), "u1", map[string][]vectors.Vector{"s1": {{Ordinal: 0, Values: make([]float32, n)}}})
		if !errors.Is(err, vectors.ErrDimensionMismatch) {
			t.Errorf("Upsert of %d dimensions into %d = %v, want ErrDimensionMismatch", n, Dim, err)
		}
	}
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	if _, err := st.Nearest(context.Background(), "u1", make([]float32, Dim+1), 3); !errors.Is(err, vectors.ErrDimensionMismatch) {
		t.Errorf("Nearest with a %d-d query = %v, want ErrDimensionMismatch", Dim+1, err)
	}
}

func testPersistence(t *testing.T, open Opener) {
	ctx := context.Background()
	st := open(t)
	if err := st.SetMeta(ctx, Model, Dim); err != nil {
		t.Fatal(err)
	}
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1), vec(0, 1)), "s2": chunks("s2", vec(1, 1))})
	upsert(t, st, "u2", map[string][]vectors.Vector{"s9": chunks("s9", vec(0, 0, 1))})
	want := nearest(t, st, "u1", vec(1, 0.5), 10)
	if err := st.Delete(ctx, "u1", []string{"s2"}); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(h vectors.Hit) bool { return h.SessionID == "s2" })
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	st = openClosing(t, open)
	if model, dim, err := st.Meta(ctx); err != nil || model != Model || dim != Dim {
		t.Fatalf("Meta after reopen = %q, %d, %v", model, dim, err)
	}
	got := nearest(t, st, "u1", vec(1, 0.5), 10)
	if !slices.EqualFunc(got, want, func(a, b vectors.Hit) bool {
		return a.SessionID == b.SessionID && a.Ordinal == b.Ordinal && math.Abs(a.Score-b.Score) < scoreTolerance
	}) {
		t.Errorf("after reopen: %v, want %v", got, want)
	}
	if got, want := hashes(t, st, "u1", "s1"), map[int]string{0: "h-s1-0", 1: "h-s1-1"}; !maps.Equal(got, want) {
		t.Errorf("Hashes after reopen = %v, want %v", got, want)
	}
	if got := nearest(t, st, "u2", vec(0, 0, 1), 10); len(got) != 1 {
		t.Errorf("u2 after reopen: %v", got)
	}
}

func testReset(t *testing.T, open Opener) {
	ctx := context.Background()
	st := openReady(t, open)
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	nearest(t, st, "u1", vec(1), 10)
	if err := st.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if model, dim, err := st.Meta(ctx); err != nil || model != "" || dim != 0 {
		t.Errorf("Meta after Reset = %q, %d, %v; want empty", model, dim, err)
	}
	if err := st.SetMeta(ctx, "bigger", 2*Dim); err != nil {
		t.Fatalf("SetMeta after Reset: %v", err)
	}
	big := make([]float32, 2*Dim)
	big[Dim] = 1
	upsert(t, st, "u1", map[string][]vectors.Vector{"s2": {{Ordinal: 0, Values: big}}})
	if got := refs(nearest(t, st, "u1", big, 10)); !slices.Equal(got, []ref{{"s2", 0}}) {
		t.Errorf("after Reset and new vectors: %v", got)
	}
	if got := hashes(t, st, "u1", "s1"); len(got) != 0 {
		t.Errorf("Hashes of a reset session = %v", got)
	}
}

func testCancelled(t *testing.T, open Opener) {
	st := openReady(t, open)
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Nearest(ctx, "u1", vec(1), 3); !errors.Is(err, context.Canceled) {
		t.Errorf("Nearest with a cancelled context = %v", err)
	}
	if err := st.Upsert(ctx, "u1", map[string][]vectors.Vector{"s1": nil}); !errors.Is(err, context.Canceled) {
		t.Errorf("Upsert with a cancelled context = %v", err)
	}
	if got := hashes(t, st, "u1", "s1"); len(got) != 1 {
		t.Errorf("cancelled Upsert wrote: %v", got)
	}
}

func testClosed(t *testing.T, open Opener) {
	ctx := context.Background()
	st := open(t)
	if err := st.SetMeta(ctx, Model, Dim); err != nil {
		t.Fatal(err)
	}
	upsert(t, st, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))})
	nearest(t, st, "u1", vec(1), 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := st.Nearest(ctx, "u1", vec(1), 1); !errors.Is(err, vectors.ErrClosed) {
		t.Errorf("Nearest after Close = %v, want ErrClosed", err)
	}
	if err := st.Upsert(ctx, "u1", map[string][]vectors.Vector{"s1": chunks("s1", vec(1))}); !errors.Is(err, vectors.ErrClosed) {
		t.Errorf("Upsert after Close = %v, want ErrClosed", err)
	}
}

// testConcurrent runs writers and readers of two users at once (meaningful
// under -race) and then checks the final state against what was written.
func testConcurrent(t *testing.T, open Opener) {
	st := openReady(t, open)
	ctx := context.Background()
	const writers, rounds, sessions = 3, 25, 6
	// Seed so queries have something to scan from the start.
	for _, user := range []string{"u1", "u2"} {
		upsert(t, st, user, map[string][]vectors.Vector{"seed": chunks("seed", vec(1), vec(0, 1))})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	final := make([]map[string][]vectors.Vector, writers) // last write per writer, per session
	for w := range writers {
		final[w] = map[string][]vectors.Vector{}
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range rounds {
				user := []string{"u1", "u2"}[i%2]
				sid := fmt.Sprintf("w%d-s%d", w, r.IntN(sessions))
				var vs []vectors.Vector
				for o := range r.IntN(4) { // 0 to 3 chunks: sometimes a removal
					vs = append(vs, vectors.Vector{SessionID: sid, Ordinal: o, TextHash: fmt.Sprint(i), Values: randomVec(r)})
				}
				if err := st.Upsert(ctx, user, map[string][]vectors.Vector{sid: vs}); err != nil {
					errs <- err
					return
				}
				final[w][user+"/"+sid] = vs
				if i%7 == 3 {
					if err := st.Delete(ctx, user, []string{sid}); err != nil {
						errs <- err
						return
					}
					final[w][user+"/"+sid] = nil
				}
			}
		})
	}
	for q := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(q), 9))
			for range rounds * 2 {
				user := []string{"u1", "u2"}[r.IntN(2)]
				hits, err := st.Nearest(ctx, user, randomVec(r), 5)
				if err != nil {
					errs <- err
					return
				}
				if len(hits) < 2 { // the seed session is never touched
					errs <- fmt.Errorf("query of %s found %d hits, the seed alone has 2", user, len(hits))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, user := range []string{"u1", "u2"} {
		want := 2
		for w := range writers {
			for key, vs := range final[w] {
				if strings.HasPrefix(key, user+"/") {
					want += len(vs)
				}
			}
		}
		if got := nearest(t, st, user, vec(1), 1000); len(got) != want {
			t.Errorf("%s: %d vectors after the concurrent writes, want %d", user, len(got), want)
		}
	}
}
