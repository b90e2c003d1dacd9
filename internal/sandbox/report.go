package sandbox

import (
	"fmt"
	"strings"
)

// Report is what this machine allows the sandbox.
type Report struct {
	// Available says Command can build sandboxes here.
	Available bool `json:"available"`
	// The namespaces a process of this user can create.
	UserNS  bool `json:"user_ns"`
	PIDNS   bool `json:"pid_ns"`
	MountNS bool `json:"mount_ns"`
	NetNS   bool `json:"net_ns"`
	IPCNS   bool `json:"ipc_ns"`
	// Seccomp says the kernel takes seccomp filters.
	Seccomp bool `json:"seccomp"`
	// LandlockABI is the kernel's Landlock ABI version, 0 when Landlock is
	// missing or disabled. Without it the sandbox still works (the mount
	// view alone restricts files) but Available stays true with this 0.
	LandlockABI int `json:"landlock_abi"`
	// Reason says, in one line, why the sandbox is unavailable.
	Reason string `json:"reason,omitempty"`
}

// String is one line: the features, or "unavailable: " and the reason.
func (r Report) String() string {
	if !r.Available {
		return "unavailable: " + r.Reason
	}
	var ns []string
	for _, n := range []struct {
		ok   bool
		name string
	}{{r.UserNS, "user"}, {r.PIDNS, "pid"}, {r.MountNS, "mount"}, {r.NetNS, "net"}, {r.IPCNS, "ipc"}} {
		if n.ok {
			ns = append(ns, n.name)
		}
	}
	landlock := "no landlock (files are limited by the mount view alone)"
	if r.LandlockABI > 0 {
		landlock = fmt.Sprintf("landlock ABI %d", r.LandlockABI)
	}
	return fmt.Sprintf("namespaces %s; seccomp; %s", strings.Join(ns, ", "), landlock)
}
