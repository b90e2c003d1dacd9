//go:build linux && (amd64 || arm64)

package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// helperEnv names the action the test binary performs when it runs as the
// program inside a sandbox; moves are the adversary's attempts, each
// returning nil only when it succeeded (the sandbox failed).
const helperEnv = "SANDBOX_TEST_ACTION"

// runHelper performs an action inside the sandbox and returns the exit code.
func runHelper(action string) int {
	if move, ok := moves[action]; ok {
		if err := move(); err != nil {
			fmt.Printf("blocked: %v\n", err)
			return 0
		}
		fmt.Println("ESCAPED")
		return 3
	}
	switch action {
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		os.Stdout.Write(b)
	case "pids":
		fmt.Println(strings.Join(pids(), " "), "self", os.Getpid())
	case "oom-score":
		b, err := os.ReadFile("/proc/self/oom_score_adj")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Print(string(b))
	case "fds":
		// Raw system calls: an *os.File would start the runtime's poller,
		// whose fds would show up in the list.
		dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		buf := make([]byte, 8192)
		n, err := unix.ReadDirent(dir, buf)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		var fds []int
		for _, name := range names {
			if fd, _ := strconv.Atoi(name); fd != dir {
				fds = append(fds, fd)
			}
		}
		unix.Close(dir)
		sort.Ints(fds)
		fmt.Println(fds)
		for fd := 3; fd < 3+envInt("SANDBOX_TEST_FILES"); fd++ {
			if _, err := unix.Write(fd, []byte(fmt.Sprintf("hello from fd %d\n", fd))); err != nil {
				fmt.Println(err)
				return 1
			}
		}
	case "write":
		// Writes SANDBOX_TEST_PATH and reads it back.
		p := os.Getenv("SANDBOX_TEST_PATH")
		if err := os.WriteFile(p, []byte("written inside"), 0o644); err != nil {
			fmt.Println(err)
			return 1
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != "written inside" {
			fmt.Println("read back:", string(b), err)
			return 1
		}
		fmt.Println("ok")
	case "reopen-stdout":
		// Python code reopens its own pipes through /proc: that must work.
		f, err := os.OpenFile("/proc/self/fd/1", os.O_WRONLY, 0)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Fprintln(f, "reopened")
		f.Close()
	case "exit":
		return envInt("SANDBOX_TEST_CODE")
	case "kill-self":
		unix.Kill(os.Getpid(), unix.Signal(envInt("SANDBOX_TEST_SIGNAL")))
		time.Sleep(time.Minute)
	case "wait-signal":
		fmt.Println("ready")
		time.Sleep(time.Minute)
		return 1
	case "signal-init":
		// SIGKILL and SIGSTOP to PID 1 must not end or stop the sandbox;
		// then the program ends normally.
		errK := unix.Kill(1, unix.SIGKILL)
		errS := unix.Kill(1, unix.SIGSTOP)
		time.Sleep(50 * time.Millisecond)
		fmt.Printf("alive (kill: %v, stop: %v)\n", errK, errS)
	case "daemonize":
		return daemonize()
	case "daemon-child":
		// A session leader that starts a grandchild in yet another
		// session and exits: the grandchild is orphaned.
		cmd := exec.Command(os.Args[0], os.Getenv("SANDBOX_TEST_MARKER"))
		cmd.Env = append(os.Environ(), helperEnv+"=daemon-grandchild")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Println(err)
			return 1
		}
	case "daemon-grandchild":
		os.WriteFile("/tmp/daemon-ready", []byte("ok"), 0o644)
		for {
			time.Sleep(time.Hour)
		}
	case "sleep":
		time.Sleep(time.Minute)
	default:
		fmt.Println("unknown action", action)
		return 2
	}
	return 0
}

func daemonize() int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=daemon-child")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		fmt.Println(err)
		return 1
	}
	for range 1000 {
		if _, err := os.Stat("/tmp/daemon-ready"); err == nil {
			fmt.Println("daemon started")
			return 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("the grandchild did not start")
	return 1
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

func pids() []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

func connectUnix(path string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: path})
}

// moves are the adversary's attempts from inside the sandbox.
var moves = map[string]func() error{
	"remount-ro-rw": func() error {
		return unix.Mount("", os.Getenv("SANDBOX_TEST_RO"), "", unix.MS_REMOUNT|unix.MS_BIND, "")
	},
	"setattr-ro-rw": func() error {
		return unix.MountSetattr(unix.AT_FDCWD, os.Getenv("SANDBOX_TEST_RO"), 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY})
	},
	"write-ro": func() error {
		return os.WriteFile(filepath.Join(os.Getenv("SANDBOX_TEST_RO"), "new"), []byte("x"), 0o644)
	},
	"overwrite-ro-file": func() error {
		f, err := os.OpenFile(filepath.Join(os.Getenv("SANDBOX_TEST_RO"), "existing"), os.O_WRONLY|os.O_TRUNC, 0)
		if err == nil {
			f.Close()
		}
		return err
	},
	"mount-proc": func() error {
		os.Mkdir("/tmp/p", 0o755)
		return unix.Mount("proc", "/tmp/p", "proc", 0, "")
	},
	"mount-tmpfs-over-ro": func() error {
		return unix.Mount("tmpfs", os.Getenv("SANDBOX_TEST_RO"), "tmpfs", 0, "")
	},
	"fsopen": func() error {
		fd, err := unix.Fsopen("tmpfs", 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"open-tree": func() error {
		fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"umount-proc": func() error { return unix.Unmount("/proc", unix.MNT_DETACH) },
	"umount-ro":   func() error { return unix.Unmount(os.Getenv("SANDBOX_TEST_RO"), unix.MNT_DETACH) },
	"chroot":      func() error { return unix.Chroot("/tmp") },
	"pivot-root":  func() error { return unix.PivotRoot("/tmp", "/tmp") },
	"unshare-user": func() error {
		return unix.Unshare(unix.CLONE_NEWUSER)
	},
	"clone-newuser": func() error {
		// A child in a new user namespace would have every capability
		// there again.
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{helperEnv + "=sleep"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS}
		if err := cmd.Start(); err != nil {
			return err
		}
		cmd.Process.Kill()
		cmd.Wait()
		return nil
	},
	"setns-init": func() error {
		fd, err := unix.Open("/proc/1/ns/mnt", unix.O_RDONLY, 0)
		if err != nil {
			return err
		}
		return unix.Setns(fd, 0)
	},
	"proc1-root": func() error {
		_, err := os.ReadDir("/proc/1/root/")
		return err
	},
	"proc1-environ": func() error {
		_, err := os.ReadFile("/proc/1/environ")
		return err
	},
	"proc1-fd": func() error {
		// Reopen an fd of the init (its stderr) through /proc.
		f, err := os.OpenFile("/proc/1/fd/2", os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return err
	},
	"ptrace-init": func() error {
		return unix.PtraceAttach(1)
	},
	"vm-read-init": func() error {
		buf := make([]byte, 8)
		_, err := unix.ProcessVMReadv(1, []unix.Iovec{{Base: &buf[0], Len: 8}}, []unix.RemoteIovec{{Base: 0x400000, Len: 8}}, 0)
		return err
	},
	"mknod-char": func() error {
		return unix.Mknod("/tmp/mem", unix.S_IFCHR|0o666, int(unix.Mkdev(1, 1)))
	},
	"mknodat-block": func() error {
		return unix.Mknodat(unix.AT_FDCWD, "/tmp/sda", unix.S_IFBLK|0o666, int(unix.Mkdev(8, 0)))
	},
	"raise-nofile": func() error {
		var r unix.Rlimit
		unix.Getrlimit(unix.RLIMIT_NOFILE, &r)
		return unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: r.Max + 1, Max: r.Max + 1})
	},
	"raise-core": func() error {
		return unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 1 << 20, Max: 1 << 20})
	},
	"kill-host": func() error {
		return unix.Kill(envInt("SANDBOX_TEST_HOST_PID"), 0)
	},
	"unix-socket-path": func() error {
		return connectUnix(os.Getenv("SANDBOX_TEST_SOCKET"))
	},
	"unix-socket-abstract": func() error {
		return connectUnix("@" + os.Getenv("SANDBOX_TEST_ABSTRACT"))
	},
	"tcp-loopback": func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrInet4{Port: envInt("SANDBOX_TEST_PORT"), Addr: [4]byte{127, 0, 0, 1}})
	},
	"interface-up": func() error {
		// Every interface the namespace has must be down.
		b, err := os.ReadFile("/proc/net/dev")
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for _, line := range strings.Split(string(b), "\n")[2:] {
			name, _, ok := strings.Cut(strings.TrimSpace(line), ":")
			if !ok {
				continue
			}
			ifr, err := unix.NewIfreq(name)
			if err != nil {
				return err
			}
			if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
				return err
			}
			if ifr.Uint16()&unix.IFF_UP != 0 {
				return nil
			}
		}
		return errors.New("no interface is up")
	},
	"write-proc": func() error {
		// /proc may be written where its own checks allow (the NVIDIA
		// driver needs it), but not another process's memory: the init
		// holds capabilities the program lacks.
		return os.WriteFile("/proc/1/mem", []byte("x"), 0)
	},
	"read-host-secret": func() error {
		_, err := os.ReadFile(os.Getenv("SANDBOX_TEST_SECRET"))
		return err
	},
	"read-shadow": func() error {
		_, err := os.ReadFile("/etc/shadow")
		return err
	},
	"read-host-home": func() error {
		_, err := os.ReadDir(os.Getenv("SANDBOX_TEST_HOME"))
		return err
	},
	"write-sysctl": func() error {
		return os.WriteFile("/proc/sys/kernel/domainname", []byte("x"), 0)
	},
	"sysrq": func() error {
		return os.WriteFile("/proc/sysrq-trigger", []byte("h"), 0)
	},
	"write-dev": func() error {
		return os.WriteFile("/dev/evil", []byte("x"), 0o644)
	},
	"open-tty": func() error {
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		return err
	},
	"tiocsti": func() error {
		c := byte('x')
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if errno == unix.EPERM {
			return errno
		}
		return nil // the filter let it through
	},
	"bpf": func() error {
		_, _, errno := unix.Syscall(unix.SYS_BPF, 0, 0, 0)
		if errno == unix.EPERM {
			return errno
		}
		return nil // the filter let it through
	},
	"keyctl": func() error {
		_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, true)
		return err
	},
}
