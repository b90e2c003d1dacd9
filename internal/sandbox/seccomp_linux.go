//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

// deniedSyscalls fail with EPERM in the program (see the package doc).
// archDenied adds those only some architectures have.
var deniedSyscalls = []uint32{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_PIDFD_GETFD, unix.SYS_KCMP,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_USERFAULTFD, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME,
	unix.SYS_CLOCK_ADJTIME, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
}

// Classic BPF, as seccomp runs it.
const (
	bpfLoadAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeq     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfJge     = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	bpfJset    = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	bpfAnd     = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
	bpfRet     = unix.BPF_RET | unix.BPF_K
)

// Offsets in struct seccomp_data (little-endian: an argument's low 32 bits
// come first).
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSY = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// cloneNewFlags are clone's namespace flags (CLONE_NEWTIME shares its bit
// with the exit signal in clone's flags, and exists only for clone3 and
// unshare, which are refused whole).
const cloneNewFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccompFilter is the program's filter.
func seccompFilter() []unix.SockFilter {
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf}
	}
	arg := func(i uint32) unix.SockFilter { return stmt(bpfLoadAbs, offArgs+8*i) }
	f := []unix.SockFilter{
		stmt(bpfLoadAbs, offArch),
		jump(bpfJeq, auditArch, 1, 0),
		stmt(bpfRet, retKill),
		stmt(bpfLoadAbs, offNr),
	}
	if x32Bit != 0 {
		f = append(f, jump(bpfJge, x32Bit, 0, 1), stmt(bpfRet, retKill))
	}
	for _, nr := range append(deniedSyscalls, archDenied...) {
		f = append(f, jump(bpfJeq, nr, 0, 1), stmt(bpfRet, retEPERM))
	}
	f = append(f,
		jump(bpfJeq, unix.SYS_CLONE3, 0, 1), stmt(bpfRet, retENOSY),
		// clone(flags, ...): no new namespace.
		jump(bpfJeq, unix.SYS_CLONE, 0, 4),
		arg(0),
		jump(bpfJset, cloneNewFlags, 0, 1),
		stmt(bpfRet, retEPERM),
		stmt(bpfRet, retAllow),
		// ioctl(fd, cmd): the kernel reads cmd as 32 bits.
		jump(bpfJeq, unix.SYS_IOCTL, 0, 5),
		arg(1),
		jump(bpfJeq, unix.TIOCSTI, 1, 0),
		jump(bpfJeq, unix.TIOCLINUX, 0, 1),
		stmt(bpfRet, retEPERM),
		stmt(bpfRet, retAllow),
	)
	f = append(f, mknodCheck(unix.SYS_MKNODAT, 2)...)
	if sysMknod != 0 {
		f = append(f, mknodCheck(sysMknod, 1)...)
	}
	return append(f, stmt(bpfRet, retAllow))
}

// mknodCheck refuses character and block devices to the mknod-like call nr
// whose mode is argument modeArg.
func mknodCheck(nr uint32, modeArg uint32) []unix.SockFilter {
	return []unix.SockFilter{
		{Code: bpfJeq, K: nr, Jf: 6},
		{Code: bpfLoadAbs, K: offArgs + 8*modeArg},
		{Code: bpfAnd, K: unix.S_IFMT},
		{Code: bpfJeq, K: unix.S_IFCHR, Jt: 1},
		{Code: bpfJeq, K: unix.S_IFBLK, Jf: 1},
		{Code: bpfRet, K: retEPERM},
		{Code: bpfRet, K: retAllow},
	}
}
