package snapshot

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxErrno bounds the reverse lookup; Linux errnos stop well below it.
const maxErrno = 4096

// ErrnoName is the name kernel.json and snapshot.json use for e:
// unix.ErrnoName, except that 95 is written EOPNOTSUPP (the kernel's and
// dcbnl's name for it; x/sys calls it ENOTSUP). Unknown numbers are written
// in decimal.
func ErrnoName(e syscall.Errno) string {
	if e == syscall.EOPNOTSUPP {
		return "EOPNOTSUPP"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return strconv.Itoa(int(e))
}

// ParseErrno is the inverse of ErrnoName. It also accepts the Linux
// aliases (ENOTSUP, EWOULDBLOCK, EDEADLOCK) and plain decimal numbers, so
// hand-written snapshots can use either.
func ParseErrno(s string) (syscall.Errno, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "EOPNOTSUPP", "ENOTSUP":
		return syscall.EOPNOTSUPP, nil
	case "EWOULDBLOCK":
		return syscall.EAGAIN, nil
	case "EDEADLOCK":
		return syscall.EDEADLK, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n >= maxErrno {
			return 0, fmt.Errorf("errno %d out of range", n)
		}
		return syscall.Errno(n), nil
	}
	if strings.HasPrefix(s, "E") {
		for n := 1; n < maxErrno; n++ {
			if unix.ErrnoName(syscall.Errno(n)) == s {
				return syscall.Errno(n), nil
			}
		}
	}
	return 0, fmt.Errorf("unknown errno name %q", s)
}

// OpError is the error of one kernel operation answered by a snapshot or
// a simulator built on one (nic/nictest). It unwraps to the errno (or
// nic.ErrReadOnly), so callers test it with errors.Is(err,
// syscall.EOPNOTSUPP) as they would a live kernel's answer.
type OpError struct {
	Op   string // OpPause, OpSetPFC, ...
	Name string // netdev name, or devlink "bus/device"
	Err  error
}

func (e *OpError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.Op, e.Name, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

func opErr(op, name string, err error) error {
	return &OpError{Op: op, Name: name, Err: err}
}
