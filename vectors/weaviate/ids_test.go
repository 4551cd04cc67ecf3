package weaviate

import "testing"

// Object ids and tenant names are stored: changing how they are derived
// would orphan every stored vector (a repeated Upsert would add objects
// beside the old ones instead of replacing them). These pin them.
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
	for _, c := range []struct{ user, want string }{
		{"k3j5h2l4m6n8p0q1", "k3j5h2l4m6n8p0q1"}, // Hindsight's ids are tenant names as they are
		{"user@example.com", "h_b4c9a289323b21a01c3e940f150eb9b8c542587f"},
		{"h_b4c9a289323b21a01c3e940f150eb9b8c542587f", "h_adc414eea04b5b30c424fe4bba4c6848ac0f6832"}, // never its own tenant name,
	} {
		if got := tenantOf(c.user); got != c.want {
			t.Errorf("tenantOf(%q) = %s, want %s", c.user, got, c.want)
		}
	}
}
