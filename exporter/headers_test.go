package exporter_test

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/exporter"
)

// TestServeEvalsHeaders: the eval download's headers, which the REST API and
// the dashboard both send through ServeEvals: not cached, named for the
// format and the UTC day, with the counts; then the dataset as WriteEval
// writes it.
func TestServeEvalsHeaders(t *testing.T) {
	// 23:30 in UTC-5 is the next day in UTC.
	now := time.Date(2026, 3, 1, 23, 30, 0, 0, time.FixedZone("EST", -5*3600))
	for _, f := range []exporter.EvalFormat{exporter.OpenAIEvals, exporter.DeepEval} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/export/evals", nil)
		// No picks: the store is never read.
		if err := exporter.ServeEvals(w, r, nil, "u", nil, f, exporter.Options{}, now); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"Content-Type":        f.ContentType(),
			"Cache-Control":       "no-store",
			"Content-Disposition": `attachment; filename=hindsight-evals-` + string(f) + `-2026-03-02.` + f.Ext(),
			"X-Export-Sessions":   "0",
			"X-Export-TestCases":  "0",
		}
		for k, v := range want {
			if got := w.Header().Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", f, k, got, v)
			}
		}
		var body bytes.Buffer
		none := func(func(exporter.Session) error) error { return nil }
		if err := exporter.WriteEval(&body, f, none, exporter.Options{}); err != nil {
			t.Fatal(err)
		}
		if w.Body.String() != body.String() {
			t.Errorf("%s: body %q, want %q", f, w.Body.String(), body.String())
		}
	}
}
