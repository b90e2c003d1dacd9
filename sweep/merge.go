package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// resultFile is one results file of a sweep dir.
type resultFile struct {
	name  string
	shard *Shard // nil for results.json
	Results
}

// readResultFiles reads results.json and every shard-i-of-n.json of dir,
// results.json first, then the shards by n and i.
func readResultFiles(dir string) ([]resultFile, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoResults, dir)
	}
	if err != nil {
		return nil, err
	}
	var out []resultFile
	for _, e := range entries {
		name := e.Name()
		var sh *Shard
		if s, ok := parseShardFile(name); ok {
			sh = &s
		} else if name != ResultsFile {
			continue
		}
		r, err := ReadResults(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out = append(out, resultFile{name: name, shard: sh, Results: r})
	}
	slices.SortFunc(out, func(a, b resultFile) int {
		switch {
		case a.shard == nil:
			return -1
		case b.shard == nil:
			return 1
		case a.shard.Count != b.shard.Count:
			return a.shard.Count - b.shard.Count
		}
		return a.shard.Index - b.shard.Index
	})
	return out, nil
}

// baseManifest is the sweep's manifest: sweep.json when present, else the
// first results file's, checked against every results file.
func baseManifest(dir string, files []resultFile) (Manifest, error) {
	m, ok, err := readManifest(dir)
	if err != nil {
		return Manifest{}, err
	}
	if !ok {
		if len(files) == 0 {
			return Manifest{}, fmt.Errorf("%w in %s: no %s, %s or shard-i-of-n.json", ErrNoResults, dir, ManifestFile, ResultsFile)
		}
		m = files[0].Sweep
	}
	for _, f := range files {
		if err := m.Compatible(f.Sweep); err != nil {
			return Manifest{}, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return m, nil
}

// MergeOptions tune Merge.
type MergeOptions struct {
	// Now is the report's timestamp clock (nil: time.Now).
	Now func() time.Time
}

// Merge combines the results of a sweep dir (results.json of local runs and
// every shard-i-of-n.json) into results.json and writes the report and the
// KernelBench files from them: the same report a single local run with the
// same per-problem results writes, timestamp line apart. For a problem found
// in several files, a final result beats one that is not and then the
// latest wins. Shards of the same n with no file are listed in
// Summary.MissingShards; their problems count as without a result.
func Merge(dir string, o MergeOptions) (Summary, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Summary{}, fmt.Errorf("sweep merge: %w", err)
	}
	files, err := readResultFiles(abs)
	if err != nil {
		return Summary{}, fmt.Errorf("sweep merge: %w", err)
	}
	if len(files) == 0 {
		return Summary{}, fmt.Errorf("sweep merge: %w in %s: no %s or shard-i-of-n.json", ErrNoResults, dir, ResultsFile)
	}
	m, err := baseManifest(abs, files)
	if err != nil {
		return Summary{}, fmt.Errorf("sweep merge: %w", err)
	}
	sets := make([][]ProblemResult, len(files))
	for i, f := range files {
		sets[i] = f.Results.Results
	}
	selected := map[int]bool{}
	for _, p := range m.Problems {
		selected[p.ID] = true
	}
	var rs []ProblemResult
	for _, r := range union(sets...) {
		if selected[r.ID] {
			rs = append(rs, r)
		}
	}
	ids := m.ids()
	sum := Summary{Dir: abs, Manifest: m, Problems: len(m.Problems), Results: rs, Complete: complete(ids, rs),
		ResultsPath: filepath.Join(abs, ResultsFile), ReportPath: filepath.Join(abs, ReportFile), MissingShards: missingShards(files)}
	if rs == nil {
		rs = []ProblemResult{}
	}
	out := Results{Format: FormatResults, Sweep: m, Problems: ids, Complete: sum.Complete, UpdatedAt: o.Now().UTC(), Results: rs}
	if err := writeJSON(sum.ResultsPath, out); err != nil {
		return sum, fmt.Errorf("sweep merge: %w", err)
	}
	if err := WriteReport(abs, m, rs, o.Now()); err != nil {
		return sum, fmt.Errorf("sweep merge: %w", err)
	}
	return sum, nil
}

// missingShards lists, for every shard count n seen, the indices without a
// file ("1/4").
func missingShards(files []resultFile) []string {
	have := map[int]map[int]bool{}
	for _, f := range files {
		if f.shard == nil {
			continue
		}
		if have[f.shard.Count] == nil {
			have[f.shard.Count] = map[int]bool{}
		}
		have[f.shard.Count][f.shard.Index] = true
	}
	var counts []int
	for n := range have {
		counts = append(counts, n)
	}
	slices.Sort(counts)
	var out []string
	for _, n := range counts {
		for i := range n {
			if !have[n][i] {
				out = append(out, Shard{Index: i, Count: n}.String())
			}
		}
	}
	return out
}

// ShardStatus is one results file as `kagent sweep status` shows it.
type ShardStatus struct {
	// File is the file name; Shard "i/n" ("" for results.json).
	File  string `json:"file"`
	Shard string `json:"shard,omitempty"`
	// Problems is how many problems the file is responsible for; Final how
	// many of them have a final result, Errors an error result.
	Problems  int       `json:"problems"`
	Final     int       `json:"final"`
	Errors    int       `json:"errors"`
	Complete  bool      `json:"complete"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ProblemStatus is where one problem stands.
type ProblemStatus struct {
	Problem Problem `json:"problem"`
	// State is pending (nothing known), a progress phase of its state file
	// (running, generating, optimizing, interrupted), or its result's status
	// (done, failed, error).
	State string `json:"state"`
	// Shard ran or runs it; Host and UpdatedAt come from its state file.
	Shard     string    `json:"shard,omitempty"`
	Host      string    `json:"host,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	Message   string    `json:"message,omitempty"`
	// Result is the final (or error) result, when there is one.
	Result *ProblemResult `json:"result,omitempty"`
}

// StatusReport is the state of a sweep dir.
type StatusReport struct {
	Dir           string          `json:"dir"`
	Manifest      Manifest        `json:"sweep"`
	Files         []ShardStatus   `json:"files"`
	MissingShards []string        `json:"missing_shards,omitempty"`
	Problems      []ProblemStatus `json:"problems"`
	// Counts per state.
	Counts map[string]int `json:"counts"`
	// Complete: results.json gives every problem a final result and no
	// shard file holds a result it lacks, so the report covers the sweep.
	Complete bool `json:"complete"`
	// Unmerged lists the shard files holding results that results.json
	// lacks (a problem it has no result for, or a better one; see Merge):
	// `kagent sweep merge` has something to combine.
	Unmerged []string `json:"unmerged,omitempty"`
}

// ReadStatus reads where a sweep stands: each results file (per shard) and
// each problem, from the results files and the problems' state files. It
// only reads; the shards may be running.
func ReadStatus(dir string) (StatusReport, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return StatusReport{}, fmt.Errorf("sweep status: %w", err)
	}
	files, err := readResultFiles(abs)
	if err != nil {
		return StatusReport{}, fmt.Errorf("sweep status: %w", err)
	}
	m, err := baseManifest(abs, files)
	if err != nil {
		return StatusReport{}, fmt.Errorf("sweep status: %w", err)
	}
	rep := StatusReport{Dir: abs, Manifest: m, MissingShards: missingShards(files), Counts: map[string]int{}}
	sets := make([][]ProblemResult, len(files))
	for i, f := range files {
		ss := ShardStatus{File: f.name, Problems: len(f.Problems), Complete: f.Complete, UpdatedAt: f.UpdatedAt}
		if f.shard != nil {
			ss.Shard = f.shard.String()
		}
		for _, r := range f.Results.Results {
			if r.Status.Final() {
				ss.Final++
			} else {
				ss.Errors++
			}
		}
		rep.Files = append(rep.Files, ss)
		sets[i] = f.Results.Results
	}
	by := map[int]ProblemResult{}
	for _, r := range union(sets...) {
		by[r.ID] = r
	}
	rep.Unmerged = unmerged(files)
	for _, f := range files {
		if f.shard == nil {
			rep.Complete = len(rep.Unmerged) == 0 && complete(m.ids(), f.Results.Results)
		}
	}
	for _, p := range m.Problems {
		ps := ProblemStatus{Problem: p, State: "pending"}
		st, haveState := readState(abs, p)
		if haveState {
			ps.State, ps.Shard, ps.Host, ps.UpdatedAt, ps.Message = st.Phase, st.Shard, st.Host, st.UpdatedAt, st.Message
			if st.stale() {
				ps.State, ps.Message = "interrupted", fmt.Sprintf("process %d on this host is gone (was %s)", st.PID, st.Phase)
			}
		}
		if r, ok := by[p.ID]; ok && (r.Status.Final() || !haveState || !st.UpdatedAt.After(r.FinishedAt)) {
			ps.State, ps.Shard, ps.Result, ps.UpdatedAt, ps.Message = string(r.Status), r.Shard, &r, r.FinishedAt, statusMessage(r)
		}
		rep.Counts[ps.State]++
		rep.Problems = append(rep.Problems, ps)
	}
	return rep, nil
}

// unmerged lists the shard files with a result that results.json (the
// first of files, when there is one) lacks or that would replace its own.
func unmerged(files []resultFile) []string {
	merged := map[int]ProblemResult{}
	for _, f := range files {
		if f.shard == nil {
			for _, r := range f.Results.Results {
				merged[r.ID] = r
			}
		}
	}
	var out []string
	for _, f := range files {
		if f.shard == nil {
			continue
		}
		for _, r := range f.Results.Results {
			if have, ok := merged[r.ID]; !ok || better(r, have) {
				out = append(out, f.name)
				break
			}
		}
	}
	return out
}

// statusMessage is one line about a result.
func statusMessage(r ProblemResult) string {
	if !r.Correct {
		return clip(failureReason(r), 160)
	}
	parts := []string{"correct", msCell(r.Kernel) + " ms"}
	if r.SpeedupEager > 0 {
		parts = append(parts, speedupCell(r.SpeedupEager)+" eager")
	}
	if r.SpeedupCompile > 0 {
		parts = append(parts, speedupCell(r.SpeedupCompile)+" compile")
	}
	return strings.Join(parts, ", ")
}
