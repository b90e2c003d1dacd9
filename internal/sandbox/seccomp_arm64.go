//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
	sysMknod  = 0 // arm64 has only mknodat
)

var archDenied = []uint32{unix.SYS_NFSSERVCTL, unix.SYS_LOOKUP_DCOOKIE}
