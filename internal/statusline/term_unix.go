//go:build unix

package statusline

import (
	"os"

	"golang.org/x/sys/unix"
)

// TerminalWidth is the width in columns of the terminal f is, and whether f
// is a terminal at all (0 where the terminal does not say its width).
func TerminalWidth(f *os.File) (int, bool) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, false
	}
	return int(ws.Col), true
}
