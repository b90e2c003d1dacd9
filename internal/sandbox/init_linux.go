//go:build linux && (amd64 || arm64)

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The init is recognised by both its argv[0] and its config variable.
const (
	initArg0  = "kagent-sandbox-init"
	configEnv = "KAGENT_SANDBOX_INIT"
)

// OOMScoreAdj is the oom_score_adj of every process in a sandbox: the
// kernel's first choice when the machine runs out of memory.
const OOMScoreAdj = 1000

// probeToken is what a probing init prints: a binary that does not call
// Main would run its own main instead and not print it.
const probeToken = "kagent-sandbox-probe-ok"

// namespaces are those of every sandbox.
const namespaces = unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// Paths of the init between the two pivots: the host's root is at
// oldRoot, the sandbox's root is built at newRoot.
const (
	baseDir = "/tmp"
	oldRoot = "/oldroot"
	newRoot = "/newroot"
)

// forwarded are the signals the init passes on to the program's group.
var forwarded = map[os.Signal]bool{
	unix.SIGTERM: true, unix.SIGINT: true, unix.SIGHUP: true,
	unix.SIGQUIT: true, unix.SIGUSR1: true, unix.SIGUSR2: true,
}

// Main runs the sandbox's init when this process is one, and never returns
// then; otherwise it returns at once. Call it first in main (and in
// TestMain of tests that start sandboxes).
func Main() {
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	raw, ok := os.LookupEnv(configEnv)
	if !ok {
		return
	}
	// Every restriction is set on this thread and inherited by the
	// program it forks; the Go runtime starts new threads from a clean
	// template thread while this one is locked.
	runtime.LockOSThread()
	// Until the program runs, every signal is caught: a signal the init
	// does not forward must not kill it.
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs)
	os.Exit(runInit(raw, sigs))
}

func runInit(raw string, sigs chan os.Signal) int {
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "sandbox: %s\n", oneLine(err.Error()))
		return ExitSetupFailed
	}
	var cfg config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fail(fmt.Errorf("read config: %w", err))
	}
	if cfg.Bare {
		fmt.Print(probeToken)
		return 0
	}
	// Nothing inside may read the init's memory, fds or root.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("set not dumpable: %w", err))
	}
	// When the machine runs out of memory the kernel kills what runs in the
	// sandbox (candidates' code) first, not its judge or kagent; the value
	// is inherited by every process started inside. Raising one's own score
	// needs no privilege; where /proc refuses it, the default stays.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(OOMScoreAdj)), 0)
	if err := buildRoot(cfg); err != nil {
		return fail(err)
	}
	if err := unix.Sethostname([]byte("sandbox")); err != nil {
		return fail(fmt.Errorf("set hostname: %w", err))
	}
	if err := setLimits(cfg.Limits); err != nil {
		return fail(err)
	}
	// Every fd past the program's is closed when it starts.
	if err := unix.CloseRange(uint(3+cfg.Files), ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail(fmt.Errorf("close inherited fds: %w", err))
	}
	if err := restrict(cfg); err != nil {
		return fail(err)
	}
	if cfg.Probe {
		fmt.Print(probeToken)
		return 0
	}
	files := make([]uintptr, 3+cfg.Files)
	for i := range files {
		files[i] = uintptr(i)
	}
	pid, err := syscall.ForkExec(cfg.Path, cfg.Argv, &syscall.ProcAttr{
		Dir:   cfg.Dir,
		Env:   cfg.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		return fail(fmt.Errorf("start %s: %w", cfg.Path, err))
	}
	go func() {
		for s := range sigs {
			if forwarded[s] {
				_ = unix.Kill(-pid, s.(syscall.Signal))
			}
		}
	}()
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("wait: %w", err))
		}
		if got != pid {
			continue // an orphan reparented to the init
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// buildRoot builds the sandbox's root and pivots into it.
func buildRoot(cfg config) error {
	steps := []struct {
		what string
		do   func() error
	}{
		{"make mounts private", func() error { return unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "") }},
		{"mount base tmpfs", func() error {
			return unix.Mount("tmpfs", baseDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64k")
		}},
		{"create base dirs", func() error {
			return errors.Join(os.Mkdir(baseDir+oldRoot, 0o700), os.Mkdir(baseDir+newRoot, 0o755))
		}},
		{"mount root tmpfs", func() error {
			return unix.Mount("tmpfs", baseDir+newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4m")
		}},
		{"pivot to base", func() error {
			if err := unix.Chdir(baseDir); err != nil {
				return err
			}
			if err := unix.PivotRoot(".", "."+oldRoot); err != nil {
				return err
			}
			return unix.Chdir("/")
		}},
		{"mount /proc", func() error { return mountProc(newRoot + "/proc") }},
		{"mount /tmp", func() error {
			return mountTmpfs(newRoot+"/tmp", fmt.Sprintf("mode=1777,size=%dm", cfg.TmpMiB), unix.MS_NOSUID|unix.MS_NODEV)
		}},
		{"build /dev", func() error { return buildDev(cfg) }},
		{"bind policy paths", func() error {
			for _, e := range cfg.Mounts {
				if err := place(e); err != nil {
					return fmt.Errorf("%s: %w", e.Path, err)
				}
			}
			return nil
		}},
		{"make /dev read-only", func() error { return setAttr(newRoot+"/dev", unix.MOUNT_ATTR_RDONLY, false) }},
		{"drop the host root", func() error {
			if err := unix.Mount("", oldRoot, "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return err
			}
			return unix.Unmount(oldRoot, unix.MNT_DETACH)
		}},
		{"pivot to new root", func() error {
			if err := unix.Chdir(newRoot); err != nil {
				return err
			}
			if err := unix.PivotRoot(".", "."); err != nil {
				return err
			}
			if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
				return err
			}
			return unix.Chdir("/")
		}},
		{"make / read-only", func() error {
			return setAttr("/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false)
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

func mountTmpfs(dir, data string, flags uintptr) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return unix.Mount("tmpfs", dir, "tmpfs", flags, data)
}

// procReadOnly are /proc entries made read-only; procMasked are hidden
// behind /dev/null. A host-root uid in the sandbox would otherwise pass the
// owner check of root's kernel knobs.
var (
	procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus", "fs", "driver"}
	procMasked   = []string{"kcore", "keys", "timer_list", "sched_debug", "latency_stats", "kmsg"}
)

// mountProc mounts a proc of the new PID namespace at dir.
func mountProc(dir string) error {
	if err := os.MkdirAll(dir, 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	for _, name := range procReadOnly {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if err := setAttr(p, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, true); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	for _, name := range procMasked {
		p := filepath.Join(dir, name)
		if fi, err := os.Lstat(p); err != nil || fi.IsDir() {
			continue
		}
		if err := unix.Mount(oldRoot+"/dev/null", p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// stdDevices are bound from the host's /dev into every sandbox.
var stdDevices = []string{"null", "zero", "full", "random", "urandom"}

// buildDev builds a minimal /dev: a tmpfs with the standard devices bound
// in, the fd links and a private /dev/shm. It is made read-only once the
// policy's devices are bound too.
func buildDev(cfg config) error {
	dev := newRoot + "/dev"
	if err := mountTmpfs(dev, "mode=0755,size=64k", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC); err != nil {
		return err
	}
	for _, name := range stdDevices {
		if _, err := os.Stat(oldRoot + "/dev/" + name); err != nil {
			continue
		}
		if err := place(mountEntry{Kind: kindDev, Path: "/dev/" + name}); err != nil {
			return fmt.Errorf("/dev/%s: %w", name, err)
		}
	}
	links := [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}}
	for _, l := range links {
		if err := os.Symlink(l[1], dev+"/"+l[0]); err != nil {
			return err
		}
	}
	return mountTmpfs(dev+"/shm", fmt.Sprintf("mode=1777,size=%dm", cfg.TmpMiB), unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC)
}

// place performs one entry of the plan under newRoot.
func place(e mountEntry) error {
	dst := newRoot + e.Path
	if e.Kind == kindLink {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(e.Target, dst); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		return nil
	}
	src := oldRoot + e.Path
	if _, err := os.Lstat(dst); err != nil {
		if e.Dir {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			f.Close()
		}
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	var attr uint64
	switch e.Kind {
	case kindRO:
		attr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	case kindRW:
		attr = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	case kindDev:
		attr = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC
	}
	return setAttr(dst, attr, true)
}

// setAttr sets mount attributes on the mount at path (and every mount
// below it when recursive). Kernels before 5.12 lack mount_setattr: then
// only the top mount changes, by a bind remount that keeps the flags the
// kernel locked.
func setAttr(path string, attr uint64, recursive bool) error {
	flags := uint(unix.AT_NO_AUTOMOUNT)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	err := unix.MountSetattr(unix.AT_FDCWD, path, flags, &unix.MountAttr{Attr_set: attr})
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return err
	}
	ms := uintptr(unix.MS_BIND | unix.MS_REMOUNT)
	for _, m := range []struct {
		st   int64
		ms   uintptr
		attr uint64
	}{
		{unix.ST_RDONLY, unix.MS_RDONLY, unix.MOUNT_ATTR_RDONLY},
		{unix.ST_NOSUID, unix.MS_NOSUID, unix.MOUNT_ATTR_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV, unix.MOUNT_ATTR_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC, unix.MOUNT_ATTR_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME, 0},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME, 0},
		{unix.ST_RELATIME, unix.MS_RELATIME, 0},
	} {
		if int64(st.Flags)&m.st != 0 || attr&m.attr != 0 && m.attr != 0 {
			ms |= m.ms
		}
	}
	return unix.Mount("", path, "", ms, "")
}

// setLimits sets the rlimits of the init, which the program inherits.
func setLimits(l Limits) error {
	set := []struct {
		name string
		res  int
		val  uint64
	}{
		{"core", unix.RLIMIT_CORE, 0},
		{"open files", unix.RLIMIT_NOFILE, l.OpenFiles},
		{"file size", unix.RLIMIT_FSIZE, l.FileSizeMiB << 20},
		{"processes", unix.RLIMIT_NPROC, l.Processes},
		{"address space", unix.RLIMIT_AS, l.AddressSpaceMiB << 20},
		{"cpu time", unix.RLIMIT_CPU, l.CPUSeconds},
	}
	for i, s := range set {
		if s.val == 0 && i > 0 {
			continue
		}
		// syscall.Setrlimit, not unix's: the Go runtime then gives the
		// program this RLIMIT_NOFILE rather than the one it started with.
		if err := syscall.Setrlimit(s.res, &syscall.Rlimit{Cur: s.val, Max: s.val}); err != nil {
			return fmt.Errorf("set rlimit %s to %d: %w", s.name, s.val, err)
		}
	}
	return nil
}

// newInit returns the command that starts an init with cfg in new
// namespaces of the given kinds.
func newInit(ctx context.Context, cfg config, flags uintptr) (*exec.Cmd, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode sandbox config: %w", err)
	}
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{initArg0}
	cmd.Env = []string{configEnv + "=" + string(raw)}
	// A race-detector build (the tests') sleeps a second at exit unless
	// GORACE says otherwise; the init is that build too.
	if v, ok := os.LookupEnv("GORACE"); ok {
		cmd.Env = append(cmd.Env, "GORACE="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	return cmd, nil
}

func initCommand(ctx context.Context, cfg config, files []*os.File) (*exec.Cmd, error) {
	cmd, err := newInit(ctx, cfg, namespaces)
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = files
	return cmd, nil
}

func oneLine(s string) string {
	for i, r := range s {
		if r == '\n' || r == '\r' {
			return s[:i]
		}
	}
	return s
}
