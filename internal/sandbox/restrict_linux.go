//go:build linux && (amd64 || arm64)

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Securebits (linux/securebits.h): uid 0 gains no capability on exec, a
// uid change clears none, and neither can be undone.
const (
	secbitNoroot                 = 1 << 0
	secbitNorootLocked           = 1 << 1
	secbitNoSetuidFixup          = 1 << 2
	secbitNoSetuidFixupLocked    = 1 << 3
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7
	lockedSecurebits             = secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
)

// restrict drops every capability of the calling thread, sets
// no_new_privs, Landlock (when the kernel has it) and the seccomp filter.
// The thread must stay locked: what it forks inherits all of it.
func restrict(cfg config) error {
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	if abi := landlockABI(); abi > 0 && !slices.Contains(cfg.Skip, "landlock") {
		if err := applyLandlock(cfg, abi); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	if !slices.Contains(cfg.Skip, "seccomp") {
		if err := applySeccomp(); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	return nil
}

func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
		return fmt.Errorf("set securebits: %w", err)
	}
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability
			}
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// Landlock rights.
const (
	llExec     = unix.LANDLOCK_ACCESS_FS_EXECUTE
	llWrite    = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	llRead     = unix.LANDLOCK_ACCESS_FS_READ_FILE
	llReadDir  = unix.LANDLOCK_ACCESS_FS_READ_DIR
	llTruncate = unix.LANDLOCK_ACCESS_FS_TRUNCATE
	llIoctl    = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llMakeDev  = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	// llFile are the rights that apply to a file (not a directory).
	llFile = llExec | llWrite | llRead | llTruncate | llIoctl
	llAll  = 1<<16 - 1
)

// landlockHandled is what the given ABI can restrict.
func landlockHandled(abi int) (fs, net, scoped uint64) {
	fs = 1<<13 - 1 // ABI 1: execute ... make_sym
	if abi >= 2 {
		fs |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		fs |= llTruncate
	}
	if abi >= 4 {
		net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 5 {
		fs |= llIoctl
	}
	if abi >= 6 {
		scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return fs, net, scoped
}

// procAccess: /proc may be read, and written (with truncation) where its
// own permission checks allow: the NVIDIA driver writes /proc files when
// CUDA starts (without it cuInit fails with CUDA_ERROR_OPERATING_SYSTEM).
// Other processes' /proc/PID/mem stays closed as long as they are not
// dumpable (the runner's fork server and its children are not).
func procAccess(cfg config) uint64 {
	if slices.Contains(cfg.Skip, "ll-proc-all") {
		return llAll
	}
	return llRead | llReadDir | llWrite | llTruncate
}

// landlockRules are the paths (inside the sandbox) and the rights the
// program has beneath them.
func landlockRules(cfg config) []struct {
	path   string
	access uint64
} {
	type rule = struct {
		path   string
		access uint64
	}
	rw := uint64(llAll &^ llMakeDev)
	root := uint64(llReadDir)
	switch {
	case slices.Contains(cfg.Skip, "ll-root-all"):
		root = llAll
	case slices.Contains(cfg.Skip, "ll-root-read"):
		root = llReadDir | llRead | llExec
	}
	rules := []rule{
		{"/", root},
	}
	// The root and the folders the sandbox made for its binds are a
	// read-only tmpfs, /sys and the read-only binds are read-only mounts:
	// writes there fail with EROFS whatever Landlock says, and allowing them
	// keeps that errno (the NVIDIA driver fails cuInit with
	// CUDA_ERROR_OPERATING_SYSTEM on a Landlock EACCES where it expects
	// EROFS). /proc, which has writable files, keeps the narrow rule below.
	if entries, err := os.ReadDir("/"); err == nil {
		for _, e := range entries {
			switch e.Name() {
			case "proc", "dev", "tmp":
				continue
			}
			rules = append(rules, rule{"/" + e.Name(), uint64(llAll &^ llMakeDev)})
		}
	}
	rules = append(rules, []rule{
		{"/proc", procAccess(cfg)},
		{"/tmp", rw},
		{"/dev/shm", rw},
	}...)
	if slices.Contains(cfg.Skip, "ll-dev") {
		rules = append(rules, rule{"/dev", llAll})
	}
	for _, name := range stdDevices {
		rules = append(rules, rule{"/dev/" + name, llRead | llWrite | llIoctl})
	}
	for _, e := range cfg.Mounts {
		switch e.Kind {
		case kindRO:
			// The bind is read-only and cannot be remounted (no capabilities,
			// no mount calls): writes there fail with EROFS whatever Landlock
			// says. Allowing them here keeps that errno, which the NVIDIA
			// driver expects when it opens /sys files for writing (a Landlock
			// EACCES makes cuInit fail with CUDA_ERROR_OPERATING_SYSTEM).
			rules = append(rules, rule{e.Path, llExec | llRead | llReadDir | llWrite | llTruncate})
		case kindRW:
			rules = append(rules, rule{e.Path, rw})
		case kindDev:
			rules = append(rules, rule{e.Path, llRead | llWrite | llIoctl | llReadDir})
		}
	}
	return rules
}

type landlockRulesetAttr struct {
	handledFS, handledNet, scoped uint64
}

type landlockPathBeneath struct {
	allowed  uint64
	parentFd int32
}

// applyLandlock restricts the calling thread to the sandbox's paths.
func applyLandlock(cfg config, abi int) error {
	fsH, netH, scoped := landlockHandled(abi)
	if slices.Contains(cfg.Skip, "ll-ioctl") {
		fsH &^= llIoctl
	}
	if slices.Contains(cfg.Skip, "ll-scope") {
		scoped = 0
	}
	if slices.Contains(cfg.Skip, "ll-net") {
		netH = 0
	}
	attr := landlockRulesetAttr{handledFS: fsH, handledNet: netH, scoped: scoped}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	for _, r := range landlockRules(cfg) {
		pfd, err := unix.Open(r.path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("open %s: %w", r.path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(pfd, &st); err != nil {
			unix.Close(pfd)
			return fmt.Errorf("stat %s: %w", r.path, err)
		}
		access := r.access & fsH
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= llFile
		}
		if access == 0 {
			unix.Close(pfd)
			continue
		}
		pb := landlockPathBeneath{allowed: access, parentFd: int32(pfd)}
		_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&pb)), 0, 0, 0)
		unix.Close(pfd)
		if errno != 0 {
			return fmt.Errorf("add rule for %s: %w", r.path, errno)
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("restrict self: %w", errno)
	}
	return nil
}

// seccompAvailable says whether the kernel takes seccomp filters.
func seccompAvailable() bool {
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	return errno == 0
}

// applySeccomp installs the filter on the calling thread.
func applySeccomp() error {
	filter := seccompFilter()
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return errno
	}
	return nil
}
