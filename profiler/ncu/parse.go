package ncu

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// maxCSVBytes bounds what Parse reads (a raw page is a few KiB per launch).
const maxCSVBytes = 256 << 20

// Launch is one profiled kernel launch: one row of `ncu --csv --page raw`.
type Launch struct {
	ID        int
	ProcessID int
	Kernel    string // as ncu prints it: "axpy", "void at::native::...(...)"
	Block     string // "(128, 1, 1)"
	Grid      string // "(16384, 1, 1)"
	Device    string
	CC        string
	Stream    string
	// Values holds every numeric column in base units (bytes, ns, hz,
	// counts, percent), thousands separators removed.
	Values map[string]float64
	// Strings holds the non-numeric columns ("PolicySpread", "NVIDIA H200").
	Strings map[string]string
}

// Report is a parsed raw page.
type Report struct {
	Launches []Launch
	// Units maps each metric column to its unit after conversion to base
	// units ("byte", "ns", "%", "inst", ...).
	Units map[string]string
	// Messages are ncu's own lines (==PROF==, ==WARNING==, ==ERROR==).
	Messages []string
	// NoKernels is set when ncu said that no kernel matched its filters.
	NoKernels bool
	// Available lists kernel names ncu offered when nothing matched.
	Available []string
	// Phases is what the wrapper said its loading, warm-up and profiled
	// call took ("" when it did not say): set by the runner, for the log.
	Phases string
	// AfterProgram is how long the run went on after the wrapper's profiled
	// call was done (ncu's own results and the processes' end; 0 when the
	// wrapper did not say): set by the runner, for the log.
	AfterProgram time.Duration
}

// columns locates the launch-identifying columns of a header. They come
// before the metric columns, which start after "CC"; with --nvtx, ncu adds
// NVTX range columns before "Kernel Name".
type columns struct {
	id, pid, kernel, stream, block, grid, device, cc int
	firstMetric                                      int
}

func newColumns(h []string) (columns, bool) {
	idx := func(name string) int {
		for i, c := range h {
			if c == name {
				return i
			}
		}
		return -1
	}
	c := columns{id: idx("ID"), pid: idx("Process ID"), kernel: idx("Kernel Name"), stream: idx("Stream"),
		block: idx("Block Size"), grid: idx("Grid Size"), device: idx("Device"), cc: idx("CC")}
	c.firstMetric = c.cc + 1
	ok := c.id == 0 && c.kernel > 0 && c.cc > c.kernel && c.pid > 0 && c.stream > 0 && c.block > 0 && c.grid > 0 && c.device > 0
	return c, ok
}

// Parse reads the output of `ncu --csv --page raw` (or a --log-file of it).
// Lines that are not CSV rows (ncu's ==PROF== and ==WARNING== lines, the
// program's own prints) are skipped; the header row starts at `"ID",`; the
// units row that follows it is used to bring values to base units, so
// `--print-units auto` output parses too. Every field may be quoted and
// numbers may carry thousands separators ("536,892,416").
func Parse(r io.Reader) (*Report, error) {
	br := bufio.NewReader(io.LimitReader(r, maxCSVBytes+1))
	rep := &Report{Units: map[string]string{}}
	var (
		header  []string
		cols    columns
		scales  []float64
		total   int
		lineNo  int
		inAvail bool
	)
	for {
		line, err := br.ReadString('\n')
		total += len(line)
		if total > maxCSVBytes {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrParse, maxCSVBytes)
		}
		if line != "" {
			lineNo++
			line = strings.TrimRight(line, "\r\n")
			switch {
			case strings.HasPrefix(line, "=="):
				rep.Messages = append(rep.Messages, line)
				inAvail = false
				if strings.Contains(line, "No kernels were profiled") {
					rep.NoKernels = true
				}
				if strings.Contains(line, "Available Kernels") {
					inAvail = true
				}
			case strings.Contains(line, "Available Kernels"):
				inAvail = true
			case strings.HasPrefix(line, `"ID",`):
				inAvail = false
				h, err := readRecord(line)
				if err != nil {
					return nil, fmt.Errorf("%w: line %d: %v", ErrParse, lineNo, err)
				}
				c, ok := newColumns(h)
				if !ok {
					return nil, fmt.Errorf("%w: line %d: not a raw-page header", ErrParse, lineNo)
				}
				header, cols, scales = h, c, nil
			case strings.HasPrefix(line, `"`) && header != nil:
				rec, err := readRecord(line)
				if err != nil {
					return nil, fmt.Errorf("%w: line %d: %v", ErrParse, lineNo, err)
				}
				if len(rec) != len(header) {
					return nil, fmt.Errorf("%w: line %d: %d fields, header has %d", ErrParse, lineNo, len(rec), len(header))
				}
				if rec[0] == "" { // the units row
					scales = make([]float64, len(rec))
					for i, u := range rec {
						base, f := baseUnit(u)
						scales[i] = f
						if i >= cols.firstMetric {
							rep.Units[header[i]] = base
						}
					}
					continue
				}
				l, err := newLaunch(header, cols, scales, rec)
				if err != nil {
					return nil, fmt.Errorf("%w: line %d: %v", ErrParse, lineNo, err)
				}
				rep.Launches = append(rep.Launches, l)
			case inAvail && strings.TrimSpace(line) != "":
				rep.Available = append(rep.Available, availableName(line))
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrParse, err)
		}
	}
	return rep, nil
}

func readRecord(line string) ([]string, error) {
	cr := csv.NewReader(strings.NewReader(line))
	cr.FieldsPerRecord = -1
	return cr.Read()
}

func newLaunch(header []string, c columns, scales []float64, rec []string) (Launch, error) {
	id, err := strconv.Atoi(rec[c.id])
	if err != nil {
		return Launch{}, fmt.Errorf("launch ID %q: %v", rec[c.id], err)
	}
	pid, _ := strconv.Atoi(rec[c.pid])
	l := Launch{
		ID: id, ProcessID: pid, Kernel: rec[c.kernel], Stream: rec[c.stream], Block: rec[c.block], Grid: rec[c.grid],
		Device: rec[c.device], CC: rec[c.cc],
		Values: make(map[string]float64, len(rec)), Strings: map[string]string{},
	}
	for i, v := range rec {
		switch {
		case i < c.firstMetric:
			// Identifying columns; NVTX range columns are kept as strings.
			if i != c.id && i != c.pid && i != c.kernel && i != c.stream && i != c.block && i != c.grid &&
				i != c.device && i != c.cc && v != "" {
				l.Strings[header[i]] = v
			}
			continue
		case v == "" || v == "n/a":
			continue
		}
		f, ok := parseNumber(v)
		if !ok {
			l.Strings[header[i]] = v
			continue
		}
		if scales != nil {
			f *= scales[i]
		}
		l.Values[header[i]] = f
	}
	return l, nil
}

// parseNumber reads "536,892,416", "3,198,275,862.07", "7.76" or "-1".
func parseNumber(s string) (float64, bool) {
	s = strings.ReplaceAll(s, ",", "")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// baseUnit maps a unit as ncu prints it to its base unit and the factor
// that converts a value: "Mbyte" -> ("byte", 1e6), "us" -> ("ns", 1e3),
// "Gbyte/s" -> ("byte/s", 1e9). Unknown units are kept with factor 1.
func baseUnit(u string) (string, float64) {
	switch u {
	case "ns", "nsecond":
		return "ns", 1
	case "us", "usecond":
		return "ns", 1e3
	case "ms", "msecond":
		return "ns", 1e6
	case "s", "second":
		return "ns", 1e9
	}
	if len(u) > 1 {
		var f float64
		switch u[0] {
		case 'K':
			f = 1e3
		case 'M':
			f = 1e6
		case 'G':
			f = 1e9
		case 'T':
			f = 1e12
		}
		rest := u[1:]
		if f > 0 && strings.EqualFold(rest, "hz") {
			return "hz", f
		}
		if f > 0 && rest[0] >= 'a' && rest[0] <= 'z' {
			return rest, f
		}
	}
	return u, 1
}

// availableName strips the list numbering of an "Available Kernels" line
// ("  1. axpy" -> "axpy").
func availableName(line string) string {
	s := strings.TrimSpace(line)
	if i := strings.Index(s, ". "); i > 0 {
		if _, err := strconv.Atoi(s[:i]); err == nil {
			s = strings.TrimSpace(s[i+2:])
		}
	}
	return s
}
