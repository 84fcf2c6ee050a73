package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// watchTTY is the terminal watch draws on: the alternate screen (the
// shell's screen comes back untouched on exit), no cursor, and the
// keyboard in cbreak mode (keys arrive one by one without echo; ISIG stays
// on, so Ctrl-C is SIGINT, which cancels the command's context). restore
// undoes all of it.
type watchTTY struct {
	in, out *os.File
	saved   *unix.Termios // stdin's mode before; nil when stdin is no terminal

	mu   sync.Mutex
	w, h int
}

// Terminal control sequences (xterm; ECMA-48 for the CSI ones).
const (
	ansiAltScreen   = "\x1b[?1049h" // save the cursor, switch to the alternate screen
	ansiMainScreen  = "\x1b[?1049l" // back to the main screen, cursor restored
	ansiHideCursor  = "\x1b[?25l"
	ansiShowCursor  = "\x1b[?25h"
	ansiHome        = "\x1b[H"
	ansiClearEOL    = "\x1b[K"
	ansiClearBelow  = "\x1b[J"
	watchPollMillis = 100 // how soon the key reader notices the end
)

func openWatchTTY(in, out *os.File) (*watchTTY, error) {
	t := &watchTTY{in: in, out: out}
	if in != nil {
		if st, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS); err == nil {
			raw := *st
			raw.Lflag &^= unix.ICANON | unix.ECHO
			raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
			if err := unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, &raw); err != nil {
				return nil, fmt.Errorf("terminal mode: %w", err)
			}
			t.saved = st
		} else {
			t.in = nil // no keyboard: Ctrl-C still ends it (SIGINT)
		}
	}
	t.resize()
	_, err := io.WriteString(out, ansiAltScreen+ansiHideCursor)
	return t, err
}

// restore leaves the alternate screen, shows the cursor and puts the
// keyboard back in the mode it had (cooked, for a shell).
func (t *watchTTY) restore() {
	_, _ = io.WriteString(t.out, ansiShowCursor+ansiMainScreen)
	if t.saved != nil {
		_ = unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, t.saved)
	}
}

func (t *watchTTY) resize() {
	w, h := 80, 24
	if ws, err := unix.IoctlGetWinsize(int(t.out.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
		w, h = int(ws.Col), int(ws.Row)
	}
	t.mu.Lock()
	t.w, t.h = w, h
	t.mu.Unlock()
}

func (t *watchTTY) width() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w
}

// draw writes a frame in one write: from the top left, each line cut to
// the width and cleared to its end, the rest of the screen cleared. Lines
// beyond the height give way to a note saying how many are hidden; the
// last line gets no newline, so the screen never scrolls.
func (t *watchTTY) draw(lines []string) {
	t.mu.Lock()
	w, h := t.w, t.h
	t.mu.Unlock()
	if len(lines) > h {
		hidden := len(lines) - h + 1
		lines = append(lines[:h-1:h-1], fmt.Sprintf("... %d more lines: enlarge the window", hidden))
	}
	var b strings.Builder
	b.WriteString(ansiHome)
	for i, l := range lines {
		if len(l) > w {
			l = l[:w]
		}
		b.WriteString(l)
		b.WriteString(ansiClearEOL)
		if i < len(lines)-1 {
			b.WriteString("\r\n")
		}
	}
	b.WriteString(ansiClearBelow)
	_, _ = io.WriteString(t.out, b.String())
}

// keys reads the keyboard until ctx ends and closes the returned channel
// at q, Q or Ctrl-C (a byte only when ISIG is off). It polls, so that it
// notices the end within watchPollMillis and wg.Wait returns: a blocked
// read would outlive the loop.
func (t *watchTTY) keys(ctx context.Context, wg *sync.WaitGroup) <-chan struct{} {
	quit := make(chan struct{})
	if t.in == nil {
		return quit
	}
	fd := int(t.in.Fd())
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 64)
		for ctx.Err() == nil {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, watchPollMillis)
			if errors.Is(err, unix.EINTR) || n == 0 {
				continue
			}
			if err != nil || fds[0].Revents&unix.POLLIN == 0 {
				return // stdin closed or gone: keep watching, Ctrl-C still works
			}
			k, err := unix.Read(fd, buf)
			if err != nil || k <= 0 {
				return
			}
			for _, c := range buf[:k] {
				if c == 'q' || c == 'Q' || c == 3 {
					close(quit)
					return
				}
			}
		}
	}()
	return quit
}
