package roofline

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// UnsourcedMark follows a figure that could not be sourced in tables.
const UnsourcedMark = "†"

// WriteTable writes one line per GPU: name, vendor, arch, units, dense
// fp32/tf32/bf16/fp8 TFLOP/s, bandwidth GB/s, memory GB and L2 MB. A figure
// that could not be sourced carries UnsourcedMark; a rate the hardware does
// not have shows as "-".
func WriteTable(w io.Writer, specs []Specs) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVENDOR\tARCH\tUNITS\tFP32\tTF32\tBF16\tFP8\tBW GB/s\tMEM GB\tL2 MB")
	for _, s := range specs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			s.Name, s.Vendor, s.Arch,
			s.fig("units", float64(s.Units)),
			s.fig("fp32_tflops", s.FP32TFLOPS), s.fig("tf32_tflops", s.TF32TFLOPS),
			s.fig("bf16_tflops", s.BF16TFLOPS), s.fig("fp8_tflops", s.FP8TFLOPS),
			s.fig("mem_bw_gbs", s.MemBWGBs), s.fig("mem_gb", s.MemGB), s.fig("l2_mb", s.L2MB))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write specs table: %w", err)
	}
	_, err := fmt.Fprintf(w, "\nDense peaks in TFLOP/s. %s = not confirmed by a stored source; - = no such unit.\n", UnsourcedMark)
	return err
}

// WriteDetail writes every field of one GPU, one per line.
func WriteDetail(w io.Writer, s Specs) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(label, value string) {
		if value != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", label, value)
		}
	}
	row("Name", s.Name)
	row("Vendor", s.Vendor)
	row("Architecture", s.Arch)
	row("Target", s.Target)
	row("Device names", strings.Join(s.DeviceNames, " | "))
	row("Aliases", strings.Join(s.Aliases, " | "))
	row("Units (SM/CU/Xe-core)", s.fig("units", float64(s.Units)))
	row("Warp/wavefront size", s.fig("warp_size", float64(s.WarpSize)))
	row("FP32 TFLOP/s", s.fig("fp32_tflops", s.FP32TFLOPS))
	row("TF32 TFLOP/s (dense)", s.fig("tf32_tflops", s.TF32TFLOPS))
	row("FP16 TFLOP/s (dense)", s.fig("fp16_tflops", s.FP16TFLOPS))
	row("BF16 TFLOP/s (dense)", s.fig("bf16_tflops", s.BF16TFLOPS))
	row("FP8 TFLOP/s (dense)", s.fig("fp8_tflops", s.FP8TFLOPS))
	row("Memory bandwidth GB/s", s.fig("mem_bw_gbs", s.MemBWGBs))
	row("Memory GB", s.fig("mem_gb", s.MemGB))
	row("L2 MB", s.fig("l2_mb", s.L2MB))
	row("Shared memory/LDS per unit KB", s.fig("smem_kb", s.SmemKB))
	row("TDP W", s.fig("tdp_w", s.TDPWatts))
	row("Unsourced", strings.Join(s.Unsourced, ", "))
	row("Notes", s.Notes)
	row("Source", s.Source)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write specs of %s: %w", s.Name, err)
	}
	return nil
}

// fig formats one figure with the unsourced mark; 0 is "-".
func (s Specs) fig(key string, v float64) string {
	if v == 0 {
		if s.IsUnsourced(key) {
			return "?"
		}
		return "-"
	}
	out := strconv.FormatFloat(v, 'f', -1, 64)
	if s.IsUnsourced(key) {
		out += UnsourcedMark
	}
	return out
}
