package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// progressWriter returns stderr when it is a terminal and text output was
// asked for, nil otherwise: progress lines are for people, not logs.
func (env *Env) progressWriter(text bool) io.Writer {
	if !text {
		return nil
	}
	f, ok := env.Stderr.(*os.File)
	if !ok || !isTerminal(f) {
		return nil // a nil io.Writer, not a nil *os.File inside one
	}
	return f
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
