package vectors

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestHeadDistancesMatchHamming: every fixed-size loop of headDistances,
// and the general one, gives each row's Hamming distance and counts it.
func TestHeadDistancesMatchHamming(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for hw := 1; hw <= 8; hw++ {
		t.Run(fmt.Sprintf("words=%d", hw), func(t *testing.T) {
			const n = 300
			heads := make([]uint64, n*hw)
			for i := range heads {
				heads[i] = r.Uint64() & r.Uint64() // fewer set bits than uniform
			}
			q := make([]uint64, hw)
			for i := range q {
				q[i] = r.Uint64()
			}
			dist := make([]uint16, n)
			counts := make([]int, 64*hw+1)
			headDistances(heads, q, dist, counts)
			want := make([]int, len(counts))
			for i := range n {
				h := 0
				for w := range hw {
					h += bits.OnesCount64(heads[i*hw+w] ^ q[w])
				}
				want[h]++
				if int(dist[i]) != h {
					t.Fatalf("row %d: distance %d, want %d", i, dist[i], h)
				}
			}
			for h := range want {
				if counts[h] != want[h] {
					t.Fatalf("distance %d counted %d times, want %d", h, counts[h], want[h])
				}
			}
		})
	}
}

// TestShortListReadsKeepTails: rows tied at the heads' cut are taken in row
// order until survivorsFor rows are kept, so a scan reads that many tails
// however many heads tie (here every head is the same).
func TestShortListReadsKeepTails(t *testing.T) {
	const dim, n, short = 1024, 20000, 10
	r := rand.New(rand.NewPCG(3, 4))
	c := newSignCodes(dim, make([]float32, dim))
	c.grow(n)
	x := make([]float32, dim)
	for range n {
		for i := range x {
			x[i] = float32(r.NormFloat64())
			if i < 64*c.headWords {
				x[i] = 1 + r.Float32() // the same signs: every head alike
			}
		}
		c.appendRow(x)
	}
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	got, err := c.shortList(t.Context(), c.prepare(x), 0, n, short)
	if err != nil {
		t.Fatal(err)
	}
	keep := survivorsFor(n, short)
	if len(got) != short {
		t.Fatalf("%d candidates, want %d", len(got), short)
	}
	for _, cd := range got {
		if int(cd.row) >= keep {
			t.Fatalf("row %d ranked: only the first %d rows tied at the cut may be", cd.row, keep)
		}
	}
}
