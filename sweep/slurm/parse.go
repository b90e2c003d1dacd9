package slurm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// flexInt reads Slurm's integers in both JSON forms: a number (data_parser
// up to v0.0.38) or {"set": true, "infinite": false, "number": N} (v0.0.39
// and later). Unset, infinite or NO_VAL values read as absent.
type flexInt struct {
	v  int64
	ok bool
}

func (f *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*f = flexInt{}
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '{':
		var o struct {
			Set      *bool `json:"set"`
			Infinite bool  `json:"infinite"`
			Number   int64 `json:"number"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		if (o.Set == nil || *o.Set) && !o.Infinite {
			f.v, f.ok = o.Number, true
		}
	default:
		var n float64
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		f.v, f.ok = int64(n), true
	}
	// NO_VAL and INFINITE of 32 bits mean "not set".
	if f.ok && (f.v >= math.MaxUint32-2 || f.v < 0) {
		f.ok = false
	}
	return nil
}

// flexString reads a string or a list of strings (state.current became a
// list of flags in v0.0.40); a list reads as its first element.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	*f = ""
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '[':
		var l []string
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		if len(l) > 0 {
			*f = flexString(l[0])
		}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*f = flexString(s)
	return nil
}

// sacctJSON is the part of `sacct --json` kagent reads.
type sacctJSON struct {
	Jobs []struct {
		JobID flexInt `json:"job_id"`
		Array struct {
			JobID  flexInt    `json:"job_id"`
			TaskID flexInt    `json:"task_id"`
			Task   flexString `json:"task"` // a pending range, "0-7"
		} `json:"array"`
		State struct {
			Current flexString `json:"current"`
			Reason  flexString `json:"reason"`
		} `json:"state"`
		ExitCode struct {
			Status     flexString `json:"status"`
			ReturnCode flexInt    `json:"return_code"`
			Signal     struct {
				ID       flexInt `json:"id"`
				SignalID flexInt `json:"signal_id"`
			} `json:"signal"`
		} `json:"exit_code"`
	} `json:"jobs"`
	Errors []json.RawMessage `json:"errors"`
}

// parseSacctJSON reads `sacct --json -j ID` into task records.
func parseSacctJSON(out []byte, jobID string, n int) ([]record, error) {
	id, err := strconv.ParseInt(jobID, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("sacct --json: bad job id %q", jobID)
	}
	var doc sacctJSON
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("sacct --json: %w", err)
	}
	var recs []record
	for _, j := range doc.Jobs {
		if !(j.Array.JobID.ok && j.Array.JobID.v == id) && !(j.JobID.ok && j.JobID.v == id) {
			continue
		}
		r := record{State: normState(string(j.State.Current)), Reason: reasonOf(string(j.State.Reason))}
		if j.ExitCode.ReturnCode.ok && terminal[r.State] {
			c := int(j.ExitCode.ReturnCode.v)
			if sig := j.ExitCode.Signal; c == 0 && strings.EqualFold(string(j.ExitCode.Status), "SIGNALED") {
				if sig.ID.ok {
					c = 128 + int(sig.ID.v)
				} else if sig.SignalID.ok {
					c = 128 + int(sig.SignalID.v)
				}
			}
			// Slurm 22.05 (v0.0.38) reports return code 0 for failed
			// tasks.
			r.ExitCode = exitFor(r.State, &c)
		}
		var idx []int
		switch task := string(j.Array.Task); {
		case j.Array.TaskID.ok:
			idx = []int{int(j.Array.TaskID.v)}
		case strings.HasPrefix(task, "0x"), strings.HasPrefix(task, "0X"):
			// Slurm 22.05 gives a pending remainder as a hex bitmap of indices.
			if idx, err = parseBitmap(task[2:], n); err != nil {
				return nil, fmt.Errorf("sacct --json: %w", err)
			}
		case task != "":
			if idx, err = parseIndices(task, n); err != nil {
				return nil, fmt.Errorf("sacct --json: %w", err)
			}
		}
		for _, i := range idx {
			r.Index = i
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// parseBitmap reads a hex bitmap of array indices ("E" = 1, 2, 3; the
// rightmost digit holds indices 0-3) into the indices below n.
func parseBitmap(hex string, n int) ([]int, error) {
	var out []int
	for d := 0; d < len(hex); d++ {
		v, err := strconv.ParseUint(hex[len(hex)-1-d:len(hex)-d], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("bad array bitmap 0x%s", hex)
		}
		for b := 0; b < 4; b++ {
			if i := d*4 + b; v&(1<<b) != 0 && i < n {
				out = append(out, i)
			}
		}
	}
	return out, nil
}

// parseSacctParsable reads `sacct --parsable2 --noheader
// --format=JobID,State,ExitCode,Reason -j ID`: lines "ID_3|COMPLETED|0:0|None",
// "ID_[4-7]|PENDING|0:0|Priority" and steps ("ID_3.batch|...", skipped).
func parseSacctParsable(out []byte, jobID string, n int) ([]record, error) {
	var recs []record
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 3 {
			continue
		}
		task, ok := strings.CutPrefix(f[0], jobID+"_")
		if !ok || strings.Contains(task, ".") {
			continue
		}
		idx, err := parseIndices(task, n)
		if err != nil {
			return nil, fmt.Errorf("sacct --parsable2: %w", err)
		}
		r := record{State: normState(f[1])}
		r.ExitCode = exitFor(r.State, exitCodeOf(f[2]))
		if len(f) > 3 {
			r.Reason = reasonOf(f[3])
		}
		for _, i := range idx {
			r.Index = i
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// parseSqueue reads `squeue --noheader --array --format=%K|%T|%r`.
func parseSqueue(out []byte, n int) ([]record, error) {
	var recs []record
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 2 || f[0] == "N/A" {
			continue
		}
		idx, err := parseIndices(f[0], n)
		if err != nil {
			return nil, fmt.Errorf("squeue: %w", err)
		}
		r := record{State: normState(f[1])}
		if len(f) > 2 {
			r.Reason = reasonOf(f[2])
		}
		for _, i := range idx {
			r.Index = i
			recs = append(recs, r)
		}
	}
	return recs, nil
}

var scontrolField = regexp.MustCompile(`(?:^|\s)(ArrayJobId|ArrayTaskId|JobId|JobState|Reason|ExitCode)=(\S*)`)

// parseScontrol reads `scontrol --oneliner show job ID`: one line per array
// task ("JobId=8 ArrayJobId=7 ArrayTaskId=1 ... JobState=FAILED
// Reason=NonZeroExitCode ... ExitCode=3:0 ...").
func parseScontrol(out []byte, jobID string, n int) ([]record, error) {
	var recs []record
	for _, line := range strings.Split(string(out), "\n") {
		kv := map[string]string{}
		for _, m := range scontrolField.FindAllStringSubmatch(line, -1) {
			if _, dup := kv[m[1]]; !dup {
				kv[m[1]] = m[2]
			}
		}
		if kv["ArrayJobId"] != jobID || kv["ArrayTaskId"] == "" {
			continue
		}
		idx, err := parseIndices(kv["ArrayTaskId"], n)
		if err != nil {
			return nil, fmt.Errorf("scontrol: %w", err)
		}
		r := record{State: normState(kv["JobState"]), Reason: reasonOf(kv["Reason"])}
		r.ExitCode = exitFor(r.State, exitCodeOf(kv["ExitCode"]))
		for _, i := range idx {
			r.Index = i
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// exitFor keeps an exit code only for a task that ended, and a 0 only for
// one that completed: Slurm says 0 for tasks cancelled before they ran, and
// 22.05's sacct --json for failed ones.
func exitFor(state State, code *int) *int {
	if !terminal[state] || code == nil || *code == 0 && state != StateCompleted {
		return nil
	}
	return code
}

// reasonOf drops Slurm's empty reasons.
func reasonOf(s string) string {
	s = strings.TrimSpace(s)
	switch s {
	case "", "None", "(null)":
		return ""
	}
	return s
}
