package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestParseEvalForm: the Evals forms are checked by the same rules as
// PATCH /api/sessions/eval (evals.Patch.Validate): tags are split on commas,
// trimmed and deduplicated, up to 50 tags of 100 characters, notes and
// expected output up to 1 MiB each.
func TestParseEvalForm(t *testing.T) {
	many := func(n int) string {
		tags := make([]string, n)
		for i := range tags {
			tags[i] = fmt.Sprintf("t%d", i)
		}
		return strings.Join(tags, ",")
	}
	for _, tc := range []struct {
		name    string
		form    url.Values
		setAll  bool
		want    []string // tags; nil: none set
		wantErr string
	}{
		{"empty tags, set all", url.Values{"tags": {""}}, true, []string{}, ""},
		{"blanks and repeats", url.Values{"tags": {" auth , flaky,auth,, "}}, false, []string{"auth", "flaky"}, ""},
		{"100-character tag", url.Values{"tags": {strings.Repeat("é", 100)}}, false, []string{strings.Repeat("é", 100)}, ""},
		{"101-character tag", url.Values{"tags": {strings.Repeat("x", 101)}}, false, nil, "evalTags[0] is longer than 100 characters"},
		{"50 tags", url.Values{"tags": {many(50)}}, false, strings.Split(many(50), ","), ""},
		{"51 tags", url.Values{"tags": {many(51)}}, false, nil, "at most 50 evalTags, got 51"},
		{"unknown status", url.Values{"status": {"perfect"}}, false, nil, "evalStatus must be one of"},
		{"notes over 1 MiB", url.Values{"notes": {strings.Repeat("n", 1<<20+1)}}, false, nil, "evalNotes is 1048577 bytes"},
		{"nothing to change", url.Values{"tags": {" , "}}, false, nil, "nothing to change"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/evals/label", strings.NewReader(tc.form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			p, err := parseEvalForm(r, tc.setAll)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Tags == nil || !slices.Equal(*p.Tags, tc.want) {
				t.Errorf("tags %v, want %q", p.Tags, tc.want)
			}
		})
	}
}
