package apply

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
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
}

// UndoBlob is a file's previous content, or its absence.
type UndoBlob struct {
	Path   string `json:"path"`
	Absent bool   `json:"absent"`
	Data   []byte `json:"data,omitempty"`
	Mode   uint32 `json:"mode,omitempty"`
}

func groupOf(k policy.Kind) string {
	switch k {
	case policy.KindTrust, policy.KindDSCPMap:
		return "app"
	case policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth:
		return "ets"
	case policy.KindPFC, policy.KindCableLength:
		return "pfc"
	case policy.KindPrioBuffer, policy.KindBufferSize:
		return "buffer"
	case policy.KindRxRing, policy.KindTxRing:
		return "rings"
	case policy.KindNCCL:
		return "nccl"
	}
	return ""
}

// Steps groups a plan's changes into write steps, keeping the apply order.
func Steps(plan *policy.Plan) []Step {
	var steps []Step
	index := map[string]int{}
	for _, c := range plan.Changes {
		g := groupOf(c.Kind)
		if g == "" {
			steps = append(steps, Step{Scope: c.Scope, Group: c.Name, Changes: []policy.Change{c}})
			continue
		}
		scope := c.Scope
		if c.Port != nil {
			scope = c.Port.Netdev
		}
		id := scope + "/" + g
		if i, ok := index[id]; ok {
			steps[i].Changes = append(steps[i].Changes, c)
			continue
		}
		index[id] = len(steps)
		steps = append(steps, Step{Scope: scope, Group: g, Changes: []policy.Change{c}})
	}
	return steps
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

// captureUndo records what the step needs for a byte-exact undo.
func (h *Host) captureUndo(d *policy.Desired, st *Step) error {
	if st.Group != "nccl" {
		return nil
	}
	path := *d.Profile.NCCL.Write
	b := &UndoBlob{Path: path}
	fi, err := os.Stat(h.FS.Path(path))
	switch {
	case errors.Is(err, os.ErrNotExist):
		b.Absent = true
	case err != nil:
		return err
	default:
		b.Mode = uint32(fi.Mode().Perm())
		if b.Data, err = os.ReadFile(h.FS.Path(path)); err != nil {
			return err
		}
	}
	st.Undo = b
	return nil
}

// writeStep writes a step's values: the after-values going forward, the
// before-values when undoing (undo = true).
func (h *Host) writeStep(d *policy.Desired, st Step, undo bool) error {
	vals := map[policy.Kind]policy.Change{}
	for _, c := range st.Changes {
		vals[c.Kind] = c
	}
	value := func(c policy.Change) string {
		if undo {
			return c.Before
		}
		return c.Value
	}
	fail := func(c policy.Change, err error) error {
		if err == nil {
			return nil
		}
		return &WriteError{Scope: c.Scope, Key: c.Key, Value: displayValue(value(c), undo && c.Absent), Err: err}
	}
	c0 := st.Changes[0]
	var port *policy.Port = c0.Port
	switch st.Group {
	case "app":
		return h.writeApp(port, vals, value, undo, fail)
	case "ets":
		return fail(c0, h.writeETS(port, vals, value))
	case "pfc":
		return fail(c0, h.writePFC(port, vals, value))
	case "buffer":
		return fail(c0, h.writeBuffer(port, vals, value))
	case "rings":
		return fail(c0, h.writeRings(port, vals, value))
	case "nccl":
		if undo {
			return fail(c0, h.restoreFile(st.Undo))
		}
		return fail(c0, h.writeNCCL(d, st))
	}
	if undo && c0.Absent {
		if c0.Kind == policy.KindTrafficClass {
			return fail(c0, nic.ClearTrafficClass(h.FS, port.RDMADevice, port.PortNum))
		}
		return fail(c0, fmt.Errorf("the host had no value before, and there is no way to remove one"))
	}
	return fail(c0, h.writeOne(port, c0, value(c0)))
}

func displayValue(v string, absent bool) string {
	if absent {
		return "(none)"
	}
	return v
}

func (h *Host) writeOne(port *policy.Port, c policy.Change, v string) error {
	nd := port.Netdev
	switch c.Kind {
	case policy.KindMTU:
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		return h.K.SetMTU(nd, n)
	case policy.KindPrivFlag:
		b, err := policy.ParseBool(v)
		if err != nil {
			return err
		}
		return h.K.SetPrivFlags(nd, map[string]bool{c.Arg: b})
	case policy.KindGlobalPause:
		p, err := parsePause(v)
		if err != nil {
			return err
		}
		return h.K.SetPause(nd, p)
	case policy.KindDCBX:
		// mlx5: a mode with HOST switches firmware DCBX to host mode and
		// becomes the reported capability; 0 hands DCBX back to the
		// firmware agent, which only clears HOST (reference §A1.8). Keeping
		// the version bits the driver reports makes the round trip exact.
		mode := uint8(0)
		if v == "host" {
			mode = dcb.DCBXHost | dcb.DCBXVerIEEE
			if st, err := h.K.DCB(nd); err == nil && st.DCBX != nil {
				mode |= *st.DCBX & (dcb.DCBXVerCEE | dcb.DCBXVerIEEE)
			}
		}
		return h.K.SetDCBX(nd, mode)
	case policy.KindStormPrevention:
		ms, err := policy.ParseStorm(v)
		if err != nil {
			return err
		}
		return h.K.SetPFCPreventionTimeout(nd, ms)
	case policy.KindECNEnable, policy.KindECNParam:
		e, err := h.ecnOf(port)
		if err != nil {
			return err
		}
		dir, rest, _ := strings.Cut(c.Arg, "/")
		if c.Kind == policy.KindECNEnable {
			prio, _ := strconv.Atoi(rest)
			on, err := policy.ParseBool(v)
			if err != nil {
				return err
			}
			return e.SetEnabled(dir, prio, on)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return err
		}
		return e.SetParam(dir, rest, policy.ECNUpstreamName(rest), n)
	case policy.KindRoCEMode:
		mode := nic.RoCEModeV2
		if v == "v1" {
			mode = nic.RoCEModeV1
		}
		return nic.SetRoCEMode(h.FS, port.RDMADevice, port.PortNum, mode)
	case policy.KindRoCETOS:
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		return nic.SetRoCETOS(h.FS, port.RDMADevice, port.PortNum, n)
	case policy.KindTrafficClass:
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		return nic.SetTrafficClass(h.FS, port.RDMADevice, port.PortNum, n)
	case policy.KindDevlink:
		return h.writeDevlink(port, c.Arg, v)
	}
	return fmt.Errorf("no writer for %s", c.Kind)
}

func nicPort(p *policy.Port) nic.Port {
	return nic.Port{RDMADevice: p.RDMADevice, PortNum: p.PortNum, Netdev: p.Netdev, PCI: p.PCI, Driver: p.Driver}
}

func parsePause(v string) (nic.Pause, error) {
	switch v {
	case "on":
		return nic.Pause{Rx: true, Tx: true}, nil
	case "off":
		return nic.Pause{}, nil
	}
	var p nic.Pause
	if _, err := fmt.Sscanf(v, "rx %s tx %s", new(string), new(string)); err == nil {
		p.Rx = strings.Contains(v, "rx on")
		p.Tx = strings.Contains(v, "tx on")
		return p, nil
	}
	return p, fmt.Errorf("%q is not a pause setting", v)
}

// writeApp writes trust and the DSCP map. On upstream mlx5 trust is implied
// by the APP table: DSCP trust means at least one DSCP entry.
func (h *Host) writeApp(port *policy.Port, vals map[policy.Kind]policy.Change, value func(policy.Change) string, undo bool, fail func(policy.Change, error) error) error {
	nd := port.Netdev
	if c, ok := vals[policy.KindDSCPMap]; ok {
		domain, err := policy.ParseDSCPMap(c.Value) // the DSCPs the profile maps
		if err != nil {
			return fail(c, err)
		}
		target := domain
		if undo {
			if target, err = policy.ParseDSCPMap(c.Before); err != nil {
				return fail(c, err)
			}
			if c.Absent {
				target = map[int]int{}
			}
		}
		if err := h.syncDSCP(nd, domain, target); err != nil {
			return fail(c, err)
		}
	}
	c, ok := vals[policy.KindTrust]
	if !ok {
		return nil
	}
	trust := value(c)
	if nic.HasOFEDTrust(h.FS, nd) {
		return fail(c, nic.SetOFEDTrust(h.FS, nd, trust))
	}
	st, err := h.K.DCB(nd)
	if err != nil {
		return fail(c, err)
	}
	var dscpApps []dcb.App
	for _, a := range st.Apps {
		if a.Selector == dcb.SelDSCP {
			dscpApps = append(dscpApps, a)
		}
	}
	switch {
	case trust == "pcp" && len(dscpApps) > 0:
		return fail(c, h.K.DelApps(nd, dscpApps))
	case trust == "dscp" && len(dscpApps) == 0:
		// What mlnx_qos --trust dscp does upstream: the firmware's default
		// map, priority = DSCP >> 3.
		apps := make([]dcb.App, 64)
		for d := range apps {
			apps[d] = dcb.App{Selector: dcb.SelDSCP, Priority: uint8(d >> 3), Protocol: uint16(d)}
		}
		return fail(c, h.K.AddApps(nd, apps))
	}
	return nil
}

// syncDSCP makes the DSCPs of domain map as target says (a DSCP missing from
// target gets no entry). Entries are added before stale ones are deleted, so
// the port never passes through "no DSCP entry" (which flips mlx5 to PCP
// trust); mlx5 replaces a DSCP's mapping on add, generic kernels keep both
// until the old one is deleted.
func (h *Host) syncDSCP(nd string, domain, target map[int]int) error {
	st, err := h.K.DCB(nd)
	if err != nil {
		return err
	}
	have := map[int][]uint8{}
	for _, a := range st.Apps {
		if a.Selector == dcb.SelDSCP {
			have[int(a.Protocol)] = append(have[int(a.Protocol)], a.Priority)
		}
	}
	var add []dcb.App
	for _, dscp := range slices.Sorted(maps.Keys(domain)) {
		p, ok := target[dscp]
		if !ok || containsU8(have[dscp], uint8(p)) {
			continue
		}
		add = append(add, dcb.App{Selector: dcb.SelDSCP, Priority: uint8(p), Protocol: uint16(dscp)})
	}
	if len(add) > 0 {
		if err := h.K.AddApps(nd, add); err != nil {
			return err
		}
		if st, err = h.K.DCB(nd); err != nil {
			return err
		}
	}
	var del []dcb.App
	for _, a := range st.Apps {
		if a.Selector != dcb.SelDSCP {
			continue
		}
		dscp := int(a.Protocol)
		if _, inDomain := domain[dscp]; !inDomain {
			continue
		}
		if p, ok := target[dscp]; !ok || uint8(p) != a.Priority {
			del = append(del, a)
		}
	}
	if len(del) > 0 {
		return h.K.DelApps(nd, del)
	}
	return nil
}

func containsU8(s []uint8, v uint8) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// writeETS does GET → modify → SET of ieee_ets. Non-ETS classes get 0
// bandwidth: newer kernels reject anything else, and mlx5 reports 100 %
// for them, so a naive read-modify-write would fail.
func (h *Host) writeETS(port *policy.Port, vals map[policy.Kind]policy.Change, value func(policy.Change) string) error {
	st, err := h.K.DCB(port.Netdev)
	if err != nil {
		return err
	}
	if st.ETS == nil {
		return nic.Unsupportedf("driver does not expose ETS")
	}
	e := *st.ETS
	if c, ok := vals[policy.KindETSPrioTC]; ok {
		v, err := policy.ParseInts8(value(c))
		if err != nil {
			return err
		}
		for i := range v {
			e.PrioTC[i] = uint8(v[i])
		}
	}
	if c, ok := vals[policy.KindETSTSA]; ok {
		v, err := policy.ParseStrings8(value(c))
		if err != nil {
			return err
		}
		for i := range v {
			e.TCTSA[i] = tsaValue(v[i])
		}
	}
	if c, ok := vals[policy.KindETSBandwidth]; ok {
		v, err := policy.ParseInts8(value(c))
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
	return h.K.SetETS(port.Netdev, e)
}

// writePFC does GET → modify → SET of ieee_pfc (enable bitmap and, on mlx5,
// the cable length carried in delay). A PFC change flaps an mlx5 link.
func (h *Host) writePFC(port *policy.Port, vals map[policy.Kind]policy.Change, value func(policy.Change) string) error {
	st, err := h.K.DCB(port.Netdev)
	if err != nil {
		return err
	}
	if st.PFC == nil {
		return nic.Unsupportedf("driver does not expose PFC")
	}
	p := *st.PFC
	if c, ok := vals[policy.KindPFC]; ok {
		b, err := policy.ParsePrioBitmap(value(c))
		if err != nil {
			return err
		}
		p.Enable = b
	}
	if c, ok := vals[policy.KindCableLength]; ok {
		n, err := strconv.Atoi(value(c))
		if err != nil {
			return err
		}
		p.Delay = uint16(n)
	}
	return h.K.SetPFC(port.Netdev, p)
}

func (h *Host) writeBuffer(port *policy.Port, vals map[policy.Kind]policy.Change, value func(policy.Change) string) error {
	st, err := h.K.DCB(port.Netdev)
	if err != nil {
		return err
	}
	if st.Buffer == nil {
		return nic.Unsupportedf("driver does not expose receive buffers")
	}
	b := *st.Buffer
	if c, ok := vals[policy.KindPrioBuffer]; ok {
		v, err := policy.ParseInts8(value(c))
		if err != nil {
			return err
		}
		for i := range v {
			b.PrioBuffer[i] = uint8(v[i])
		}
	}
	if c, ok := vals[policy.KindBufferSize]; ok {
		v, err := policy.ParseSizes8(value(c))
		if err != nil {
			return err
		}
		for i := range v {
			b.Size[i] = uint32(v[i])
		}
	}
	return h.K.SetBuffer(port.Netdev, b)
}

func (h *Host) writeRings(port *policy.Port, vals map[policy.Kind]policy.Change, value func(policy.Change) string) error {
	r, err := h.K.Rings(port.Netdev)
	if err != nil {
		return err
	}
	for k, c := range vals {
		n, err := strconv.Atoi(value(c))
		if err != nil {
			return err
		}
		if k == policy.KindRxRing {
			r.Rx = uint32(n)
		} else {
			r.Tx = uint32(n)
		}
	}
	return h.K.SetRings(port.Netdev, r)
}

func (h *Host) writeDevlink(port *policy.Port, name, v string) error {
	dev, err := h.devlinkHandle(port)
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

func (h *Host) writeNCCL(d *policy.Desired, st Step) error {
	path := *d.Profile.NCCL.Write
	existing, err := os.ReadFile(h.FS.Path(path))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// The managed block holds every derived variable, not only the changed
	// ones: it is rewritten whole.
	var vars []nic.NCCLVar
	for _, s := range d.Host {
		if s.Kind == policy.KindNCCL {
			vars = append(vars, nic.NCCLVar{Name: s.Arg, Value: s.Value})
		}
	}
	data, conflicts, err := nic.RenderNCCLConf(existing, d.Profile.Name, vars)
	if err != nil {
		return err
	}
	for _, c := range conflicts {
		h.logger().Warn("a line of the NCCL config file is now overridden by rocectl's managed block",
			"file", path, "line", c.Line, "name", c.Name, "user_value", c.UserValue, "managed_value", c.Managed)
	}
	return nic.WriteNCCLConf(h.FS, path, data)
}

func (h *Host) restoreFile(b *UndoBlob) error {
	if b == nil {
		return fmt.Errorf("no saved copy of the file to restore")
	}
	if err := h.FS.CheckWrite("remove", b.Path); err != nil {
		return err
	}
	if b.Absent {
		err := os.Remove(h.FS.Path(b.Path))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := nic.WriteNCCLConf(h.FS, b.Path, b.Data); err != nil {
		return err
	}
	return os.Chmod(h.FS.Path(b.Path), os.FileMode(b.Mode))
}
