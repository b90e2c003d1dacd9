package rocprof

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors of the package. A failed pass is a *PassError wrapping
// one of them, so callers branch with errors.Is.
var (
	// ErrNotFound: the rocprofv3 binary is not in PATH nor at
	// platform_kwargs.rocprof_bin_path.
	ErrNotFound = errors.New("rocprofv3 not found")
	// ErrTimeout: a pass ran past its timeout; its process group was killed.
	ErrTimeout = errors.New("timed out")
	// ErrExceedsHWLimit: rocprofv3 refused the pass's counter set
	// (ROCPROFILER_STATUS_ERROR_EXCEEDS_HW_LIMIT, "error code 38"; 37 in
	// SDKs of late 2024).
	ErrExceedsHWLimit = errors.New("counter set exceeds the hardware limit (error 38)")
	// ErrPermission: the driver does not let this user read the counters.
	ErrPermission = errors.New("no permission to read GPU performance counters")
	// ErrExit: rocprofv3 or the profiled program exited with an error or
	// was killed by a signal.
	ErrExit = errors.New("rocprofv3 failed")
	// ErrNoOutput: a pass wrote no CSV file, or an empty one.
	ErrNoOutput = errors.New("no rocprofv3 output")
	// ErrParse: a CSV file rocprofv3 wrote could not be read.
	ErrParse = errors.New("parse rocprofv3 csv")
	// ErrNoKernels: no dispatch of the candidate's kernels fell in the
	// window of the profiled call.
	ErrNoKernels = errors.New("no dispatches of the candidate's kernels")
	// ErrMismatch: a counter pass saw other dispatches than the kernel
	// trace (the program did not repeat the same work in every pass).
	ErrMismatch = errors.New("passes saw different dispatches")
	// ErrConfig: the profiler or a request was set up wrongly.
	ErrConfig = errors.New("bad rocprof profiler config")
)

// PassError is a failed rocprofv3 pass: which pass, what went wrong (one
// of the sentinels), the process's exit code and the end of its output.
type PassError struct {
	// Pass names the pass ("kernel trace", "SQ", "TCC", "FETCH_SIZE", "WRITE_SIZE").
	Pass string
	// Err is one of the package's sentinels.
	Err error
	// ExitCode is the exit status; -1 when the process did not exit by itself.
	ExitCode int
	// Timeout is the pass's limit, set with ErrTimeout.
	Timeout time.Duration
	// Detail is one line: what rocprofv3 said, or which file is missing.
	Detail string
	// Tail holds the last lines of rocprofv3's and the program's output.
	Tail string
}

// Reason is a one-line account of the failure, without the output tail:
// "rocprofv3 FETCH_SIZE pass timed out after 60s". It becomes
// roofline.Metrics.Fallback.
func (e *PassError) Reason() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rocprofv3 %s pass ", e.Pass)
	switch {
	case errors.Is(e.Err, ErrTimeout):
		fmt.Fprintf(&b, "timed out after %s and was killed", e.Timeout)
	case errors.Is(e.Err, ErrExceedsHWLimit):
		fmt.Fprintf(&b, "failed: %v", e.Err)
	case errors.Is(e.Err, ErrExit) && e.ExitCode > 0:
		fmt.Fprintf(&b, "exited with status %d", e.ExitCode)
	case errors.Is(e.Err, ErrExit):
		b.WriteString("did not exit normally")
	case strings.Contains(e.Detail, e.Err.Error()):
		// The detail already names the cause (a wrapped selection error).
		b.WriteString("failed")
	default:
		fmt.Fprintf(&b, "failed: %v", e.Err)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

func (e *PassError) Error() string {
	msg := "profile with " + e.Reason()
	if t := strings.TrimSpace(e.Tail); t != "" {
		msg += "\n--- output tail ---\n" + t
	}
	return msg
}

func (e *PassError) Unwrap() error { return e.Err }
