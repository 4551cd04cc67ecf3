package weaviatex

import (
	"errors"
	"fmt"
	"testing"

	"github.com/weaviate/weaviate-go-client/v4/weaviate/fault"
)

// Tenant names are stored: every object the vector store and the text
// index wrote lives in the tenant TenantOf named, so changing how it is
// derived would orphan them. This pins it.
func TestTenantOfIsStable(t *testing.T) {
	for _, c := range []struct{ user, want string }{
		{"k3j5h2l4m6n8p0q1", "k3j5h2l4m6n8p0q1"}, // Hindsight's ids are tenant names as they are
		{"user@example.com", "h_b4c9a289323b21a01c3e940f150eb9b8c542587f"},
		{"h_b4c9a289323b21a01c3e940f150eb9b8c542587f", "h_adc414eea04b5b30c424fe4bba4c6848ac0f6832"}, // never its own tenant name
		{"", "h_e3b0c44298fc1c149afbf4c8996fb92427ae41e4"},
		{"A-1", "A-1"},
	} {
		if got := TenantOf(c.user); got != c.want {
			t.Errorf("TenantOf(%q) = %s, want %s", c.user, got, c.want)
		}
	}
}

func TestGQL(t *testing.T) {
	if got, want := GQLString("a\"b\x01é"), `"a\"b\u0001é"`; got != want {
		t.Errorf("GQLString = %s, want %s", got, want)
	}
	if got, want := GQLVector([]float32{0.1, -2, 3e-8}), "[0.1,-2,3e-08]"; got != want {
		t.Errorf("GQLVector = %s, want %s", got, want)
	}
}

func TestIsStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		want bool
	}{
		{&StatusError{Code: 404, Msg: "no"}, 404, true},
		{fmt.Errorf("delete: %w", &StatusError{Code: 404}), 404, true},
		{&StatusError{Code: 422}, 404, false},
		{&fault.WeaviateClientError{StatusCode: 404}, 404, true},
		{fmt.Errorf("x: %w", &fault.WeaviateClientError{StatusCode: 500}), 404, false},
		{errors.New("status 404"), 404, false},
		{nil, 404, false},
	} {
		if got := IsStatus(c.err, c.code); got != c.want {
			t.Errorf("IsStatus(%v, %d) = %v, want %v", c.err, c.code, got, c.want)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"1.25.0": true, "v1.35.2": true, "1.24.9": false, "2.0": true, "0.99": false, "1": false, "x.y": false} {
		if got := versionAtLeast(v, 1, 25); got != want {
			t.Errorf("versionAtLeast(%q, 1, 25) = %v, want %v", v, got, want)
		}
	}
}
