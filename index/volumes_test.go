package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// openVolumes opens an index whose sessions are cut into volumes of limit
// bytes.
func openVolumes(t *testing.T, limit int) *Index {
	t.Helper()
	return openTestWith(t, "", Options{VolumeBytes: limit})
}

// longMessages returns n messages of about size bytes each, message i
// holding the word "m<i>x" and words of a small vocabulary.
func longMessages(rng *rand.Rand, n, size int) []string {
	vocab := strings.Fields("alpha beta gamma delta handler retry parser config cache index volume session query")
	var out []string
	for i := range n {
		words := []string{fmt.Sprintf("m%dx", i)}
		for l := 0; l < size; l += 7 {
			words = append(words, vocab[rng.IntN(len(vocab))])
		}
		out = append(out, strings.Join(words, " "))
	}
	return out
}

// TestVolumesOf checks the cut: the volumes' bodies are the session's
// body at message starts, in order, each within the limit unless it is one
// message; their breaks and chunks are the session's within them; and an
// append leaves every volume but the last two as it was.
func TestVolumesOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	msgs := longMessages(rng, 120, 300)
	msgs[50] = strings.Repeat("long message ", 400) // longer than a volume
	const limit = 2048
	s := chunked("u", "s", "title", msgs...)
	vols := volumesOf(s, limit)
	if len(vols) < 10 {
		t.Fatalf("%d volumes of a %d-byte body at %d", len(vols), len(s.Body), limit)
	}
	var body []string
	var chunks []Chunk
	for i, v := range vols {
		if v.Title != s.Title || v.UserID != s.UserID || v.SessionID != s.SessionID {
			t.Fatalf("volume %d: %q %q %q", i, v.UserID, v.SessionID, v.Title)
		}
		if len(v.Body) > limit && len(v.Breaks) > 0 {
			t.Errorf("volume %d: %d bytes of %d messages, over the limit %d", i, len(v.Body), len(v.Breaks)+1, limit)
		}
		if err := validate(v); err != nil {
			t.Fatalf("volume %d: %v", i, err)
		}
		body = append(body, v.Body)
		chunks = append(chunks, v.Chunks...)
		// A volume's messages are its chunks (chunked's layout).
		if got, want := len(v.Breaks)+1, len(v.Chunks); got != want {
			t.Errorf("volume %d: %d messages, %d chunks", i, got, want)
		}
	}
	if got := strings.Join(body, "\n\n"); got != s.Body {
		t.Fatalf("the volumes' bodies joined are not the body")
	}
	if !slices.EqualFunc(chunks, s.Chunks, func(a, b Chunk) bool { return a.Ordinal == b.Ordinal && a.Text == b.Text }) {
		t.Fatalf("the volumes' chunks are not the session's")
	}
	// Short sessions are one volume, the session itself.
	short := chunked("u", "s", "t", msgs[:3]...)
	if v := volumesOf(short, limit); len(v) != 1 || v[0].Body != short.Body {
		t.Fatalf("a short session was cut: %d volumes", len(v))
	}
	// Appending leaves the volumes before the last two unchanged.
	for extra := 1; extra <= 20; extra++ {
		grown := volumesOf(chunked("u", "s", "title", append(slices.Clone(msgs), longMessages(rng, extra, 300)...)...), limit)
		for i := range len(vols) - 2 {
			if volumeHash(grown[i]) != volumeHash(vols[i]) {
				t.Fatalf("appending %d messages changed volume %d of %d", extra, i, len(vols))
			}
		}
	}
}

// TestPutLongSessionRewritesLastVolume is issue 29's cost: appending to a
// long session analyses the last volume (and the new message), not the
// session.
func TestPutLongSessionRewritesLastVolume(t *testing.T) {
	const limit = 4096
	ix := openVolumes(t, limit)
	rng := rand.New(rand.NewPCG(1, 2))
	msgs := longMessages(rng, 400, 500) // about 200 KiB: 50 volumes
	s := chunked("u", "long", "a long session", msgs...)
	put(t, ix, s)
	if a := ix.analysed.Load(); a < int64(len(s.Body)) {
		t.Fatalf("the first put analysed %d bytes of a %d-byte body", a, len(s.Body))
	}
	for i := range 20 {
		msgs = append(msgs, longMessages(rng, 1, 500)[0]+fmt.Sprintf(" appended%dx", i))
		before := ix.analysed.Load()
		put(t, ix, chunked("u", "long", "a long session", msgs...))
		// At most the last two volumes (the new message may start a volume
		// and move the cut before it) and their titles.
		if got, most := ix.analysed.Load()-before, int64(2*(limit+600+len("a long session"))); got > most {
			t.Fatalf("append %d analysed %d bytes, more than two volumes (%d)", i, got, most)
		}
		if hits := search(t, ix, Query{UserID: "u", Text: fmt.Sprintf("appended%dx", i)}); len(hits) != 1 || hits[0].SessionID != "long" {
			t.Fatalf("append %d not found: %v", i, ids(hits))
		}
	}
	// The first message is still found, once.
	if hits := search(t, ix, Query{UserID: "u", Text: "m0x alpha beta"}); len(hits) != 1 || hits[0].SessionID != "long" {
		t.Fatalf("hits %v, want long once", ids(hits))
	}
}

// TestVolumesDeleteAndShrink: deleting a session of several volumes
// leaves none of them; a session rewritten shorter (as redaction or an
// edit does) leaves no volume it no longer has (down to a quarter of a
// volume: planVolumes).
func TestVolumesDeleteAndShrink(t *testing.T) {
	const limit = 2048
	ix := openVolumes(t, limit)
	rng := rand.New(rand.NewPCG(3, 4))
	msgs := longMessages(rng, 60, 400)
	msgs[59] += " secretword"
	put(t, ix, chunked("u", "long", "t", msgs...), chunked("u", "other", "t", "alpha"), chunked("v", "long", "t", msgs...))
	stored := func(user, id string) int {
		t.Helper()
		v, err := ix.storedVolumes(user, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(v)
	}
	if n := stored("u", "long"); n < 5 {
		t.Fatalf("%d volumes stored", n)
	}
	// Rewritten without its last messages: the volumes past the new end go.
	put(t, ix, chunked("u", "long", "t", msgs[:len(msgs)/2]...))
	if n, want := stored("u", "long"), len(volumesOf(chunked("u", "long", "t", msgs[:len(msgs)/2]...), limit)); n != want {
		t.Fatalf("%d volumes stored after the rewrite, want %d", n, want)
	}
	if hits := search(t, ix, Query{UserID: "u", Text: "secretword"}); len(hits) != 0 {
		t.Fatalf("the removed text is still found: %v", ids(hits))
	}
	// Rewritten under a volume (and over a quarter of one, see
	// planVolumes): one document.
	short := chunked("u", "long", "t", msgs[:3]...)
	if len(short.Body) <= limit/4 || len(short.Body) > limit {
		t.Fatalf("the short session has %d bytes", len(short.Body))
	}
	put(t, ix, short)
	if n := stored("u", "long"); n != 1 {
		t.Fatalf("%d volumes stored for a short session", n)
	}
	if err := ix.Delete(context.Background(), "v", []string{"long"}); err != nil {
		t.Fatal(err)
	}
	if n := stored("v", "long"); n != 0 {
		t.Fatalf("%d volumes left after the delete", n)
	}
	for _, q := range []string{"alpha", "secretword", "m1x", "m58x"} {
		if hits := search(t, ix, Query{UserID: "v", Text: q}); len(hits) != 0 {
			t.Fatalf("%q finds %v after the delete", q, ids(hits))
		}
	}
	if c := counts(t, ix); c[0] != 2 {
		t.Fatalf("%d documents left, want 2 (u's two sessions)", c[0])
	}
}

// TestVolumesRandom is the search property of volumes, on random corpora
// with long sessions cut into many volumes: a session is returned once,
// with the score of its best volume, where the best volume is scored as a
// session of its own would be in an index holding each volume as a
// session (the reference); the pruned evaluation returns the exhaustive
// one's sessions and scores at every limit. The seed is logged.
func TestVolumesRandom(t *testing.T) {
	seeds := []uint64{11, uint64(time.Now().UnixNano())}
	if !fullSize() || raceEnabled {
		seeds = seeds[1:]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			checkVolumesRandom(t, seed)
		})
	}
}

func checkVolumesRandom(t *testing.T, seed uint64) {
	const limit = 1024
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 99))
	ix := openVolumes(t, limit)
	ref := openVolumes(t, 1<<30) // no volumes: each of ix's volumes is a session
	vocab := make([]string, 30+rng.IntN(100))
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dq", i)
	}
	zipf := rand.NewZipf(rng, 1.1+rng.Float64(), 1, uint64(len(vocab)-1))
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	users := []string{"ann", "bob"}
	var all, refs []Session
	for i := range 150 {
		var msgs []string
		n := 1 + rng.IntN(4)
		if rng.IntN(5) == 0 {
			n = 20 + rng.IntN(80) // long: many volumes
		}
		for range n {
			msgs = append(msgs, text(5+rng.IntN(60)))
		}
		s := chunked(users[rng.IntN(2)], fmt.Sprintf("s%03d", i), text(2), msgs...)
		all = append(all, s)
		for n, v := range volumesOf(s, limit) {
			v.SessionID = fmt.Sprintf("%s~%03d", s.SessionID, n)
			refs = append(refs, v)
		}
	}
	put(t, ix, all...)
	put(t, ref, refs...)
	long := 0
	for _, s := range all {
		if len(volumesOf(s, limit)) > 1 {
			long++
		}
	}
	if long < 10 {
		t.Fatalf("only %d sessions of several volumes", long)
	}
	for range 60 {
		user := users[rng.IntN(2)]
		q := text(1 + rng.IntN(4))
		if rng.IntN(6) == 0 {
			q = `"` + text(2) + `"`
		}
		// The reference: every volume, the best of each session.
		rh, err := ref.search(ctx, Query{UserID: user, Text: q, Limit: MaxLimit}, evaluation{exhaustive: true})
		if err != nil {
			t.Fatal(err)
		}
		var want []Hit
		seen := map[string]bool{}
		for _, h := range rh { // best first
			id, _, _ := strings.Cut(h.SessionID, "~")
			if !seen[id] {
				seen[id] = true
				want = append(want, Hit{SessionID: id, Ordinal: -1, Score: h.Score})
			}
		}
		SortHits(want)
		got, err := ix.search(ctx, Query{UserID: user, Text: q, Limit: MaxLimit}, evaluation{exhaustive: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(hitPairs(got), hitPairs(want)) {
			t.Fatalf("seed %d, %q (%s):\n got %v\nwant %v", seed, q, user, hitPairs(got), hitPairs(want))
		}
		for _, k := range []int{1, 3, 10} {
			ex, err := ix.search(ctx, Query{UserID: user, Text: q, Limit: k}, evaluation{exhaustive: true})
			if err != nil {
				t.Fatal(err)
			}
			pr, err := ix.search(ctx, Query{UserID: user, Text: q, Limit: k}, evaluation{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(hitPairs(pr), hitPairs(ex)) {
				t.Fatalf("seed %d, %q (%s) limit %d: pruned %v, exhaustive %v", seed, q, user, k, hitPairs(pr), hitPairs(ex))
			}
			if len(ex) != min(k, len(want)) {
				t.Fatalf("seed %d, %q (%s) limit %d: %d hits of %d sessions", seed, q, user, k, len(ex), len(want))
			}
		}
	}
}

// hitPairs renders hits as "session score" to compare them exactly.
func hitPairs(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s %v", h.SessionID, h.Score)
	}
	return out
}

// part is the session of messages[from:to], numbered from chunk from, as
// its volume vol: the text a reader gives Put a part at a time. more: the
// session goes on after to.
func part(user, id, title string, messages []string, from, to, vol int) Session {
	s := chunked(user, id, title, messages[from:to]...)
	for i := range s.Chunks {
		s.Chunks[i].Ordinal += from
	}
	s.Volume, s.More = vol, to < len(messages)
	return s
}

// TestPutInParts: a long session given to Put a part at a time
// (Session.More), each part starting where LastVolume said the last one
// left off, ends with the volumes a Put of the whole session writes; each
// part moves on; and a part leaves the session's later volumes (written
// before, here from an older text) as they are until the last part, which
// deletes those past the session's end. Seeded: random message sizes
// (some longer than a volume) and random part sizes over the volume size.
func TestPutInParts(t *testing.T) {
	const limit = 2048
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			var msgs []string
			for range 70 + rng.IntN(40) {
				size := 100 + rng.IntN(900)
				if rng.IntN(30) == 0 {
					size = limit + rng.IntN(2*limit)
				}
				msgs = append(msgs, longMessages(rng, 1, size)[0])
			}
			whole, parts := openVolumes(t, limit), openVolumes(t, limit)
			put(t, whole, chunked("u", "long", "t", msgs...))
			want, err := whole.storedVolumes("u", "long", 0)
			if err != nil {
				t.Fatal(err)
			}
			// Before: an older, longer text of the session (every message
			// different, more of them), so every volume is stale.
			old := longMessages(rng, len(msgs)+30, 500)
			put(t, parts, chunked("u", "long", "t", old...))
			oldVols, _ := parts.storedVolumes("u", "long", 0)
			from, vol, steps := 0, 0, 0
			for {
				to, read := from, 0
				for to < len(msgs) && (read < limit+1+rng.IntN(2*limit) || to == from) {
					read += len(msgs[to])
					to++
				}
				s := part("u", "long", "t", msgs, from, to, vol)
				if len(s.Body) <= limit && s.More {
					// A part must be longer than a volume (the pipeline's
					// reader sees to it); extend it.
					continue
				}
				put(t, parts, s)
				steps++
				stored, err := parts.storedVolumes("u", "long", 0)
				if err != nil {
					t.Fatal(err)
				}
				if !s.More {
					if !slices.Equal(stored, want) {
						t.Fatalf("after %d parts: %d volumes, the whole session's %d, or their content differs", steps, len(stored), len(want))
					}
					break
				}
				if len(stored) < len(oldVols) {
					t.Fatalf("part %d deleted the session's later volumes: %d stored, %d before", steps, len(stored), len(oldVols))
				}
				v, c := parts.LastVolume(s)
				next := from + c // c counts s's chunks, one a message
				if v <= vol || next <= from {
					t.Fatalf("part %d (messages %d-%d, volume %d) does not move on: next volume %d at message %d", steps, from, to, vol, v, next)
				}
				for n := vol; n < v; n++ {
					if stored[n] != want[n] {
						t.Fatalf("part %d wrote volume %d unlike the whole session's", steps, n)
					}
				}
				from, vol = next, v
			}
			if steps < 5 {
				t.Fatalf("%d parts: the test did not cut the session", steps)
			}
		})
	}
}
