package sweep

import (
	"github.com/kagent-kernels/kagent/platform/cuda"
	"github.com/kagent-kernels/kagent/platform/rocm"
	"github.com/kagent-kernels/kagent/platform/xpu"
)

// Interface guards: the GPU platforms run one problem per GPU in a sweep.
var (
	_ SlotOpener = (*cuda.Platform)(nil)
	_ SlotOpener = (*rocm.Platform)(nil)
)

var _ SlotOpener = (*xpu.Platform)(nil)
