package weaviatetext

import "testing"

// Messages of the kinds weaviate-server v1.35.2 sends: which are
// what waiting cures (ErrUnavailable: 503 and a retry) and which are not.
func TestTransient(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{`msg:search index htexttsession code:422 err:tenant not active: 'u1'`, true},
		{`Tenant Not Active: "u1"`, true},
		{`cannot achieve consistency level "QUORUM": read error`, true},
		{`dial tcp 127.0.0.1:8080: connect: connection refused`, true},
		{`Unknown argument "tenant" on field "TextSession" of type "GetObjectsObj".`, false},
		{`class TextChunk has multi-tenancy disabled, but request was with tenant`, false},
		{`tenant not found: "u1"`, false}, // nothing indexed yet: isTenantMissing
		{`invalid 'where' filter`, false},
	} {
		if got := transient(c.msg); got != c.want {
			t.Errorf("transient(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}
