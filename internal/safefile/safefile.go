// Package safefile reads files of a folder that kagent does not control (a
// kernel dir, a recorded LLM transcript) without trusting what they are: only
// regular files are read, never more than a size limit, and a symbolic link
// may point only at a file inside the same folder. A FIFO, a socket or a
// device is refused before it is read, so none can block kagent or feed it
// endless data.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Size limits of the files kagent reads from a kernel dir.
const (
	MaxPython = 4 << 20 // problem.py, input.py, kernel.py, test.py, candidates
	MaxYAML   = 1 << 20 // kagent.yaml
	MaxJSON   = 8 << 20 // one recorded LLM exchange
)

// ErrUnsafe marks a file that is not read because of what it is (not a
// regular file, a link leaving its folder, too large): errors.Is(err,
// ErrUnsafe). The error's own message names the file and what to do, without
// this sentinel's text.
var ErrUnsafe = errors.New("unsafe file")

// unsafeError is an error matching ErrUnsafe.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string        { return e.msg }
func (e *unsafeError) Is(target error) bool { return target == ErrUnsafe }

func unsafef(format string, args ...any) error {
	return &unsafeError{msg: fmt.Sprintf(format, args...)}
}

// Read reads the file name of the folder root, at most limit bytes. name is
// relative to root and may not leave it. A missing file gives an error
// matching fs.ErrNotExist.
func Read(root, name string, limit int64) ([]byte, error) {
	p, err := Resolve(root, name)
	if err != nil {
		return nil, err
	}
	return readRegular(p, filepath.Join(root, name), limit)
}

// ReadPath reads the file at path like Read, with the file's own folder as
// the root its links must stay within.
func ReadPath(path string, limit int64) ([]byte, error) {
	return Read(filepath.Dir(path), filepath.Base(path), limit)
}

// Exists reports whether root holds an entry called name (of any kind, a
// dangling link included), so that a FIFO named problem.py is reported as
// such, not as missing.
func Exists(root, name string) bool {
	_, err := os.Lstat(filepath.Join(root, name))
	return err == nil
}

// Resolve returns the real path of name under root after following links,
// and checks that it is a regular file inside root's real path.
func Resolve(root, name string) (string, error) {
	shown := filepath.Join(root, name)
	if filepath.IsAbs(name) || !filepath.IsLocal(name) {
		return "", unsafef("%s is outside %s", name, root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("%s: %w", root, err)
	}
	p := filepath.Join(realRoot, name)
	lst, err := os.Lstat(p)
	if err != nil {
		return "", pathErr(shown, err)
	}
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		if lst.Mode()&fs.ModeSymlink != 0 {
			return "", unsafef("%s is a symbolic link that leads nowhere readable (%v); replace it with the file itself", shown, unwrapPath(err))
		}
		return "", pathErr(shown, err)
	}
	if !within(realRoot, target) {
		return "", unsafef("%s is a symbolic link to %s, outside %s; copy the file into the folder instead", shown, target, root)
	}
	p = target
	st, err := os.Stat(p)
	if err != nil {
		return "", pathErr(shown, err)
	}
	if err := regular(shown, st.Mode()); err != nil {
		return "", err
	}
	return p, nil
}

// readRegular opens p without following a final link and without blocking
// (a FIFO swapped in after Resolve opens at once and is refused by the
// fstat), checks the opened file, and reads at most limit bytes.
func readRegular(p, shown string, limit int64) ([]byte, error) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, unsafef("%s was replaced by a symbolic link while it was read; replace it with the file itself", shown)
		}
		return nil, pathErr(shown, &fs.PathError{Op: "open", Path: p, Err: err})
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	if err := regular(shown, st.Mode()); err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, tooLarge(shown, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(shown, int64(len(b)), limit)
	}
	return b, nil
}

func regular(shown string, m fs.FileMode) error {
	if m.IsRegular() {
		return nil
	}
	return unsafef("%s is %s, not a regular file; replace it with the file itself", shown, kind(m))
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a plain file (" + m.Type().String() + ")"
}

func tooLarge(shown string, size, limit int64) error {
	return unsafef("%s is %s, over kagent's limit of %s for this file; make it smaller", shown, human(size), human(limit))
}

func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// within reports whether p lies inside (or is) root; both are real paths.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// pathErr names the file as the user gave it and keeps fs.ErrNotExist and
// the like matchable.
func pathErr(shown string, err error) error {
	return fmt.Errorf("%s: %w", shown, unwrapPath(err))
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
