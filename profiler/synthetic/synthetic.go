// Package synthetic builds roofline metrics without a hardware profiler: the
// bytes a kernel must move, counted from the shapes and dtypes of the
// problem's input and output tensors (inputs read once, outputs written
// once), an optional FLOP count, and a measured time. The same counts give
// the physical floor the engine checks timings against (roofline.Floor).
package synthetic

import (
	"fmt"
	"strings"

	"github.com/kagent-kernels/kagent/roofline"
)

// Source is the Metrics.Source of synthetic metrics.
const Source = "synthetic"

// Tensor is one input or output: its shape and torch dtype ("float32",
// "torch.bfloat16", "bf16", ...), as the harness reports them.
type Tensor struct {
	Shape []int64 `json:"shape"`
	DType string  `json:"dtype"`
}

// Elements is the number of elements (1 for a scalar).
func (t Tensor) Elements() (float64, error) {
	n := 1.0
	for _, d := range t.Shape {
		if d < 0 {
			return 0, fmt.Errorf("count elements of %v: %w", t.Shape, ErrBadShape)
		}
		n *= float64(d)
	}
	return n, nil
}

// Bytes is the tensor's size in memory (dense, no padding).
func (t Tensor) Bytes() (float64, error) {
	size, err := ElementSize(t.DType)
	if err != nil {
		return 0, err
	}
	n, err := t.Elements()
	if err != nil {
		return 0, err
	}
	return n * float64(size), nil
}

// ElementSize is the size in bytes of one element of a torch dtype.
func ElementSize(dtype string) (int, error) {
	d := strings.ToLower(strings.TrimSpace(dtype))
	d = strings.TrimPrefix(d, "torch.")
	switch d {
	case "float64", "double", "fp64", "int64", "long", "uint64", "complex64", "cfloat":
		return 8, nil
	case "complex128", "cdouble":
		return 16, nil
	case "float32", "float", "fp32", "tf32", "int32", "int", "uint32", "complex32", "chalf":
		return 4, nil
	case "float16", "half", "fp16", "bfloat16", "bf16", "int16", "short", "uint16":
		return 2, nil
	case "int8", "uint8", "bool", "fp8", "qint8", "quint8":
		return 1, nil
	}
	if strings.HasPrefix(d, "float8") {
		return 1, nil
	}
	return 0, fmt.Errorf("size of %q: %w", dtype, ErrUnknownDType)
}

// Work is what one call of a kernel must do: read its inputs, write its
// outputs and, when known, execute FLOPs floating-point operations.
type Work struct {
	Inputs  []Tensor `json:"inputs"`
	Outputs []Tensor `json:"outputs"`
	// FLOPs is the operation count of one call; 0 when unknown (the
	// compute side of the roofline is then left out).
	FLOPs float64 `json:"flops,omitempty"`
	// PeakDType overrides the dtype that picks the peak FLOP rate ("" = the
	// dtype of the largest floating-point tensor; see DType). Set "tf32" for
	// fp32 matrix work when TF32 is allowed.
	PeakDType string `json:"peak_dtype,omitempty"`
}

// Bytes returns the bytes read (every input once) and written (every
// output once).
func (w Work) Bytes() (read, write float64, err error) {
	for i, t := range w.Inputs {
		b, err := t.Bytes()
		if err != nil {
			return 0, 0, fmt.Errorf("count bytes of input %d: %w", i, err)
		}
		read += b
	}
	for i, t := range w.Outputs {
		b, err := t.Bytes()
		if err != nil {
			return 0, 0, fmt.Errorf("count bytes of output %d: %w", i, err)
		}
		write += b
	}
	return read, write, nil
}

// Floor is roofline.Floor of this work on s, in milliseconds.
func (w Work) Floor(s roofline.Specs) (float64, error) {
	r, wr, err := w.Bytes()
	if err != nil {
		return 0, err
	}
	return roofline.Floor(r+wr, w.FLOPs, w.DType(), s), nil
}

// DType is the dtype that picks the peak FLOP rate, canonical ("fp32",
// "bf16", ...): PeakDType when set, else the dtype of the largest
// floating-point tensor, inputs before outputs; "fp32" when there is none.
func (w Work) DType() string {
	if w.PeakDType != "" {
		return roofline.CanonicalDType(w.PeakDType)
	}
	best, bestBytes := "", -1.0
	for _, t := range append(append([]Tensor{}, w.Inputs...), w.Outputs...) {
		d := roofline.CanonicalDType(t.DType)
		switch d {
		case "fp32", "fp16", "bf16", "fp8":
		default:
			continue
		}
		if b, err := t.Bytes(); err == nil && b > bestBytes {
			best, bestBytes = d, b
		}
	}
	if best == "" {
		return "fp32"
	}
	return best
}

// Metrics returns the synthetic roofline metrics of one call of w that took
// timeMS milliseconds. reason says why no profiler was used (it becomes
// Metrics.Fallback, e.g. "rocprofv3 FETCH_SIZE pass timed out").
func Metrics(w Work, timeMS float64, reason string) (roofline.Metrics, error) {
	if timeMS <= 0 {
		return roofline.Metrics{}, fmt.Errorf("build synthetic metrics: %w (%v ms)", ErrNoTime, timeMS)
	}
	read, write, err := w.Bytes()
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("build synthetic metrics: %w", err)
	}
	m := roofline.Metrics{
		Source:     Source,
		TimeMS:     timeMS,
		BytesRead:  read,
		BytesWrite: write,
		FLOPs:      w.FLOPs,
		DType:      w.DType(),
		Fallback:   reason,
	}
	if w.FLOPs <= 0 {
		m.Warnings = append(m.Warnings, "no FLOP count: compute SOL left out")
	}
	return m, nil
}
