package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/sweep"
)

// lackError says what this machine lacks for a run (torch, triton, device
// memory for the problem) and how to provide it. It exits with
// ExitUnavailable: the kernel dir is not at fault, and the same command
// works on a machine that has what is missing.
type lackError struct {
	what   string // "torch", "triton", "the device memory this problem needs"
	python string // the interpreter at fault ("" where not known)
	why    string // what was found
	fix    string // what to do ("" where why says it)
	// perProblem: another problem may fit where this one does not (memory);
	// a sweep goes on with the others.
	perProblem bool
	err        error
}

func (e *lackError) Error() string {
	msg := "this machine lacks " + e.what + ": "
	if e.what == "torch" || e.what == "triton" {
		// what is missing is a module of one interpreter: name it
		msg += cmp.Or(e.python, "the worker's Python") + " "
	}
	msg += e.why
	if e.fix != "" {
		msg += "; " + e.fix
	}
	return msg
}

func (e *lackError) Unwrap() error { return e.err }

// The worker's error kinds (platform/worker/PROTOCOL.md) that name what the
// machine lacks.
const (
	kindStartup = "startup" // the worker could not start: its Python lacks torch, or the device failed
	kindOOM     = "oom"     // out of device memory (for load_problem: the problem does not fit)
)

// installHint is what to do about a module the worker's Python lacks;
// alsoOr is one more way out ("" for none).
func installHint(module, alsoOr string) string {
	hint := fmt.Sprintf("install it into that Python (pip install %s; kagent's requirements.txt pins the tested versions) "+
		"or point --python (or KAGENT_PYTHON) at one that has it", module)
	if alsoOr != "" {
		hint += ", or " + alsoOr
	}
	return hint + "; kagent doctor shows what a Python offers"
}

// memoryLimitNote names KAGENT_MEMORY_LIMIT where it caps the memory the
// workers plan with ("" where it is unset).
func memoryLimitNote() string {
	if v := os.Getenv("KAGENT_MEMORY_LIMIT"); v != "" {
		return fmt.Sprintf("KAGENT_MEMORY_LIMIT=%s caps the memory the worker plans with", v)
	}
	return ""
}

// asLack finds what the machine lacks in err: a *lackError already made, a
// worker that could not start (torch or triton missing, a broken install or
// device), or a problem that does not fit the device's memory. nil when err
// says none of these.
func asLack(err error) *lackError {
	var le *lackError
	if errors.As(err, &le) {
		return le
	}
	kind, message, ok := platform.KindOf(err)
	if !ok {
		return nil
	}
	switch {
	case kind == kindStartup && strings.Contains(message, "No module named 'torch'"):
		return &lackError{what: "torch", why: "cannot import torch", fix: installHint("torch", ""), err: err}
	case kind == kindStartup && strings.Contains(message, "No module named 'triton'"):
		return &lackError{what: "triton", why: "cannot import triton", fix: installHint("triton", ""), err: err}
	case kind == kindStartup:
		return &lackError{what: "a working Python worker", why: "it failed to start: " + message,
			fix: "kagent doctor shows what the Python and the device offer", err: err}
	case kind == kindOOM && errors.Is(err, platform.ErrProblem):
		return &lackError{what: "the device memory this problem needs", why: message, fix: memoryLimitNote(), perProblem: true, err: err}
	}
	return nil
}

// checked wraps a platform so that a session opened on a machine that lacks
// what the kernel needs fails at once with a *lackError: a worker whose
// Python cannot import torch, or triton where the platform or the kernel
// needs it (without triton every candidate would fail verification, and the
// input kernel's failure would read as the kernel's fault).
func checked(p platform.Platform, python string, kwargs map[string]string) platform.Platform {
	c := &checkedPlatform{Platform: p, python: python}
	if p.Name() == configs.PlatformCPU {
		c.tritonPolicy = configs.CPUTritonAuto
		if v, ok := kwargs[configs.CPUKwargTriton]; ok {
			c.tritonPolicy = strings.ToLower(strings.TrimSpace(v))
		}
	}
	if so, ok := p.(sweep.SlotOpener); ok {
		return &checkedSlots{checkedPlatform: c, slots: so}
	}
	return c
}

type checkedPlatform struct {
	platform.Platform
	python string
	// tritonPolicy is the cpu platform's platform_kwargs.triton; "" on the
	// GPU platforms, which always run Triton kernels.
	tritonPolicy string
}

// Open opens the platform's session and checks the machine.
func (p *checkedPlatform) Open(ctx context.Context, task *kerneldir.Task) (platform.Session, error) {
	s, err := p.Platform.Open(ctx, task)
	return p.check(s, task, err)
}

func (p *checkedPlatform) check(s platform.Session, task *kerneldir.Task, err error) (platform.Session, error) {
	if err != nil {
		if le := asLack(err); le != nil {
			le.python = p.python
			return nil, le
		}
		return nil, err
	}
	about := s.About()
	if !about.Runtime || about.Triton != "" {
		return s, nil
	}
	need := p.needsTriton(task)
	if need == "" {
		return s, nil
	}
	_ = s.Close()
	alsoOr := ""
	if p.tritonPolicy == configs.CPUTritonRequire {
		alsoOr = fmt.Sprintf("set platform_kwargs.%s=%s for kernels written in plain torch", configs.CPUKwargTriton, configs.CPUTritonOff)
	}
	return nil, &lackError{what: "triton", python: p.python, why: fmt.Sprintf("(torch %s) cannot import triton, and %s", about.Torch, need),
		fix: installHint("triton", alsoOr)}
}

// needsTriton says why the session needs triton ("" where it does not).
func (p *checkedPlatform) needsTriton(task *kerneldir.Task) string {
	switch {
	case p.tritonPolicy == "":
		return fmt.Sprintf("the %s platform runs Triton kernels", p.Name())
	case p.tritonPolicy == configs.CPUTritonRequire:
		return fmt.Sprintf("platform_kwargs.%s is %s", configs.CPUKwargTriton, configs.CPUTritonRequire)
	case task != nil && importsTriton(task.KernelSource):
		return fmt.Sprintf("the kernel (%s) imports it", filepath.Base(task.KernelPath))
	}
	return ""
}

var tritonImport = regexp.MustCompile(`(?m)^[ \t]*(?:import|from)[ \t]+triton\b`)

// importsTriton reports whether Python source imports triton at the start
// of a line (import triton, import triton.language as tl, from triton ...).
func importsTriton(src string) bool { return tritonImport.MatchString(src) }

// checkedSlots is checkedPlatform for a platform with device slots (the GPU
// platforms), so that a sweep still finds them.
type checkedSlots struct {
	*checkedPlatform
	slots sweep.SlotOpener
}

func (p *checkedSlots) Slots(ctx context.Context) []string { return p.slots.Slots(ctx) }

func (p *checkedSlots) OpenSlot(ctx context.Context, task *kerneldir.Task, slot string) (platform.Session, error) {
	s, err := p.slots.OpenSlot(ctx, task, slot)
	return p.check(s, task, err)
}

// Interface guards
var (
	_ platform.Platform = (*checkedPlatform)(nil)
	_ sweep.SlotOpener  = (*checkedSlots)(nil)
)
