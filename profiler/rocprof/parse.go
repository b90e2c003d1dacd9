package rocprof

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// maxCSVBytes bounds what one parser reads.
const maxCSVBytes = 512 << 20

// Dispatch is one kernel dispatch: a row of *_kernel_trace.csv.
type Dispatch struct {
	// DispatchID numbers the dispatches of one process in dispatch order.
	// It differs between passes; never join passes on it.
	DispatchID int64
	// Kernel is the kernel name as rocprofv3 prints it (demangled).
	Kernel string
	// Agent is the Agent_Id field ("Agent 4", "GPU 0", or a bare number).
	Agent string
	// StartNS and EndNS are the Start_Timestamp and End_Timestamp (ns).
	StartNS, EndNS int64
}

// DurationNS is End - Start in nanoseconds.
func (d Dispatch) DurationNS() int64 { return d.EndNS - d.StartNS }

// CounterDispatch is one dispatch of a counter pass: the rows of
// *_counter_collection.csv sharing a Dispatch_Id, pivoted on Counter_Name.
type CounterDispatch struct {
	DispatchID int64
	Kernel     string
	// Counters maps Counter_Name to Counter_Value (already summed over the
	// hardware instances by rocprofv3).
	Counters map[string]float64
}

// Agent is a GPU row of *_agent_info.csv: what the peaks are computed from.
type Agent struct {
	Name        string // the gfx target, "gfx942"
	ProductName string // "AMD Instinct MI300X"
	CUs         int
	SIMDsPerCU  int
	WaveSize    int
	// MaxClockMHz is Max_Engine_Clk_Fcompute.
	MaxClockMHz float64
	XCCs        int
}

// table is a CSV file read by header name.
type table struct {
	header map[string]int
	rows   [][]string
	// lines[i] is the line number of rows[i], for errors.
	lines []int
}

// readTable reads a CSV file whose first record is the header. Fields may
// be quoted (kernel names contain commas and doubled quotes); surrounding
// spaces are trimmed. required lists columns that must be present.
func readTable(r io.Reader, what string, required ...string) (*table, error) {
	cr := csv.NewReader(io.LimitReader(r, maxCSVBytes))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = false
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w: the file is empty", what, ErrNoOutput)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w: %v", what, ErrParse, err)
	}
	t := &table{header: map[string]int{}}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		t.header[h] = i
	}
	var missing []string
	for _, c := range required {
		if _, ok := t.header[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("read %s: %w: no column %s in header %q", what, ErrParse,
			strings.Join(missing, ", "), strings.Join(head, ","))
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w: %v", what, ErrParse, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(head) {
			return nil, fmt.Errorf("read %s: %w: line %d has %d fields, the header %d", what, ErrParse, line, len(rec), len(head))
		}
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		t.rows = append(t.rows, rec)
		t.lines = append(t.lines, line)
	}
	return t, nil
}

func (t *table) get(row []string, col string) string {
	if i, ok := t.header[col]; ok {
		return row[i]
	}
	return ""
}

// integer parses an integer field; rocprofv3 prints some as floats
// ("16384.000000").
func (t *table) integer(i int, col string) (int64, error) {
	s := t.get(t.rows[i], col)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, fmt.Errorf("%w: line %d: %s %q is not an integer", ErrParse, t.lines[i], col, s)
	}
	return int64(f), nil
}

func (t *table) float(i int, col string) (float64, error) {
	s := t.get(t.rows[i], col)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: line %d: %s %q is not a number", ErrParse, t.lines[i], col, s)
	}
	return f, nil
}

// ParseKernelTrace reads a *_kernel_trace.csv. Columns are found by header
// name, so the 22-column layout of current SDKs, the 18-column one of ROCm
// 6.2/6.3 and layouts with extra columns (a leading Guid) all parse. Rows
// whose Kind is not KERNEL_DISPATCH are skipped. The dispatches come back
// in Dispatch_Id order (rocprofv3 writes rows as buffers flush, not
// necessarily in order).
func ParseKernelTrace(r io.Reader) ([]Dispatch, error) {
	t, err := readTable(r, "kernel trace", "Dispatch_Id", "Kernel_Name", "Start_Timestamp", "End_Timestamp")
	if err != nil {
		return nil, err
	}
	var out []Dispatch
	for i, row := range t.rows {
		if k := t.get(row, "Kind"); k != "" && k != "KERNEL_DISPATCH" {
			continue
		}
		d := Dispatch{Kernel: t.get(row, "Kernel_Name"), Agent: t.get(row, "Agent_Id")}
		if d.DispatchID, err = t.integer(i, "Dispatch_Id"); err != nil {
			return nil, fmt.Errorf("read kernel trace: %w", err)
		}
		if d.StartNS, err = t.integer(i, "Start_Timestamp"); err != nil {
			return nil, fmt.Errorf("read kernel trace: %w", err)
		}
		if d.EndNS, err = t.integer(i, "End_Timestamp"); err != nil {
			return nil, fmt.Errorf("read kernel trace: %w", err)
		}
		if d.EndNS < d.StartNS {
			return nil, fmt.Errorf("read kernel trace: %w: line %d: dispatch %d ends before it starts", ErrParse, t.lines[i], d.DispatchID)
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b Dispatch) int { return cmpInt(a.DispatchID, b.DispatchID) })
	return out, nil
}

// ParseCounterCollection reads a *_counter_collection.csv (long format: one
// row per dispatch and counter) and pivots it on (Dispatch_Id,
// Counter_Name): one CounterDispatch per dispatch, in Dispatch_Id order.
// Columns are found by header name (the 19-, 16- and 15-column layouts
// all parse). Repeated rows of one counter in one dispatch are summed.
func ParseCounterCollection(r io.Reader) ([]CounterDispatch, error) {
	t, err := readTable(r, "counter collection", "Dispatch_Id", "Kernel_Name", "Counter_Name", "Counter_Value")
	if err != nil {
		return nil, err
	}
	byID := map[int64]*CounterDispatch{}
	var order []int64
	for i, row := range t.rows {
		id, err := t.integer(i, "Dispatch_Id")
		if err != nil {
			return nil, fmt.Errorf("read counter collection: %w", err)
		}
		v, err := t.float(i, "Counter_Value")
		if err != nil {
			return nil, fmt.Errorf("read counter collection: %w", err)
		}
		name := t.get(row, "Counter_Name")
		if name == "" {
			return nil, fmt.Errorf("read counter collection: %w: line %d: empty Counter_Name", ErrParse, t.lines[i])
		}
		cd := byID[id]
		if cd == nil {
			cd = &CounterDispatch{DispatchID: id, Kernel: t.get(row, "Kernel_Name"), Counters: map[string]float64{}}
			byID[id] = cd
			order = append(order, id)
		} else if k := t.get(row, "Kernel_Name"); k != cd.Kernel {
			return nil, fmt.Errorf("read counter collection: %w: line %d: dispatch %d is %q here and %q above",
				ErrParse, t.lines[i], id, k, cd.Kernel)
		}
		cd.Counters[name] += v
	}
	slices.Sort(order)
	out := make([]CounterDispatch, 0, len(order))
	for _, id := range order {
		out = append(out, *byID[id])
	}
	return out, nil
}

// ParseAgentInfo reads the GPU rows of *_agent_info.csv: rows whose Name
// is a gfx target (CPU agents are skipped). Only the columns documented for
// rocprofv3 are read; missing ones stay zero.
func ParseAgentInfo(r io.Reader) ([]Agent, error) {
	t, err := readTable(r, "agent info", "Name")
	if err != nil {
		return nil, err
	}
	var out []Agent
	for i, row := range t.rows {
		name := t.get(row, "Name")
		if !strings.HasPrefix(name, "gfx") {
			continue
		}
		a := Agent{Name: name, ProductName: t.get(row, "Product_Name")}
		ints := []struct {
			col string
			dst *int
		}{{"Cu_Count", &a.CUs}, {"Simd_Per_Cu", &a.SIMDsPerCU}, {"Wave_Front_Size", &a.WaveSize}, {"Num_Xcc", &a.XCCs}}
		for _, f := range ints {
			if t.get(row, f.col) == "" {
				continue
			}
			n, err := t.integer(i, f.col)
			if err != nil {
				return nil, fmt.Errorf("read agent info: %w", err)
			}
			*f.dst = int(n)
		}
		if t.get(row, "Max_Engine_Clk_Fcompute") != "" {
			if a.MaxClockMHz, err = t.float(i, "Max_Engine_Clk_Fcompute"); err != nil {
				return nil, fmt.Errorf("read agent info: %w", err)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
