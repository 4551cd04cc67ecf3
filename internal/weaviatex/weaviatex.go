// Package weaviatex holds what Hindsight's users of a Weaviate server share:
// the vector store (vectors/weaviate), the full-text index
// (index/weaviatetext) and the relevance bench's peer (bench/weaviatepeer).
// It connects and checks the server ([Dial]), quotes GraphQL ([GQLString],
// [GQLVector]), names the tenant a user's data lives in ([TenantOf]) and
// reads the server's errors ([IsStatus], [Conn.Fail]), each written once.
//
// The tenant naming is stored: every object a Weaviate user wrote lives in
// the tenant TenantOf named, so changing it orphans stored data
// (TestTenantOfIsStable pins it).
package weaviatex

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
)

// MaxResults is Weaviate's default QUERY_MAXIMUM_RESULTS: the most objects
// one query (limit + offset) or one batch delete may touch.
const MaxResults = 10000

// collectionName is what Weaviate accepts as a collection (class) name.
var collectionName = regexp.MustCompile(`^[A-Z][_0-9A-Za-z]*$`)

// ValidCollection reports whether Weaviate accepts name as a collection
// name: an upper-case letter, then letters, digits and _.
func ValidCollection(name string) bool { return collectionName.MatchString(name) }

// tenantName matches the user ids Weaviate accepts as tenant names as they
// are (Hindsight's are 16 characters of [a-z0-9]).
var tenantName = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// TenantOf maps a user id to its tenant: the id itself when Weaviate
// accepts it as a tenant name, else "h_" and the first 40 hex digits of its
// SHA-256 (the underscore keeps the two forms apart).
func TenantOf(userID string) string {
	if tenantName.MatchString(userID) {
		return userID
	}
	sum := sha256.Sum256([]byte(userID))
	return "h_" + hex.EncodeToString(sum[:20])
}

// GQLString quotes s as a GraphQL string (JSON escapes are GraphQL's; the
// Go client's builders quote with %q, whose \x and \U escapes GraphQL does
// not read).
func GQLString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// GQLVector formats v as a GraphQL list of floats, each with the shortest
// decimal that reads back as the same float32.
func GQLVector(v []float32) string {
	b := make([]byte, 0, len(v)*12)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return string(append(b, ']'))
}
