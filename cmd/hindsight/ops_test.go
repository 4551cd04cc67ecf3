package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestMetricsAndReady(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("alice")
	ta.batch(key, map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "metrics"}},
		"messages": []any{msg("s1", "m1", "user", map[string]any{"textContent": "hello"})},
	})
	ta.idle()
	ta.do(http.MethodGet, key, "/api/sessions/get?id=doesnotexist0000", nil)
	ta.search(key, "hello", "")

	resp, err := http.Get(ta.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`hindsight_http_requests_total{method="POST",route="/sync/batch",status="200"} 1`,
		`hindsight_http_requests_total{method="GET",route="/api/sessions/get",status="404"} 1`,
		`hindsight_http_request_duration_seconds_bucket{method="GET",route="/api/search"`,
		"hindsight_outbox_depth 0",
		"hindsight_index_lag_seconds_count 1",
		"hindsight_records_bytes ",
		"hindsight_indexed_sessions_total 1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(text, "doesnotexist") {
		t.Error("an id from a query string leaked into metric labels")
	}
	resp, err = http.Get(ta.srv.URL + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"ready"`) {
		t.Errorf("/ready: %d %s", resp.StatusCode, body)
	}
	ta.app.rebuilding.Store(true)
	resp, _ = http.Get(ta.srv.URL + "/ready")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "rebuilt") {
		t.Errorf("/ready while rebuilding: %d %s", resp.StatusCode, body)
	}
}
