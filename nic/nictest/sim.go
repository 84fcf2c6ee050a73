package nictest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"syscall"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// Sim is a writable in-memory nic.Kernel for tests and benchmarks. It keeps
// a snapshot.KernelState, answers reads as a snapshot of it would
// (snapshot.Replay), and applies each write with the rules of the kernel
// and of the driver named in the link's DriverInfo, as documented in
// shared/reference/roce-host-interfaces.md §A1, §A3, §A4. The Sim keeps
// the kernel's state and hands each write to the link's DriverModel,
// chosen by its driver name (models.go): mlx5sim for mlx5_core, bnxtsim
// for bnxt_en, peersim for qede and cxgb4, and simstate.Generic (dcbnl's
// own rules) for anything else. The rules, the driver's marked with its
// model package:
//
//   - SetMTU: EINVAL outside [MinMTU, MaxMTU] (0 = no bound).
//   - SetPause: EINVAL for Autoneg on mlx5_core; on mlx5_core the
//     *_global_pause* counters exist only while rx or tx pause is on
//     (mlx5sim).
//   - dcbnl on a link without DCB (veth): EOPNOTSUPP. A DCB object the
//     driver does not report (nil ETS, PFC or Buffer) is silently ignored on
//     set, as dcbnl ignores a missing driver op: callers must read back.
//   - SetETS: EINVAL for prio_tc >= 8, ETS bandwidth not summing to 100
//     when any TC is ETS, or bandwidth on a non-ETS TC (newer kernels).
//     mlx5_core then reads back 100 % for strict and vendor TCs (mlx5sim).
//   - SetPFC: stores pfc_en; on mlx5_core delay is the cable length, kept
//     only if 0 < delay < 1000, a pfc_en change turns global pause off (the
//     PFCC write zeroes pptx/pprx) and the per-priority pause counters
//     rx_prio<p>_pause, rx_prio<p>_pause_duration, tx_prio<p>_pause,
//     tx_prio<p>_pause_duration, rx_prio<p>_pause_transition exist exactly
//     for enabled priorities (mlx5sim). bnxt_en needs DCBX HOST and
//     VER_IEEE (EINVAL; bnxtsim).
//   - SetBuffer: EINVAL for prio2buffer >= 8 or sizes over TotalSize.
//   - mlx5_core's port buffers, manual buffer mode, xoff, the xoff/xon
//     thresholds (Thresholds: computed by buffer and PFC writes, not by an
//     MTU or speed change) and link toggles: mlx5sim (buffer.go); the
//     link's speed and training: link.go.
//   - AddApps: mlx5_core takes only DSCP entries with protocol < 64
//     (EINVAL) and a new entry replaces the DSCP's mapping; elsewhere an
//     exact duplicate is EEXIST. Entries apply in order and the first
//     failure stops the rest, earlier ones staying applied (dcbnl;
//     simstate.Generic, mlx5sim).
//   - DelApps: exact match or ENOENT.
//   - SetDCBX: LLD_MANAGED or a mode without HOST fails (EINVAL stands for
//     the driver's "1"); mode 0 on mlx5_core returns to firmware DCBX.
//     bnxt_en refuses every mode while its dcbx_cap has LLD_MANAGED, a
//     HOST mode that is not IEEE only, and takes any other mode (0
//     included) as its dcbx_cap (bnxt_dcbnl_setdcbx; bnxtsim).
//   - SetPFCPreventionTimeout: 0, 0xffff or 80..8000 else EINVAL;
//     EOPNOTSUPP without the tunable. mlx5_core stores auto (0xffff) as the
//     100 ms it programs, which is what a read returns (mlx5sim).
//   - Hardware DSCP table (HardwareDSCP): mlx5_core's AddApps sets the
//     firmware's dscp2prio[d] (mlx5e_dcbnl_ieee_setapp); its DelApps needs
//     the entry's priority to match the firmware's (else ENOENT) and resets
//     dscp2prio[d] to 0 (mlx5e_dcbnl_ieee_delapp). bnxt_en's AddApps sets
//     the HWRM dscp2pri entry, its DelApps clears that DSCP's entry
//     whatever priority is deleted (bnxt_dcbnl_ieee_delapp →
//     bnxt_hwrm_queue_dscp2pri_cfg with mask 0; mlx5sim, bnxtsim).
//   - bnxt_en's SetETS needs DCBX HOST and VER_IEEE (EINVAL); its SetPFC
//     is EINVAL until ETS has been set (bnxt_hwrm_queue_pfc_cfg returns
//     -EINVAL without bp->ieee_ets, which only a setets since the driver
//     loaded sets: a new Sim starts without it, whatever ETS it reports;
//     bnxtsim, with its lossless queues).
//   - The link partner's DCBX (SetPartner, peersim): qede and cxgb4
//     report it in DCB() as their ieee_peer_get*, cee_peer_get* and
//     peer_getapp* ops fill it, each with its own gaps and quirks.
//   - SetDevlinkParam: unknown parameter EINVAL, unsupported cmode
//     EOPNOTSUPP, value of the wrong Go type EINVAL; values kept per cmode.
//
// A link the state does not have is ENODEV. All methods are safe for
// concurrent use.
type Sim struct {
	mu sync.Mutex
	st *snapshot.KernelState
	// r is snapshot.Replay(st): every read, and each write's first check
	// that the object it sets exists and has no recorded failure.
	r      nic.Kernel
	inject func(op, ifname string) error
	ops    []string
	// hw is, per link, the DSCP → priority table the NIC classifies by
	// (mlx5's firmware dscp2prio, bnxt's HWRM dscp2pri), which dcbnl's
	// APP table need not show; filled from the APP table on first use.
	hw map[string]map[int]int
	// models is, per link, its driver's model (models.go), which holds
	// what the driver keeps and no dcbnl read shows.
	models map[string]DriverModel
	// The link's speed (link.go): speeds in Mb/s (SetSpeed), link
	// toggles counted, and, for links a driver toggled, the Speed reads
	// still to find them without an operational speed (trainingReads).
	speed    map[string]int
	toggles  map[string]int
	training map[string]int
	// slaves is each bond's slaves (SetSlaves): bond_change_mtu sets
	// their MTU with the bond's.
	slaves map[string][]string
}

var _ nic.Kernel = (*Sim)(nil)

// NewSim starts a simulation from a deep copy of st (nil: no links).
func NewSim(st *snapshot.KernelState) *Sim {
	c := st.Clone()
	if c == nil {
		c = &snapshot.KernelState{}
	}
	if c.Links == nil {
		c.Links = map[string]*snapshot.LinkState{}
	}
	return &Sim{st: c, r: snapshot.Replay(c), hw: map[string]map[int]int{}, models: map[string]DriverModel{},
		speed: map[string]int{}, toggles: map[string]int{}, training: map[string]int{}, slaves: map[string][]string{}}
}

// HardwareDSCP returns the DSCP → priority table the NIC itself classifies
// by on link name (see the type's comment): what a test checks to see that
// a change left the hardware, not only dcbnl's APP table, as it should.
func (s *Sim) HardwareDSCP(name string) map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := s.st.Links[name]
	if ls == nil {
		return nil
	}
	return maps.Clone(s.hwDSCP(name, ls))
}

// hwDSCP is the link's hardware DSCP table, made from its APP table the
// first time it is needed (the driver programmed the hardware from it).
func (s *Sim) hwDSCP(name string, ls *snapshot.LinkState) map[int]int {
	if t, ok := s.hw[name]; ok {
		return t
	}
	t := map[int]int{}
	if ls.DCB != nil {
		for _, a := range ls.DCB.Apps {
			if a.Selector == dcb.SelDSCP {
				t[int(a.Protocol)] = int(a.Priority)
			}
		}
	}
	s.hw[name] = t
	return t
}

// Inject installs a hook called before every write with the write op
// (snapshot.OpSetMTU, ...) and the netdev or devlink device. A non-nil
// error refuses the write and is returned wrapped in a *snapshot.OpError.
// The hook runs without the simulator's lock, so it may call SetStat and
// friends. nil removes it.
func (s *Sim) Inject(fn func(op, ifname string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inject = fn
}

// State returns a deep copy of the current state.
func (s *Sim) State() *snapshot.KernelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Clone()
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
	ls := s.st.Links[ifname]
	if ls == nil {
		panic(fmt.Sprintf("nictest.Sim: no link %q", ifname))
	}
	if ls.Stats == nil {
		ls.Stats = map[string]uint64{}
	}
	return ls.Stats
}

// write runs one write: the injection hook, the link lookup, the rule fn,
// and the op log. fn reports errors as bare errnos or as the *OpError of a
// read it made; write reports them under the write op.
func (s *Sim) write(op, name string, fn func(ls *snapshot.LinkState) error) error {
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
	ls := s.st.Links[name]
	if ls == nil {
		return opErr(op, name, syscall.ENODEV)
	}
	if err := fn(ls); err != nil {
		return opErr(op, name, errnoOf(err))
	}
	s.ops = append(s.ops, op+" "+name)
	return nil
}

// Reads.

func (s *Sim) Link(name string) (nic.LinkInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A link the driver toggled (mlx5sim's SetPFC) still reads up here: the
	// carrier drops later (the port change event, update_carrier_work,
	// linkwatch), which the model leaves out.
	return s.r.Link(name)
}

// SetOperState sets the operstate rtnetlink reports for link name (a
// cable pulled, a switch port down): a link not up has no speed.
func (s *Sim) SetOperState(name, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ls := s.st.Links[name]; ls != nil && ls.Link != nil {
		ls.Link.OperState = state
	}
}

// Speed is what ethtool reports: mlx5 reads it from PTYS's operational
// protocol, unknown (0) while a toggled link trains. The model lets the
// first trainingReads reads after a toggle find it training and the next
// one trained. Links not up have no speed; others run at 100 Gb/s unless
// SetSpeed says otherwise.
func (s *Sim) Speed(name string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	li, err := s.r.Link(name)
	if err != nil {
		return 0, err
	}
	if s.training[name] > 0 {
		s.training[name]--
		return 0, nil
	}
	if li.OperState != "up" {
		return 0, nil
	}
	return s.linkSpeed(name), nil
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

// DCB answers like the driver (DriverModel.ReadDCB): on mlx5_core the PFC
// requests and indications are the tx/rx per-priority pause counters, so
// scripted counters show up here too; bnxt_en reports a placeholder in
// host mode for what it does not hold; qede and cxgb4 report the link
// partner's DCBX their firmware heard (SetPartner) as their peer ops do.
func (s *Sim) DCB(name string) (*dcb.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.r.DCB(name)
	// A state of which only some members were captured comes with what
	// was, as a snapshot's reader gives it (nic.NotCapturedError.Parts).
	if st == nil {
		return nil, err
	}
	ls := s.st.Links[name]
	s.modelOf(name, ls).ReadDCB(s.link(name, ls), st)
	return st, err
}

func (s *Sim) DevlinkParams(dev string) ([]nic.DevlinkParam, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.DevlinkParams(dev)
}

// Writes: rtnetlink and ethtool.

func (s *Sim) SetMTU(name string, mtu int) error {
	return s.write(snapshot.OpSetMTU, name, func(ls *snapshot.LinkState) error {
		if _, err := s.r.Link(name); err != nil {
			return err // no link data here, or a recorded failure
		}
		if mtu <= 0 || mtu < ls.Link.MinMTU || (ls.Link.MaxMTU > 0 && mtu > ls.Link.MaxMTU) {
			return syscall.EINVAL
		}
		// mlx5e_set_dev_port_mtu leaves the buffer thresholds computed
		// for the old MTU (mlx5sim's buffer.go: the patch that recomputed
		// them was reverted, 6f5dacf88a32).
		ls.Link.MTU = mtu
		// bond_change_mtu: every slave takes the bond's MTU (dev_set_mtu
		// on each; a slave that refuses fails the bond's change, which
		// the slaves of one RoCE LAG, alike, do not).
		for _, sl := range s.slaves[name] {
			if sls := s.st.Links[sl]; sls != nil && sls.Link != nil {
				sls.Link.MTU = mtu
			}
		}
		return nil
	})
}

// SetSlaves makes slaves the slaves of bond (the host's sysfs says which:
// fixturehost does it), whose MTU bond_change_mtu sets with the bond's.
func (s *Sim) SetSlaves(bond string, slaves ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slaves[bond] = slaves
}

func (s *Sim) SetPause(name string, p nic.Pause) error {
	return s.write(snapshot.OpSetPause, name, func(ls *snapshot.LinkState) error {
		if _, err := s.r.Pause(name); err != nil {
			return err // no pause parameters here, or a recorded failure
		}
		m, l := s.modelOf(name, ls), s.link(name, ls)
		if err := m.RefusePause(l, p.Autoneg); err != nil {
			return err
		}
		*ls.Pause = p
		m.AfterPause(l)
		return nil
	})
}

func (s *Sim) SetRings(name string, r nic.Rings) error {
	return s.write(snapshot.OpSetRings, name, func(ls *snapshot.LinkState) error {
		if _, err := s.r.Rings(name); err != nil {
			return err // no rings here, or a recorded failure
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
	return s.write(snapshot.OpSetPrivFlags, name, func(ls *snapshot.LinkState) error {
		if _, err := s.r.PrivFlags(name); err != nil {
			return err // no private flags here, or a recorded failure
		}
		// Flags travel as a bitmask over the driver's names: a name the
		// driver does not have cannot be expressed.
		for f := range flags {
			if _, ok := ls.PrivFlags[f]; !ok {
				return syscall.EINVAL
			}
		}
		if err := s.modelOf(name, ls).SetPrivFlags(s.link(name, ls), flags); err != nil {
			return err
		}
		maps.Copy(ls.PrivFlags, flags)
		return nil
	})
}

// PFC storm prevention tunable values (ETHTOOL_PFC_PREVENTION_TOUT).
const (
	tunableOff  = 0
	tunableAuto = 0xffff
	tunableMin  = 80
	tunableMax  = 8000
)

func (s *Sim) SetPFCPreventionTimeout(name string, ms uint16) error {
	return s.write(snapshot.OpSetTunable, name, func(ls *snapshot.LinkState) error {
		if _, err := s.r.PFCPreventionTimeout(name); err != nil {
			return err // no tunable here, or a recorded failure
		}
		if ms != tunableOff && ms != tunableAuto && (ms < tunableMin || ms > tunableMax) {
			return syscall.EINVAL
		}
		// What the driver programs and reads back (mlx5: 100 ms for
		// "auto").
		*ls.PFCPreventionTimeout = s.modelOf(name, ls).Tunable(ms)
		return nil
	})
}

// Writes: devlink.

func (s *Sim) SetDevlinkParam(dev, name string, cmode uint8, value any) error {
	s.mu.Lock()
	hook := s.inject
	s.mu.Unlock()
	if hook != nil {
		if err := hook(snapshot.OpSetDevlinkParam, dev); err != nil {
			return opErr(snapshot.OpSetDevlinkParam, dev, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.st.Devlink[dev]
	if !ok {
		_, err := s.r.DevlinkParams(dev)
		return opErr(snapshot.OpSetDevlinkParam, dev, errnoOf(err))
	}
	for i := range ps {
		p := &ps[i]
		if p.Name != name {
			continue
		}
		if !sameDevlinkType(p.Type, value) {
			return opErr(snapshot.OpSetDevlinkParam, dev, syscall.EINVAL)
		}
		for j := range p.Values {
			if p.Values[j].Cmode == cmode {
				p.Values[j].Value = value
				s.ops = append(s.ops, snapshot.OpSetDevlinkParam+" "+dev)
				return nil
			}
		}
		return opErr(snapshot.OpSetDevlinkParam, dev, syscall.EOPNOTSUPP)
	}
	return opErr(snapshot.OpSetDevlinkParam, dev, syscall.EINVAL)
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

// errnoOf is the errno inside the *OpError of a read a write rule made
// (which names the read op), or err itself.
func errnoOf(err error) error {
	if oe, ok := errors.AsType[*snapshot.OpError](err); ok {
		return oe.Err
	}
	return err
}

func opErr(op, name string, err error) error {
	return &snapshot.OpError{Op: op, Name: name, Err: err}
}

// Config is the simulated kernel's configuration as JSON, counters left
// out: they are not settings, and a NIC resets some when PFC or pause
// changes (mlx5 drops and recreates the per-priority pause counters). Two
// Configs are equal exactly when every setting is; tests compare them to
// check that a rollback restored the host byte for byte.
func (s *Sim) Config() string {
	st := s.State()
	for _, l := range st.Links {
		l.Stats = nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		panic(err) // KernelState holds only JSON-encodable values
	}
	return string(b)
}
