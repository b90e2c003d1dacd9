package sweep

import (
	"github.com/kagent-dev/kagent/platform/cuda"
	"github.com/kagent-dev/kagent/platform/rocm"
)

// Interface guards: the GPU platforms run one problem per GPU in a sweep.
var (
	_ SlotOpener = (*cuda.Platform)(nil)
	_ SlotOpener = (*rocm.Platform)(nil)
)
