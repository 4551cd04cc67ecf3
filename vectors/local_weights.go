package vectors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// liteGraphPrefix is the scope most tensors of the frozen graph live under; the
// kernels of the attention transforms and the embedding table do not.
const liteGraphPrefix = "module_apply_default/Encoder_en/KonaTransformer/"

// tfjsTensorSpec is one entry of a TF.js weights manifest.
type tfjsTensorSpec struct {
	Name         string          `json:"name"`
	Shape        []int           `json:"shape"`
	Dtype        string          `json:"dtype"`
	Quantization json.RawMessage `json:"quantization,omitempty"`
}

// tfjsModel is the part of a TF.js model.json the loader reads.
type tfjsModel struct {
	WeightsManifest []struct {
		Paths   []string         `json:"paths"`
		Weights []tfjsTensorSpec `json:"weights"`
	} `json:"weightsManifest"`
}

// tfjsTensor is a float32 view of one manifest entry.
type tfjsTensor struct {
	shape []int
	data  []float32
}

// tfjsWeights holds every tensor of a TF.js graph model, decoded into one
// float32 arena (int32 constants are kept as raw bits and never read).
type tfjsWeights struct {
	byName map[string]tfjsTensor
}

// readTFJSWeights reads dir/model.json and the weight shards it lists. Each
// manifest group's shards are concatenated in order and hold its tensors in
// manifest order, little-endian, 4 bytes per element. The shards must hold
// exactly the bytes the manifest describes.
func readTFJSWeights(dir string) (*tfjsWeights, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		return nil, err
	}
	var m tfjsModel
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parse model.json: %w", err)
	}
	if len(m.WeightsManifest) == 0 {
		return nil, errors.New("model.json has no weightsManifest")
	}
	ws := &tfjsWeights{byName: make(map[string]tfjsTensor)}
	for g, group := range m.WeightsManifest {
		if err := ws.readGroup(dir, group.Paths, group.Weights); err != nil {
			return nil, fmt.Errorf("weights group %d: %w", g, err)
		}
	}
	return ws, nil
}

func (ws *tfjsWeights) readGroup(dir string, paths []string, specs []tfjsTensorSpec) error {
	total := 0
	for _, s := range specs {
		if s.Dtype != "float32" && s.Dtype != "int32" {
			return fmt.Errorf("tensor %s: unsupported dtype %q", s.Name, s.Dtype)
		}
		if len(s.Quantization) > 0 && string(s.Quantization) != "null" {
			return fmt.Errorf("tensor %s: quantized weights are not supported", s.Name)
		}
		total += tfjsElements(s.Shape)
	}
	if len(paths) == 0 {
		return errors.New("no shard paths")
	}

	readers := make([]io.Reader, 0, len(paths))
	for _, p := range paths {
		if filepath.Base(p) != p {
			return fmt.Errorf("shard path %q leaves the model directory", p)
		}
		f, err := os.Open(filepath.Join(dir, p))
		if err != nil {
			return err
		}
		defer f.Close()
		readers = append(readers, f)
	}
	arena := make([]float32, total)
	if err := decodeFloat32s(io.MultiReader(readers...), arena); err != nil {
		return fmt.Errorf("read shards %v: %w", paths, err)
	}

	off := 0
	for _, s := range specs {
		n := tfjsElements(s.Shape)
		ws.byName[s.Name] = tfjsTensor{shape: s.Shape, data: arena[off : off+n : off+n]}
		off += n
	}
	return nil
}

// decodeFloat32s fills dst from r's little-endian float32 stream and requires
// r to end exactly there.
func decodeFloat32s(r io.Reader, dst []float32) error {
	buf := make([]byte, 1<<16)
	for i := 0; i < len(dst); {
		chunk := min(len(buf), 4*(len(dst)-i))
		if _, err := io.ReadFull(r, buf[:chunk]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("shards end before the %d bytes the manifest describes", 4*len(dst))
			}
			return err
		}
		for j := 0; j < chunk; j += 4 {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[j:]))
			i++
		}
	}
	if n, _ := r.Read(buf[:1]); n != 0 {
		return fmt.Errorf("shards hold more than the %d bytes the manifest describes", 4*len(dst))
	}
	return nil
}

func tfjsElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// get returns the float32 data of the tensor called name, looked up as given
// and under liteGraphPrefix, after checking it has the given number of elements
// arranged as shape (leading dimensions of size 1 are ignored, so a
// [1,1,256,768] convolution kernel matches [256,768]).
func (ws *tfjsWeights) get(name string, shape ...int) ([]float32, error) {
	t, ok := ws.byName[name]
	if !ok {
		t, ok = ws.byName[liteGraphPrefix+name]
	}
	if !ok {
		return nil, fmt.Errorf("tensor %s: not in the manifest", name)
	}
	if !slices.Equal(tfjsSqueeze(t.shape), tfjsSqueeze(shape)) {
		return nil, fmt.Errorf("tensor %s: shape %v, want %v", name, t.shape, shape)
	}
	return t.data, nil
}

// scalar returns the single float32 value of the tensor called name.
func (ws *tfjsWeights) scalar(name string) (float32, error) {
	d, err := ws.get(name)
	if err != nil {
		return 0, err
	}
	return d[0], nil
}

func tfjsSqueeze(shape []int) []int {
	for len(shape) > 0 && shape[0] == 1 {
		shape = shape[1:]
	}
	return shape
}
