package roofline_test

import (
	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/roofline"
)

// Interface guards. They live in a test because platform imports roofline.
var _ platform.RooflineAnalyzer = roofline.Analyzer{}
