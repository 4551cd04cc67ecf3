// Package topk keeps the k best of a stream of values, for the search
// paths that score many candidates and return few: the full-text
// evaluator in index and the vector scan in vectors.
//
// It is a bounded binary heap with the worst value kept at its root, so a
// value that does not make the cut costs one comparison. Values are ranked
// by a worse function the caller gives; which of several equal values are
// kept follows from the heap's rules, stated on Push, and callers that
// promise an order for equal values rely on them.
package topk

import "slices"

// Heap keeps the k best values pushed into it. The zero Heap keeps nothing.
type Heap[T any] struct {
	k     int
	worse func(a, b T) bool
	items []T
}

// New returns a heap that keeps the k best values, with room for them
// allocated. worse(a, b) reports whether a ranks strictly below b; it must
// be a strict weak order.
func New[T any](k int, worse func(a, b T) bool) Heap[T] {
	return Heap[T]{k: k, worse: worse, items: make([]T, 0, max(k, 0))}
}

// Push offers x. While fewer than k values are kept x is added; after that
// x replaces the worst kept value only if that value is worse than x, so a
// value equal to the worst kept one never enters.
func (h *Heap[T]) Push(x T) {
	s := h.items
	if len(s) < h.k {
		s = append(s, x)
		h.items = s
		for i := len(s) - 1; i > 0; {
			parent := (i - 1) / 2
			if !h.worse(s[i], s[parent]) {
				break
			}
			s[i], s[parent] = s[parent], s[i]
			i = parent
		}
		return
	}
	if len(s) == 0 || !h.worse(s[0], x) {
		return
	}
	s[0] = x
	h.down(0)
}

// down moves the value at i towards the leaves until neither child is
// worse than it; of two worse children the worse one (the left one when
// neither is worse than the other) takes its place.
func (h *Heap[T]) down(i int) {
	s := h.items
	for {
		l := 2*i + 1
		if l >= len(s) {
			return
		}
		m := l
		if r := l + 1; r < len(s) && h.worse(s[r], s[l]) {
			m = r
		}
		if !h.worse(s[m], s[i]) {
			return
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}

// Len is the number of values kept.
func (h *Heap[T]) Len() int { return len(h.items) }

// Items returns the values kept in heap order (worst first, the rest in no
// useful order). The slice is the heap's own: it is valid until the next
// Push and must not be modified while the heap is in use.
func (h *Heap[T]) Items() []T { return h.items }

// Sorted returns a copy of the values kept, best first. Values neither of
// which is worse than the other come in no particular order.
func (h *Heap[T]) Sorted() []T {
	out := slices.Clone(h.items)
	slices.SortFunc(out, func(a, b T) int {
		switch {
		case h.worse(b, a):
			return -1
		case h.worse(a, b):
			return 1
		}
		return 0
	})
	return out
}
