package driver

import (
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// Driver is what one NIC driver adds to a plain write. Every method
// answers from what it is given: a driver reads no host. A method whose
// driver has nothing to add returns the zero value (Base does that for
// every method).
type Driver interface {
	// Name is the driver family, as the driver's package is named:
	// "mlx5", "bnxt", "ice", "generic".
	Name() string
	// Caps says which of the planner's driver models apply to the port.
	Caps() Caps

	// Companions are the settings the driver changes by itself when c
	// is written: the plan journals them so that rollback restores them.
	Companions(c policy.Change) []Companion
	// Implied are the settings that must hold a value for s to mean
	// what it says on this driver, whether s changes or not.
	Implied(s policy.Setting, f Facts) []Companion

	// RefuseETS says why the driver would not take ets as written, ""
	// when it takes it. It is asked once per ETS change.
	RefuseETS(ets *policy.ETS) string
	// PFCNeedsETS: a PFC write fails unless ETS was written since the
	// driver loaded, so a PFC change brings the profile's ETS written
	// again (with rewriteNote), or is refused (with refusal) when the
	// profile has no ETS. Both "" for a driver without the need.
	PFCNeedsETS() (rewriteNote, refusal string)

	// DeleteAppFirst: a DSCP is remapped by deleting its old APP entry
	// before adding the new one (else after).
	DeleteAppFirst() bool
	// UndoBefore lists, for a step writing settings of kind k on a port,
	// the kinds whose steps on the same port rollback must undo after
	// it, although the apply wrote them after it (the driver reads their
	// undo through the state k restores).
	UndoBefore(k policy.Kind) []policy.Kind
	// DCBXMode is the dcbnl DCBX mode to write for qos.dcbx = "host"
	// (host) or "firmware", given the mode the port reports now (read
	// only when the answer depends on it; 0 when unreadable).
	DCBXMode(host bool, reported func() uint8) uint8
	// HiddenDCB says, as a note for the plan, when st's ETS and PFC are
	// a placeholder the driver reports instead of what the hardware
	// does; "" when they are what the hardware does.
	HiddenDCB(st *dcb.State) string
	// PlanDCBX says what qos.dcbx = want means on this driver: a refusal
	// or a note for its change (changed), or a warning when it is in
	// sync. reported reads the port's DCBX mode (ok false: unreadable),
	// for the drivers whose answer depends on it.
	PlanDCBX(want string, changed bool, reported func() (mode uint8, ok bool)) DCBXPlan
	// WillingDCBX is the warning for a port left in firmware DCBX while
	// the profile manages the DCBX-negotiated settings named, when the
	// driver's firmware is willing (a switch can overwrite them); "" when
	// it is not.
	WillingDCBX(negotiated []string) string

	// Disruptions says what writing c disturbs on its port beyond the
	// value itself (link toggles, channel resets, what cannot be undone),
	// one line each.
	Disruptions(c *policy.Change) []string

	// BufferCell is the size of the cells the driver programs receive
	// buffers in, as far as the sizes the NIC reports (sizes, total) tell,
	// and how it was found; 0 when the driver programs bytes, or the cell
	// cannot be told.
	BufferCell(sizes [8]uint32, total uint32) (cell int, how string)

	// FirmwareLLDP says when the NIC's firmware runs an LLDP agent that
	// takes the switch's frames before the host sees them, "" when not
	// or when it cannot be told.
	FirmwareLLDP(f LLDPFacts) string

	// Instead says where a setting of kind k lives on this driver when
	// the kernel interface rocectl reads it through has none of it:
	// firmware NVConfig, another build of the driver, a vendor tool, or
	// the per-connection knob that takes its place. It completes an
	// "unsupported" so that the operator knows where to go; "" when the
	// driver knows no other place.
	Instead(k policy.Kind, f PortFacts) string

	// CCModes are the congestion-control modes ([ecn] mode, policy's
	// CCModes) rocectl can run on the port through this driver, and
	// where the others live ("" when the list says it all); known is
	// false when that depends on a fact the host did not give (an ECN
	// interface not probed): then nothing is refused on it.
	CCModes(f PortFacts) (modes []string, elsewhere string, known bool)
	// CCSettings are the settings that make congestion-control mode on
	// the port, for a driver whose algorithm is a switch of its own
	// (irdma's configfs): the plan journals them like companions of the
	// profile's [ecn] mode. nil where the mode is made of the ECN
	// settings the profile resolves to.
	CCSettings(mode string, f PortFacts) []Companion

	// RefuseECN says why the driver cannot hold the profile's [ecn]
	// priorities as written, "" when it can. It is asked for each of a
	// port's ECN changes.
	RefuseECN(ecn *policy.ECN) string

	// PauseExcludesPFC says why the driver refuses a link flow control
	// (global pause) write while PFC is enabled on the port, "" when it
	// takes one.
	PauseExcludesPFC() string
	// LimitDCB says why the driver would not take the priority table
	// prioTC with PFC on pfc, given the port's TC count maxTC (its
	// ets_cap, 0 unknown): a first line with what is wrong and a second
	// with what the driver allows; "" when it takes them. It is asked
	// once per port with an ETS or PFC change.
	LimitDCB(prioTC [8]int, pfc []int, maxTC int) string
}

// PortFacts is what Instead may say more with: the port's PCI address
// ("" unknown) and its ECN interface as the host found it.
type PortFacts struct {
	PCI string
	ECN ECNFlavour
}

// Caps says which models of a driver's resources the planner follows
// through a plan, each in its driver's package.
type Caps struct {
	// BufferChecks: the driver checks its lossless receive buffers on
	// PFC and buffer writes and computes their thresholds only then
	// (driver/mlx5: Port, the xoff recomputes).
	BufferChecks bool
	// LosslessQueues: PFC priorities are paused only on the traffic
	// classes the driver has moved onto its lossless queues, which only
	// a PFC write does (driver/bnxt: ETSProblem, LosslessProblem).
	LosslessQueues bool
	// CableLength: the driver takes ieee_pfc's delay field as the
	// cable length in metres, for its buffer sizing (mlx5).
	CableLength bool
	// PFCTogglesLink: a write that changes the PFC priorities takes the
	// link down and up (mlx5e_dcbnl_ieee_setpfc).
	PFCTogglesLink bool
	// CCCommit: the driver stages congestion-control writes and takes
	// them only when a commit file is written (bnxt_re configfs
	// apply_store): a port's ECN changes are one step that ends with the
	// commit, and rollback writes the old values and commits again.
	CCCommit bool
}

// DCBXPlan is what a driver says of a qos.dcbx setting: at most one of
// a refusal of its change, a note on its change, or a warning.
type DCBXPlan struct {
	Refuse, Note, Warning string
	// Drop: the driver makes the change itself through a companion of
	// it (ice: the firmware LLDP agent's private flag), so the change
	// leaves the plan and Note goes on that companion's change.
	Drop bool
}

// Companion is a setting a driver changes by itself, or one a managed
// setting needs: what it must hold, and why, citing the driver function.
type Companion struct {
	Kind  policy.Kind
	Name  string // the setting's name, as policy names it
	Arg   string // the setting's kind-specific argument (policy.Setting.Arg)
	Value string // what the setting must hold
	Note  string // why, citing the driver function
}

// ECNFlavour says through which interface a port's ECN/DCQCN knobs are
// reached, as the host found it (nic.ECNKind without importing nic).
type ECNFlavour int

const (
	ECNUnknown      ECNFlavour = iota // not probed, or no interface
	ECNOFED                           // DOCA-OFED sysfs
	ECNUpstream                       // upstream mlx5_ib debugfs cc_params
	ECNIrdma                          // Intel's out-of-tree irdma configfs
	ECNAbsent                         // probed: the host has no ECN interface for the port
	ECNBnxtConfigfs                   // Broadcom's out-of-tree bnxt_re configfs cc group
	ECNBnxtDebugfs                    // mainline bnxt_re's debugfs cc_config
)

// Facts is what the host read that a driver's answer depends on, each
// read on first use: most answers need none of it.
type Facts struct {
	// ECN says through which interface the port's ECN knobs are
	// reached; nil: not known.
	ECN func() ECNFlavour
}

// LLDPFacts is what FirmwareLLDP may read of a port, each on use: nil
// answers mean not readable.
type LLDPFacts struct {
	Netdev    string
	DCBX      func() *uint8          // the dcbnl DCBX mode
	PrivFlags func() map[string]bool // ethtool private flags
}

// Base answers every method with "nothing to add": a driver embeds it
// and overrides what it knows.
type Base struct{}

func (Base) Caps() Caps                                           { return Caps{} }
func (Base) Companions(policy.Change) []Companion                 { return nil }
func (Base) Implied(policy.Setting, Facts) []Companion            { return nil }
func (Base) RefuseETS(*policy.ETS) string                         { return "" }
func (Base) PFCNeedsETS() (string, string)                        { return "", "" }
func (Base) DeleteAppFirst() bool                                 { return false }
func (Base) UndoBefore(policy.Kind) []policy.Kind                 { return nil }
func (Base) HiddenDCB(*dcb.State) string                          { return "" }
func (Base) PlanDCBX(string, bool, func() (uint8, bool)) DCBXPlan { return DCBXPlan{} }
func (Base) WillingDCBX([]string) string                          { return "" }
func (Base) Disruptions(*policy.Change) []string                  { return nil }
func (Base) BufferCell([8]uint32, uint32) (int, string)           { return 0, "" }
func (Base) FirmwareLLDP(LLDPFacts) string                        { return "" }
func (Base) Instead(policy.Kind, PortFacts) string                { return "" }
func (Base) CCModes(PortFacts) ([]string, string, bool)           { return nil, "", false }
func (Base) CCSettings(string, PortFacts) []Companion             { return nil }
func (Base) RefuseECN(*policy.ECN) string                         { return "" }
func (Base) PauseExcludesPFC() string                             { return "" }
func (Base) LimitDCB([8]int, []int, int) string                   { return "" }
func (Base) DCBXMode(host bool, reported func() uint8) uint8      { return HostOrFirmware(host, reported) }

// IsDCB says whether k is set through dcbnl: DCBX, trust, the DSCP map,
// ETS, PFC, cable length (PFC's delay field) and the receive buffers.
func IsDCB(k policy.Kind) bool {
	switch k {
	case policy.KindDCBX, policy.KindTrust, policy.KindDSCPMap, policy.KindETSPrioTC, policy.KindETSTSA,
		policy.KindETSBandwidth, policy.KindPFC, policy.KindCableLength, policy.KindPrioBuffer, policy.KindBufferSize:
		return true
	}
	return false
}

// PerConnectionTC is where a forced verbs traffic class's work is done
// on a driver without one: the TOS each connection asks for.
const PerConnectionTC = "the TOS each connection asks for: roce.default_tos (rdma_cm) and nccl.IB_TC (NCCL)"

// LLDManagedLLDP is FirmwareLLDP for a driver that says nothing more
// than its DCBX mode: LLD_MANAGED says the firmware runs DCBX, whose LLDP
// agent may take the switch's frames before the host sees them. module
// names the driver ("" : the NIC).
func LLDManagedLLDP(module string, f LLDPFacts) string {
	if f.DCBX == nil {
		return ""
	}
	if mode := f.DCBX(); mode == nil || *mode&dcb.DCBXLLDManaged == 0 {
		return ""
	}
	if module == "" {
		module = "the NIC"
	}
	return module + "'s firmware runs DCBX (DCBX mode LLD_MANAGED): its LLDP agent may take the switch's frames before the host sees them"
}

// HostOrFirmware is the DCBX mode most drivers take: host mode IEEE
// (keeping the CEE/IEEE version bits the port reports), or 0 for the
// firmware.
func HostOrFirmware(host bool, reported func() uint8) uint8 {
	if !host {
		return 0
	}
	return dcb.DCBXHost | dcb.DCBXVerIEEE | reported()&(dcb.DCBXVerCEE|dcb.DCBXVerIEEE)
}

// ZeroBandwidth counts ets's "ets" traffic classes: whether one is at
// 0 %, how many are not, and whether one has 100 %. The drivers that
// refuse a starved class (RefuseETS) decide on these.
func ZeroBandwidth(ets *policy.ETS) (zero bool, nonZero int, full bool) {
	for i, tsa := range ets.TCTSA {
		if tsa != policy.TSAETS {
			continue
		}
		switch bw := ets.TCBandwidth[i]; {
		case bw == 0:
			zero = true
		case bw == 100:
			full, nonZero = true, nonZero+1
		default:
			nonZero++
		}
	}
	return zero, nonZero, full
}
