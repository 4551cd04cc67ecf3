package weaviate

import (
	"cmp"
	"context"

	wv "github.com/weaviate/weaviate-go-client/v4/weaviate"
	"github.com/weaviate/weaviate/entities/models"
)

// Conn is a checked connection for a caller that keeps collections of its
// own on the server (the relevance bench's Weaviate peer): the client, and
// the ways this package queries the server and reports its errors, so that
// they are written once.
type Conn struct {
	Client *wv.Client // nil after Close
	Where  string     // the URL without credentials, for messages
}

// Dial connects as Open does (checking the URL, that the server answers and
// its version) without touching a collection. cfg.Collection, when set,
// must be a valid collection name.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	client, where, err := connect(ctx, cfg, cmp.Or(cfg.Collection, DefaultCollection))
	if err != nil {
		return nil, err
	}
	return &Conn{Client: client, Where: where}, nil
}

// Close releases the client (see Store.Close). Safe to call twice.
func (c *Conn) Close() {
	release(c.Client)
	c.Client = nil
}

// Get runs {Get{<class>(<args>){<fields>}}} and decodes the list of objects
// into into. Quote strings in args with GQLString and vectors with
// GQLVector.
func (c *Conn) Get(ctx context.Context, class, args, fields string, into any) error {
	return graphQLGet(ctx, c.Client, c.Where, class, args, fields, into)
}

// Fail wraps an error of the client with the operation and the URL, or
// returns ctx's error when ctx ended.
func (c *Conn) Fail(ctx context.Context, op string, err error) error {
	return failAt(ctx, c.Where, op, err)
}

// MaxResults is the most objects one query may touch (limit + offset).
const MaxResults = maxResults

// GQLString quotes s as a GraphQL string.
func GQLString(s string) string { return gqlString(s) }

// GQLVector formats v as a GraphQL list of floats.
func GQLVector(v []float32) string { return gqlVector(v) }

// BatchErrors collects the per-object errors of a batch reply.
func BatchErrors(res []models.ObjectsGetResponse) error { return batchErrors(res) }

// IsStatus reports whether err is a reply of the server with the status code.
func IsStatus(err error, code int) bool { return isStatus(err, code) }
