package host

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/driver/known"

	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// portReader reads one port's state lazily, each kernel object at most once,
// so observing 40 settings of a port costs one IEEE_GET, one ETHTOOL_GPAUSE…
// A reader of host settings has no port; ncclFile is the NCCL config file
// host settings are read from.
type portReader struct {
	h        *Host
	port     *port.Port
	driver   string
	ncclFile string

	dcbDone bool
	dcb     *dcb.State
	dcbErr  error

	// The port's ECN interface, looked up once per reader rather than
	// once for each of its thirty-odd ECN settings.
	// With holdECN the interface reads below its directory held open
	// until close: observe's readers, which live for one port.
	ecnDone bool
	holdECN bool
	ecn     *nic.ECN
	ecnErr  error

	// The NCCL config file's variables, read once per reader rather than
	// once for each NCCL setting; absent: the file does not exist.
	ncclDone   bool
	ncclVars   []nccl.Var
	ncclAbsent bool
	ncclErr    error

	drvFacts driver.Facts // facts' answer, made once

	// fwPending: the current values of firmware settings whose next-boot
	// value differs (readFirmware), by key.
	fwPending map[string]string
}

// ncclConf reads and parses the reader's NCCL config file, once.
func (r *portReader) ncclConf() (vars []nccl.Var, absent bool, err error) {
	if !r.ncclDone {
		r.ncclDone = true
		// As apply reads it before rewriting it: a symlink or a file
		// with other hard links is unreadable here too, so that the
		// audit says what apply would refuse.
		data, _, exists, err := nccl.ReadConf(r.h.FS, r.ncclFile)
		switch {
		case err != nil:
			r.ncclErr = err
		case !exists && r.h.notCaptured(r.ncclFile):
			// A snapshot that holds no file there (an import) says
			// nothing about the file: unknown, not absent.
			r.ncclErr = &nic.NotCapturedError{Op: "NCCL config file", Name: r.ncclFile}
		case !exists:
			r.ncclAbsent = true
		default:
			r.ncclVars = nccl.ParseConf(data)
		}
	}
	return r.ncclVars, r.ncclAbsent, r.ncclErr
}

func (r *portReader) ecnOf() (*nic.ECN, error) {
	if !r.ecnDone {
		r.ecnDone = true
		r.ecn, r.ecnErr = r.h.ecnOf(r.port)
		if r.ecn != nil && r.holdECN {
			r.ecn = r.ecn.Held()
		}
	}
	return r.ecn, r.ecnErr
}

// facts is what the port's driver layer may ask of this reader: read on
// first use, through the reader's own cache.
func (r *portReader) facts() driver.Facts {
	if r.drvFacts.ECN == nil {
		r.drvFacts.ECN = r.ecnFlavour
	}
	return r.drvFacts
}

// portFacts is what the driver layer's Instead may say more with.
func (r *portReader) portFacts() driver.PortFacts {
	return driver.PortFacts{PCI: r.port.PCI, ECN: r.ecnFlavour()}
}

// ecnFlavour says through which interface the port's ECN knobs are
// reached, for the driver layer.
func (r *portReader) ecnFlavour() driver.ECNFlavour {
	e, err := r.ecnOf()
	if err != nil {
		if errors.Is(err, nic.ErrUnsupported) && !errors.Is(err, nic.ErrNotCaptured) {
			return driver.ECNAbsent
		}
		return driver.ECNUnknown
	}
	switch e.Kind {
	case nic.ECNOFED:
		return driver.ECNOFED
	case nic.ECNUpstreamMlx5:
		return driver.ECNUpstream
	case nic.ECNIrdma:
		return driver.ECNIrdma
	case nic.ECNBnxt:
		return driver.ECNBnxtConfigfs
	case nic.ECNBnxtDebugfs:
		return driver.ECNBnxtDebugfs
	}
	return driver.ECNUnknown
}

// close releases what the reader holds open.
func (r *portReader) close() {
	if r.ecn != nil {
		r.ecn.Close()
	}
}

func (h *Host) newPortReader(p *port.Port, ncclFile string) *portReader {
	r := &portReader{h: h, port: p, ncclFile: ncclFile}
	if p != nil {
		r.driver = p.Driver
	}
	return r
}

// portReaders keeps one reader per netdev, so that each port's kernel
// objects are read once however many settings need them (a bond's slaves
// each have their own).
type portReaders struct {
	h       *Host
	m       map[string]*portReader
	holdECN bool // the readers' ECN hold its directory open until close
}

func (h *Host) readers() portReaders { return portReaders{h: h, m: map[string]*portReader{}} }

// portReadersHeld are readers for one port's burst of reads (a bond's
// slaves included): what they open stays open until close.
func (h *Host) portReadersHeld() portReaders {
	rs := h.readers()
	rs.holdECN = true
	return rs
}

// of returns p's reader, made on first use.
func (rs portReaders) of(p *port.Port) *portReader {
	r := rs.m[p.Netdev]
	if r == nil {
		r = rs.h.newPortReader(p, "")
		r.holdECN = rs.holdECN
		rs.m[p.Netdev] = r
	}
	return r
}

// close closes every reader.
func (rs portReaders) close() {
	for _, r := range rs.m {
		r.close()
	}
}

// read returns the canonical value the host holds for s.
func (r *portReader) read(s policy.Setting, notes map[string]string) (string, bool, error) {
	k, err := kindOf(s.Kind)
	if err != nil {
		return "", false, err
	}
	return k.read(r, s, notes)
}

// dcbPart is dcbState for a reader that needs one member of it (ets,
// pfc, apps, buffer, dcbx: the JSON names of dcb.State's members, as a
// snapshot's not_captured names them): a snapshot that holds the others but not this
// one answers nic.ErrNotCaptured for it and the state for the rest.
func (r *portReader) dcbPart(part string) (*dcb.State, error) {
	if !r.dcbDone {
		r.dcbDone = true
		r.dcb, r.dcbErr = r.h.K.DCB(r.port.Netdev)
		r.dcbErr = r.unsupportedAs(r.dcbErr, "DCB")
	}
	var nc *nic.NotCapturedError
	if errors.As(r.dcbErr, &nc) && len(nc.Parts) > 0 && r.dcb != nil {
		switch {
		case part == "":
			return nil, r.dcbErr
		case nc.Missing(part):
			return nil, &nic.NotCapturedError{Op: nc.Op, Name: nc.Name, Parts: []string{part}}
		}
		return r.dcb, nil
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

// readMTU reads the link's MTU, refusing a desired MTU above what the NIC
// can take.
func readMTU(r *portReader, s policy.Setting, _ map[string]string) (string, bool, error) {
	li, err := r.h.K.Link(r.port.Netdev)
	if err != nil {
		return "", false, err
	}
	want, err := policy.IntCodec.Parse(s.Value)
	if err != nil {
		return "", false, err
	}
	if li.MaxMTU > 0 && want > li.MaxMTU {
		return "", false, nic.Unsupportedf("MTU %d is above the NIC's maximum %d", want, li.MaxMTU)
	}
	return policy.IntCodec.Format(li.MTU), true, nil
}

func readRing(r *portReader, s policy.Setting, _ map[string]string) (string, bool, error) {
	rg, err := r.h.K.Rings(r.port.Netdev)
	if err != nil {
		return "", false, r.unsupportedAs(err, "ring sizes (ethtool -G)")
	}
	cur, max := rg.Rx, rg.RxMax
	if s.Kind == policy.KindTxRing {
		cur, max = rg.Tx, rg.TxMax
	}
	want, err := policy.IntCodec.Parse(s.Value)
	if err != nil {
		return "", false, err
	}
	if max > 0 && uint32(want) > max {
		return "", false, nic.Unsupportedf("ring size %d is above the NIC's maximum %d", want, max)
	}
	return policy.IntCodec.Format(int(cur)), true, nil
}

func readPrivFlag(r *portReader, s policy.Setting, _ map[string]string) (string, bool, error) {
	flags, err := r.h.K.PrivFlags(r.port.Netdev)
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
}

func readPause(r *portReader, _ policy.Setting, _ map[string]string) (string, bool, error) {
	p, err := r.h.K.Pause(r.port.Netdev)
	if err != nil {
		return "", false, r.unsupportedAs(err, "global pause (ethtool -A)")
	}
	return policy.FormatPause(policy.Pause{Rx: p.Rx, Tx: p.Tx}), true, nil
}

func readStorm(r *portReader, s policy.Setting, _ map[string]string) (string, bool, error) {
	ms, err := r.h.K.PFCPreventionTimeout(r.port.Netdev)
	if err != nil {
		return "", false, r.unsupportedAs(err, "PFC storm prevention (ethtool tunable pfc-prevention-tout)")
	}
	// mlx5 reads "auto" (0xffff) back as its value, 100 ms.
	if ms == nic.MLX5PFCPreventionAutoMs && s.Value == "auto" {
		return "auto", true, nil
	}
	return policy.FormatStorm(ms), true, nil
}

func readRoCEMode(r *portReader, _ policy.Setting, _ map[string]string) (string, bool, error) {
	mode, err := nic.RoCEMode(r.h.FS, r.port.RDMADevice, r.port.PortNum)
	if err != nil {
		return "", false, r.rdmaCMError(err)
	}
	return roceModeName(mode), true, nil
}

func readRoCETOS(r *portReader, _ policy.Setting, _ map[string]string) (string, bool, error) {
	tos, err := nic.RoCETOS(r.h.FS, r.port.RDMADevice, r.port.PortNum)
	if err != nil {
		return "", false, r.rdmaCMError(err)
	}
	return strconv.Itoa(tos), true, nil
}

// rdmaCMError words a missing rdma_cm configfs entry as unsupported.
func (r *portReader) rdmaCMError(err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, nic.ErrReadOnly) {
		return nic.Unsupportedf("rdma_cm configfs has no entry for %s port %d: %v", r.port.RDMADevice, r.port.PortNum, err)
	}
	return err
}

func readTrafficClass(r *portReader, _ policy.Setting, _ map[string]string) (string, bool, error) {
	tc, ok, err := nic.TrafficClass(r.h.FS, r.port.RDMADevice, r.port.PortNum)
	if err != nil || !ok {
		return "", false, err
	}
	return strconv.Itoa(tc), true, nil
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

// tsaNames maps the kernel's TSA values to the profile's names.
var tsaNames = map[uint8]string{dcb.TSAStrict: policy.TSAStrict, dcb.TSACBShaper: policy.TSACBS, dcb.TSAETS: policy.TSAETS, dcb.TSAVendor: policy.TSAVendor}

func tsaValue(name string) uint8 {
	for v, n := range tsaNames {
		if n == name {
			return v
		}
	}
	return dcb.TSAVendor
}

// readTrust reads the port's trust state. OFED's own trust attribute wins
// where it exists: mlnx_qos uses it. Upstream mlx5 trusts DSCP exactly when
// at least one DSCP APP entry exists (en_dcbnl.c dscp_app_cnt).
func readTrust(r *portReader, _ policy.Setting, _ map[string]string) (string, bool, error) {
	if nic.HasOFEDTrust(r.h.FS, r.port.Netdev) {
		t, err := nic.OFEDTrust(r.h.FS, r.port.Netdev)
		return t, err == nil, err
	}
	st, err := r.dcbPart("apps")
	if err != nil {
		return "", false, err
	}
	for _, a := range st.Apps {
		if a.Selector == dcb.SelDSCP {
			return "dscp", true, nil
		}
	}
	return "pcp", true, nil
}

func readDCBX(r *portReader, _ policy.Setting, _ map[string]string) (string, bool, error) {
	st, err := r.dcbPart("dcbx")
	if err != nil {
		return "", false, err
	}
	if st.DCBX == nil {
		return "", false, nic.Unsupportedf("driver %s does not report a DCBX mode", orUnknown(r.driver))
	}
	if *st.DCBX&dcb.DCBXHost != 0 {
		return "host", true, nil
	}
	return "firmware", true, nil
}

func readDSCPMap(r *portReader, s policy.Setting, _ map[string]string) (string, bool, error) {
	st, err := r.dcbPart("apps")
	if err != nil {
		return "", false, err
	}
	domain, err := policy.DSCPDomain(s.Value)
	if err != nil {
		return "", false, err
	}
	return formatDSCPDomain(st.Apps, &domain), true, nil
}

func readETS(r *portReader, s policy.Setting, notes map[string]string) (string, bool, error) {
	st, err := r.dcbPart("ets")
	if err != nil {
		return "", false, err
	}
	if st.ETS == nil {
		return "", false, nic.Unsupportedf("driver %s does not expose ETS", orUnknown(r.driver))
	}
	if hidden := known.For(r.driver).HiddenDCB(st); notes != nil && hidden != "" { // nil: a read-back, which keeps no notes
		notes[s.Key] = hidden
	}
	return formatETS(st.ETS, s.Kind), true, nil
}

// pfcState is the port's ieee_pfc, or why there is none.
func (r *portReader) pfcState() (*dcb.PFC, error) {
	st, err := r.dcbPart("pfc")
	if err != nil {
		return nil, err
	}
	if st.PFC == nil {
		return nil, nic.Unsupportedf("driver %s does not expose PFC", orUnknown(r.driver))
	}
	return st.PFC, nil
}

func readPFC(r *portReader, s policy.Setting, notes map[string]string) (string, bool, error) {
	pfc, err := r.pfcState()
	if err != nil {
		return "", false, err
	}
	if notes != nil { // nil: a read-back, which keeps no notes
		if st, err := r.dcbPart("ets"); err == nil {
			if hidden := known.For(r.driver).HiddenDCB(st); hidden != "" {
				notes[s.Key] = hidden
			}
		}
	}
	return policy.FormatPrioBitmap(pfc.Enable), true, nil
}

// readCableLength reads mlx5's cable length, which it carries in ieee_pfc's
// delay field.
func readCableLength(r *portReader, _ policy.Setting, _ map[string]string) (string, bool, error) {
	pfc, err := r.pfcState()
	if err != nil {
		return "", false, err
	}
	switch {
	case r.driver == "" && r.h.notCaptured("/sys/class/net/"+r.port.Netdev+"/device"):
		// A snapshot imported without `ethtool -i` does not say which
		// driver the port has, so not whether the PFC delay field is a
		// cable length on it: unknown, not unsupported.
		return "", false, &nic.NotCapturedError{Op: "driver", Name: r.port.Netdev}
	case r.driver == "":
		return "", false, fmt.Errorf("the driver of %s is unknown (no ethtool driver info, no device link), so whether the PFC delay field is a cable length on it (mlx5) is too", r.port.Netdev)
	case !known.For(r.driver).Caps().CableLength:
		return "", false, nic.Unsupportedf("cable length is mlx5's use of the PFC delay field; driver %s has no equivalent", r.driver)
	}
	return strconv.Itoa(int(pfc.Delay)), true, nil
}

// bufferState is the port's DCB_ATTR_DCB_BUFFER, or why there is none.
func (r *portReader) bufferState() (*dcb.Buffer, error) {
	st, err := r.dcbPart("buffer")
	if err != nil {
		return nil, err
	}
	if st.Buffer == nil {
		return nil, nic.Unsupportedf("driver %s does not expose receive buffer configuration (DCB_ATTR_DCB_BUFFER)", orUnknown(r.driver))
	}
	return st.Buffer, nil
}

func readPrioBuffer(r *portReader, _ policy.Setting, _ map[string]string) (string, bool, error) {
	b, err := r.bufferState()
	if err != nil {
		return "", false, err
	}
	var v [8]int
	for i, x := range b.PrioBuffer {
		v[i] = int(x)
	}
	return policy.FormatInts8(v), true, nil
}

func readBufferSize(r *portReader, s policy.Setting, notes map[string]string) (string, bool, error) {
	b, err := r.bufferState()
	if err != nil {
		return "", false, err
	}
	want, wantErr := policy.Sizes8Codec.Parse(s.Value)
	if wantErr == nil && inCells(r.driver, b, want) {
		// The driver programs whole cells: what the profile asks, rounded
		// down, is what it holds (driver/mlx5 CellNote).
		if notes != nil {
			cell, how := known.For(r.driver).BufferCell(b.Size, b.TotalSize)
			notes[s.Key] = fmt.Sprintf("the NIC holds %s: %s in whole %d-byte cells (%s)", formatBufferSizes(b), s.Value, cell, how)
		}
		return s.Value, true, nil
	}
	if err := wantErr; err == nil && b.TotalSize > 0 {
		var sum policy.Size
		for _, x := range want {
			sum += x
		}
		if uint64(sum) > uint64(b.TotalSize) {
			return "", false, nic.Unsupportedf("buffer sizes add up to %v, more than the port's %v", sum, policy.Size(b.TotalSize))
		}
	}
	return formatBufferSizes(b), true, nil
}

// formatBufferSizes is the port's buffer sizes as a buffer_size value.
func formatBufferSizes(b *dcb.Buffer) string {
	var v [8]policy.Size
	for i, x := range b.Size {
		v[i] = policy.Size(x)
	}
	return policy.FormatSizes8(v)
}

// inCells says whether the port holds want as its driver programs it:
// every size rounded down to whole cells (driver.Driver.BufferCell), at
// least one of them not whole already (else the plain comparison says
// it).
func inCells(driver string, b *dcb.Buffer, want [8]policy.Size) bool {
	cell, _ := known.For(driver).BufferCell(b.Size, b.TotalSize)
	if cell <= 0 {
		return false
	}
	rounded := false
	for i, w := range want {
		t := uint64(w) / uint64(cell) * uint64(cell)
		if uint64(b.Size[i]) != t {
			return false
		}
		rounded = rounded || t != uint64(w)
	}
	return rounded
}

// formatDSCPDomain prints the host's DSCP APP entries for the DSCPs the
// profile maps. A DSCP with several priorities (generic kernels allow it)
// prints all of them, so it never compares equal to a single mapping.
func formatDSCPDomain(apps []dcb.App, domain *[64]bool) string {
	single := map[int]int{}
	var extra []string
	for _, a := range apps {
		if a.Selector != dcb.SelDSCP || a.Protocol >= 64 || !domain[a.Protocol] {
			continue
		}
		dscp, prio := int(a.Protocol), int(a.Priority)
		if _, seen := single[dscp]; seen {
			extra = append(extra, strconv.Itoa(dscp)+":"+strconv.Itoa(prio))
		} else {
			single[dscp] = prio
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

func readECN(r *portReader, s policy.Setting, _ map[string]string) (string, bool, error) {
	e, err := r.ecnOf()
	if err != nil {
		return "", false, err
	}
	arg, err := policy.ParseECNArg(s.Kind, s.Arg)
	if err != nil {
		return "", false, err
	}
	if s.Kind == policy.KindECNEnable {
		on, err := e.Enabled(arg.Dir, arg.Prio)
		return policy.BoolCodec.Format(on), err == nil, err
	}
	v, err := e.Param(arg.Dir, arg.Param, policy.ECNUpstreamName(arg.Param))
	return policy.Int64Codec.Format(v), err == nil, err
}

func (h *Host) devlinkHandle(p *port.Port) (string, error) {
	if dev := nic.DevlinkHandle(h.FS, p.Netdev); dev != "" {
		return dev, nil
	}
	if p.PCI != "" {
		return "pci/" + p.PCI, nil
	}
	if h.notCaptured("/sys/class/net/" + p.Netdev + "/device") {
		// A snapshot without the netdev's sysfs (an import without
		// ethtool -i) does not say the netdev has no bus device.
		return "", &nic.NotCapturedError{Op: "devlink", Name: p.Netdev}
	}
	return "", nic.Unsupportedf("%s has no bus device, so no devlink instance", p.Netdev)
}

// readDevlink reads a devlink parameter's runtime value, or its driverinit
// value when it has no runtime mode; a change to such a parameter is noted
// as needing a devlink reload, never presented as taking effect.
func readDevlink(r *portReader, s policy.Setting, notes map[string]string) (string, bool, error) {
	dev, err := r.h.devlinkHandle(r.port)
	if err != nil {
		return "", false, err
	}
	params, err := r.h.K.DevlinkParams(dev)
	partial := errors.Is(err, nic.ErrNotCaptured) && params != nil
	if err != nil && !partial {
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
			if notes != nil {
				notes[s.Key] = fmt.Sprintf("driverinit parameter: takes effect after `devlink dev reload %s`", dev)
			}
			return fmt.Sprint(driverinit.Value), true, nil
		}
		return "", false, nic.Unsupportedf("devlink parameter %s can only be changed permanently (firmware reset), not at run time", s.Arg)
	}
	if partial {
		// A snapshot that lists only some of the device's parameters
		// (an import of a `devlink dev param show` dump): this one is
		// unknown, not missing from the driver.
		return "", false, err
	}
	return "", false, nic.Unsupportedf("%s has no devlink parameter %s", dev, s.Arg)
}

// readNCCL reads a variable of the NCCL config file the reader was given
// (the profile's [nccl] write, or the file a journal step saved).
func readNCCL(r *portReader, s policy.Setting, _ map[string]string) (string, bool, error) {
	if r.ncclFile == "" {
		return "", false, fmt.Errorf("no NCCL config file to read %s from", s.Arg)
	}
	vars, absent, err := r.ncclConf()
	if absent || err != nil {
		return "", false, err
	}
	// What NCCL itself would read: the first definition wins.
	for _, v := range vars {
		if v.Name == s.Arg {
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
