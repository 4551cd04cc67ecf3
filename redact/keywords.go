package redact

// keywords finds the rules' keywords in a text, ignoring ASCII case, as
// gitleaks' prefilter does. A bitmap of every keyword's first two bytes (in
// each case) rejects almost every position with one load; only positions
// that pass compare the keywords beginning with those two bytes. On the
// coding-sessions corpus this is several times faster than the
// Aho-Corasick automaton gitleaks uses, whose tables (2 KiB per state, a
// few thousand states) miss the cache (bench/results/redact).
type keywords struct {
	pairs [1 << 16 / 64]uint64 // bit set: some keyword begins with these two bytes
	index [1 << 16]uint16      // two bytes -> 1 + their entry in lists
	lists [][]int              // keyword numbers by their first two bytes
	third [][4]uint64          // by list: the bytes that may come third (all, when a keyword has two)
	words []string             // lower case
}

func newKeywords(words []string) *keywords {
	k := &keywords{words: words, lists: [][]int{nil}, third: [][4]uint64{{}}}
	for n, w := range words {
		if len(w) < 2 {
			continue // New rejects them
		}
		for _, a := range caseVariants(w[0]) {
			for _, b := range caseVariants(w[1]) {
				p := uint16(a)<<8 | uint16(b)
				k.pairs[p>>6] |= 1 << (p & 63)
				if k.index[p] == 0 {
					k.index[p] = uint16(len(k.lists))
					k.lists = append(k.lists, nil)
					k.third = append(k.third, [4]uint64{})
				}
				l := k.index[p]
				k.lists[l] = append(k.lists[l], n)
				if len(w) == 2 {
					k.third[l] = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
					continue
				}
				for _, c := range caseVariants(w[2]) {
					k.third[l][c>>6] |= 1 << (c & 63)
				}
			}
		}
	}
	return k
}

func caseVariants(c byte) []byte {
	switch {
	case 'a' <= c && c <= 'z':
		return []byte{c, c - 'a' + 'A'}
	case 'A' <= c && c <= 'Z':
		return []byte{c, c - 'A' + 'a'}
	}
	return []byte{c}
}

// each calls fn with the start of every keyword occurrence in s, in order
// of start, and the keyword's number.
func (k *keywords) each(s string, fn func(start, n int)) {
	for i := 0; i+1 < len(s); i++ {
		p := uint16(s[i])<<8 | uint16(s[i+1])
		if k.pairs[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		l := k.index[p]
		if i+2 < len(s) {
			if c := s[i+2]; k.third[l][c>>6]&(1<<(c&63)) == 0 {
				continue
			}
		}
		for _, n := range k.lists[l] {
			w := k.words[n]
			if len(s)-i >= len(w) && equalFoldASCII(s[i+2:i+len(w)], w[2:]) {
				fn(i, n)
			}
		}
	}
}

// equalFoldASCII compares s with lower, which is in lower case.
func equalFoldASCII(s, lower string) bool {
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
