package evals_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/evals"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
)

func TestPatchValidate(t *testing.T) {
	tags := func(n int) *[]string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("t%d", i)
		}
		return &out
	}
	tests := []struct {
		name     string
		p        evals.Patch
		want     string   // error substring; "" accepts
		wantTags []string // after normalisation, when accepted with tags
	}{
		{"nothing", evals.Patch{}, "nothing to change", nil},
		{"ready only", evals.Patch{Ready: new(true)}, "", nil},
		{"every status", evals.Patch{Status: new("needs_review")}, "", nil},
		{"unknown status", evals.Patch{Status: new("great")}, "evalStatus must be one of golden, correct, incorrect, needs_review", nil},
		{"empty status", evals.Patch{Status: new("")}, "evalStatus must be one of", nil},
		{"notes at the limit", evals.Patch{Notes: new(strings.Repeat("n", 1<<20))}, "", nil},
		{"notes over", evals.Patch{Notes: new(strings.Repeat("n", 1<<20+1))}, "evalNotes is 1048577 bytes; the limit is 1 MiB", nil},
		{"expected over", evals.Patch{ExpectedOutput: new(strings.Repeat("e", 1<<20+1))}, "expectedOutput is 1048577 bytes", nil},
		{"tags trimmed and deduplicated", evals.Patch{Tags: &[]string{" auth ", "bug", "auth"}}, "", []string{"auth", "bug"}},
		{"no tags clears", evals.Patch{Tags: &[]string{}}, "", []string{}},
		{"50 tags", evals.Patch{Tags: tags(50)}, "", *tags(50)},
		{"51 tags", evals.Patch{Tags: tags(51)}, "at most 50 evalTags, got 51", nil},
		{"51 tags with a repeat are 50", evals.Patch{Tags: new(append(*tags(50), "t0"))}, "", *tags(50)},
		{"100 characters, 200 bytes", evals.Patch{Tags: &[]string{strings.Repeat("é", 100)}}, "", []string{strings.Repeat("é", 100)}},
		{"101 characters", evals.Patch{Tags: &[]string{"ok", strings.Repeat("x", 101)}}, "evalTags[1] is longer than 100 characters", nil},
		{"blank tag", evals.Patch{Tags: &[]string{"ok", " "}}, "evalTags[1] is empty", nil},
		{"comma", evals.Patch{Tags: &[]string{"a,b"}}, "evalTags[0] holds a comma", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.want != "" {
				var inv *evals.InvalidError
				if !errors.As(err, &inv) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Validate() = %v, want an InvalidError containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if tc.wantTags != nil && !slices.Equal(*tc.p.Tags, tc.wantTags) {
				t.Errorf("tags %q, want %q", *tc.p.Tags, tc.wantTags)
			}
		})
	}
}

func TestCheckIDs(t *testing.T) {
	many := make([]string, evals.MaxIDs+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{[]string{"a", "b", "a"}, ""},
		{nil, "ids is empty"},
		{[]string{"a", ""}, "ids holds an empty string"},
		{many, "at most 500 ids per request, got 501"},
		{append(many[:evals.MaxIDs:evals.MaxIDs], "0"), ""},
	} {
		got, err := evals.CheckIDs(tc.ids)
		if tc.want == "" {
			if err != nil || len(got) != len(evals.Dedupe(slices.Clone(got))) {
				t.Errorf("CheckIDs(%d ids) = %d, %v", len(tc.ids), len(got), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckIDs(%d ids) error %v, want %q", len(tc.ids), err, tc.want)
		}
	}
}

// TestApply walks the status rules: an eval-ready session always has a
// status, an earlier status survives unmarking, reviewedAt follows status
// and notes only.
func TestApply(t *testing.T) {
	steps := []struct {
		name       string
		p          evals.Patch
		status     string
		ready      bool
		reviewedAt int64 // the step's time (its index + 1) when reviewed now
	}{
		{"mark ready", evals.Patch{Ready: new(true)}, kv.EvalNeedsReview, true, 1},
		{"tags do not review", evals.Patch{Tags: &[]string{"auth"}}, kv.EvalNeedsReview, true, 1},
		{"status", evals.Patch{Status: new(kv.EvalGolden)}, kv.EvalGolden, true, 3},
		{"unmark keeps the status", evals.Patch{Ready: new(false)}, kv.EvalGolden, false, 3},
		{"re-mark keeps it too", evals.Patch{Ready: new(true)}, kv.EvalGolden, true, 3},
		{"notes review", evals.Patch{Notes: new("checked")}, kv.EvalGolden, true, 6},
	}
	var e kv.Eval
	for i, st := range steps {
		e = st.p.Apply(e, int64(i+1))
		if e.Status != st.status || e.Ready != st.ready || e.ReviewedAt != st.reviewedAt {
			t.Fatalf("%s: %+v, want status %s ready %v reviewedAt %d", st.name, e, st.status, st.ready, st.reviewedAt)
		}
	}
	// A ready session stored without a status (labelled before the rule)
	// gets needs_review at its next change.
	e = evals.Patch{Tags: &[]string{"x"}}.Apply(kv.Eval{Ready: true}, 9)
	if e.Status != kv.EvalNeedsReview || e.ReviewedAt != 9 {
		t.Errorf("ready without a status: %+v", e)
	}
}

// TestLabel: all ids must be the user's or nothing is written; unchanged
// sessions are not counted.
func TestLabel(t *testing.T) {
	st := kvtest.Open(t)
	ctx := context.Background()
	var ann, bob kv.User
	ids := map[string]string{}
	err := st.Commit(ctx, func(tx *kv.Tx) error {
		var err error
		if ann, err = tx.CreateUser("ann", 1); err != nil {
			return err
		}
		if bob, err = tx.CreateUser("bob", 1); err != nil {
			return err
		}
		for i, o := range []struct{ user, ext string }{{ann.ID, "a1"}, {ann.ID, "a2"}, {bob.ID, "b1"}} {
			s := kv.Session{ID: kv.NewID(), UserID: o.user, ExternalID: o.ext, CreatedAt: int64(i + 1), UpdatedAt: int64(i + 1)}
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
			ids[o.ext] = s.ID
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	label := func(ids []string, p evals.Patch) ([]kv.Session, int, error) {
		var out []kv.Session
		var n int
		err := st.Commit(ctx, func(tx *kv.Tx) error {
			var err error
			out, n, err = evals.Label(tx, ann.ID, ids, p, 100, nil)
			return err
		})
		return out, n, err
	}
	_, _, err = label([]string{ids["a1"], ids["b1"]}, evals.Patch{Status: new(kv.EvalGolden)})
	var nf *evals.NotFoundError
	if !errors.As(err, &nf) || nf.ID != ids["b1"] || !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("labelling bob's session: %v, want a NotFoundError naming it", err)
	}
	out, n, err := label([]string{ids["a2"], ids["a1"]}, evals.Patch{Ready: new(true)})
	if err != nil || n != 2 || len(out) != 2 || out[0].ID != ids["a2"] || out[1].Status != kv.EvalNeedsReview {
		t.Fatalf("label: %d %+v %v", n, out, err)
	}
	if _, n, _ = label([]string{ids["a1"]}, evals.Patch{Ready: new(true)}); n != 0 {
		t.Errorf("an unchanged session counted: %d", n)
	}
	err = st.View(ctx, func(tx *kv.Tx) error {
		if s, _ := tx.Session(bob.ID, ids["b1"]); s.Ready || s.Status != "" {
			t.Errorf("bob's session labelled: %+v", s.Eval)
		}
		list, err := evals.List(tx, ann.ID, evals.Filter{Statuses: []string{kv.EvalNeedsReview}})
		if len(list) != 2 {
			t.Errorf("List: %d sessions", len(list))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
