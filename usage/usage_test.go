package usage_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/usage"
)

func TestOf(t *testing.T) {
	st := kvtest.Open(t)
	ctx := context.Background()
	today := time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)
	day := func(d int) int64 { return time.Date(2026, 3, d, 23, 59, 0, 0, time.UTC).UnixMilli() }
	var ann, bob kv.User
	err := st.Commit(ctx, func(tx *kv.Tx) error {
		var err error
		if ann, err = tx.CreateUser("ann", 1); err != nil {
			return err
		}
		if bob, err = tx.CreateUser("bob", 1); err != nil {
			return err
		}
		for _, s := range []kv.Session{
			{UserID: ann.ID, Model: "gpt-5", PromptTokens: 100, CompletionTokens: 50, TotalTokens: 150, Cost: 1.5, DurationMs: 10, CreatedAt: day(20)},
			{UserID: ann.ID, Model: "gpt-5", PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, Cost: 0.25, CreatedAt: day(18)},
			{UserID: ann.ID, PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2, Cost: 0.5, DurationMs: 5, CreatedAt: day(1)}, // before a 7-day period
			{UserID: bob.ID, Model: "gpt-5", TotalTokens: 1000, Cost: 9, CreatedAt: day(20)},
		} {
			s.ID, s.ExternalID, s.UpdatedAt = kv.NewID(), kv.NewID(), s.CreatedAt
			if err := tx.PutSession(&s, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	of := func(days int) usage.Report {
		var r usage.Report
		if err := st.View(ctx, func(tx *kv.Tx) error {
			var err error
			r, err = usage.Of(tx, ann.ID, today, days)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	all := usage.Totals{Sessions: 3, Tokens: 167, PromptTokens: 111, CompletionTokens: 56, Cost: 2.25, DurationMs: 15}

	r := of(0)
	if r.All != all || r.Period != all || r.Days != nil {
		t.Errorf("all time: %+v", r)
	}
	if want := []usage.Model{{"gpt-5", 165, 1.75, 2}, {usage.UnknownModel, 2, 0.5, 1}}; !slices.Equal(r.Models, want) {
		t.Errorf("models %+v, want %+v", r.Models, want)
	}

	r = of(7)
	if r.All != all || r.Period.Sessions != 2 || r.Period.Tokens != 165 || r.Period.Cost != 1.75 {
		t.Errorf("7 days: all %+v period %+v", r.All, r.Period)
	}
	if len(r.Days) != 7 || r.Days[0].Day != "2026-03-14" || r.Days[6] != (usage.Day{"2026-03-20", 150, 1.5, 1}) || r.Days[4] != (usage.Day{"2026-03-18", 15, 0.25, 1}) {
		t.Errorf("days %+v", r.Days)
	}
	if len(r.Models) != 1 || r.Models[0].Name != "gpt-5" {
		t.Errorf("period models %+v", r.Models)
	}
}
