// Package mcpd serves Hindsight to coding assistants over the Model Context
// Protocol: four read-only tools (search_sessions, get_context, get_session,
// list_sessions) defined once against Backend, offered over Streamable HTTP
// at /mcp on the server (Local, the user taken from the API key) and over
// stdio by `hindsight mcp` (Remote, through a server's REST API). The
// protocol is the official Go SDK's.
package mcpd

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/ranking"
)

// Handler serves the tools over Streamable HTTP, each call answered by Local
// for the request's user. It expects to be wrapped in the REST API's
// authentication (httpd.Server.Authenticated), which answers a missing or bad
// key with 401 before any MCP exchange and applies the per-key rate limit;
// user reads the user that authentication put in the request context.
//
// The handler is stateless: every POST carries its key and is answered on
// its own, so there are no MCP sessions to bind to a user or to expire, and a
// session id cannot carry one user's access into another's requests.
// Localhost DNS-rebinding protection is off because it only matters to
// servers that trust the caller's network position; this one trusts only the
// bearer key, which a rebinding page cannot have, and a reverse proxy on the
// same host must keep working.
func Handler(records Records, search *ranking.Engine, user func(context.Context) string, log zerolog.Logger, version string) http.Handler {
	srv := NewServer(func(req *mcp.CallToolRequest) (Backend, error) {
		if req.Extra == nil || req.Extra.TokenInfo == nil || req.Extra.TokenInfo.UserID == "" {
			return nil, errors.New("mcp call without an authenticated user")
		}
		return NewLocal(records, search, req.Extra.TokenInfo.UserID), nil
	}, log, version)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               true,
		DisableLocalhostProtection: true,
	})
	// The SDK hands tool calls the TokenInfo its bearer middleware puts in
	// the request; here it only carries the user already authenticated.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		uid := user(r.Context())
		if uid == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: uid}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// ServeStdio speaks MCP on in and out (newline-delimited JSON-RPC) until the
// client closes in or ctx ends, answering with b.
func ServeStdio(ctx context.Context, b Backend, in io.ReadCloser, out io.WriteCloser, log zerolog.Logger, version string) error {
	srv := NewServer(func(*mcp.CallToolRequest) (Backend, error) { return b, nil }, log, version)
	err := srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}
