package vectors

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

const (
	liteEmbedWidth = 256  // width of the token embeddings and of layer 0's input
	liteWidth      = 512  // width after layer 0's attention
	liteFFNWidth   = 1536 // inner width of the feed-forward blocks
	liteHeads      = 4    // attention heads in both layers
)

// liteNetwork holds the weights of the encoder. Dense kernels are row-major
// [in][out], as TF.js stores them.
type liteNetwork struct {
	vocab     int       // rows of emb
	emb       []float32 // vocab × liteEmbedWidth
	invScales []float32 // liteEmbedWidth/2 inverse timescales of the timing signal
	layers    [2]liteLayer
	tanhW     []float32 // liteWidth × LocalDim
	tanhB     []float32 // LocalDim
	lnEps     float32   // layer-norm epsilon (1e-6)
	l2Eps     float32   // floor of the squared norm in the final L2 normalisation (1e-12)
}

// liteLayer is one pre-LayerNorm transformer layer. Layer 0 widens its
// input from 256 to 512: its attention output is 512 wide and its residual is
// the input projected by resW.
type liteLayer struct {
	width              int     // input width: 256 or 512
	qScale             float32 // multiplies the queries: 1/sqrt(width/liteHeads)
	lnScale, lnBias    []float32
	qkvW, qkvB         []float32 // width × 3·width; q, k, v side by side
	outW, outB         []float32 // width × liteWidth
	resW, resB         []float32 // width × liteWidth, layer 0 only
	ffnLNScale, ffnLNB []float32
	ffn1W, ffn1B       []float32 // liteWidth × liteFFNWidth
	ffn2W, ffn2B       []float32 // liteFFNWidth × liteWidth
}

// newLiteNetwork picks the encoder's tensors out of the manifest and checks
// their shapes.
func newLiteNetwork(ws *tfjsWeights) (*liteNetwork, error) {
	n := &liteNetwork{}
	var errs []error
	get := func(name string, shape ...int) []float32 {
		d, err := ws.get(name, shape...)
		if err != nil {
			errs = append(errs, err)
		}
		return d
	}
	scalar := func(name string) float32 {
		v, err := ws.scalar(name)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}

	t, ok := ws.byName["module/Embeddings_en"]
	if !ok || len(t.shape) != 2 || t.shape[1] != liteEmbedWidth {
		return nil, fmt.Errorf("tensor module/Embeddings_en: missing or not [vocab, %d]", liteEmbedWidth)
	}
	n.vocab = t.shape[0]
	n.emb = t.data
	n.invScales = get("Encode/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", liteEmbedWidth/2)
	n.tanhW = get("module/Encoder_en/hidden_layers/tanh_layer_0/weights", liteWidth, LocalDim)
	n.tanhB = get("module/Encoder_en/hidden_layers/tanh_layer_0/bias", LocalDim)
	n.lnEps = scalar("Encode/TransformerStack/Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x")
	n.l2Eps = scalar("module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y")

	for i := range n.layers {
		w := liteEmbedWidth
		if i > 0 {
			w = liteWidth
		}
		enc := fmt.Sprintf("Encode/Layer_%d/TransformerLayer/", i)
		stack := fmt.Sprintf("Encode/TransformerStack/Layer_%d/TransformerLayer/", i)
		kernel := "module/Encoder_en/KonaTransformer/" + enc + "MultiheadAttention/"
		ln := enc + "layer_prepostprocess/layer_norm/layer_norm_"
		ffnLN := enc + "FFN/layer_prepostprocess/layer_norm/layer_norm_"
		const cat = "/ConcatPartitions/concat"
		L := &n.layers[i]
		L.width = w
		L.qScale = scalar(stack + "MultiheadAttention/mul/y")
		L.lnScale = get(ln+"scale"+cat, w)
		L.lnBias = get(ln+"bias"+cat, w)
		L.qkvW = get(kernel+"qkv_transform_single/kernel/part_0", w, 3*w)
		L.qkvB = get(enc+"MultiheadAttention/qkv_transform_single/bias"+cat, 3*w)
		L.outW = get(kernel+"output_transform_single/kernel/part_0", w, liteWidth)
		L.outB = get(enc+"MultiheadAttention/output_transform_single/bias"+cat, liteWidth)
		if w != liteWidth {
			L.resW = get(enc+"dense/kernel"+cat, w, liteWidth)
			L.resB = get(enc+"dense/bias"+cat, liteWidth)
		}
		L.ffnLNScale = get(ffnLN+"scale"+cat, liteWidth)
		L.ffnLNB = get(ffnLN+"bias"+cat, liteWidth)
		L.ffn1W = get(stack+"FFN/conv1/Tensordot/Reshape_1", liteWidth, liteFFNWidth)
		L.ffn1B = get(enc+"FFN/conv1/bias"+cat, liteFFNWidth)
		L.ffn2W = get(stack+"FFN/conv2/Tensordot/Reshape_1", liteFFNWidth, liteWidth)
		L.ffn2B = get(enc+"FFN/conv2/bias"+cat, liteWidth)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("model.json does not describe Universal Sentence Encoder Lite: %w", errs[0])
	}
	return n, nil
}

// liteScratch holds one forward pass's activations, sized for liteMaxTokens
// tokens. It is used by one goroutine at a time; Local pools them.
type liteScratch struct {
	x      []float32 // tokens × width: layer input, then layer output
	h      []float32 // tokens × width: layer-normed activations
	qkv    []float32 // tokens × 3·width
	scores []float32 // tokens × tokens: one head's attention weights
	heads  []float32 // tokens × width: concatenated head outputs
	a      []float32 // tokens × liteWidth: attention block output plus residual
	ffn    []float32 // tokens × liteFFNWidth
	pooled []float32 // liteWidth
}

func (n *liteNetwork) newScratch() *liteScratch {
	const t = liteMaxTokens
	return &liteScratch{
		x:      make([]float32, t*liteWidth),
		h:      make([]float32, t*liteWidth),
		qkv:    make([]float32, t*3*liteWidth),
		scores: make([]float32, t*t),
		heads:  make([]float32, t*liteWidth),
		a:      make([]float32, t*liteWidth),
		ffn:    make([]float32, t*liteFFNWidth),
		pooled: make([]float32, liteWidth),
	}
}

// forward writes the unit-length embedding of ids (at most liteMaxTokens,
// each a row of the embedding table) into out (LocalDim floats), following
// the frozen TF graph operation by operation. With no ids the mean pool is
// the zero vector, as for a zero-token row of a TF.js batch.
func (n *liteNetwork) forward(s *liteScratch, ids []int, out []float32) {
	T := len(ids)
	pooled := s.pooled
	clear(pooled)
	if T > 0 {
		n.embed(s.x, ids)
		for i := range n.layers {
			n.layers[i].apply(s, T, n.lnEps)
		}
		// Mean pool over the tokens.
		for t := 0; t < T; t++ {
			row := s.x[t*liteWidth : (t+1)*liteWidth]
			for j, v := range row {
				pooled[j] += v
			}
		}
		inv := 1 / float32(T)
		for j := range pooled {
			pooled[j] *= inv
		}
	}

	// out = l2normalize(tanh(pooled · tanhW + tanhB))
	copy(out, n.tanhB)
	liteGemm(false, 1, liteWidth, LocalDim, pooled, liteWidth, n.tanhW, LocalDim, 1, out, LocalDim)
	var sum float64
	for j, v := range out {
		v = float32(math.Tanh(float64(v)))
		out[j] = v
		sum += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(max(sum, float64(n.l2Eps))))
	for j := range out {
		out[j] *= scale
	}
}

// embed writes the layer-0 input: x[t] = e + (e + signal(t)) where e is the
// token's embedding and signal(t)[j] = sin(t·inv[j]) for the first half,
// cos(t·inv[j]) for the second. The graph adds the embedding twice.
func (n *liteNetwork) embed(x []float32, ids []int) {
	half := liteEmbedWidth / 2
	for t, id := range ids {
		e := n.emb[id*liteEmbedWidth : (id+1)*liteEmbedWidth]
		row := x[t*liteEmbedWidth : (t+1)*liteEmbedWidth]
		for j := 0; j < half; j++ {
			arg := float64(float32(t) * n.invScales[j])
			row[j] = e[j] + (e[j] + float32(math.Sin(arg)))
			row[half+j] = e[half+j] + (e[half+j] + float32(math.Cos(arg)))
		}
	}
}

// apply runs the layer on s.x (T × L.width) and leaves its output in s.x
// (T × liteWidth).
func (L *liteLayer) apply(s *liteScratch, T int, eps float32) {
	w := L.width
	hd := w / liteHeads
	x := s.x[:T*w]
	h := s.h[:T*w]
	qkv := s.qkv[:T*3*w]
	heads := s.heads[:T*w]
	a := s.a[:T*liteWidth]

	// Self-attention on the layer-normed input.
	liteLayerNorm(h, x, w, L.lnScale, L.lnBias, eps)
	liteSetRows(qkv, L.qkvB)
	liteGemm(false, T, w, 3*w, h, w, L.qkvW, 3*w, 1, qkv, 3*w)
	for t := 0; t < T; t++ {
		q := qkv[t*3*w : t*3*w+w]
		for j := range q {
			q[j] *= L.qScale
		}
	}
	scores := s.scores[:T*T]
	for hh := 0; hh < liteHeads; hh++ {
		q := qkv[hh*hd:]
		k := qkv[w+hh*hd:]
		v := qkv[2*w+hh*hd:]
		liteGemm(true, T, hd, T, q, 3*w, k, 3*w, 0, scores, T) // q · kᵀ
		for t := 0; t < T; t++ {
			liteSoftmax(scores[t*T : (t+1)*T])
		}
		liteGemm(false, T, T, hd, scores, T, v, 3*w, 0, heads[hh*hd:], w)
	}

	// a = heads · outW + outB + residual.
	liteSetRows(a, L.outB)
	liteGemm(false, T, w, liteWidth, heads, w, L.outW, liteWidth, 1, a, liteWidth)
	if L.resW != nil {
		liteGemm(false, T, w, liteWidth, x, w, L.resW, liteWidth, 1, a, liteWidth)
		liteAddRows(a, L.resB)
	} else {
		for i, v := range x {
			a[i] += v
		}
	}

	// Feed-forward on the layer-normed a, plus a; the result replaces x.
	h = s.h[:T*liteWidth]
	ffn := s.ffn[:T*liteFFNWidth]
	liteLayerNorm(h, a, liteWidth, L.ffnLNScale, L.ffnLNB, eps)
	liteSetRows(ffn, L.ffn1B)
	liteGemm(false, T, liteWidth, liteFFNWidth, h, liteWidth, L.ffn1W, liteFFNWidth, 1, ffn, liteFFNWidth)
	for i, v := range ffn {
		ffn[i] = max(v, 0)
	}
	out := s.x[:T*liteWidth]
	copy(out, a)
	liteAddRows(out, L.ffn2B)
	liteGemm(false, T, liteFFNWidth, liteWidth, ffn, liteFFNWidth, L.ffn2W, liteWidth, 1, out, liteWidth)
}

// liteGemm computes c = a·b + beta·c (a·bᵀ when transB) for row-major a (m×k,
// row stride lda), b (k×n or n×k, stride ldb) and c (m×n, stride ldc).
func liteGemm(transB bool, m, k, n int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	tb, br, bc := blas.NoTrans, k, n
	if transB {
		tb, br, bc = blas.Trans, n, k
	}
	blas32.Gemm(blas.NoTrans, tb, 1,
		blas32.General{Rows: m, Cols: k, Stride: lda, Data: a},
		blas32.General{Rows: br, Cols: bc, Stride: ldb, Data: b},
		beta,
		blas32.General{Rows: m, Cols: n, Stride: ldc, Data: c})
}

// liteSetRows sets every row of dst (rows of len(bias)) to bias, ready for a
// gemm with beta 1 to add the product.
func liteSetRows(dst, bias []float32) {
	for i := 0; i < len(dst); i += len(bias) {
		copy(dst[i:i+len(bias)], bias)
	}
}

// liteAddRows adds bias to every row of dst (rows of len(bias)).
func liteAddRows(dst, bias []float32) {
	for i := 0; i < len(dst); i += len(bias) {
		row := dst[i : i+len(bias)]
		for j, b := range bias {
			row[j] += b
		}
	}
}

// liteLayerNorm writes (x - mean) · rsqrt(var + eps) · scale + bias of each
// width-wide row of x into dst.
func liteLayerNorm(dst, x []float32, width int, scale, bias []float32, eps float32) {
	for i := 0; i < len(x); i += width {
		row := x[i : i+width]
		var mean float64
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(width)
		var variance float64
		for _, v := range row {
			d := float64(v) - mean
			variance += d * d
		}
		variance /= float64(width)
		r := 1 / math.Sqrt(variance+float64(eps))
		out := dst[i : i+width]
		for j, v := range row {
			out[j] = float32((float64(v)-mean)*r)*scale[j] + bias[j]
		}
	}
}

// liteSoftmax replaces row by its softmax.
func liteSoftmax(row []float32) {
	m := row[0]
	for _, v := range row[1:] {
		m = max(m, v)
	}
	var sum float64
	for i, v := range row {
		e := math.Exp(float64(v - m))
		row[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range row {
		row[i] *= inv
	}
}

// GemmShape is one matrix product of the encoder: an M×K matrix times a
// K×N one (stored N×K and transposed when TransB), Count times a window.
type GemmShape struct {
	M, K, N int
	TransB  bool
	Count   int
}

// LocalGemmShapes returns the matrix products Local's encoder computes for
// one window of the given number of tokens (clamped to 1..128), in the
// order apply and forward compute them: for each layer the q, k, v
// projection, each head's q·kᵀ and weights·v, the output projection (and
// layer 0's residual projection), the two feed-forward products; then the
// tanh layer. It exists for benchmarks that set the encoder beside bare
// matrix products of the same shapes; keep it in step with apply.
func LocalGemmShapes(tokens int) []GemmShape {
	T := min(max(tokens, 1), liteMaxTokens)
	var out []GemmShape
	for i, w := range []int{liteEmbedWidth, liteWidth} {
		hd := w / liteHeads
		out = append(out,
			GemmShape{M: T, K: w, N: 3 * w, Count: 1},
			GemmShape{M: T, K: hd, N: T, TransB: true, Count: liteHeads},
			GemmShape{M: T, K: T, N: hd, Count: liteHeads},
			GemmShape{M: T, K: w, N: liteWidth, Count: 1})
		if i == 0 {
			out = append(out, GemmShape{M: T, K: w, N: liteWidth, Count: 1})
		}
		out = append(out,
			GemmShape{M: T, K: liteWidth, N: liteFFNWidth, Count: 1},
			GemmShape{M: T, K: liteFFNWidth, N: liteWidth, Count: 1})
	}
	return append(out, GemmShape{M: 1, K: liteWidth, N: LocalDim, Count: 1})
}

// Gemm computes c = a·b (a·bᵀ when TransB) for row-major, contiguous
// matrices of s's shape: the product the encoder runs, for benchmarks.
func (s GemmShape) Gemm(a, b, c []float32) {
	ldb := s.N
	if s.TransB {
		ldb = s.K
	}
	liteGemm(s.TransB, s.M, s.K, s.N, a, s.K, b, ldb, 0, c, s.N)
}
