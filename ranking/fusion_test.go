package ranking

import (
	"math"
	"testing"
)

func scored(pairs ...any) []Result {
	var out []Result
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Result{SessionID: pairs[i].(string), Score: pairs[i+1].(float64)})
	}
	return out
}

func TestFuseScores(t *testing.T) {
	tests := []struct {
		name       string
		text, vec  []Result
		f          Fusion
		w          float64
		limit      int
		want       string
		wantScores map[string]float64
	}{
		{
			// Text scaled: a 1, b 0.1, c 0 (range 10..20: b = 11). Vector
			// scaled: c 1, b 0.5, a 0 (0.2..0.6). w 0.5: a 1, b 0.1+0.25 =
			// 0.35, c 0+0.5 = 0.5. A clear text winner stays first; the
			// vectors order the sessions the words score alike.
			name: "min-max: the text leg's gap counts", f: FusionMinMax, w: 0.5, limit: 10,
			text: scored("a", 20.0, "b", 11.0, "c", 10.0), vec: scored("c", 0.6, "b", 0.4, "a", 0.2),
			want: "a,c,b", wantScores: map[string]float64{"a": 1, "b": 0.1 + 0.25, "c": 0.5},
		},
		{
			// The same ranks, the three scored close together far above a
			// fourth (a 1, b 0.989, c 0.968, d 0): the vectors decide
			// among the three.
			name: "min-max: text scores close together leave the order to the vectors", f: FusionMinMax, w: 0.5, limit: 10,
			text: scored("a", 10.3, "b", 10.2, "c", 10.0, "d", 1.0), vec: scored("c", 0.6, "b", 0.4, "a", 0.2),
			want: "c,b,a,d",
		},
		{
			// d is in the vector list only: its text part is the floor, 0.
			// x 1+0 = 1, y 0+0.2·0 = 0, d 0 + 0.2·1 = 0.2.
			name: "min-max: a session missing from a list gets its floor", f: FusionMinMax, w: 0.2, limit: 10,
			text: scored("x", 5.0, "y", 1.0), vec: scored("d", 0.9, "y", 0.1),
			want: "x,d,y", wantScores: map[string]float64{"x": 1, "d": 0.2, "y": 0},
		},
		{
			// A list of equal scores scales to all 1: it orders nothing,
			// and the text order (then the vector order) breaks the tie.
			name: "min-max: equal scores order nothing", f: FusionMinMax, w: 1, limit: 10,
			text: scored("a", 3.0, "b", 3.0), vec: scored("b", 0.5, "a", 0.5),
			want: "a,b", wantScores: map[string]float64{"a": 2, "b": 2},
		},
		{
			// Text z: mean 2, sd sqrt(2/3): a +1.2247, b 0, c -1.2247.
			// Vector z: mean 0.5, sd 0.1: c +1, a -1 (two entries). b is
			// missing from the vectors: the floor, -1. w 1: a 0.2247, b
			// -1, c -0.2247.
			name: "z-score", f: FusionZScore, w: 1, limit: 10,
			text: scored("a", 3.0, "b", 2.0, "c", 1.0), vec: scored("c", 0.6, "a", 0.4),
			want: "a,c,b", wantScores: map[string]float64{"a": math.Sqrt(1.5) - 1, "b": -1, "c": 1 - math.Sqrt(1.5)},
		},
		{name: "limit cuts", f: FusionMinMax, w: 1, limit: 1, text: scored("a", 2.0, "b", 1.0), vec: scored("b", 1.0), want: "a"},
		{name: "empty lists", f: FusionZScore, w: 1, limit: 5, want: ""},
		{name: "text only", f: FusionZScore, w: 1, limit: 5, text: scored("a", 2.0, "b", 1.0), want: "a,b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FuseScores(tt.text, tt.vec, tt.f, tt.w, tt.limit, false)
			if ids(got) != tt.want {
				t.Fatalf("order %q, want %q", ids(got), tt.want)
			}
			for _, r := range got {
				if want, ok := tt.wantScores[r.SessionID]; ok && math.Abs(r.Score-want) > 1e-9 {
					t.Errorf("score of %s = %v, want %v", r.SessionID, r.Score, want)
				}
			}
		})
	}
	// Explain carries each leg's rank and raw score, the text leg's snippet.
	got := FuseScores([]Result{{SessionID: "a", Score: 2, Snippet: "s"}, {SessionID: "b", Score: 1}}, scored("b", 0.9), FusionMinMax, 0.1, 10, true)
	if got[0].SessionID != "a" || got[0].Snippet != "s" || got[0].Text == nil || got[0].Text.Score != 2 || got[0].Vector != nil {
		t.Errorf("explain of a text-only hit: %+v", got[0])
	}
	if got[1].Vector == nil || got[1].Vector.Rank != 1 || got[1].Vector.Score != 0.9 || got[1].Text.Rank != 2 {
		t.Errorf("explain of a hit in both lists: %+v %+v", got[1].Text, got[1].Vector)
	}
}

func TestParseFusion(t *testing.T) {
	for in, want := range map[string]Fusion{"": FusionRRF, "rrf": FusionRRF, "minmax": FusionMinMax, "zscore": FusionZScore} {
		if got, err := ParseFusion(in); err != nil || got != want {
			t.Errorf("ParseFusion(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"RRF", "min-max", "z"} {
		if _, err := ParseFusion(bad); err == nil {
			t.Errorf("ParseFusion(%q) accepted", bad)
		}
	}
}
