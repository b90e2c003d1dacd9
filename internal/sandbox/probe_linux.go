//go:build linux && (amd64 || arm64)

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

var (
	probeOnce sync.Once
	probed    Report
)

// Probe reports what this machine allows: it starts one empty sandbox
// (and, when that fails, one per namespace to say which is refused). The
// result is computed once per process.
func Probe() Report {
	probeOnce.Do(func() { probed = probe() })
	return probed
}

func probe() Report {
	r := Report{Seccomp: seccompAvailable(), LandlockABI: landlockABI()}
	err := tryInit(config{Probe: true}, namespaces)
	if err == nil {
		r.UserNS, r.PIDNS, r.MountNS, r.NetNS, r.IPCNS = true, true, true, true, true
		r.Available = r.Seccomp
		if !r.Seccomp {
			r.Reason = "the kernel takes no seccomp filters (CONFIG_SECCOMP_FILTER)"
		}
		return r
	}
	if errors.Is(err, errNoMain) {
		r.Reason = err.Error()
		return r
	}
	bare := config{Bare: true}
	r.UserNS = tryInit(bare, unix.CLONE_NEWUSER) == nil
	if r.UserNS {
		r.PIDNS = tryInit(bare, unix.CLONE_NEWUSER|unix.CLONE_NEWPID) == nil
		r.MountNS = tryInit(bare, unix.CLONE_NEWUSER|unix.CLONE_NEWNS) == nil
		r.NetNS = tryInit(bare, unix.CLONE_NEWUSER|unix.CLONE_NEWNET) == nil
		r.IPCNS = tryInit(bare, unix.CLONE_NEWUSER|unix.CLONE_NEWIPC) == nil
	}
	r.Reason = reason(err, r)
	return r
}

// errNoMain: the re-executed binary ran its own main.
var errNoMain = errors.New("this program does not call sandbox.Main first in main, so it cannot be a sandbox's init")

// initError is an init that started but failed.
type initError struct{ msg string }

func (e *initError) Error() string { return e.msg }

// tryInit runs an init with cfg in the given namespaces and waits for it.
func tryInit(cfg config, flags uintptr) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, err := newInit(ctx, cfg, flags)
	if err != nil {
		return err
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		msg := strings.TrimPrefix(oneLine(strings.TrimSpace(stderr.String())), "sandbox: ")
		var ee *exec.ExitError
		if errors.As(err, &ee) && msg != "" {
			return &initError{msg: msg}
		}
		return &initError{msg: fmt.Sprintf("sandbox init: %v %s", err, msg)}
	}
	if stdout.String() != probeToken {
		return errNoMain
	}
	return nil
}

// reason explains in one line why the sandbox failed.
func reason(err error, r Report) string {
	var ie *initError
	if errors.As(err, &ie) && r.UserNS && r.PIDNS && r.MountNS && r.NetNS && r.IPCNS {
		return "namespaces work but building the sandbox failed: " + ie.msg
	}
	if !r.UserNS {
		if sysctl("user/max_user_namespaces") == "0" {
			return "user namespaces are disabled (sysctl user.max_user_namespaces=0)"
		}
		if os.Getuid() != 0 {
			if sysctl("kernel/unprivileged_userns_clone") == "0" {
				return "unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone=0)"
			}
			if sysctl("kernel/apparmor_restrict_unprivileged_userns") == "1" {
				return "AppArmor forbids unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1)"
			}
		}
		return "cannot create a user namespace (a container or seccomp profile may forbid it): " + oneLine(err.Error())
	}
	var missing []string
	for _, n := range []struct {
		ok   bool
		name string
	}{{r.PIDNS, "pid"}, {r.MountNS, "mount"}, {r.NetNS, "network"}, {r.IPCNS, "ipc"}} {
		if !n.ok {
			missing = append(missing, n.name)
		}
	}
	if len(missing) > 0 {
		return "cannot create " + strings.Join(missing, ", ") + " namespaces inside a user namespace: " + oneLine(err.Error())
	}
	return oneLine(err.Error())
}

func sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
