package report

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
)

// The files Write creates.
const (
	FileMarkdown     = "report.md"
	FileJSON         = "report.json"
	FileTimePlot     = "time_per_round.svg"
	FileRooflinePlot = "roofline.svg"
)

// Write renders the report and its plots into dir (created if missing).
// Each file is written to a temporary name and renamed, so a reader never
// sees half a report.
func Write(dir string, d Data) error {
	renders := []struct {
		name   string
		render func(Data) ([]byte, error)
	}{
		{FileMarkdown, Markdown},
		{FileJSON, JSON},
		{FileTimePlot, TimePlot},
		{FileRooflinePlot, RooflinePlot},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for _, r := range renders {
		b, err := r.render(d)
		if err != nil {
			return fmt.Errorf("write report %s: %w", r.name, err)
		}
		if err := atomicfile.Write(filepath.Join(dir, r.name), b, 0o644); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}
