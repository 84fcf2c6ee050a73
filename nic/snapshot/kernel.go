package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"syscall"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
)

// reader answers the read half of nic.Kernel from a KernelState. It holds
// no lock: the replay kernel never changes its state, and a caller that
// does (a simulator) serialises its reads with its own writes.
type reader struct{ st *KernelState }

// link finds a netdev; a name the host did not have is ENODEV, as
// rtnetlink answers for an unknown ifname.
func (r reader) link(op, name string) (*LinkState, error) {
	if ls := r.st.Links[name]; ls != nil {
		return ls, nil
	}
	return nil, opErr(op, name, syscall.ENODEV)
}

// unsupported is the error of an op with no data: the recorded errno, or
// EOPNOTSUPP when the capture recorded none.
func unsupported(errs map[string]string, op, name string) error {
	errno := syscall.EOPNOTSUPP
	if s, ok := errs[op]; ok {
		e, err := ParseErrno(s)
		if err != nil {
			return opErr(op, name, fmt.Errorf("snapshot state: %w", err))
		}
		errno = e
	}
	return opErr(op, name, errno)
}

// missing is the error of an op a link has no data for: nic.ErrNotCaptured
// when the snapshot says nobody captured it, else what unsupported says.
func missing(ls *LinkState, op, name string) error {
	if slices.Contains(ls.NotCaptured, op) {
		e := &nic.NotCapturedError{Op: op, Name: name}
		if inf := ls.Inferred[op]; inf != nil {
			from := ""
			if len(inf.From) > 0 {
				from = " (from " + strings.Join(inf.From, " → ") + ")"
			}
			if inf.Value != "" {
				e.Inferred = inf.Value + from
			}
			if inf.Note != "" {
				e.Note = inf.Note + from
			}
		}
		return e
	}
	return unsupported(ls.Errors, op, name)
}

// recorded returns the error recorded for op even when data is present:
// a capture that has both is contradictory, and the error wins so that a
// hand-made snapshot can force a failure without deleting data.
func recorded(errs map[string]string, op, name string) error {
	if _, ok := errs[op]; ok {
		return unsupported(errs, op, name)
	}
	return nil
}

func (r reader) Link(name string) (nic.LinkInfo, error) {
	ls, err := r.link(OpLink, name)
	if err != nil {
		return nic.LinkInfo{}, err
	}
	if err := recorded(ls.Errors, OpLink, name); err != nil {
		return nic.LinkInfo{}, err
	}
	if ls.Link == nil {
		return nic.LinkInfo{}, missing(ls, OpLink, name)
	}
	return *ls.Link, nil
}

func (r reader) DriverInfo(name string) (nic.DriverInfo, error) {
	ls, err := r.link(OpDriver, name)
	if err != nil {
		return nic.DriverInfo{}, err
	}
	if err := recorded(ls.Errors, OpDriver, name); err != nil {
		return nic.DriverInfo{}, err
	}
	if ls.Driver == nil {
		return nic.DriverInfo{}, missing(ls, OpDriver, name)
	}
	return *ls.Driver, nil
}

func (r reader) Pause(name string) (nic.Pause, error) {
	ls, err := r.link(OpPause, name)
	if err != nil {
		return nic.Pause{}, err
	}
	if err := recorded(ls.Errors, OpPause, name); err != nil {
		return nic.Pause{}, err
	}
	if ls.Pause == nil {
		return nic.Pause{}, missing(ls, OpPause, name)
	}
	return *ls.Pause, nil
}

func (r reader) Rings(name string) (nic.Rings, error) {
	ls, err := r.link(OpRings, name)
	if err != nil {
		return nic.Rings{}, err
	}
	if err := recorded(ls.Errors, OpRings, name); err != nil {
		return nic.Rings{}, err
	}
	if ls.Rings == nil {
		return nic.Rings{}, missing(ls, OpRings, name)
	}
	return *ls.Rings, nil
}

func (r reader) PrivFlags(name string) (map[string]bool, error) {
	ls, err := r.link(OpPrivFlags, name)
	if err != nil {
		return nil, err
	}
	if err := recorded(ls.Errors, OpPrivFlags, name); err != nil {
		return nil, err
	}
	if ls.PrivFlags == nil {
		return nil, missing(ls, OpPrivFlags, name)
	}
	return maps.Clone(ls.PrivFlags), nil
}

// Speed is not in a snapshot's kernel.json (its sysfs tree has the speed
// file, which the discovery reads): unknown. Only a write needs it.
func (r reader) Speed(name string) (int, error) {
	if _, err := r.link(OpLink, name); err != nil {
		return 0, err
	}
	return 0, &nic.NotCapturedError{Op: "link speed", Name: name}
}

func (r reader) Stats(name string) (map[string]uint64, error) {
	ls, err := r.link(OpStats, name)
	if err != nil {
		return nil, err
	}
	if err := recorded(ls.Errors, OpStats, name); err != nil {
		return nil, err
	}
	if ls.Stats == nil {
		return nil, missing(ls, OpStats, name)
	}
	return maps.Clone(ls.Stats), nil
}

func (r reader) PFCPreventionTimeout(name string) (uint16, error) {
	ls, err := r.link(OpTunable, name)
	if err != nil {
		return 0, err
	}
	if err := recorded(ls.Errors, OpTunable, name); err != nil {
		return 0, err
	}
	if ls.PFCPreventionTimeout == nil {
		return 0, missing(ls, OpTunable, name)
	}
	return *ls.PFCPreventionTimeout, nil
}

func (r reader) DCB(name string) (*dcb.State, error) {
	ls, err := r.link(OpDCB, name)
	if err != nil {
		return nil, err
	}
	if err := recorded(ls.Errors, OpDCB, name); err != nil {
		return nil, err
	}
	if ls.DCB == nil {
		return nil, missing(ls, OpDCB, name)
	}
	// Members nobody captured (an import from `dcb pfc show` alone) come
	// with the members that are known: the caller uses what it can.
	var parts []string
	for _, p := range DCBParts {
		if slices.Contains(ls.NotCaptured, OpDCB+"."+p) {
			parts = append(parts, p)
		}
	}
	if len(parts) > 0 {
		return cloneDCB(ls.DCB), &nic.NotCapturedError{Op: OpDCB, Name: name, Parts: parts}
	}
	return cloneDCB(ls.DCB), nil
}

func (r reader) DevlinkParams(dev string) ([]nic.DevlinkParam, error) {
	if ps, ok := r.st.Devlink[dev]; ok {
		if _, refused := r.st.Errors[OpDevlink]; !refused && slices.Contains(r.st.NotCaptured, OpDevlink) {
			// An import knows the parameters its dumps listed (one
			// `devlink dev param show DEV name X`, or a dump that stopped
			// early), not that the device has no others.
			return cloneParams(ps), &nic.NotCapturedError{Op: OpDevlink, Name: dev}
		}
		return cloneParams(ps), nil
	}
	if _, ok := r.st.Errors[OpDevlink]; !ok && slices.Contains(r.st.NotCaptured, OpDevlink) {
		return nil, &nic.NotCapturedError{Op: OpDevlink, Name: dev}
	}
	if _, ok := r.st.Errors[OpDevlink]; ok || len(r.st.Devlink) == 0 {
		// No devlink data at all: the host had no devlink family or the
		// capture failed; say so rather than "no such device".
		return nil, unsupported(r.st.Errors, OpDevlink, dev)
	}
	return nil, opErr(OpDevlink, dev, syscall.ENODEV)
}

// replay is the read-only nic.Kernel of an opened snapshot.
type replay struct{ reader }

// RDMALinks answers with the RDMA netlink view the capture recorded; a
// snapshot without one (the host's discovery read sysfs, or an older or
// hand-written snapshot) says so, and its discovery reads sysfs too.
func (r reader) RDMALinks(nic.FS) ([]nic.RDMALink, error) {
	if r.st.RDMA != nil {
		return slices.Clone(r.st.RDMA.Links), nil
	}
	if _, ok := r.st.Errors[OpRDMANetlink]; ok {
		return nil, fmt.Errorf("%w: the capture's RDMA netlink failed: %w", nic.ErrNoRDMANetlink, unsupported(r.st.Errors, OpRDMANetlink, "rdma"))
	}
	return nil, fmt.Errorf("%w: the snapshot recorded the sysfs view", nic.ErrNoRDMANetlink)
}

// Replay answers nic.Kernel from st as an opened snapshot does: reads
// return copies of what st holds, or the errno it records (EOPNOTSUPP for
// missing data, ENODEV for an unknown link), each an *OpError naming the
// read op; every write fails with an error wrapping nic.ErrReadOnly. It
// reads st in place, without copying it: the caller must not change st
// while a read may run.
func Replay(st *KernelState) nic.Kernel { return replay{reader{st}} }

var _ nic.Kernel = replay{}

func readOnly(op, name string) error { return opErr(op, name, nic.ErrReadOnly) }

func (replay) SetMTU(name string, _ int) error         { return readOnly(OpSetMTU, name) }
func (replay) SetPause(name string, _ nic.Pause) error { return readOnly(OpSetPause, name) }
func (replay) SetRings(name string, _ nic.Rings) error { return readOnly(OpSetRings, name) }
func (replay) SetPrivFlags(name string, _ map[string]bool) error {
	return readOnly(OpSetPrivFlags, name)
}
func (replay) SetPFCPreventionTimeout(name string, _ uint16) error {
	return readOnly(OpSetTunable, name)
}
func (replay) SetDCBX(name string, _ uint8) error        { return readOnly(OpSetDCBX, name) }
func (replay) SetETS(name string, _ dcb.ETS) error       { return readOnly(OpSetETS, name) }
func (replay) SetPFC(name string, _ dcb.PFC) error       { return readOnly(OpSetPFC, name) }
func (replay) SetBuffer(name string, _ dcb.Buffer) error { return readOnly(OpSetBuffer, name) }
func (replay) AddApps(name string, _ []dcb.App) error    { return readOnly(OpAddApps, name) }
func (replay) DelApps(name string, _ []dcb.App) error    { return readOnly(OpDelApps, name) }
func (replay) SetDevlinkParam(dev, _ string, _ uint8, _ any) error {
	return readOnly(OpSetDevlinkParam, dev)
}

// Validate checks a KernelState for what JSON cannot: every errno name
// parses, and every devlink value has the Go type its Type names. Values
// decoded from JSON arrive as float64 and are converted in place (uint8,
// uint16, uint32, uint64, bool, string), so a snapshot answers
// DevlinkParams with the same types as the live kernel.
func (st *KernelState) Validate() error {
	var errs []error
	check := func(where string, m map[string]string) {
		for _, op := range slices.Sorted(maps.Keys(m)) {
			if _, err := ParseErrno(m[op]); err != nil {
				errs = append(errs, fmt.Errorf("%s errors[%q]: %w", where, op, err))
			}
		}
	}
	check("kernel", st.Errors)
	if st.RDMA != nil {
		for i, l := range st.RDMA.Links {
			if l.Device == "" || l.Port <= 0 || l.State == "" {
				errs = append(errs, fmt.Errorf("rdma links[%d]: device %q port %d state %q: a link needs all three", i, l.Device, l.Port, l.State))
			}
		}
	}
	for _, op := range st.NotCaptured {
		if op != OpDevlink {
			errs = append(errs, fmt.Errorf("kernel not_captured: unknown op %q", op))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.Links)) {
		ls := st.Links[name]
		if ls == nil {
			errs = append(errs, fmt.Errorf("links[%q] is null", name))
			continue
		}
		check(fmt.Sprintf("links[%q]", name), ls.Errors)
		for _, op := range ls.NotCaptured {
			part, isPart := strings.CutPrefix(op, OpDCB+".")
			if !slices.Contains(ReadOps, op) && !(isPart && slices.Contains(DCBParts, part)) {
				errs = append(errs, fmt.Errorf("links[%q] not_captured: unknown op %q", name, op))
			}
		}
		for _, op := range slices.Sorted(maps.Keys(ls.Inferred)) {
			inf := ls.Inferred[op]
			switch {
			case !slices.Contains(ReadOps, op):
				errs = append(errs, fmt.Errorf("links[%q] inferred: unknown op %q", name, op))
			case inf == nil || inf.Value == "" && inf.Note == "":
				errs = append(errs, fmt.Errorf("links[%q] inferred[%q]: neither a value nor a note", name, op))
			case !slices.Contains(ls.NotCaptured, op):
				// An inference stands in for data nobody captured; next
				// to data or a refusal it would contradict them.
				errs = append(errs, fmt.Errorf("links[%q] inferred[%q]: the op is not listed as not captured", name, op))
			}
		}
	}
	for _, dev := range slices.Sorted(maps.Keys(st.Devlink)) {
		for i := range st.Devlink[dev] {
			p := &st.Devlink[dev][i]
			for j := range p.Values {
				v, err := devlinkValue(p.Type, p.Values[j].Value)
				if err != nil {
					errs = append(errs, fmt.Errorf("devlink[%q] %s cmode %d: %w", dev, p.Name, p.Values[j].Cmode, err))
					continue
				}
				p.Values[j].Value = v
			}
		}
	}
	return errors.Join(errs...)
}

// devlinkValue converts v to the Go type of a devlink parameter type.
func devlinkValue(typ string, v any) (any, error) {
	num := func(max uint64) (uint64, error) {
		switch n := v.(type) {
		case float64:
			if n < 0 || n != math.Trunc(n) || n > float64(max) {
				return 0, fmt.Errorf("%v is not a %s", n, typ)
			}
			return uint64(n), nil
		case uint8:
			return uint64(n), nil
		case uint16:
			return uint64(n), nil
		case uint32:
			return uint64(n), nil
		case uint64:
			if n > max {
				return 0, fmt.Errorf("%d is not a %s", n, typ)
			}
			return n, nil
		case int:
			if n < 0 || uint64(n) > max {
				return 0, fmt.Errorf("%d is not a %s", n, typ)
			}
			return uint64(n), nil
		}
		return 0, fmt.Errorf("%T value for a %s parameter", v, typ)
	}
	switch typ {
	case "u8":
		n, err := num(math.MaxUint8)
		return uint8(n), err
	case "u16":
		n, err := num(math.MaxUint16)
		return uint16(n), err
	case "u32":
		n, err := num(math.MaxUint32)
		return uint32(n), err
	case "u64":
		return num(math.MaxUint64)
	case "bool":
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case "string":
		if s, ok := v.(string); ok {
			return s, nil
		}
	default:
		return nil, fmt.Errorf("unknown parameter type %q", typ)
	}
	return nil, fmt.Errorf("%T value for a %s parameter", v, typ)
}
