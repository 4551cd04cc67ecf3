package weaviatetext

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/hindsight-dev/hindsight/internal/weaviatex"
)

// do sends one request to the server and decodes a JSON reply into out (nil:
// discard). Requests are plain REST rather than the Go client's builders:
// the schema needs settings the client's models (v1.27) do not carry
// (usingBlockMaxWAND), batch deletion needs Or and Not filters, and every
// failure must be classified as "unavailable" or not (see unavailable).
func (ix *Index) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := ix.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ix.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ix.cfg.APIKey)
	}
	resp, err := ix.http.Do(req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("%w: weaviate at %s: %v", ErrUnavailable, ix.where, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("%w: weaviate at %s: read reply: %v", ErrUnavailable, ix.where, err)
	}
	if resp.StatusCode/100 != 2 {
		se := &weaviatex.StatusError{Code: resp.StatusCode, Msg: strings.TrimSpace(string(raw[:min(len(raw), 2000)]))}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || tenantInactive(se.Msg) {
			return fmt.Errorf("%w: weaviate at %s: %w", ErrUnavailable, ix.where, se)
		}
		return fmt.Errorf("weaviate at %s: %s %s: %w", ix.where, method, path, se)
	}
	if out == nil || len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("weaviate at %s: %s %s: decode reply: %w", ix.where, method, path, err)
	}
	return nil
}

// gqlReply is the envelope of a GraphQL reply.
type gqlReply struct {
	Data   map[string]map[string]json.RawMessage `json:"data"`
	Errors []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

// graphQL runs a query and decodes data.<kind>.<class> into out. Errors the
// server reports for replicas or shards it cannot reach are unavailability;
// others (a malformed query) are not.
func (ix *Index) graphQL(ctx context.Context, kind, class, query string, out any) error {
	var r gqlReply
	if err := ix.do(ctx, http.MethodPost, "/v1/graphql", nil, map[string]string{"query": query}, &r); err != nil {
		return err
	}
	if len(r.Errors) > 0 {
		msgs := make([]string, len(r.Errors))
		for i, e := range r.Errors {
			msgs[i] = e.Message
		}
		msg := strings.Join(msgs, "; ")
		if isTenantMissing(msg) {
			return errNoTenant
		}
		if transient(msg) {
			return fmt.Errorf("%w: weaviate at %s: %s", ErrUnavailable, ix.where, msg)
		}
		return fmt.Errorf("query weaviate at %s: %s", ix.where, msg)
	}
	raw := r.Data[kind][class]
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// errNoTenant: the user's tenant does not exist yet (nothing indexed).
var errNoTenant = errors.New("tenant does not exist")

func isTenantMissing(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "tenant not found") || strings.Contains(m, "tenant") && strings.Contains(m, "not found")
}

// transient reports whether a server-side error message describes a node,
// replica or shard it could not reach, a timeout, or a tenant between
// INACTIVE and ACTIVE (Settle sets every tenant inactive and active again
// while searches run): what waiting cures.
func transient(msg string) bool {
	m := strings.ToLower(msg)
	if tenantInactive(m) {
		return true
	}
	for _, s := range []string{"consistency level", "connection refused", "unreachable", "timeout", "deadline exceeded",
		"no such host", "not ready", "shutting down", "broken pipe", "connection reset", "eof", "replica", "leader"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// tenantInactive reports whether a message is Weaviate's refusal of a
// tenant that is INACTIVE (or being switched), which it answers with a 4xx
// on REST and an error on GraphQL.
func tenantInactive(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "tenant not active")
}
