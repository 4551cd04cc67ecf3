package weaviate

import "testing"

// Object ids are stored: changing how they are derived
// would orphan every stored vector (a repeated Upsert would add objects
// beside the old ones instead of replacing them). These pin them; the
// tenant names, stored too, are pinned in internal/weaviatex.
func TestStoredNamesAreStable(t *testing.T) {
	for _, c := range []struct {
		user, sid string
		ord       int
		want      string
	}{
		{"u", "s", 3, "e989f314-20ca-511c-ad5d-3319c03bcf82"},
		{"ab", "c", 0, "e5ff23b6-ae7d-561b-bb64-be0f93666a64"},
		{"a", "bc", 0, "55328c01-a0af-5820-9659-a86f4d60d01d"}, // same bytes as above, other split
	} {
		if got := objectID(c.user, c.sid, c.ord).String(); got != c.want {
			t.Errorf("objectID(%q, %q, %d) = %s, want %s", c.user, c.sid, c.ord, got, c.want)
		}
	}
}
