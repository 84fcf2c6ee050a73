package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Interrupted is the cause (context.Cause) of the command context's
// cancellation when a signal arrives, so that what was running can say
// "interrupted by signal SIGTERM" rather than "context canceled".
type Interrupted struct{ Signal os.Signal }

func (e *Interrupted) Error() string {
	name := e.Signal.String()
	if s, ok := e.Signal.(syscall.Signal); ok && unix.SignalName(s) != "" {
		name = unix.SignalName(s)
	}
	return "interrupted by signal " + name
}

// Is makes an interruption a cancellation for errors.Is(err,
// context.Canceled).
func (e *Interrupted) Is(target error) bool { return target == context.Canceled }

// NotifyContext is signal.NotifyContext with an *Interrupted cause. The
// signals stay caught until stop: a second SIGTERM does not cut short the
// rollback the first one started (SIGKILL does; the next rocectl then
// recovers from the journal).
func NotifyContext(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(&Interrupted{Signal: s})
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(nil)
		})
	}
}
