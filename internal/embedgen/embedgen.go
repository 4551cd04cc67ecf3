// Package embedgen generates unit vectors with the clustered structure of
// real text embeddings, for the vector store's tests and `hindsight bench
// vectors`: uniform random vectors are a poor stand-in (every pair is
// nearly orthogonal and no vector has a clear nearest neighbour), so a
// search index that does well on them proves little, and one that does
// badly on them may be fine on real data.
//
// # Model
//
// A vector is the normalised sum of a common direction (weight a, varied
// per vector), a super-topic centre (b), a topic centre (c), a subtopic
// centre (d) and noise (e, fixed per subtopic, so some subtopics are
// tight and others loose); every part is an independent Gaussian direction
// of length about 1. There are 64 super-topics of 32 topics each; the
// subtopics, about 15 vectors each at the caller's count, are spread over
// the topics. The weights (a = 0.86 ± 25%, b = c = d = 0.3, e uniform in
// [0.12, 0.45]) were set so that, at the size of the coding-session set
// (19,375 chunks), random pairs and nearest neighbours have about the
// cosines the offline model gives that set's chunks (`hindsight bench
// vectors --reference` prints both): random pairs around 0.65 (0.51 to
// 0.76 between the 10th and 90th percentile), the nearest neighbour around
// 0.93, the tenth around 0.89.
//
// Vector i is a function of the seed, the dimension, the subtopic count and
// i alone, so a run can regenerate any vector instead of keeping it.
package embedgen

import (
	"math"
	"math/rand/v2"
)

const (
	supers         = 64
	topicsPerSuper = 32
	perSubtopic    = 15 // vectors per subtopic, on average

	weightCommon   = 0.86
	jitterCommon   = 0.25
	weightSuper    = 0.3
	weightTopic    = 0.3
	weightSubtopic = 0.3
	noiseMin       = 0.12
	noiseMax       = 0.45
)

// Generator makes the vectors of one seeded set. It is safe for concurrent
// use (it is read-only after New).
type Generator struct {
	dim       int
	seed      uint64
	subtopics int
	common    []float32
	supers    [][]float32
	topics    [][]float32
}

// New returns the generator of a set of about n vectors of dim dimensions
// (n sets the number of subtopics: n/15, at least one).
func New(seed uint64, dim, n int) *Generator {
	r := rand.New(rand.NewPCG(seed, 0))
	g := &Generator{dim: dim, seed: seed, subtopics: max(1, n/perSubtopic), common: direction(r, dim)}
	for range supers {
		g.supers = append(g.supers, direction(r, dim))
	}
	for range supers * topicsPerSuper {
		g.topics = append(g.topics, direction(r, dim))
	}
	return g
}

// Dim is the vectors' dimension.
func (g *Generator) Dim() int { return g.dim }

// Vector writes the i-th vector of the set into dst (Dim long) and returns
// it.
func (g *Generator) Vector(dst []float32, i uint64) []float32 { return g.make(dst, i, 1) }

// Query writes the i-th query into dst: a vector drawn as the set's are,
// from another stream, so no query is in the set.
func (g *Generator) Query(dst []float32, i uint64) []float32 { return g.make(dst, i, 2) }

func (g *Generator) make(dst []float32, i, stream uint64) []float32 {
	r := rand.New(rand.NewPCG(g.seed^stream<<56, i))
	sub := r.IntN(g.subtopics)
	rs := rand.New(rand.NewPCG(g.seed^3<<56, uint64(sub)))
	noise := noiseMin + (noiseMax-noiseMin)*rs.Float64()
	topic := sub % len(g.topics)
	super := topic / topicsPerSuper
	a := float32(weightCommon * (1 + jitterCommon*r.NormFloat64()))
	scale := 1 / math.Sqrt(float64(g.dim))
	var sum float64
	for k := range dst[:g.dim] {
		x := a*g.common[k] + weightSuper*g.supers[super][k] + weightTopic*g.topics[topic][k] +
			float32(weightSubtopic*rs.NormFloat64()*scale) + float32(noise*r.NormFloat64()*scale)
		dst[k] = x
		sum += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(sum))
	for k := range dst[:g.dim] {
		dst[k] *= inv
	}
	return dst[:g.dim]
}

// direction is a Gaussian vector of length about 1.
func direction(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	scale := 1 / math.Sqrt(float64(dim))
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}
