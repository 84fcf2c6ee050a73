package cli

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// TestNotifyContextCause: a caught signal cancels the context with an
// *Interrupted cause that names it and counts as a cancellation.
func TestNotifyContextCause(t *testing.T) {
	ctx, stop := NotifyContext(context.Background(), syscall.SIGUSR1)
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	cause := context.Cause(ctx)
	var in *Interrupted
	if !errors.As(cause, &in) || in.Signal != syscall.SIGUSR1 || !errors.Is(cause, context.Canceled) || cause.Error() != "interrupted by signal SIGUSR1" {
		t.Errorf("cause %v", cause)
	}
	stop()
	stop() // twice is fine
	if got := (&Interrupted{Signal: syscall.SIGTERM}).Error(); got != "interrupted by signal SIGTERM" {
		t.Errorf("SIGTERM: %q", got)
	}
}
