package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"syscall"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
)

// Sim is a writable in-memory nic.Kernel for tests and benchmarks. It keeps
// a KernelState and applies each write with the rules of the kernel and of
// the driver named in the link's DriverInfo (mlx5_core, bnxt_en, or generic
// dcbnl behaviour for anything else), as documented in
// shared/reference/roce-host-interfaces.md §A1, §A3, §A4:
//
//   - SetMTU: EINVAL outside [MinMTU, MaxMTU] (0 = no bound).
//   - SetPause: EINVAL for Autoneg on mlx5_core; on mlx5_core the
//     *_global_pause* counters exist only while rx or tx pause is on.
//   - dcbnl on a link without DCB (veth): EOPNOTSUPP. A DCB object the
//     driver does not report (nil ETS, PFC or Buffer) is silently ignored on
//     set, as dcbnl ignores a missing driver op: callers must read back.
//   - SetETS: EINVAL for prio_tc >= 8, ETS bandwidth not summing to 100
//     when any TC is ETS, or bandwidth on a non-ETS TC (newer kernels).
//     mlx5_core then reads back 100 % for strict and vendor TCs.
//   - SetPFC: stores pfc_en; on mlx5_core delay is the cable length, kept
//     only if 0 < delay < 1000, a pfc_en change turns global pause off (the
//     PFCC write zeroes pptx/pprx) and the per-priority pause counters
//     rx_prio<p>_pause, rx_prio<p>_pause_duration, tx_prio<p>_pause,
//     tx_prio<p>_pause_duration, rx_prio<p>_pause_transition exist exactly
//     for enabled priorities. bnxt_en needs DCBX HOST and VER_IEEE (EINVAL).
//   - SetBuffer: EINVAL for prio2buffer >= 8 or sizes over TotalSize.
//   - AddApps: mlx5_core takes only DSCP entries with protocol < 64
//     (EINVAL) and a new entry replaces the DSCP's mapping; elsewhere an
//     exact duplicate is EEXIST. Entries apply in order and the first
//     failure stops the rest, earlier ones staying applied (dcbnl).
//   - DelApps: exact match or ENOENT.
//   - SetDCBX: LLD_MANAGED or a mode without HOST fails (EINVAL stands for
//     the driver's "1"); mode 0 on mlx5_core returns to firmware DCBX.
//   - SetPFCPreventionTimeout: 0, 0xffff or 80..8000 else EINVAL;
//     EOPNOTSUPP without the tunable. mlx5_core stores auto (0xffff) as the
//     100 ms it programs, which is what a read returns.
//   - SetDevlinkParam: unknown parameter EINVAL, unsupported cmode
//     EOPNOTSUPP, value of the wrong Go type EINVAL; values kept per cmode.
//
// A link the state does not have is ENODEV. All methods are safe for
// concurrent use.
type Sim struct {
	mu     sync.Mutex
	r      reader
	inject func(op, ifname string) error
	ops    []string
}

var _ nic.Kernel = (*Sim)(nil)

// NewSim starts a simulation from a deep copy of st (nil: no links).
func NewSim(st *KernelState) *Sim {
	c := st.Clone()
	if c == nil {
		c = &KernelState{}
	}
	if c.Links == nil {
		c.Links = map[string]*LinkState{}
	}
	return &Sim{r: reader{c}}
}

// Inject installs a hook called before every write with the write op
// (OpSetMTU, ...) and the netdev or devlink device. A non-nil error refuses
// the write and is returned wrapped in an *OpError. The hook runs without
// the simulator's lock, so it may call SetStat and friends. nil removes it.
func (s *Sim) Inject(fn func(op, ifname string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inject = fn
}

// State returns a deep copy of the current state.
func (s *Sim) State() *KernelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.st.Clone()
}

// Ops returns the writes that succeeded, oldest first, as "op name" (e.g.
// "set_pfc ens1f0np0").
func (s *Sim) Ops() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ops)
}

// SetStat sets an ethtool counter, creating it if needed, to script the
// pause-storm guard's input. It panics if ifname is not a simulated link:
// that is a mistake in the test, not a kernel answer.
func (s *Sim) SetStat(ifname, name string, v uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statsOf(ifname)[name] = v
}

// AddStat adds delta to a counter (creating it at delta).
func (s *Sim) AddStat(ifname, name string, delta uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statsOf(ifname)[name] += delta
}

// DelStat removes a counter, as drivers do when a feature turns off.
func (s *Sim) DelStat(ifname, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.statsOf(ifname), name)
}

func (s *Sim) statsOf(ifname string) map[string]uint64 {
	ls := s.r.st.Links[ifname]
	if ls == nil {
		panic(fmt.Sprintf("snapshot.Sim: no link %q", ifname))
	}
	if ls.Stats == nil {
		ls.Stats = map[string]uint64{}
	}
	return ls.Stats
}

// write runs one write: the injection hook, the link lookup, the rule fn,
// and the op log. fn reports errors as bare errnos; write wraps them.
func (s *Sim) write(op, name string, fn func(ls *LinkState) error) error {
	s.mu.Lock()
	hook := s.inject
	s.mu.Unlock()
	if hook != nil {
		if err := hook(op, name); err != nil {
			return opErr(op, name, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := s.r.st.Links[name]
	if ls == nil {
		return opErr(op, name, syscall.ENODEV)
	}
	if err := fn(ls); err != nil {
		// Rules reuse the read-side helpers; report the write op.
		return opErr(op, name, unwrapErrno(err))
	}
	s.ops = append(s.ops, op+" "+name)
	return nil
}

func driverOf(ls *LinkState) string {
	if ls.Driver == nil {
		return ""
	}
	return ls.Driver.Driver
}

// Reads.

func (s *Sim) Link(name string) (nic.LinkInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Link(name)
}

func (s *Sim) DriverInfo(name string) (nic.DriverInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.DriverInfo(name)
}

func (s *Sim) Pause(name string) (nic.Pause, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Pause(name)
}

func (s *Sim) Rings(name string) (nic.Rings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Rings(name)
}

func (s *Sim) PrivFlags(name string) (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.PrivFlags(name)
}

func (s *Sim) Stats(name string) (map[string]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Stats(name)
}

func (s *Sim) PFCPreventionTimeout(name string) (uint16, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.PFCPreventionTimeout(name)
}

// DCB answers like the driver: on mlx5_core the PFC requests and
// indications are the tx/rx per-priority pause counters, so scripted
// counters show up here too.
func (s *Sim) DCB(name string) (*dcb.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.r.DCB(name)
	if err != nil {
		return nil, err
	}
	ls := s.r.st.Links[name]
	if driverOf(ls) == DriverMLX5 && st.PFC != nil {
		for p := range dcb.NumTCs {
			st.PFC.Requests[p] = ls.Stats[fmt.Sprintf("tx_prio%d_pause", p)]
			st.PFC.Indications[p] = ls.Stats[fmt.Sprintf("rx_prio%d_pause", p)]
		}
	}
	return st, nil
}

func (s *Sim) DevlinkParams(dev string) ([]nic.DevlinkParam, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.DevlinkParams(dev)
}

// Writes: rtnetlink and ethtool.

func (s *Sim) SetMTU(name string, mtu int) error {
	return s.write(OpSetMTU, name, func(ls *LinkState) error {
		if err := recorded(ls.Errors, OpLink, name); err != nil {
			return err
		}
		if ls.Link == nil {
			return unsupported(ls.Errors, OpLink, name)
		}
		if mtu <= 0 || mtu < ls.Link.MinMTU || (ls.Link.MaxMTU > 0 && mtu > ls.Link.MaxMTU) {
			return syscall.EINVAL
		}
		ls.Link.MTU = mtu
		return nil
	})
}

func (s *Sim) SetPause(name string, p nic.Pause) error {
	return s.write(OpSetPause, name, func(ls *LinkState) error {
		if err := recorded(ls.Errors, OpPause, name); err != nil {
			return err
		}
		if ls.Pause == nil {
			return unsupported(ls.Errors, OpPause, name)
		}
		mlx5 := driverOf(ls) == DriverMLX5
		if mlx5 && p.Autoneg {
			return syscall.EINVAL // mlx5e_ethtool_set_pauseparam
		}
		*ls.Pause = p
		if mlx5 {
			mlx5GlobalPauseCounters(ls)
		}
		return nil
	})
}

func (s *Sim) SetRings(name string, r nic.Rings) error {
	return s.write(OpSetRings, name, func(ls *LinkState) error {
		if err := recorded(ls.Errors, OpRings, name); err != nil {
			return err
		}
		if ls.Rings == nil {
			return unsupported(ls.Errors, OpRings, name)
		}
		// ethtool core checks against the driver's maxima; the maxima
		// themselves are not settable.
		if r.Rx > ls.Rings.RxMax || r.Tx > ls.Rings.TxMax {
			return syscall.EINVAL
		}
		ls.Rings.Rx, ls.Rings.Tx = r.Rx, r.Tx
		return nil
	})
}

func (s *Sim) SetPrivFlags(name string, flags map[string]bool) error {
	return s.write(OpSetPrivFlags, name, func(ls *LinkState) error {
		if err := recorded(ls.Errors, OpPrivFlags, name); err != nil {
			return err
		}
		if ls.PrivFlags == nil {
			return unsupported(ls.Errors, OpPrivFlags, name)
		}
		// Flags travel as a bitmask over the driver's names: a name the
		// driver does not have cannot be expressed.
		for f := range flags {
			if _, ok := ls.PrivFlags[f]; !ok {
				return syscall.EINVAL
			}
		}
		maps.Copy(ls.PrivFlags, flags)
		return nil
	})
}

// PFC storm prevention tunable values (ETHTOOL_PFC_PREVENTION_TOUT).
const (
	tunableOff     = 0
	tunableAuto    = 0xffff
	tunableMin     = 80
	tunableMax     = 8000
	mlx5AutoTimout = 100 // MLX5E_PFC_PREVEN_AUTO_TOUT_MSEC
)

func (s *Sim) SetPFCPreventionTimeout(name string, ms uint16) error {
	return s.write(OpSetTunable, name, func(ls *LinkState) error {
		if err := recorded(ls.Errors, OpTunable, name); err != nil {
			return err
		}
		if ls.PFCPreventionTimeout == nil {
			return unsupported(ls.Errors, OpTunable, name)
		}
		if ms != tunableOff && ms != tunableAuto && (ms < tunableMin || ms > tunableMax) {
			return syscall.EINVAL
		}
		if ms == tunableAuto && driverOf(ls) == DriverMLX5 {
			// mlx5 programs the 100 ms critical watermark for "auto" and
			// reads the watermark back, never 0xffff.
			ms = mlx5AutoTimout
		}
		*ls.PFCPreventionTimeout = ms
		return nil
	})
}

// Writes: devlink.

func (s *Sim) SetDevlinkParam(dev, name string, cmode uint8, value any) error {
	s.mu.Lock()
	hook := s.inject
	s.mu.Unlock()
	if hook != nil {
		if err := hook(OpSetDevlinkParam, dev); err != nil {
			return opErr(OpSetDevlinkParam, dev, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.r.st.Devlink[dev]
	if !ok {
		_, err := s.r.DevlinkParams(dev)
		return opErr(OpSetDevlinkParam, dev, unwrapErrno(err))
	}
	for i := range ps {
		p := &ps[i]
		if p.Name != name {
			continue
		}
		if !sameDevlinkType(p.Type, value) {
			return opErr(OpSetDevlinkParam, dev, syscall.EINVAL)
		}
		for j := range p.Values {
			if p.Values[j].Cmode == cmode {
				p.Values[j].Value = value
				s.ops = append(s.ops, OpSetDevlinkParam+" "+dev)
				return nil
			}
		}
		return opErr(OpSetDevlinkParam, dev, syscall.EOPNOTSUPP)
	}
	return opErr(OpSetDevlinkParam, dev, syscall.EINVAL)
}

// sameDevlinkType reports whether v has exactly the Go type the live
// implementation (vishvananda/netlink) requires for typ.
func sameDevlinkType(typ string, v any) bool {
	switch v.(type) {
	case uint8:
		return typ == "u8"
	case uint16:
		return typ == "u16"
	case uint32:
		return typ == "u32"
	case uint64:
		return typ == "u64"
	case bool:
		return typ == "bool"
	case string:
		return typ == "string"
	}
	return false
}

func unwrapErrno(err error) error {
	if oe, ok := err.(*OpError); ok {
		return oe.Err
	}
	return err
}
