package apply

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// portReader reads one port's state lazily, each kernel object at most once,
// so observing 40 settings of a port costs one IEEE_GET, one ETHTOOL_GPAUSE…
type portReader struct {
	h      *Host
	port   *policy.Port
	driver string

	dcbDone bool
	dcb     *dcb.State
	dcbErr  error
}

func (h *Host) newPortReader(p *policy.Port) *portReader {
	return &portReader{h: h, port: p, driver: p.Driver}
}

func (r *portReader) dcbState() (*dcb.State, error) {
	if !r.dcbDone {
		r.dcbDone = true
		r.dcb, r.dcbErr = r.h.K.DCB(r.port.Netdev)
		r.dcbErr = r.unsupportedAs(r.dcbErr, "DCB")
	}
	return r.dcb, r.dcbErr
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// unsupportedAs words a "not supported" errno the same way whether it comes
// from the live kernel or a snapshot: "<what> not supported by driver X".
// Other errors pass through.
func (r *portReader) unsupportedAs(err error, what string) error {
	if isUnsupported(err) && !errors.Is(err, nic.ErrUnsupported) {
		return nic.Unsupportedf("%s not supported by driver %s", what, orUnknown(r.driver))
	}
	return err
}

// read returns the canonical value the host holds for s; present is false
// when the host has no value at all (no APP entry, no NCCL line).
func (h *Host) read(r *portReader, d *policy.Desired, s policy.Setting, o *policy.Observed) (v string, present bool, err error) {
	switch s.Kind {
	case policy.KindNCCL:
		return h.readNCCL(d, s)
	}
	nd := r.port.Netdev
	switch s.Kind {
	case policy.KindMTU:
		li, err := h.K.Link(nd)
		if err != nil {
			return "", false, err
		}
		if want, _ := strconv.Atoi(s.Value); li.MaxMTU > 0 && want > li.MaxMTU {
			return "", false, nic.Unsupportedf("MTU %d is above the NIC's maximum %d", want, li.MaxMTU)
		}
		return strconv.Itoa(li.MTU), true, nil
	case policy.KindRxRing, policy.KindTxRing:
		rg, err := h.K.Rings(nd)
		if err != nil {
			return "", false, r.unsupportedAs(err, "ring sizes (ethtool -G)")
		}
		cur, max := rg.Rx, rg.RxMax
		if s.Kind == policy.KindTxRing {
			cur, max = rg.Tx, rg.TxMax
		}
		if want, _ := strconv.Atoi(s.Value); max > 0 && uint32(want) > max {
			return "", false, nic.Unsupportedf("ring size %d is above the NIC's maximum %d", want, max)
		}
		return strconv.Itoa(int(cur)), true, nil
	case policy.KindPrivFlag:
		flags, err := h.K.PrivFlags(nd)
		if err != nil {
			return "", false, r.unsupportedAs(err, "private flags")
		}
		v, ok := flags[s.Arg]
		if !ok {
			names := make([]string, 0, len(flags))
			for n := range flags {
				names = append(names, n)
			}
			sort.Strings(names)
			return "", false, nic.Unsupportedf("driver %s has no private flag %q (it has: %s)", orUnknown(r.driver), s.Arg, strings.Join(names, ", "))
		}
		return policy.FormatBool(v), true, nil
	case policy.KindGlobalPause:
		p, err := h.K.Pause(nd)
		if err != nil {
			return "", false, r.unsupportedAs(err, "global pause (ethtool -A)")
		}
		return formatPause(p), true, nil
	case policy.KindStormPrevention:
		ms, err := h.K.PFCPreventionTimeout(nd)
		if err != nil {
			return "", false, r.unsupportedAs(err, "PFC storm prevention (ethtool tunable pfc-prevention-tout)")
		}
		// mlx5 reads "auto" (0xffff) back as its value, 100 ms.
		if ms == 100 && s.Value == "auto" {
			return "auto", true, nil
		}
		return policy.FormatStorm(ms), true, nil
	case policy.KindDevlink:
		return h.readDevlink(r, s, o)
	case policy.KindECNEnable, policy.KindECNParam:
		return h.readECN(r, s)
	case policy.KindRoCEMode, policy.KindRoCETOS:
		var v string
		var err error
		if s.Kind == policy.KindRoCEMode {
			var mode string
			mode, err = nic.RoCEMode(h.FS, r.port.RDMADevice, r.port.PortNum)
			v = roceModeName(mode)
		} else {
			var tos int
			tos, err = nic.RoCETOS(h.FS, r.port.RDMADevice, r.port.PortNum)
			v = strconv.Itoa(tos)
		}
		if err != nil {
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, nic.ErrReadOnly) {
				return "", false, nic.Unsupportedf("rdma_cm configfs has no entry for %s port %d: %v", r.port.RDMADevice, r.port.PortNum, err)
			}
			return "", false, err
		}
		return v, true, nil
	case policy.KindTrafficClass:
		tc, ok, err := nic.TrafficClass(h.FS, r.port.RDMADevice, r.port.PortNum)
		if err != nil || !ok {
			return "", false, err
		}
		return strconv.Itoa(tc), true, nil
	}
	return h.readDCB(r, s)
}

func formatPause(p nic.Pause) string {
	switch {
	case p.Rx && p.Tx:
		return "on"
	case !p.Rx && !p.Tx:
		return "off"
	}
	return fmt.Sprintf("rx %s, tx %s", policy.FormatBool(p.Rx), policy.FormatBool(p.Tx))
}

// roceModeName maps configfs's strings to the profile's "v1"/"v2".
func roceModeName(mode string) string {
	switch mode {
	case nic.RoCEModeV2:
		return "v2"
	case nic.RoCEModeV1:
		return "v1"
	}
	return mode
}

var tsaNames = map[uint8]string{dcb.TSAStrict: "strict", dcb.TSACBShaper: "cbs", dcb.TSAETS: "ets", dcb.TSAVendor: "vendor"}

func tsaValue(name string) uint8 {
	for v, n := range tsaNames {
		if n == name {
			return v
		}
	}
	return dcb.TSAVendor
}

func (h *Host) readDCB(r *portReader, s policy.Setting) (string, bool, error) {
	// OFED's own trust attribute wins where it exists: mlnx_qos uses it.
	if s.Kind == policy.KindTrust && nic.HasOFEDTrust(h.FS, r.port.Netdev) {
		t, err := nic.OFEDTrust(h.FS, r.port.Netdev)
		return t, err == nil, err
	}
	st, err := r.dcbState()
	if err != nil {
		return "", false, err
	}
	switch s.Kind {
	case policy.KindDCBX:
		if st.DCBX == nil {
			return "", false, nic.Unsupportedf("driver %s does not report a DCBX mode", orUnknown(r.driver))
		}
		if *st.DCBX&dcb.DCBXHost != 0 {
			return "host", true, nil
		}
		return "firmware", true, nil
	case policy.KindTrust:
		// Upstream mlx5: the port trusts DSCP exactly when at least one
		// DSCP APP entry exists (en_dcbnl.c dscp_app_cnt).
		for _, a := range st.Apps {
			if a.Selector == dcb.SelDSCP {
				return "dscp", true, nil
			}
		}
		return "pcp", true, nil
	case policy.KindDSCPMap:
		want, err := policy.ParseDSCPMap(s.Value)
		if err != nil {
			return "", false, err
		}
		return formatDSCPDomain(st.Apps, want), true, nil
	case policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth:
		if st.ETS == nil {
			return "", false, nic.Unsupportedf("driver %s does not expose ETS", orUnknown(r.driver))
		}
		return formatETS(st.ETS, s.Kind), true, nil
	case policy.KindPFC:
		if st.PFC == nil {
			return "", false, nic.Unsupportedf("driver %s does not expose PFC", orUnknown(r.driver))
		}
		return policy.FormatPrioBitmap(st.PFC.Enable), true, nil
	case policy.KindCableLength:
		if st.PFC == nil {
			return "", false, nic.Unsupportedf("driver %s does not expose PFC", orUnknown(r.driver))
		}
		if !strings.HasPrefix(r.driver, "mlx5") {
			return "", false, nic.Unsupportedf("cable length is mlx5's use of the PFC delay field; driver %s has no equivalent", orUnknown(r.driver))
		}
		return strconv.Itoa(int(st.PFC.Delay)), true, nil
	case policy.KindPrioBuffer, policy.KindBufferSize:
		if st.Buffer == nil {
			return "", false, nic.Unsupportedf("driver %s does not expose receive buffer configuration (DCB_ATTR_DCB_BUFFER)", orUnknown(r.driver))
		}
		if s.Kind == policy.KindPrioBuffer {
			var v [8]int
			for i, b := range st.Buffer.PrioBuffer {
				v[i] = int(b)
			}
			return policy.FormatInts8(v), true, nil
		}
		if want, err := policy.ParseSizes8(s.Value); err == nil && st.Buffer.TotalSize > 0 {
			var sum policy.Size
			for _, x := range want {
				sum += x
			}
			if uint64(sum) > uint64(st.Buffer.TotalSize) {
				return "", false, nic.Unsupportedf("buffer sizes add up to %v, more than the port's %v", sum, policy.Size(st.Buffer.TotalSize))
			}
		}
		var v [8]policy.Size
		for i, b := range st.Buffer.Size {
			v[i] = policy.Size(b)
		}
		return policy.FormatSizes8(v), true, nil
	}
	return "", false, fmt.Errorf("no backend for %s", s.Kind)
}

// formatDSCPDomain prints the host's DSCP APP entries for the DSCPs the
// profile maps. A DSCP with several priorities (generic kernels allow it)
// prints all of them, so it never compares equal to a single mapping.
func formatDSCPDomain(apps []dcb.App, want map[int]int) string {
	have := map[int][]int{}
	for _, a := range apps {
		if a.Selector != dcb.SelDSCP {
			continue
		}
		if _, ok := want[int(a.Protocol)]; ok {
			have[int(a.Protocol)] = append(have[int(a.Protocol)], int(a.Priority))
		}
	}
	single := map[int]int{}
	var extra []string
	for dscp, prios := range have {
		single[dscp] = prios[0]
		for _, p := range prios[1:] {
			extra = append(extra, fmt.Sprintf("%d:%d", dscp, p))
		}
	}
	s := policy.FormatDSCPMap(single)
	if len(extra) > 0 {
		sort.Strings(extra)
		s += " +" + strings.Join(extra, ",")
	}
	return s
}

func formatETS(e *dcb.ETS, k policy.Kind) string {
	var v [8]int
	var names [8]string
	for tc := 0; tc < 8; tc++ {
		names[tc] = tsaNames[e.TCTSA[tc]]
		if names[tc] == "" {
			names[tc] = strconv.Itoa(int(e.TCTSA[tc]))
		}
	}
	switch k {
	case policy.KindETSPrioTC:
		for p := 0; p < 8; p++ {
			v[p] = int(e.PrioTC[p])
		}
	case policy.KindETSTSA:
		return policy.FormatStrings8(names)
	default:
		// mlx5 reports 100% for strict and vendor TCs; bandwidth only means
		// something for ETS TCs, so others read as 0 (what a profile says).
		for tc := 0; tc < 8; tc++ {
			if e.TCTSA[tc] == dcb.TSAETS {
				v[tc] = int(e.TCTxBW[tc])
			}
		}
	}
	return policy.FormatInts8(v)
}

func (h *Host) readECN(r *portReader, s policy.Setting) (string, bool, error) {
	e, err := h.ecnOf(r.port)
	if err != nil {
		return "", false, err
	}
	dir, rest, _ := strings.Cut(s.Arg, "/")
	if s.Kind == policy.KindECNEnable {
		prio, _ := strconv.Atoi(rest)
		on, err := e.Enabled(dir, prio)
		return policy.FormatBool(on), err == nil, err
	}
	v, err := e.Param(dir, rest, policy.ECNUpstreamName(rest))
	return strconv.FormatInt(v, 10), err == nil, err
}

func (h *Host) devlinkHandle(p *policy.Port) (string, error) {
	if dev := nic.DevlinkHandle(h.FS, p.Netdev); dev != "" {
		return dev, nil
	}
	if p.PCI != "" {
		return "pci/" + p.PCI, nil
	}
	return "", nic.Unsupportedf("%s has no bus device, so no devlink instance", p.Netdev)
}

// readDevlink reads a devlink parameter's runtime value, or its driverinit
// value when it has no runtime mode; a change to such a parameter is noted
// as needing a devlink reload, never presented as taking effect.
func (h *Host) readDevlink(r *portReader, s policy.Setting, o *policy.Observed) (string, bool, error) {
	dev, err := h.devlinkHandle(r.port)
	if err != nil {
		return "", false, err
	}
	params, err := h.K.DevlinkParams(dev)
	if err != nil {
		return "", false, r.unsupportedAs(err, "devlink")
	}
	for _, p := range params {
		if p.Name != s.Arg {
			continue
		}
		var driverinit *nic.DevlinkParamValue
		for i, v := range p.Values {
			switch v.Cmode {
			case nic.CmodeRuntime:
				return fmt.Sprint(v.Value), true, nil
			case nic.CmodeDriverinit:
				driverinit = &p.Values[i]
			}
		}
		if driverinit != nil {
			if o != nil {
				o.Notes[s.Key] = fmt.Sprintf("driverinit parameter: takes effect after `devlink dev reload %s`", dev)
			}
			return fmt.Sprint(driverinit.Value), true, nil
		}
		return "", false, nic.Unsupportedf("devlink parameter %s can only be changed permanently (firmware reset), not at run time", s.Arg)
	}
	return "", false, nic.Unsupportedf("%s has no devlink parameter %s", dev, s.Arg)
}

func (h *Host) readNCCL(d *policy.Desired, s policy.Setting) (string, bool, error) {
	return h.readNCCLFile(*d.Profile.NCCL.Write, s.Arg)
}

func (h *Host) readNCCLFile(path, name string) (string, bool, error) {
	data, err := os.ReadFile(h.FS.Path(path))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	// What NCCL itself would read: the first definition wins.
	for _, v := range nic.ParseNCCLConf(data) {
		if v.Name == name {
			return v.Value, true, nil
		}
	}
	return "", false, nil
}

// errnoName gives "EINVAL" for syscall errors, for operator messages.
func errnoName(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		if n := errnoNames[en]; n != "" {
			return n
		}
	}
	return ""
}

var errnoNames = map[syscall.Errno]string{
	syscall.EINVAL: "EINVAL", syscall.EPERM: "EPERM", syscall.EOPNOTSUPP: "EOPNOTSUPP", syscall.ENODEV: "ENODEV",
	syscall.EBUSY: "EBUSY", syscall.ERANGE: "ERANGE", syscall.ENOENT: "ENOENT", syscall.EEXIST: "EEXIST",
	syscall.EACCES: "EACCES", syscall.EIO: "EIO", syscall.ENOSPC: "ENOSPC", syscall.EAGAIN: "EAGAIN",
}
