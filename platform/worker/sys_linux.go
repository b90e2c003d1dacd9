package worker

import "syscall"

// sysProcAttr puts the worker in its own process group and, when isolate is
// set, in a new network namespace (which has no interfaces but a down
// loopback). Unprivileged users get a user namespace too.
func sysProcAttr(isolate bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if isolate {
		a.Cloneflags = syscall.CLONE_NEWNET
		if uid := syscall.Getuid(); uid != 0 {
			gid := syscall.Getgid()
			a.Cloneflags |= syscall.CLONE_NEWUSER
			a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		}
	}
	return a
}
