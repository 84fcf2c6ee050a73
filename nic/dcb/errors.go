package dcb

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every decoding error: a reply or struct that is
// too short, an attribute whose length runs past its container, a reply
// without the attribute its command must carry.
var ErrMalformed = errors.New("malformed dcbnl message")

// Error is a failed dcbnl operation on one netdev. Err is the kernel's errno
// (a syscall.Errno, from NLMSG_ERROR or from the in-band status of an
// IEEE_SET/IEEE_DEL reply), a *DCBXError, a *ValidationError or an
// ErrMalformed; errors.Is(err, syscall.EOPNOTSUPP) sees through it.
type Error struct {
	Op     string // "IEEE_GET", "IEEE_SET PFC", "IEEE_DEL APP", "SDCBX", ...
	Ifname string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("dcbnl %s on %s: %v", e.Op, e.Ifname, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// DCBXError is a refused DCB_CMD_SDCBX. The kernel passes the driver's u8
// return value through unchanged: 0 is success, anything else a refusal
// (mlx5 and the lab's netdevsim return 1), and it is not an errno.
type DCBXError struct {
	Mode   uint8 // the DCBX mode that was asked for
	Status uint8 // the driver's return value
}

func (e *DCBXError) Error() string {
	return fmt.Sprintf("driver refused DCBX mode 0x%02x (status %d)", e.Mode, e.Status)
}

// ValidationError is a value rocectl refuses to send because the kernel or
// the driver would reject it (or, worse, accept it).
type ValidationError struct {
	Object string // "ETS", "BUFFER", "APP", "ifname"
	Field  string // uapi field name, e.g. "tc_tx_bw", "prio2buffer"
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("invalid %s: %s", e.Object, e.Reason)
	}
	return fmt.Sprintf("invalid %s %s: %s", e.Object, e.Field, e.Reason)
}
