//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's system call numbers.
	x32Bit   = 0x40000000
	sysMknod = unix.SYS_MKNOD
)

var archDenied = []uint32{
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB, unix.SYS__SYSCTL,
	unix.SYS_NFSSERVCTL, unix.SYS_LOOKUP_DCOOKIE, unix.SYS_CREATE_MODULE,
}
