package topk

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

type scored struct {
	score int
	id    int
}

// byScoreThenID is a total order: lower score is worse, then higher id.
func byScoreThenID(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.id > b.id
}

func byScore(a, b scored) bool { return a.score < b.score }

func TestHeapKeepsTheBest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	stream := make([]scored, 500)
	for i := range stream {
		stream[i] = scored{score: r.IntN(50), id: i} // many equal scores
	}
	want := slices.Clone(stream)
	slices.SortFunc(want, func(a, b scored) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.id, b.id)) })
	tests := []struct {
		name string
		k    int
	}{
		{"nothing", 0},
		{"negative", -3},
		{"one", 1},
		{"a few", 7},
		{"all but one", len(stream) - 1},
		{"exactly all", len(stream)},
		{"more than there are", len(stream) + 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := New(tc.k, byScoreThenID)
			for _, x := range stream {
				h.Push(x)
			}
			n := min(max(tc.k, 0), len(stream))
			got := h.Sorted()
			if !slices.Equal(got, want[:n]) {
				t.Fatalf("Sorted() = %v, want %v", got, want[:n])
			}
			if h.Len() != n || len(h.Items()) != n {
				t.Fatalf("Len() = %d, len(Items()) = %d, want %d", h.Len(), len(h.Items()), n)
			}
			if n > 0 && h.Items()[0] != want[n-1] {
				t.Errorf("root = %v, want the worst kept value %v", h.Items()[0], want[n-1])
			}
		})
	}
}

// TestHeapEqualValues pins the rule callers with a partial order rely on:
// once the heap is full, a value equal to the worst kept one does not
// enter, and a better value evicts one of the worst.
func TestHeapEqualValues(t *testing.T) {
	ids := func(h *Heap[scored]) []int {
		var out []int
		for _, x := range h.Items() {
			out = append(out, x.id)
		}
		slices.Sort(out)
		return out
	}
	h := New(3, byScore)
	for i := range 4 {
		h.Push(scored{score: 5, id: i})
	}
	if got := ids(&h); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("after four equal values the heap holds %v, want the first three", got)
	}
	h.Push(scored{score: 9, id: 4})
	got := ids(&h)
	if len(got) != 3 || !slices.Contains(got, 4) || slices.Contains(got, 3) {
		t.Fatalf("after a better value the heap holds %v, want it and two of the first three", got)
	}
	h.Push(scored{score: 4, id: 5})
	if again := ids(&h); !slices.Equal(again, got) {
		t.Errorf("a worse value changed the heap from %v to %v", got, again)
	}
}
