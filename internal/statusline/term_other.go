//go:build !unix

package statusline

import "os"

// TerminalWidth says no terminal: the status line is drawn on unix
// terminals only.
func TerminalWidth(*os.File) (int, bool) { return 0, false }
