// Package sandbox runs an untrusted program in an OS sandbox built into the
// kagent binary: Linux user, PID, mount, network, IPC and UTS namespaces, a
// private root holding only the paths a Policy names, no capabilities,
// no_new_privs, a seccomp filter, Landlock where the kernel has it, and
// rlimits. It needs no program on the host besides the kernel.
//
// The binary re-executes itself (/proc/self/exe) as the sandbox's init, so
// every binary that calls Command must call Main first thing in main (and a
// test binary in TestMain):
//
//	func main() {
//		sandbox.Main() // returns at once unless this process is a sandbox's init
//		...
//	}
//
// The init is PID 1 of the new PID namespace. It builds the new root,
// pivots into it, sets the rlimits, drops every capability, sets
// no_new_privs, Landlock and seccomp, starts the program in a session of
// its own, reaps orphans, forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1
// and SIGUSR2 to the program's process group, and exits with the program's
// status as soon as the program ends; the kernel then kills whatever else
// runs in the namespace, so nothing the program started survives it.
//
// What the program sees:
//   - a read-only tmpfs root with the policy's paths bound at their own
//     paths (symlinks on the way recreated), read-only ones nosuid,nodev;
//   - a fresh /proc of its own PID namespace (only its processes; /proc/sys
//     and a few kernel files read-only or masked);
//   - /dev with null, zero, full, random, urandom, the policy's device nodes,
//     a private /dev/shm, and fd, stdin, stdout, stderr links; no /dev/tty;
//   - a private /tmp (tmpfs of Policy.TmpMiB);
//   - a network namespace with no interface up, its own IPC namespace;
//   - exactly Policy.Env as environment, and only fds 0, 1, 2 and
//     Policy.ExtraFiles (as 3, 4, ...).
//
// The seccomp filter makes these fail with EPERM: mount and the new mount
// API (open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
// mount_setattr), umount2, pivot_root, chroot, unshare, setns, clone with
// any CLONE_NEW* flag, ptrace, process_vm_readv/writev, pidfd_getfd, kcmp,
// bpf, perf_event_open, keyctl, add_key, request_key, kexec_load,
// kexec_file_load, init/finit/delete_module, reboot, swapon, swapoff,
// io_uring (whose operations would bypass the filter), userfaultfd,
// name_to_handle_at, open_by_handle_at, acct, quotactl, setting the clock,
// syslog, vhangup, mknod of character and block devices, and the TIOCSTI
// and TIOCLINUX ioctls (typing into a terminal). clone3 fails with ENOSYS so
// that libc falls back to clone, whose flags the filter can see. A system
// call of a foreign ABI (i386, x32) kills the program.
//
// Landlock (ABI 1 and up) allows reading and executing the read-only
// paths, everything but device creation under the read-write paths, /tmp
// and /dev/shm, reading /proc, and reading, writing and ioctl on the device
// nodes; from ABI 4 it denies TCP bind and connect, from ABI 6 it stops the
// program signalling processes outside the sandbox (the init included) and
// reaching abstract Unix sockets outside it. Without Landlock the mount view
// alone restricts what the program can reach; Probe reports ABI 0.
//
// Limits of the design: as root the program is uid 0 mapped to host uid 0
// (with no capabilities), so files it creates in read-write paths belong to
// root; RLIMIT_NPROC does not bind host root. A Unix socket whose path lies
// in a path of the policy is reachable: do not put sockets there.
package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Policy is what the sandboxed program may see and use.
type Policy struct {
	// ReadOnly are host paths (files or directories) visible read-only at
	// the same path. Every path must exist. Paths under /sys are allowed
	// here only (e.g. /sys/devices/system/cpu for CPU topology); /proc and
	// /dev are the sandbox's own.
	ReadOnly []string
	// ReadWrite are host paths visible read-write at the same path. Every
	// path must exist.
	ReadWrite []string
	// Devices are device nodes (or directories of them, e.g. /dev/dri)
	// under /dev bound in read-write, such as /dev/nvidia0 /dev/nvidiactl
	// /dev/nvidia-uvm /dev/kfd /dev/dri/renderD128. Missing ones are
	// skipped.
	Devices []string
	// Env is the complete environment of the program; nothing else leaks
	// in.
	Env []string
	// Dir is the working directory inside ("" = "/").
	Dir string
	// TmpMiB is the size of the private /tmp and of /dev/shm, each a
	// tmpfs (0 = DefaultTmpMiB).
	TmpMiB int
	// Limits are the program's rlimits.
	Limits Limits
	// ExtraFiles arrive in the program as fds 3, 4, ... (Command sets
	// cmd.ExtraFiles to them). Every other fd the init inherits is closed
	// before the program starts.
	ExtraFiles []*os.File
}

// Limits are rlimits, soft and hard alike, so the program cannot raise
// them. Zero leaves a limit as the caller has it; the core size is always 0.
// They apply to the init as well as to the program.
type Limits struct {
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles uint64
	// FileSizeMiB is RLIMIT_FSIZE, the largest file the program can write.
	FileSizeMiB uint64
	// Processes is RLIMIT_NPROC, counted per user in the sandbox's user
	// namespace. The kernel does not apply it to host root (a sandbox
	// started by root), so it binds only sandboxes started by other users.
	Processes uint64
	// AddressSpaceMiB is RLIMIT_AS. Leave it 0 on GPUs: CUDA reserves
	// terabytes of virtual address space.
	AddressSpaceMiB uint64
	// CPUSeconds is RLIMIT_CPU.
	CPUSeconds uint64
}

// DefaultTmpMiB is the size of /tmp and /dev/shm when Policy.TmpMiB is 0.
const DefaultTmpMiB = 1024

// ExitSetupFailed is the init's exit status when it could not build the
// sandbox (the reason is one line on its stderr, starting "sandbox: ").
// A program killed by signal N makes the sandbox exit with 128+N, as a
// shell reports it.
const ExitSetupFailed = 125

// Command returns a command that runs argv inside the sandbox described by
// p. argv[0] is an absolute path or a name looked up in the PATH of p.Env
// (on the host; the directory must be visible inside).
//
// The caller sets Stdin, Stdout, Stderr (or takes their pipes), may set
// Cancel and WaitDelay and, in SysProcAttr, Setpgid, Pgid or Setsid. It must not change
// Path, Args, Env, ExtraFiles (use Policy.ExtraFiles) or the SysProcAttr
// fields Command sets: Cloneflags, UidMappings, GidMappings,
// GidMappingsEnableSetgroups and Pdeathsig. The init gets SIGKILL when the
// thread that started it exits (Go's Pdeathsig caveat): start it from a
// goroutine that lives as long as the sandbox or lock the OS thread.
//
// Command fails with ErrUnavailable when this machine cannot sandbox
// (Probe says why) and with ErrPolicy when p is not valid.
func Command(p Policy, argv []string) (*exec.Cmd, error) {
	return CommandContext(context.Background(), p, argv)
}

// CommandContext is Command with a context: like exec.CommandContext, the
// init is killed when ctx ends (set cmd.Cancel to change that). Killing the
// init kills everything in the sandbox.
func CommandContext(ctx context.Context, p Policy, argv []string) (*exec.Cmd, error) {
	if r := Probe(); !r.Available {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, r.Reason)
	}
	cfg, err := plan(p, argv)
	if err != nil {
		return nil, err
	}
	return initCommand(ctx, cfg, p.ExtraFiles)
}

// Mount kinds of the plan.
const (
	kindRO   = "ro"
	kindRW   = "rw"
	kindDev  = "dev"
	kindLink = "link"
)

// mountEntry is one step of building the new root.
type mountEntry struct {
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Dir says the bound path is a directory.
	Dir bool `json:"dir,omitempty"`
	// Target is a symlink's text (kindLink).
	Target string `json:"target,omitempty"`
}

// config is what the init receives.
type config struct {
	// Probe makes the init build an empty sandbox and exit 0 instead of
	// running a program; Bare makes it exit 0 before doing anything.
	Probe  bool         `json:"probe,omitempty"`
	Bare   bool         `json:"bare,omitempty"`
	Mounts []mountEntry `json:"mounts,omitempty"`
	Path   string       `json:"path,omitempty"`
	Argv   []string     `json:"argv,omitempty"`
	Env    []string     `json:"env,omitempty"`
	Dir    string       `json:"dir,omitempty"`
	TmpMiB int          `json:"tmp_mib,omitempty"`
	Limits Limits       `json:"limits"`
	// Files is how many fds from 3 up the program gets.
	Files int `json:"files,omitempty"`
	// Skip names layers left out for diagnosis (KAGENT_SANDBOX_SKIP:
	// "landlock", "seccomp"); never set otherwise.
	Skip []string `json:"skip,omitempty"`
}

// reserved are the paths the sandbox builds itself.
var reserved = []string{"/proc", "/dev"}

// plan checks p and turns it into the init's config: symlinks resolved
// (and recreated), binds ordered parents first.
func plan(p Policy, argv []string) (config, error) {
	cfg := config{Env: slices.Clone(p.Env), Dir: p.Dir, TmpMiB: p.TmpMiB, Limits: p.Limits, Files: len(p.ExtraFiles)}
	if v := os.Getenv("KAGENT_SANDBOX_SKIP"); v != "" {
		cfg.Skip = strings.Split(v, ",")
	}
	if len(argv) == 0 || argv[0] == "" {
		return cfg, fmt.Errorf("%w: no program to run", ErrPolicy)
	}
	if cfg.Dir == "" {
		cfg.Dir = "/"
	}
	if !filepath.IsAbs(cfg.Dir) {
		return cfg, fmt.Errorf("%w: working directory %q is not absolute", ErrPolicy, cfg.Dir)
	}
	if cfg.TmpMiB <= 0 {
		cfg.TmpMiB = DefaultTmpMiB
	}
	path, err := lookPath(argv[0], p.Env)
	if err != nil {
		return cfg, err
	}
	cfg.Path, cfg.Argv = path, slices.Clone(argv)

	binds := map[string]mountEntry{}
	links := map[string]mountEntry{}
	add := func(kind, path string, optional bool) error {
		if !filepath.IsAbs(path) {
			return fmt.Errorf("%w: path %q is not absolute", ErrPolicy, path)
		}
		path = filepath.Clean(path)
		underDev := path == "/dev" || strings.HasPrefix(path, "/dev/")
		if kind == kindDev && (!underDev || path == "/dev") {
			return fmt.Errorf("%w: device %q is not under /dev", ErrPolicy, path)
		}
		real, ls, err := resolve(path)
		if err != nil {
			if optional && os.IsNotExist(err) {
				return nil
			}
			return fmt.Errorf("%w: %s: %w", ErrPolicy, path, err)
		}
		for _, l := range append(ls, mountEntry{Path: real}) {
			if kind == kindRW && (l.Path == "/sys" || strings.HasPrefix(l.Path, "/sys/")) {
				return fmt.Errorf("%w: %s: /sys can only be bound read-only", ErrPolicy, path)
			}
			if l.Path == "/" {
				return fmt.Errorf("%w: %s: binding the whole root is not allowed", ErrPolicy, path)
			}
			for _, r := range reserved {
				inDev := l.Path == r || strings.HasPrefix(l.Path, r+"/")
				if inDev && !(kind == kindDev && r == "/dev") {
					return fmt.Errorf("%w: %s: %s is built by the sandbox (devices go in Devices)", ErrPolicy, path, r)
				}
			}
		}
		for _, l := range ls {
			links[l.Path] = l
		}
		fi, err := os.Stat(real)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrPolicy, path, err)
		}
		e := mountEntry{Kind: kind, Path: real, Dir: fi.IsDir()}
		if old, ok := binds[real]; ok && old.Kind == kindRW {
			return nil // read-write wins over read-only
		}
		binds[real] = e
		return nil
	}
	for _, path := range p.ReadOnly {
		if err := add(kindRO, path, false); err != nil {
			return cfg, err
		}
	}
	for _, path := range p.ReadWrite {
		if err := add(kindRW, path, false); err != nil {
			return cfg, err
		}
	}
	for _, path := range p.Devices {
		if err := add(kindDev, path, true); err != nil {
			return cfg, err
		}
	}
	for _, e := range links {
		if _, ok := binds[e.Path]; !ok {
			cfg.Mounts = append(cfg.Mounts, e)
		}
	}
	for _, e := range binds {
		cfg.Mounts = append(cfg.Mounts, e)
	}
	// Parents before children: a path sorts after every proper prefix.
	slices.SortFunc(cfg.Mounts, func(a, b mountEntry) int { return strings.Compare(a.Path, b.Path) })
	return cfg, nil
}

// resolve follows every symlink on path and returns the real path and the
// symlinks met on the way (to be recreated inside).
func resolve(path string) (string, []mountEntry, error) {
	var links []mountEntry
	rest := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := "/"
	for hops := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		if name == "" || name == "." {
			continue
		}
		if name == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", nil, fmt.Errorf("too many levels of symbolic links")
		}
		text, err := os.Readlink(next)
		if err != nil {
			return "", nil, err
		}
		links = append(links, mountEntry{Kind: kindLink, Path: next, Target: text})
		if filepath.IsAbs(text) {
			cur = "/"
		}
		rest = append(strings.Split(strings.TrimPrefix(text, "/"), "/"), rest...)
	}
	return cur, links, nil
}

// lookPath finds name like a shell with env's PATH would.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			return "", fmt.Errorf("%w: program %q is not an absolute path", ErrPolicy, name)
		}
		return name, nil
	}
	var pathVar string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: program %q not found in the policy's PATH", ErrPolicy, name)
}
