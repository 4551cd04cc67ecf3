package vectors_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/hindsight-dev/hindsight/vectors"
)

func TestPrepareRows(t *testing.T) {
	tests := []struct {
		name    string
		vs      []vectors.Vector
		want    []vectors.Vector // when no error
		wantErr error
	}{
		{"sorted by ordinal, normalised, kept rows stay nil",
			[]vectors.Vector{{Ordinal: 2, TextHash: "c", Values: []float32{0, 3}}, {Ordinal: 0, TextHash: "a", Values: []float32{3, 4}}, {SessionID: "s", Ordinal: 1, TextHash: "b"}},
			[]vectors.Vector{{SessionID: "s", Ordinal: 0, TextHash: "a", Values: []float32{0.6, 0.8}}, {SessionID: "s", Ordinal: 1, TextHash: "b"}, {SessionID: "s", Ordinal: 2, TextHash: "c", Values: []float32{0, 1}}},
			nil},
		{"empty", nil, []vectors.Vector{}, nil},
		{"filed under another session", []vectors.Vector{{SessionID: "t", Values: []float32{1, 0}}}, nil, vectors.ErrInvalidVector},
		{"negative ordinal", []vectors.Vector{{Ordinal: -1, Values: []float32{1, 0}}}, nil, vectors.ErrInvalidVector},
		{"ordinal beyond 32 bits", []vectors.Vector{{Ordinal: math.MaxUint32 + 1, Values: []float32{1, 0}}}, nil, vectors.ErrInvalidVector},
		{"ordinal twice", []vectors.Vector{{Ordinal: 1, Values: []float32{1, 0}}, {Ordinal: 1}}, nil, vectors.ErrInvalidVector},
		{"wrong dimension", []vectors.Vector{{Values: []float32{1, 0, 0}}}, nil, vectors.ErrDimensionMismatch},
		{"zero vector", []vectors.Vector{{Values: []float32{0, 0}}}, nil, vectors.ErrInvalidVector},
		{"NaN", []vectors.Vector{{Values: []float32{float32(math.NaN()), 1}}}, nil, vectors.ErrInvalidVector},
		{"infinite", []vectors.Vector{{Values: []float32{float32(math.Inf(1)), 1}}}, nil, vectors.ErrInvalidVector},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := vectors.PrepareRows("s", tc.vs, 2)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("PrepareRows = %v, %v; want an error wrapping %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.EqualFunc(got, tc.want, func(a, b vectors.Vector) bool {
				return a.SessionID == b.SessionID && a.Ordinal == b.Ordinal && a.TextHash == b.TextHash &&
					(a.Values == nil) == (b.Values == nil) && slices.EqualFunc(a.Values, b.Values, func(x, y float32) bool { return math.Abs(float64(x-y)) < 1e-6 })
			}) {
				t.Fatalf("PrepareRows = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestNormalisedCopies(t *testing.T) {
	in := []float32{3, 4}
	out, err := vectors.Normalised(in)
	if err != nil || out[0] != 0.6 || out[1] != 0.8 || in[0] != 3 {
		t.Fatalf("Normalised(%v) = %v, %v; want [0.6 0.8] and the input unchanged", in, out, err)
	}
}
