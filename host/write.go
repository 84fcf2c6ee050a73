package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/driver/known"

	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// Some settings live in one kernel object and must be written together: the
// three ETS keys are one ieee_ets, PFC priorities and cable length one
// ieee_pfc, trust and the DSCP map one APP table. A Step is such a group on
// one port (or one setting alone).
type Step struct {
	Scope   string          `json:"scope"`
	Group   string          `json:"group"`
	Changes []policy.Change `json:"changes"`
	// Undo holds what a setting needs beyond its canonical before-value to
	// be restored byte for byte (the whole previous NCCL file).
	Undo *UndoBlob `json:"undo,omitempty"`
	// DSCPApps is the port's whole DSCP APP table before the step, for
	// steps that change trust or the DSCP map: undo restores exactly it
	// (nil in journals written before rocectl kept it).
	DSCPApps *AppTable `json:"dscp_apps,omitempty"`
	// Slaves is set on a step that writes a per-physical-port setting to
	// the slaves of a RoCE LAG bond (Scope is the bond): each slave's part
	// of the step, in write order, with what its undo needs (DSCPApps
	// above is then nil). Changes holds every slave's changes, each on its
	// slave's port. The slaves are one step because mlx5 keeps RoCE LAG
	// only while they agree: a transaction writes all of them, and puts
	// back those it wrote when one fails, before it goes on (package
	// apply). Parts splits such a step into one step per slave.
	Slaves []SlaveState `json:"slaves,omitempty"`
	// CC is what a bnxt_re congestion-control step's attributes held
	// before it (cc.go): undo writes them back and commits again.
	CC *CCSaved `json:"cc,omitempty"`
	// Firmware is what a firmware step's parameters held at the next
	// boot before it, per device (firmware.go): undo writes them back.
	Firmware []FirmwareSaved `json:"firmware,omitempty"`
}

// SlaveState is one slave's part of a LAG step: its netdev and its saved
// state from before the step.
type SlaveState struct {
	Netdev   string    `json:"netdev"`
	DSCPApps *AppTable `json:"dscp_apps,omitempty"`
}

// Parts splits a step into the steps of one netdev each that it writes: a
// LAG step into one per slave, in write order (each with the slave's saved
// state); any other step is its own one part.
func (st Step) Parts() []Step {
	if len(st.Slaves) == 0 {
		return []Step{st}
	}
	parts := make([]Step, 0, len(st.Slaves))
	for _, s := range st.Slaves {
		p := Step{Scope: s.Netdev, Group: st.Group, Undo: st.Undo, DSCPApps: s.DSCPApps, CC: st.CC, Firmware: st.Firmware}
		for _, c := range st.Changes {
			if c.Port != nil && c.Port.Netdev == s.Netdev {
				p.Changes = append(p.Changes, c)
			}
		}
		parts = append(parts, p)
	}
	return parts
}

// Netdevs lists the netdevs a step writes: a LAG step's slaves, or the
// port of its changes ("" for a host step).
func (st Step) Netdevs() []string {
	if len(st.Slaves) > 0 {
		out := make([]string, len(st.Slaves))
		for i, s := range st.Slaves {
			out[i] = s.Netdev
		}
		return out
	}
	if p := st.Changes[0].Port; p != nil {
		return []string{p.Netdev}
	}
	return []string{""}
}

// AppTable is a saved set of APP entries.
type AppTable struct {
	Entries []dcb.App `json:"entries"`
}

// UndoBlob is a file's previous content, or its absence.
type UndoBlob struct {
	Path   string `json:"path"`
	Absent bool   `json:"absent"`
	Data   []byte `json:"data,omitempty"`
	Mode   uint32 `json:"mode,omitempty"`
	// Dir is the directory the content was read from (zero: there was
	// none); the write and the restore refuse another one. nil in a
	// journal written before it was recorded: not checked.
	Dir *nic.DirID `json:"dir,omitempty"`
}

// Steps groups a plan's changes into write steps, keeping the apply order:
// the changes of one port that go through one kernel object are one step,
// and so are those of a RoCE LAG's slaves (Place put a bond's setting on
// each of them): one step per setting, or per object, for all slaves of
// the bond.
//
// A LAG step's slaves are in the order they first appear in the plan,
// which Place made the bond's order (each setting fanned out slave by
// slave), so that a slave in sync on the step's first setting does not
// come first in one step and second in another.
func Steps(plan *policy.Plan) ([]Step, error) {
	var steps []Step
	index := map[string]int{}
	last := map[string]int{} // the latest step holding a change of each port
	slaveRank := map[string]int{}
	for _, c := range plan.Changes {
		if c.Port != nil && c.Port.Master != "" {
			if _, ok := slaveRank[c.Port.Netdev]; !ok {
				slaveRank[c.Port.Netdev] = len(slaveRank)
			}
		}
	}
	for _, c := range plan.Changes {
		k, err := kindOf(c.Kind)
		if err != nil {
			return nil, err
		}
		g := k.obj.group
		if (k.obj == objBuffer || k.obj == objPFC) && c.Arg != "" {
			// A buffer write to an intermediate state of a path
			// (plan.placePath: Arg "stepN"), or the second part of a
			// PFC write split in two (plan.splitPFC: Arg "split"),
			// is a step of its own.
			g += "." + c.Arg
		}
		if g == "" && ccStep(c) {
			g = ccGroup
		}
		scope := c.Scope
		if c.Port != nil {
			scope = c.Port.Netdev
		}
		slave := ""
		if c.Port != nil && c.Port.Master != "" {
			scope, slave = c.Port.Master, c.Port.Netdev
		}
		if g == "" {
			if slave == "" {
				steps = append(steps, Step{Scope: c.Scope, Group: c.Name, Changes: []policy.Change{c}})
				continue
			}
			g = c.Name // one setting, on every slave
		}
		id := scope + "/" + g
		owner := scope
		if slave != "" {
			owner = slave
		}
		i, ok := index[id]
		if !ok || last[owner] > i {
			// A change joins the step of its object only where that
			// keeps its port's order: the planner ordered each port's
			// (each slave's) writes for the driver's checks, and a
			// later change pulled back into an earlier step would be
			// written before the port's changes in between (a slave's
			// PFC write before its buffer writes, on a LAG whose other
			// slave wrote PFC first: its rollback failed in mlx5's
			// buffer checks). Then it starts a step of its own.
			i = len(steps)
			index[id] = i
			steps = append(steps, Step{Scope: scope, Group: g})
		}
		if k.obj != objXoff {
			// A recompute (an identical PFC write around another
			// change) keeps its own place but holds no other back:
			// a buffer write's second change may join its step over
			// the MTU recompute written before the bond's MTU.
			last[owner] = max(last[owner], i)
		}
		st := &steps[i]
		st.Changes = append(st.Changes, c)
		if slave != "" && !slices.ContainsFunc(st.Slaves, func(s SlaveState) bool { return s.Netdev == slave }) {
			st.Slaves = append(st.Slaves, SlaveState{Netdev: slave})
		}
	}
	for i := range steps {
		slices.SortStableFunc(steps[i].Slaves, func(a, b SlaveState) int { return slaveRank[a.Netdev] - slaveRank[b.Netdev] })
	}
	return steps, nil
}

// WriteError is a write the host refused, worded for the operator: port,
// setting, value, and the kernel's reason.
type WriteError struct {
	Scope string
	Key   string
	Value string
	Err   error
}

func (e *WriteError) Error() string {
	reason := e.Err.Error()
	if n := errnoName(e.Err); n != "" && !strings.Contains(reason, n) {
		reason += " (" + n + ")"
	}
	return fmt.Sprintf("%s = %s: %s", e.Key, e.Value, reason)
}

func (e *WriteError) Unwrap() error { return e.Err }

// AlwaysUndo says whether rollback must write st even when its settings
// already read as restored: a step that makes the driver act (mlx5's
// buffer threshold recompute) has no value of its own that a read could
// find restored.
func (st Step) AlwaysUndo() bool {
	k, err := kindOf(st.Changes[0].Kind)
	return err == nil && k.obj.action
}

// UndoNeeded says whether rollback must write st: a step whose settings
// do not read back at their before-values (or cannot be read), or a driver
// action with something to act on. An mlx5 recompute has that only when a
// write of this process changed what the thresholds depend on
// (writeIdenticalPFC writes nothing otherwise); bnxt's remap always does.
// A step that needs nothing is left alone and reported unchanged, never
// restored.
func (h *Host) UndoNeeded(owed *Owed, st Step) bool {
	if pathStep(st) {
		// A step of a path through intermediate buffer states starts
		// where the one before it ended: it is undone when the host
		// holds what it wrote, and a step never written (the host still
		// where an earlier one left it) is not this step's to undo.
		return h.CheckStep(st, false) == nil
	}
	if !st.AlwaysUndo() {
		return h.CheckStep(st, true) != nil
	}
	c := st.Changes[0]
	return c.Kind != policy.KindXoffRecompute || c.Port == nil || owed.has(c.Port.Netdev)
}

// pathStep says whether st is one write of a path through intermediate
// buffer states (plan.placePath: a buffer change with Arg "stepN").
func pathStep(st Step) bool {
	if len(st.Changes) == 0 {
		return false
	}
	c := st.Changes[0]
	return (c.Kind == policy.KindPrioBuffer || c.Kind == policy.KindBufferSize) && strings.HasPrefix(c.Arg, "step")
}

// CaptureUndo records, before the first write, what the step needs for a
// byte-exact undo beyond its before-values.
// A LAG step saves each slave's.
func (h *Host) CaptureUndo(d *policy.Desired, st *Step) error {
	k, err := kindOf(st.Changes[0].Kind)
	if err != nil || k.obj.capture == nil {
		return err
	}
	if len(st.Slaves) == 0 {
		return k.obj.capture(h, d, st)
	}
	for i, p := range st.Parts() {
		n := len(p.Firmware)
		if err := k.obj.capture(h, d, &p); err != nil {
			return err
		}
		st.Slaves[i].DSCPApps = p.DSCPApps
		st.Firmware = append(st.Firmware, p.Firmware[n:]...)
	}
	return nil
}

// stepWriter is one step being written: its port, the values to write
// (after-values going forward, before-values when undoing) and, going
// forward, the desired state (the NCCL file is rendered from all of it).
type stepWriter struct {
	ctx  context.Context // ends what the write waits for (a link's speed)
	h    *Host
	owed *Owed // what the transaction's writes owe the buffer thresholds
	d    *policy.Desired
	st   Step
	undo bool
	port *port.Port
}

// value is what c is written as in this direction.
func (w *stepWriter) value(c policy.Change) string {
	if w.undo {
		return c.Before
	}
	return c.Value
}

// change returns the step's change of kind k, if it has one.
func (w *stepWriter) change(k policy.Kind) (policy.Change, bool) {
	for _, c := range w.st.Changes {
		if c.Kind == k {
			return c, true
		}
	}
	return policy.Change{}, false
}

// only is the step's one change, for objects that hold a single setting.
func (w *stepWriter) only() (policy.Change, string) {
	c := w.st.Changes[0]
	return c, w.value(c)
}

// fail words err as a refused write of c.
func (w *stepWriter) fail(c policy.Change, err error) error {
	var we *WriteError
	if err == nil || errors.As(err, &we) {
		return err
	}
	return &WriteError{Scope: c.Scope, Key: c.Key, Value: displayValue(w.value(c), w.undo && c.Absent), Err: err}
}

// WriteStep writes a step's values: the after-values going forward, the
// before-values when undoing (undo = true). d may be nil when undoing.
// ctx ends what a write waits for (the speed of a link a PFC change
// toggled, before its thresholds are recomputed): a SIGINT during an
// apply stops the wait and rolls back. A rollback passes one that never
// ends, so that it puts back all it can.
//
// A LAG step is written slave by slave (Parts): going forward it stops at
// the first slave that fails, undoing puts back every slave it can. What
// to do about the slaves a failed forward write left changed is the
// transaction's business (package apply writes the parts itself).
func (h *Host) WriteStep(ctx context.Context, owed *Owed, d *policy.Desired, st Step, undo bool) error {
	if len(st.Slaves) > 0 {
		var errs []error
		for _, p := range st.Parts() {
			if err := h.WriteStep(ctx, owed, d, p, undo); err != nil {
				if !undo {
					return err
				}
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	c0 := st.Changes[0]
	k, err := kindOf(c0.Kind)
	if err != nil {
		return err
	}
	w := &stepWriter{ctx: ctx, h: h, owed: owed, d: d, st: st, undo: undo, port: c0.Port}
	switch {
	case undo && k.obj.undo != nil:
		return w.fail(c0, k.obj.undo(w))
	case undo && c0.Absent && k.obj.group == "":
		if k.obj.clear == nil {
			return w.fail(c0, fmt.Errorf("the host had no value before, and there is no way to remove one"))
		}
		return w.fail(c0, k.obj.clear(w, c0))
	}
	return w.fail(c0, k.obj.write(w))
}

// CheckStep reads a step's settings back once and compares them with the
// values the step should have left (after-values, or before-values when
// undone). A setting that differs is a *policy.Mismatch; a read that
// fails is returned as such.
//
// A LAG step is checked on every slave; the first that differs is returned.
func (h *Host) CheckStep(st Step, undo bool) error {
	if len(st.Slaves) > 0 {
		for _, p := range st.Parts() {
			if err := h.CheckStep(p, undo); err != nil {
				return err
			}
		}
		return nil
	}
	c0 := st.Changes[0]
	k, err := kindOf(c0.Kind)
	if err != nil {
		return err
	}
	if undo && k.obj.checkUndo != nil {
		return k.obj.checkUndo(h, st)
	}
	return h.checkSettings(st, undo)
}

// checkSettings reads each setting of a step back once and compares it,
// through policy.DiffSettings, with the value the step should have left.
func (h *Host) checkSettings(st Step, undo bool) error {
	c0 := st.Changes[0]
	ncclFile := ""
	if st.Undo != nil {
		ncclFile = st.Undo.Path
	}
	r := h.newPortReader(c0.Port, ncclFile)
	o := policy.NewObserved()
	want := make([]policy.Setting, 0, len(st.Changes))
	for _, c := range st.Changes {
		v, present, err := r.read(c.Setting, nil)
		if err != nil {
			return fmt.Errorf("read back %s: %w", c.Key, err)
		}
		if present {
			o.Values[c.Key] = v
		}
		s := c.Setting
		if undo {
			s.Value = c.Before
			if c.Absent {
				s.Value = policy.NoValue
			}
		}
		want = append(want, s)
	}
	if mm := policy.DiffSettings(want, o).Mismatches(); len(mm) > 0 {
		return &mm[0]
	}
	return nil
}

func displayValue(v string, absent bool) string {
	if absent {
		return "(none)"
	}
	return v
}

func writeMTU(w *stepWriter) error {
	_, v := w.only()
	n, err := policy.IntCodec.Parse(v)
	if err != nil {
		return err
	}
	if err := w.h.K.SetMTU(w.port.Netdev, n); err != nil {
		return err
	}
	// mlx5 keeps the buffer thresholds of the old MTU (xoff.go), on the
	// port or on each slave of a bond, whose MTU bond_change_mtu sets.
	w.owed.add(w.port.Netdev)
	for _, sl := range w.port.Slaves() {
		w.owed.add(sl.Netdev)
	}
	return nil
}

func writePrivFlag(w *stepWriter) error {
	c, v := w.only()
	b, err := policy.BoolCodec.Parse(v)
	if err != nil {
		return err
	}
	return w.h.K.SetPrivFlags(w.port.Netdev, map[string]bool{c.Arg: b})
}

// writePause sets rx and tx pause and keeps pause autonegotiation as the
// port has it: a global_pause value says nothing about it, and a write
// that cleared it (bnxt_set_pauseparam takes autoneg off and forces the
// link's flow control) left it off after the rollback too. With autoneg
// on, rx and tx are what the port advertises: off advertises no pause.
func writePause(w *stepWriter) error {
	_, v := w.only()
	p, err := pauseOf(v)
	if err != nil {
		return err
	}
	cur, err := w.h.K.Pause(w.port.Netdev)
	if err != nil {
		return err
	}
	p.Autoneg = cur.Autoneg
	return w.h.K.SetPause(w.port.Netdev, p)
}

// writeDCBX: on mlx5 a mode with HOST switches firmware DCBX to host mode
// and becomes the reported capability; 0 hands DCBX back to the firmware
// agent, which only clears HOST (reference §A1.8). Keeping the version
// bits the driver reports makes the round trip exact. bnxt takes any mode
// but LLD_MANAGED as its new dcbx_cap whole (bnxt_dcbnl_setdcbx): 0 there
// would drop VER_IEEE too, so "firmware" clears HOST from what it reports.
func writeDCBX(w *stepWriter) error {
	_, v := w.only()
	nd := w.port.Netdev
	// Read only when the driver's mode depends on it.
	reported := func() uint8 {
		if st, err := w.h.K.DCB(nd); err == nil && st.DCBX != nil {
			return *st.DCBX
		}
		return 0
	}
	return w.h.K.SetDCBX(nd, known.For(w.port.Driver).DCBXMode(v == "host", reported))
}

func writeStorm(w *stepWriter) error {
	_, v := w.only()
	ms, err := policy.StormCodec.Parse(v)
	if err != nil {
		return err
	}
	return w.h.K.SetPFCPreventionTimeout(w.port.Netdev, ms)
}

func writeRoCEMode(w *stepWriter) error {
	_, v := w.only()
	mode := nic.RoCEModeV2
	if v == "v1" {
		mode = nic.RoCEModeV1
	}
	return nic.SetRoCEMode(w.h.FS, w.port.RDMADevice, w.port.PortNum, mode)
}

func writeRoCETOS(w *stepWriter) error {
	_, v := w.only()
	n, err := policy.IntCodec.Parse(v)
	if err != nil {
		return err
	}
	return nic.SetRoCETOS(w.h.FS, w.port.RDMADevice, w.port.PortNum, n)
}

func writeTrafficClass(w *stepWriter) error {
	_, v := w.only()
	n, err := policy.IntCodec.Parse(v)
	if err != nil {
		return err
	}
	return nic.SetTrafficClass(w.h.FS, w.port.RDMADevice, w.port.PortNum, n)
}

func clearTrafficClass(w *stepWriter, _ policy.Change) error {
	return nic.ClearTrafficClass(w.h.FS, w.port.RDMADevice, w.port.PortNum)
}

// pauseOf is a global_pause value as ethtool takes it.
func pauseOf(v string) (nic.Pause, error) {
	p, err := policy.PauseCodec.Parse(v)
	return nic.Pause{Rx: p.Rx, Tx: p.Tx}, err
}

// writeETS does GET → modify → SET of ieee_ets. Non-ETS classes get 0
// bandwidth: newer kernels reject anything else, and mlx5 reports 100 %
// for them, so a naive read-modify-write would fail.
func writeETS(w *stepWriter) error {
	st, err := w.h.K.DCB(w.port.Netdev)
	if err != nil {
		return err
	}
	if st.ETS == nil {
		return nic.Unsupportedf("driver does not expose ETS")
	}
	e := *st.ETS
	if c, ok := w.change(policy.KindETSPrioTC); ok {
		v, err := policy.Ints8Codec.Parse(w.value(c))
		if err != nil {
			return err
		}
		for i := range v {
			e.PrioTC[i] = uint8(v[i])
		}
	}
	if c, ok := w.change(policy.KindETSTSA); ok {
		v, err := policy.Strings8Codec.Parse(w.value(c))
		if err != nil {
			return err
		}
		for i := range v {
			e.TCTSA[i] = tsaValue(v[i])
		}
	}
	if c, ok := w.change(policy.KindETSBandwidth); ok {
		v, err := policy.Ints8Codec.Parse(w.value(c))
		if err != nil {
			return err
		}
		for i := range v {
			e.TCTxBW[i] = uint8(v[i])
		}
	}
	for tc := 0; tc < 8; tc++ {
		if e.TCTSA[tc] != dcb.TSAETS {
			e.TCTxBW[tc] = 0
		}
	}
	return w.h.K.SetETS(w.port.Netdev, e)
}

// writePFC does GET → modify → SET of ieee_pfc (enable bitmap and, on mlx5,
// the cable length carried in delay). A PFC change flaps an mlx5 link.
func writePFC(w *stepWriter) error {
	st, err := w.h.K.DCB(w.port.Netdev)
	if err != nil {
		return err
	}
	if st.PFC == nil {
		return nic.Unsupportedf("driver does not expose PFC")
	}
	p := *st.PFC
	if c, ok := w.change(policy.KindPFC); ok {
		b, err := policy.PrioCodec.Parse(w.value(c))
		if err != nil {
			return err
		}
		p.Enable = b
	}
	if c, ok := w.change(policy.KindCableLength); ok {
		n, err := policy.IntCodec.Parse(w.value(c))
		if err != nil {
			return err
		}
		p.Delay = uint16(n)
	}
	if p.Enable != st.PFC.Enable && known.For(w.port.Driver).Caps().PFCTogglesLink {
		// mlx5e_dcbnl_ieee_setpfc toggles the link before anything it
		// may fail on after: the thresholds it computes are those of a
		// link without speed.
		w.owed.add(w.port.Netdev)
	}
	return w.h.K.SetPFC(w.port.Netdev, p)
}

func writeBuffer(w *stepWriter) error {
	st, err := w.h.K.DCB(w.port.Netdev)
	if err != nil {
		return err
	}
	if st.Buffer == nil {
		return nic.Unsupportedf("driver does not expose receive buffers")
	}
	b := *st.Buffer
	if c, ok := w.change(policy.KindPrioBuffer); ok {
		v, err := policy.Ints8Codec.Parse(w.value(c))
		if err != nil {
			return err
		}
		for i := range v {
			b.PrioBuffer[i] = uint8(v[i])
		}
	}
	if c, ok := w.change(policy.KindBufferSize); ok {
		v, err := policy.Sizes8Codec.Parse(w.value(c))
		if err != nil {
			return err
		}
		for i := range v {
			b.Size[i] = uint32(v[i])
		}
	}
	return w.h.K.SetBuffer(w.port.Netdev, b)
}

func writeRings(w *stepWriter) error {
	r, err := w.h.K.Rings(w.port.Netdev)
	if err != nil {
		return err
	}
	for _, c := range w.st.Changes {
		n, err := policy.IntCodec.Parse(w.value(c))
		if err != nil {
			return err
		}
		if c.Kind == policy.KindRxRing {
			r.Rx = uint32(n)
		} else {
			r.Tx = uint32(n)
		}
	}
	return w.h.K.SetRings(w.port.Netdev, r)
}

func writeDevlink(w *stepWriter) error {
	c, v := w.only()
	h, name := w.h, c.Arg
	dev, err := h.devlinkHandle(w.port)
	if err != nil {
		return err
	}
	params, err := h.K.DevlinkParams(dev)
	if err != nil {
		return err
	}
	for _, p := range params {
		if p.Name != name {
			continue
		}
		cmode, ok := uint8(0), false
		for _, pv := range p.Values {
			if pv.Cmode == nic.CmodeRuntime {
				cmode, ok = nic.CmodeRuntime, true
				break
			}
			if pv.Cmode == nic.CmodeDriverinit {
				cmode, ok = nic.CmodeDriverinit, true
			}
		}
		if !ok {
			return nic.Unsupportedf("devlink parameter %s has no runtime or driverinit mode", name)
		}
		val, err := devlinkValue(p.Type, v)
		if err != nil {
			return err
		}
		return h.K.SetDevlinkParam(dev, name, cmode, val)
	}
	return nic.Unsupportedf("%s has no devlink parameter %s", dev, name)
}

func devlinkValue(typ, v string) (any, error) {
	switch typ {
	case "bool":
		return strconv.ParseBool(v)
	case "string":
		return v, nil
	case "u8", "u16", "u32":
		bits := map[string]int{"u8": 8, "u16": 16, "u32": 32}[typ]
		n, err := strconv.ParseUint(v, 10, bits)
		if err != nil {
			return nil, fmt.Errorf("%q is not a %s", v, typ)
		}
		switch typ {
		case "u8":
			return uint8(n), nil
		case "u16":
			return uint16(n), nil
		}
		return uint32(n), nil
	}
	return nil, fmt.Errorf("unknown devlink parameter type %q", typ)
}

// captureNCCL saves the NCCL config file as it is (or that there is none),
// so that undo restores it byte for byte.
func captureNCCL(h *Host, d *policy.Desired, st *Step) error {
	path := *d.Profile.NCCL.Write
	// The directory's identity comes from the same open as the content:
	// the write and the restore then go to that directory or nowhere, so
	// a user who can rename a directory on the path (one in their home)
	// cannot have root put this content, or remove the file, elsewhere.
	data, mode, exists, dir, err := nccl.ReadConfDir(h.FS, path)
	if err != nil {
		return err
	}
	st.Undo = &UndoBlob{Path: path, Absent: !exists, Data: data, Mode: uint32(mode), Dir: &dir}
	return nil
}

func writeNCCL(w *stepWriter) error {
	path := *w.d.Profile.NCCL.Write
	// The managed block holds every derived variable, not only the changed
	// ones: it is rewritten whole.
	var vars []nccl.Var
	for _, s := range w.d.Host {
		if s.Kind == policy.KindNCCL {
			vars = append(vars, nccl.Var{Name: s.Arg, Value: s.Value})
		}
	}
	var dir *nic.DirID
	if w.st.Undo != nil {
		dir = w.st.Undo.Dir
	}
	return nccl.UpdateConf(w.h.FS, path, dir, func(existing []byte) ([]byte, error) {
		data, conflicts, err := nccl.RenderConf(existing, w.d.Profile.Name, vars)
		for _, c := range conflicts {
			w.h.logger().Warn("a line of the NCCL config file is now overridden by rocectl's managed block",
				"file", path, "line", c.Line, "name", c.Name, "user_value", c.UserValue, "managed_value", c.Managed)
		}
		return data, err
	})
}

// restoreNCCL puts the saved copy of the NCCL file back (or removes the
// file the apply created).
func restoreNCCL(w *stepWriter) error {
	b := w.st.Undo
	if b == nil {
		return fmt.Errorf("no saved copy of the file to restore")
	}
	// Only the permission bits: capture saves no others, and a setuid bit
	// in a journal is not one rocectl wrote.
	return nccl.RestoreConf(w.h.FS, b.Path, b.Dir, b.Data, os.FileMode(b.Mode).Perm(), !b.Absent)
}

// checkNCCLRestored says whether the NCCL file is back as it was saved,
// with no temp file of a rewrite left beside it.
func checkNCCLRestored(h *Host, st Step) error {
	b := st.Undo
	if b == nil {
		return nil
	}
	// A rewrite killed before its rename leaves a temp file beside it:
	// until that is gone the host is not as it was.
	temps, err := nccl.Temps(h.FS, b.Path)
	if err != nil {
		return err
	}
	if len(temps) > 0 {
		return &policy.Mismatch{Key: policy.HostScope + ".nccl.temp_file", Want: "none",
			Have: strings.Join(temps, ", ") + " (a rewrite of " + b.Path + " that was cut short)"}
	}
	data, mode, exists, err := nccl.ReadConf(h.FS, b.Path)
	switch {
	case err != nil:
		return err
	case b.Absent && exists:
		return fmt.Errorf("verify: %s should not exist after restore", b.Path)
	case b.Absent:
		return nil
	case !exists:
		return fmt.Errorf("verify: %s is missing after restore", b.Path)
	case string(data) != string(b.Data):
		return fmt.Errorf("verify: %s differs from its saved copy after restore", b.Path)
	case mode != os.FileMode(b.Mode).Perm(): // a journal's other mode bits are never restored
		return fmt.Errorf("verify: %s has mode %04o after restore, its saved copy %04o", b.Path, mode, os.FileMode(b.Mode).Perm())
	}
	return nil
}
