package leaktest

import (
	"strings"
	"testing"
)

// A goroutine that waits is reported at once, and is gone once released
// and joined, although it may still be returning when the join is done.
func TestLeft(t *testing.T) {
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-release
	}()
	left := Left(Settle)
	if len(left) != 1 || !strings.Contains(left[0], "[chan receive") || !strings.Contains(left[0], "leaktest.TestLeft.func1") {
		t.Fatalf("a goroutine blocked on a channel: got %q", left)
	}
	close(release)
	<-done // joined; it may not have returned yet
	if left := Left(Settle); len(left) > 0 {
		t.Fatalf("a joined goroutine was reported: %q", left)
	}
}

func TestLeaving(t *testing.T) {
	for g, want := range map[string]bool{
		"goroutine 7 [runnable]:\nruntime.goexit1()":                   true,
		"goroutine 7 [running]:\nmain.f()":                             true,
		"goroutine 7 [syscall]:\nsyscall.Syscall()":                    true,
		"goroutine 7 [sleep]:\ntime.Sleep(0xb2d05e00)":                 false,
		"goroutine 7 [chan receive, 2 minutes]:\nmain.f()":             false,
		"goroutine 7 [IO wait]:\ninternal/poll.runtime_pollWait()":     false,
		"goroutine 7 [sync.WaitGroup.Wait]:\nsync.(*WaitGroup).Wait()": false,
	} {
		if got := leaving(g); got != want {
			t.Errorf("leaving(%q) = %v, want %v", g[:strings.IndexByte(g, '\n')], got, want)
		}
	}
}
