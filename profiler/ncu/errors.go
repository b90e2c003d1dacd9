package ncu

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the package. Errors from Runner.Run and
// Profiler.Profile wrap one of them (through *RunError where the profiler
// ran), so callers branch with errors.Is.
var (
	// ErrNotFound: the ncu binary is not installed or not at ncu_bin_path.
	ErrNotFound = errors.New("ncu not found")
	// ErrPermission: the driver does not let this user read the GPU's
	// performance counters (ERR_NVGPUCTRPERM).
	ErrPermission = errors.New("no permission to read GPU performance counters")
	// ErrUnsupported: the profiler cannot run here (e.g. in a gVisor
	// sandbox it fails with LibraryNotLoaded).
	ErrUnsupported = errors.New("ncu cannot profile on this system")
	// ErrTimeout: the profile ran past its time limit and was killed.
	ErrTimeout = errors.New("ncu timed out")
	// ErrExit: ncu or the profiled program exited with an error.
	ErrExit = errors.New("ncu failed")
	// ErrUnknownMetric: this ncu or GPU does not know a requested metric.
	ErrUnknownMetric = errors.New("ncu does not know a requested metric")
	// ErrNoKernels: no launch matched the kernel filter.
	ErrNoKernels = errors.New("no kernels were profiled")
	// ErrParse: ncu's CSV output could not be read.
	ErrParse = errors.New("parse ncu csv")
	// ErrConfig: the profiler was set up wrongly.
	ErrConfig = errors.New("bad ncu profiler config")
)

// permissionFix is the actionable part of an ErrPermission message.
const permissionFix = "run kagent as root (sudo keeps PATH only with `sudo env PATH=$PATH ...`), " +
	"or allow all users to profile: put `options nvidia NVreg_RestrictProfilingToAdminUsers=0` " +
	"in a file under /etc/modprobe.d/, then reload the nvidia kernel module or reboot " +
	"(check with `grep RmProfilingAdminOnly /proc/driver/nvidia/params`, 0 = allowed); " +
	"in a container also add --cap-add SYS_ADMIN. See https://developer.nvidia.com/ERR_NVGPUCTRPERM"

// RunError is a failed ncu run: what went wrong (one of the sentinels), the
// exit code when the process exited, and the end of its output.
type RunError struct {
	Err      error
	ExitCode int    // -1 when the process did not exit by itself
	Detail   string // one line saying what to do or what ncu said
	Tail     string // last lines of ncu's and the program's output
}

func (e *RunError) Error() string {
	var b strings.Builder
	b.WriteString("profile with ncu: ")
	b.WriteString(e.Err.Error())
	if e.ExitCode > 0 {
		fmt.Fprintf(&b, " (exit status %d)", e.ExitCode)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if t := strings.TrimSpace(e.Tail); t != "" {
		b.WriteString("\n--- output tail ---\n")
		b.WriteString(t)
	}
	return b.String()
}

func (e *RunError) Unwrap() error { return e.Err }
