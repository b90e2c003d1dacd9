package roofline_test

import (
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// Interface guards. They live in a test because platform imports roofline.
var _ platform.RooflineAnalyzer = roofline.Analyzer{}
