package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestCORSScope: CORS headers are where plugins and browser pages call
// from another origin (the sync and read API, /health and /mcp), on errors
// and preflights too; /metrics and the dashboard's pages, forms and static
// files send none, and a preflight there gets no CORS answer.
func TestCORSScope(t *testing.T) {
	_, srv := start(t)
	for _, tc := range []struct {
		method, path string
		cors         bool
		status       int // 0: any
	}{
		{"GET", "/health", true, http.StatusOK},
		{"GET", "/api/sessions", true, http.StatusUnauthorized},
		{"GET", "/api/nope", true, 0},
		{"POST", "/sync/batch", true, http.StatusUnauthorized},
		{"GET", "/sync/sessions/list", true, http.StatusUnauthorized},
		{"POST", "/mcp", true, http.StatusUnauthorized},
		{"OPTIONS", "/api/sessions", true, http.StatusNoContent},
		{"OPTIONS", "/sync/batch", true, http.StatusNoContent},
		{"OPTIONS", "/health", true, http.StatusNoContent},
		{"OPTIONS", "/mcp", true, http.StatusNoContent},

		{"GET", "/metrics", false, http.StatusOK},
		{"OPTIONS", "/metrics", false, 0},
		{"GET", "/", false, 0},
		{"GET", "/login", false, http.StatusOK},
		{"POST", "/login", false, 0},
		{"GET", "/sessions", false, 0},
		{"OPTIONS", "/sessions", false, 0},
		{"OPTIONS", "/login", false, 0},
		{"GET", "/static/style.css", false, http.StatusOK},
		{"GET", "/nope", false, http.StatusNotFound},
		{"OPTIONS", "/anything/at/all", false, 0},
		{"GET", "/apix", false, 0},
		{"GET", "/mcpx", false, 0},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		req.Header.Set("Origin", "https://elsewhere.example")
		if tc.method == "OPTIONS" {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if tc.status != 0 && resp.StatusCode != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
		}
		var acs []string
		for h := range resp.Header {
			if strings.HasPrefix(h, "Access-Control-") {
				acs = append(acs, h)
			}
		}
		switch {
		case tc.cors && (resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")):
			t.Errorf("%s %s: CORS headers missing: %v", tc.method, tc.path, resp.Header)
		case !tc.cors && len(acs) > 0:
			t.Errorf("%s %s: sends %v, want no CORS headers", tc.method, tc.path, acs)
		case !tc.cors && tc.method == "OPTIONS" && resp.StatusCode == http.StatusNoContent:
			t.Errorf("%s %s: a preflight answered 204 outside the API", tc.method, tc.path)
		}
	}
}
