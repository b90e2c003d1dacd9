package kerneldir

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// CPUSize is the name of the size the cpu platform times at when a kernel
// dir defines it and no size is asked for.
const CPUSize = "cpu"

var (
	sizeName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	constant = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// SelectSize sets the timed shape of the run from spec: "" keeps the
// problem's own sizes, a name picks an entry of kagent.yaml's sizes, and
// "key=value,key=value" overrides the problem's module-level constants
// directly (values are whole numbers, decimals, true/false, or text).
// Whether every key is a constant of the problem is checked when the
// problem is loaded.
func (t *Task) SelectSize(spec string) error {
	spec = strings.TrimSpace(spec)
	t.Options.Size, t.Options.SizeName = nil, ""
	if spec == "" {
		return nil
	}
	if !strings.Contains(spec, "=") {
		size, ok := t.Options.Sizes[spec]
		if !ok {
			known := "none: add a sizes: map to kagent.yaml, or give key=value pairs"
			if len(t.Options.Sizes) > 0 {
				known = strings.Join(slices.Sorted(maps.Keys(t.Options.Sizes)), ", ")
			}
			return fmt.Errorf("%w: size %q is not a size of %s (its sizes: %s)", ErrInvalid, spec, t.Dir, known)
		}
		t.Options.Size, t.Options.SizeName = maps.Clone(size), spec
		return nil
	}
	size := map[string]any{}
	for _, pair := range strings.Split(spec, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || !constant.MatchString(key) || value == "" {
			return fmt.Errorf("%w: size %q: want a name of kagent.yaml's sizes or key=value pairs such as batch_size=2,dim=64", ErrInvalid, spec)
		}
		size[key] = sizeValue(value)
	}
	t.Options.Size = size
	return nil
}

// ChooseSize sets the timed shape of a run from spec as SelectSize does,
// except that on the cpu platform (onCPU) with no size asked for it picks the
// kernel dir's "cpu" size when there is one (a problem's own shapes are
// often GPU-sized). It returns the spec chosen, for the run's config to
// record, so a resumed run times the same shape.
func (t *Task) ChooseSize(spec string, onCPU bool) (string, error) {
	if strings.TrimSpace(spec) == "" && onCPU {
		if _, ok := t.Options.Sizes[CPUSize]; ok {
			spec = CPUSize
		}
	}
	return spec, t.SelectSize(spec)
}

// SizeLabel describes the timed shape for people: "default", the size's
// name, or its pairs.
func (o Options) SizeLabel() string {
	if len(o.Size) == 0 {
		return "default"
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(o.Size)) {
		pairs = append(pairs, fmt.Sprintf("%s=%v", k, o.Size[k]))
	}
	s := strings.Join(pairs, ",")
	if o.SizeName != "" {
		s = o.SizeName + " (" + s + ")"
	}
	return s
}

func sizeValue(v string) any {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f
	}
	if b, err := strconv.ParseBool(v); err == nil {
		return b
	}
	return v
}
