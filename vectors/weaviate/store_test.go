package weaviate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/internal/racetest"
	"github.com/hindsight-dev/hindsight/internal/vectorstest"
	"github.com/hindsight-dev/hindsight/internal/weaviatetest"
	"github.com/hindsight-dev/hindsight/vectors"
	"github.com/hindsight-dev/hindsight/vectors/weaviate"
)

// One weaviate-server for the package; each test keeps to collections of
// its own.
func TestMain(m *testing.M) { weaviatetest.Main(m) }

var collections atomic.Int64

// newCollection returns a collection name no other test uses and drops the
// collection at t's cleanup.
func newCollection(t *testing.T, url string) string {
	t.Helper()
	name := fmt.Sprintf("T%d", collections.Add(1))
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, url+"/v1/schema/"+name, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("cleanup: drop %s: %v", name, err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
			t.Errorf("cleanup: drop %s: %s", name, resp.Status)
		}
	})
	return name
}

func openStore(t *testing.T, cfg weaviate.Config) *weaviate.Store {
	t.Helper()
	st, err := weaviate.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st
}

func TestConformance(t *testing.T) {
	srv := weaviatetest.Shared(t)
	vectorstest.Run(t, func(t *testing.T) vectorstest.Opener {
		cfg := weaviate.Config{URL: srv.URL, Collection: newCollection(t, srv.URL)}
		return func(t *testing.T) vectors.Store { return openStore(t, cfg) }
	})
}

// unit returns v scaled to unit length.
func unit(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return v
}

func randomUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return unit(v)
}

// clustered returns n unit vectors around `centres` random directions, each
// the centre plus Gaussian noise of the given spread per component: the
// shape of real embeddings, where chunks of one topic sit close together.
func clustered(r *rand.Rand, n, dim, centres int, spread float64) [][]float32 {
	cs := make([][]float32, centres)
	for i := range cs {
		cs[i] = randomUnit(r, dim)
	}
	out := make([][]float32, n)
	for i := range out {
		c := cs[r.IntN(centres)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*spread)
		}
		out[i] = unit(v)
	}
	return out
}

// TestNearestAgreesWithEmbedded10k loads the same 10,000 vectors of 512
// dimensions (1,000 sessions of 10 chunks) into the embedded store (exact)
// and into Weaviate (HNSW) and compares their top 10 for 50 queries.
//
// Not under the race detector (racetest): the agreement is what the
// detector cannot change, at nearly three times the CPU under it (the
// exact scans and the upserts); the store's concurrent paths run under it
// in TestConformance and TestRestart.
func TestNearestAgreesWithEmbedded10k(t *testing.T) {
	racetest.SkipUnderRace(t)
	if testing.Short() {
		t.Skip("10,000 vectors: not in -short")
	}
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	const dim, perSession, queries, k = 512, 10, 50, 10
	// HINDSIGHT_COMPARE_VECTORS measures at another size (the issue's
	// latency comparison is at 100,000); the test's assertions are the same.
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("HINDSIGHT_COMPARE_VECTORS")); err == nil && v >= 1000 {
		n = v
	}
	for _, c := range []struct {
		name    string
		vectors func(r *rand.Rand) [][]float32
		queries func(r *rand.Rand, data [][]float32) [][]float32
	}{
		{"clustered", func(r *rand.Rand) [][]float32 {
			return clustered(r, n, dim, 100, 0.05)
		}, func(r *rand.Rand, data [][]float32) [][]float32 {
			// Queries near the data, as real queries land near some topic.
			out := make([][]float32, queries)
			for i := range out {
				base := data[r.IntN(len(data))]
				q := make([]float32, dim)
				for j := range q {
					q[j] = base[j] + float32(r.NormFloat64()*0.05)
				}
				out[i] = unit(q)
			}
			return out
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(10, 10))
			data := c.vectors(r)
			sessions := map[string][]vectors.Vector{}
			for i, v := range data {
				sid := fmt.Sprintf("s%04d", i/perSession)
				sessions[sid] = append(sessions[sid], vectors.Vector{Ordinal: i % perSession, TextHash: "h", Values: v})
			}
			emb, err := vectors.OpenEmbedded(filepath.Join(t.TempDir(), vectors.EmbeddedFileName), vectors.EmbeddedOptions{CodesFrom: -1}) // the exact scan
			if err != nil {
				t.Fatal(err)
			}
			defer emb.Close()
			wst := openStore(t, weaviate.Config{URL: srv.URL, GRPCAddr: srv.GRPCAddr, Collection: newCollection(t, srv.URL)})
			defer wst.Close()
			for _, st := range []vectors.Store{emb, wst} {
				if err := st.SetMeta(ctx, "m", dim); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if err := st.Upsert(ctx, "u1", sessions); err != nil {
					t.Fatal(err)
				}
				t.Logf("%T: upsert of %d vectors took %v", st, n, time.Since(start).Round(time.Millisecond))
			}
			var sum float64
			var lat, exactLat time.Duration
			for _, q := range c.queries(r, data) {
				start := time.Now()
				want, err := emb.Nearest(ctx, "u1", q, k)
				exactLat += time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				start = time.Now()
				got, err := wst.Nearest(ctx, "u1", q, k)
				lat += time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != k {
					t.Fatalf("weaviate: %d hits, want %d", len(got), k)
				}
				type ref struct {
					sid string
					ord int
				}
				exact := map[ref]float64{}
				for _, h := range want {
					exact[ref{h.SessionID, h.Ordinal}] = h.Score
				}
				same := 0
				for _, h := range got {
					if s, ok := exact[ref{h.SessionID, h.Ordinal}]; ok {
						same++
						if math.Abs(s-h.Score) > 1e-4 {
							t.Errorf("%s/%d: weaviate scores %.6f, exact %.6f", h.SessionID, h.Ordinal, h.Score, s)
						}
					}
				}
				sum += float64(same) / k
			}
			overlap := sum / queries
			t.Logf("%d vectors: mean top-%d overlap with the exact store over %d queries: %.3f; mean latency exact %v, weaviate HNSW %v (exact/HNSW %.2f)",
				n, k, queries, overlap, (exactLat / queries).Round(time.Microsecond), (lat / queries).Round(time.Microsecond), float64(exactLat)/float64(lat))
			if overlap < 0.9 {
				t.Errorf("mean top-%d overlap %.3f, want >= 0.9", k, overlap)
			}
		})
	}
}

// A user that never wrote has no tenant: reads find nothing, deletes do
// nothing, and neither creates the tenant.
func TestMissingTenant(t *testing.T) {
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	name := newCollection(t, srv.URL)
	st := openStore(t, weaviate.Config{URL: srv.URL, Collection: name})
	defer st.Close()
	if err := st.SetMeta(ctx, "m", 4); err != nil {
		t.Fatal(err)
	}
	if err := st.Upsert(ctx, "someone", map[string][]vectors.Vector{"s": {{Values: []float32{1, 0, 0, 0}}}}); err != nil {
		t.Fatal(err)
	}
	hits, err := st.Nearest(ctx, "ghost", []float32{1, 0, 0, 0}, 5)
	if err != nil || hits == nil || len(hits) != 0 {
		t.Errorf("Nearest of a missing tenant = %v, %v; want an empty slice", hits, err)
	}
	if h, err := st.Hashes(ctx, "ghost", "s"); err != nil || h == nil || len(h) != 0 {
		t.Errorf("Hashes of a missing tenant = %v, %v; want an empty map", h, err)
	}
	if err := st.Delete(ctx, "ghost", []string{"s"}); err != nil {
		t.Errorf("Delete for a missing tenant: %v", err)
	}
	if err := st.Upsert(ctx, "ghost", map[string][]vectors.Vector{"s": nil}); err != nil {
		t.Errorf("emptying a session of a missing tenant: %v", err)
	}
	tenants := getJSON[[]struct{ Name string }](t, srv.URL+"/v1/schema/"+name+"/tenants")
	for _, tn := range tenants {
		if tn.Name == "ghost" {
			t.Errorf("reads and deletes created the tenant: %v", tenants)
		}
	}
}

func getJSON[T any](t *testing.T, url string) T {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v T
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return v
}

// Session ids are matched exactly (Weaviate's field tokenization trims
// spaces), whatever characters they hold; user ids that are not valid
// tenant names map to distinct tenants.
func TestOddIDs(t *testing.T) {
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	st := openStore(t, weaviate.Config{URL: srv.URL, Collection: newCollection(t, srv.URL)})
	defer st.Close()
	if err := st.SetMeta(ctx, "m", 4); err != nil {
		t.Fatal(err)
	}
	sids := []string{"s1", " s1", "s1 ", `a"b\c`, "ü\x01\n", "{Get}", "s1 s2"}
	users := []string{"user@example.com", "user@example.org", "Ω", strings.Repeat("x", 100)}
	for ui, user := range users {
		batch := map[string][]vectors.Vector{}
		for i, sid := range sids {
			v := make([]float32, 4)
			v[(i+ui)%4] = 1
			batch[sid] = []vectors.Vector{{Ordinal: i, TextHash: user + "|" + sid, Values: v}}
		}
		if err := st.Upsert(ctx, user, batch); err != nil {
			t.Fatalf("Upsert for %q: %v", user, err)
		}
	}
	for _, user := range users {
		for i, sid := range sids {
			h, err := st.Hashes(ctx, user, sid)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[int]string{i: user + "|" + sid}; !maps.Equal(h, want) {
				t.Errorf("Hashes(%q, %q) = %v, want %v", user, sid, h, want)
			}
		}
		hits, err := st.Nearest(ctx, user, []float32{1, 1, 1, 1}, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != len(sids) {
			t.Errorf("user %q sees %d vectors, want %d", user, len(hits), len(sids))
		}
	}
	// Deleting " s1" leaves "s1" and "s1 ".
	if err := st.Delete(ctx, users[0], []string{" s1"}); err != nil {
		t.Fatal(err)
	}
	for _, sid := range []string{"s1", "s1 "} {
		if h, _ := st.Hashes(ctx, users[0], sid); len(h) != 1 {
			t.Errorf("deleting %q removed %q: %v", " s1", sid, h)
		}
	}
	if h, _ := st.Hashes(ctx, users[0], " s1"); len(h) != 0 {
		t.Errorf("%q still has %v", " s1", h)
	}
}

// Sessions larger than a listing page are read page by page, alone and
// together with others.
func TestPaging(t *testing.T) {
	srv := weaviatetest.Shared(t)
	defer weaviate.SetPageSize(3)()
	ctx := context.Background()
	st := openStore(t, weaviate.Config{URL: srv.URL, Collection: newCollection(t, srv.URL)})
	defer st.Close()
	if err := st.SetMeta(ctx, "m", 4); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	big := func(sid string, n int) []vectors.Vector {
		var vs []vectors.Vector
		for i := range n {
			vs = append(vs, vectors.Vector{Ordinal: i * 2, TextHash: fmt.Sprint(sid, i), Values: randomUnit(r, 4)})
		}
		return vs
	}
	if err := st.Upsert(ctx, "u", map[string][]vectors.Vector{"a": big("a", 10), "b": big("b", 7), "c": big("c", 1)}); err != nil {
		t.Fatal(err)
	}
	for sid, n := range map[string]int{"a": 10, "b": 7, "c": 1} {
		if h, err := st.Hashes(ctx, "u", sid); err != nil || len(h) != n {
			t.Errorf("Hashes(%s) = %d entries, %v; want %d", sid, len(h), err, n)
		}
	}
	// Keep every other vector of a and b by hash, drop the rest, in one write.
	keep := map[string][]vectors.Vector{}
	for sid, n := range map[string]int{"a": 10, "b": 7} {
		for i := 0; i < n; i += 2 {
			keep[sid] = append(keep[sid], vectors.Vector{Ordinal: i * 2, TextHash: fmt.Sprint(sid, i)})
		}
	}
	if err := st.Upsert(ctx, "u", keep); err != nil {
		t.Fatal(err)
	}
	for sid, n := range map[string]int{"a": 5, "b": 4, "c": 1} {
		if h, err := st.Hashes(ctx, "u", sid); err != nil || len(h) != n {
			t.Errorf("after keeping: Hashes(%s) = %v, %v; want %d entries", sid, h, err, n)
		}
	}
	if hits, err := st.Nearest(ctx, "u", []float32{1, 0, 0, 0}, 100); err != nil || len(hits) != 10 {
		t.Errorf("after keeping: %d hits, %v; want 10", len(hits), err)
	}
}

func TestOpen(t *testing.T) {
	srv := weaviatetest.Shared(t)
	ctx := context.Background()
	// The URL as an operator writes it, with a trailing slash.
	st, err := weaviate.Open(ctx, weaviate.Config{URL: srv.URL + "/", Collection: newCollection(t, srv.URL)})
	if err != nil {
		t.Fatalf("Open(%s/): %v", srv.URL, err)
	}
	if model, dim, err := st.Meta(ctx); err != nil || model != "" || dim != 0 {
		t.Errorf("Meta of a new collection = %q, %d, %v", model, dim, err)
	}
	st.Close()

	for _, bad := range []weaviate.Config{
		{URL: "localhost:8080"},
		{URL: "ftp://localhost:8080"},
		{URL: srv.URL + "/v1"},
		{URL: srv.URL, Collection: "lowercase"},
		{URL: "https://localhost:1", GRPCAddr: "localhost:2"},
	} {
		if st, err := weaviate.Open(ctx, bad); err == nil {
			st.Close()
			t.Errorf("Open(%+v) succeeded", bad)
		}
	}

	// A server that does not answer: the error names the URL and what to
	// check (Open does not retry a refused connection: it would never end).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	_, err = weaviate.Open(ctx, weaviate.Config{URL: dead, APIKey: "secret-key"})
	if err == nil || !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("Open(%s) = %v, want an error naming the URL", dead, err)
	}
	if err != nil && strings.Contains(err.Error(), "secret-key") {
		t.Errorf("the error shows the API key: %v", err)
	}

	// A collection someone else created is refused, not adopted.
	foreign := newCollection(t, srv.URL)
	resp, err := http.Post(srv.URL+"/v1/schema", "application/json", strings.NewReader(`{"class": "`+foreign+`", "vectorizer": "none"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create %s: %s", foreign, resp.Status)
	}
	if st, err := weaviate.Open(ctx, weaviate.Config{URL: srv.URL, Collection: foreign}); err == nil || !strings.Contains(err.Error(), "not created by Hindsight") {
		if err == nil {
			st.Close()
		}
		t.Errorf("Open of a foreign collection = %v, want a refusal", err)
	}
}

// Close releases the client's REST connection for collection: the client
// sets a finalizer on it that would block the runtime's finalizer goroutine.
func TestCloseLetsFinalizersRun(t *testing.T) {
	srv := weaviatetest.Shared(t)
	func() {
		st := openStore(t, weaviate.Config{URL: srv.URL, Collection: newCollection(t, srv.URL)})
		st.Close()
	}()
	for range 3 {
		runtime.GC()
	}
	ran := make(chan struct{})
	func() {
		x := new([64]byte)
		runtime.SetFinalizer(x, func(*[64]byte) { close(ran) })
	}()
	deadline := time.After(2 * time.Minute) // a bound on liveness, not a timing
	for {
		runtime.GC()
		select {
		case <-ran:
			return
		case <-deadline:
			t.Fatal("a finalizer did not run: the runtime's finalizer goroutine is blocked (weaviate-go-client's connection finalizer?)")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
