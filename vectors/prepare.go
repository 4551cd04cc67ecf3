package vectors

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// PrepareRows validates the vectors an Upsert gives for session sid, in a
// store of dimension dim, and returns them as the store keeps them: sorted
// by ordinal, each with a unit-length copy of its values and SessionID set
// to sid. A vector with nil Values (keep the stored one) stays nil: only the
// store can check it against what it holds. Every Store implementation
// prepares its rows here, so they reject the same input with the same
// errors.
func PrepareRows(sid string, vs []Vector, dim int) ([]Vector, error) {
	rs := make([]Vector, 0, len(vs))
	for _, v := range vs {
		if v.SessionID != "" && v.SessionID != sid {
			return nil, fmt.Errorf("%w: vector of session %q filed under %q", ErrInvalidVector, v.SessionID, sid)
		}
		if v.Ordinal < 0 || v.Ordinal > math.MaxUint32 {
			return nil, fmt.Errorf("%w: session %q: ordinal %d out of range", ErrInvalidVector, sid, v.Ordinal)
		}
		if v.Values == nil {
			rs = append(rs, Vector{SessionID: sid, Ordinal: v.Ordinal, TextHash: v.TextHash})
			continue
		}
		if len(v.Values) != dim {
			return nil, fmt.Errorf("session %q ordinal %d has %d dimensions, the store holds %d: %w", sid, v.Ordinal, len(v.Values), dim, ErrDimensionMismatch)
		}
		unit, err := Normalised(v.Values)
		if err != nil {
			return nil, fmt.Errorf("session %q ordinal %d: %w", sid, v.Ordinal, err)
		}
		rs = append(rs, Vector{SessionID: sid, Ordinal: v.Ordinal, TextHash: v.TextHash, Values: unit})
	}
	slices.SortFunc(rs, func(a, b Vector) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	for i := 1; i < len(rs); i++ {
		if rs[i].Ordinal == rs[i-1].Ordinal {
			return nil, fmt.Errorf("%w: session %q: ordinal %d given twice", ErrInvalidVector, sid, rs[i].Ordinal)
		}
	}
	return rs, nil
}

// Normalised returns a unit-length copy of v, or an error wrapping
// ErrInvalidVector when v is zero or has NaN or infinite components.
func Normalised(v []float32) ([]float32, error) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil, fmt.Errorf("%w: zero, NaN or infinite values", ErrInvalidVector)
	}
	inv := 1 / math.Sqrt(sum)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out, nil
}
