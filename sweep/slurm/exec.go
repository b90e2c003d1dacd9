package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

const (
	// DefaultCommandTimeout bounds each call of a Slurm command.
	DefaultCommandTimeout = 60 * time.Second
	// maxStdout bounds what a command may print (sacct --json of a large array
	// is a few MB).
	maxStdout = 64 << 20
	// maxStderr bounds the kept stderr.
	maxStderr = 16 << 10
)

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// runCommand runs bin with args in its own process group, killed with the
// group when ctx ends or timeout passes, and returns its stdout. A failure is
// a *CommandError carrying stderr. (internal/proc interleaves stdout and
// stderr into one tail; Slurm's JSON on stdout must stay apart from its
// messages on stderr.)
func runCommand(ctx context.Context, timeout time.Duration, bin string, args ...string) ([]byte, error) {
	name := bin
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, &CommandError{Name: name, Args: args, ExitCode: -1, Err: ErrNotInstalled}
	}
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	stdout := &limitedBuffer{max: maxStdout}
	stderr := &limitedBuffer{max: maxStderr}
	cmd := exec.CommandContext(runCtx, path, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	runErr := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything the command left behind
	}
	if runErr == nil {
		if stdout.truncated {
			return nil, &CommandError{Name: name, Args: args, ExitCode: 0, Err: ErrCommand,
				Stderr: fmt.Sprintf("output over %d bytes", maxStdout)}
		}
		return stdout.buf.Bytes(), nil
	}
	ce := &CommandError{Name: name, Args: args, ExitCode: -1, Stderr: strings.TrimSpace(stderr.buf.String()), Err: ErrCommand}
	switch {
	case ctx.Err() != nil:
		ce.Err = ctx.Err()
	case runCtx.Err() != nil:
		ce.Err = fmt.Errorf("%w: timed out after %s", ErrCommand, timeout)
	default:
		var ee *exec.ExitError
		if errors.As(runErr, &ee) && ee.Exited() {
			ce.ExitCode = ee.ExitCode()
		} else {
			ce.Err = fmt.Errorf("%w: %v", ErrCommand, runErr)
		}
	}
	return stdout.buf.Bytes(), ce
}

// foldLines joins the non-empty lines of s with "; ".
func foldLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// slurmMessage turns sbatch's stderr ("sbatch: error: X\nsbatch: error: Y")
// into "X; Y".
func slurmMessage(stderr string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		for _, p := range []string{"sbatch: error: ", "sbatch: fatal: ", "sbatch: "} {
			if strings.HasPrefix(l, p) {
				l = strings.TrimPrefix(l, p)
				break
			}
		}
		if l != "" {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return "no message"
	}
	return strings.Join(out, "; ")
}
