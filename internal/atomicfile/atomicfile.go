// Package atomicfile writes files whole or not at all: through a temporary
// file in the same folder, renamed into place, so that a reader (a resumed
// run, a sweep's status, a merge) never sees half of one.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write writes data to path with permissions perm, creating path's folder
// if needed. On failure path is unchanged and no temporary file is left.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, perm)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
