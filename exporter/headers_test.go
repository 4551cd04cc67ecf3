package exporter_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/exporter"
)

// TestSetEvalHeaders: the eval download's headers, which the REST API and
// the dashboard both send: not cached, named for the format and the UTC day.
func TestSetEvalHeaders(t *testing.T) {
	h := http.Header{}
	// 23:30 in UTC-5 is the next day in UTC.
	now := time.Date(2026, 3, 1, 23, 30, 0, 0, time.FixedZone("EST", -5*3600))
	exporter.SetEvalHeaders(h, exporter.OpenAIEvals, now, 3, 7)
	want := map[string]string{
		"Content-Type":        exporter.OpenAIEvals.ContentType(),
		"Cache-Control":       "no-store",
		"Content-Disposition": `attachment; filename=hindsight-evals-openai-evals-2026-03-02.jsonl`,
		"X-Export-Sessions":   "3",
		"X-Export-TestCases":  "7",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}
