package nic

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/port"
)

// ECNKind says through which interface a port's ECN/DCQCN knobs are reached.
type ECNKind int

const (
	ECNNone ECNKind = iota
	// ECNOFED is DOCA-OFED/MLNX_OFED sysfs: /sys/class/net/<if>/ecn/roce_{rp,np}/,
	// with per-priority enable files and the parameters.
	ECNOFED
	// ECNUpstreamMlx5 is upstream mlx5's debugfs
	// /sys/kernel/debug/mlx5/<bdf>/cc_params/: port-wide parameters only.
	ECNUpstreamMlx5
	// ECNBnxt is Broadcom's out-of-tree bnxt_re configfs group
	// /sys/kernel/config/bnxt_re/<dev>/ports/<p>/cc/: hex values, taken
	// into effect by writing 0x1 to "apply" (reference §E).
	ECNBnxt
	// ECNBnxtDebugfs is mainline bnxt_re's debugfs (v6.14+)
	// /sys/kernel/debug/bnxt_re/<pci>/cc_config/: one file per
	// parameter, decimal, each write sent to the firmware at once
	// (debugfs.c bnxt_re_cc_config_set); no RoCE priority, no apply.
	ECNBnxtDebugfs
	// ECNIrdma is Intel's out-of-tree irdma configfs group
	// /sys/kernel/config/irdma/<dev>/ (configfs.c irdma_roce_vsi_attrs):
	// one switch per congestion-control algorithm for the whole device
	// (roce_dcqcn_enable, roce_dctcp_enable, roce_timely_enable), each a
	// kstrtobool store read into a QP's context when the QP is created;
	// no per-priority enable, no CNP DSCP or priority.
	ECNIrdma
)

func (k ECNKind) String() string {
	return [...]string{"none", "ofed-sysfs", "mlx5-debugfs", "bnxt_re-configfs", "bnxt_re-debugfs", "irdma-configfs"}[k]
}

// IrdmaAlgorithms are the irdma configfs attributes that switch a RoCE
// congestion-control algorithm on or off (configfs.c
// roce_dcqcn_enable_store and the others: kstrtobool, else EINVAL).
var IrdmaAlgorithms = []string{"roce_dcqcn_enable", "roce_dctcp_enable", "roce_timely_enable"}

// IrdmaDir is the out-of-tree irdma's configfs group of p's RDMA device,
// which exists after `mkdir` of it (configfs.c irdma_make_group).
func IrdmaDir(p port.Port) string {
	return "/sys/kernel/config/irdma/" + p.RDMADevice
}

// bnxtParams maps the profile's (OFED) names to bnxt_re's configfs cc
// attributes (configfs.c cnp_dscp_store, cnp_prio_store); bnxtDebugfs to
// mainline's cc_config files (debugfs.c bnxt_re_cc_gen0_name:
// alt_vlan_dscp is the CNP's DSCP, ALT_TOS_DSCP in the firmware's mask).
var (
	bnxtParams  = map[string]string{"cnp_dscp": "cnp_dscp", "cnp_802p_prio": "cnp_prio", BnxtCCMode: BnxtCCMode}
	bnxtDebugfs = map[string]string{"cnp_dscp": "alt_vlan_dscp", "cnp_802p_prio": "alt_vlan_pcp", BnxtCCMode: BnxtCCMode}
)

// The bnxt_re configfs attributes that hold the per-priority ECN enable
// (one port-wide enable, one RoCE priority) and the one that commits.
const (
	BnxtECNEnable = "ecn_enable"
	BnxtRoCEPrio  = "roce_prio"
	BnxtApply     = "apply"
	// BnxtCCMode is bnxt_re's congestion-control mode (configfs.c
	// cc_mode_store, debugfs.c's gen0 cc_mode): 0 or 1, which [ecn] mode
	// dcqcn-d and dcqcn-p set.
	BnxtCCMode = "cc_mode"
)

// ErrUnsupported marks a setting this NIC/driver cannot take; the error text
// says why. errors.Is(err, ErrUnsupported) holds for every such error.
var ErrUnsupported = errors.New("unsupported on this NIC/driver")

// Unsupportedf returns an error wrapping ErrUnsupported.
func Unsupportedf(format string, args ...any) error {
	return &unsupportedError{fmt.Sprintf(format, args...)}
}

type unsupportedError struct{ reason string }

func (e *unsupportedError) Error() string        { return e.reason }
func (e *unsupportedError) Is(target error) bool { return target == ErrUnsupported }

// ECN reads and writes one port's ECN/DCQCN knobs.
type ECN struct {
	fs   FS
	Kind ECNKind
	base string // directory holding roce_rp/roce_np (OFED) or cc_params (upstream)
	// held, in an ECN that Held returned, is base held open: reads walk
	// only the names below it. nil: reads open base/<name> from the root.
	// Writes keep to base.
	held *Dir
}

func newECN(fs FS, kind ECNKind, base string) *ECN {
	return &ECN{fs: fs, Kind: kind, base: base}
}

// read reads the attribute rel below base.
func (e *ECN) read(rel string) (string, error) {
	if e.held != nil {
		return e.held.ReadTrimmed(rel)
	}
	return e.fs.ReadTrimmed(e.base + "/" + rel)
}

// OpenECN finds the ECN interface of a port. The error wraps ErrUnsupported
// and names what is missing.
func OpenECN(fs FS, p port.Port) (*ECN, error) {
	ofed, bnxt, cc := ECNDirs(p)
	if fs.Exists(ofed + "/roce_np") {
		return newECN(fs, ECNOFED, ofed), nil
	}
	if fs.Exists(bnxt) {
		return newECN(fs, ECNBnxt, bnxt), nil
	}
	if p.RDMADevice != "" && (p.Driver == "ice" || p.Driver == "i40e") {
		dir := IrdmaDir(p)
		if fs.Exists(dir + "/roce_dcqcn_enable") {
			return newECN(fs, ECNIrdma, dir), nil
		}
		if fs.Exists(dir) {
			return nil, Unsupportedf("irdma's configfs group %s has no roce_dcqcn_enable: the device is in iWARP mode (iw_* attributes) or the irdma build has no RoCE congestion-control switches", dir)
		}
		return nil, Unsupportedf("no congestion-control interface for irdma on %s: the out-of-tree irdma's configfs group %s is absent (mkdir it once the driver is loaded; mainline irdma has no configfs)", p.Netdev, dir)
	}
	if p.PCI != "" && strings.HasPrefix(p.Driver, "bnxt") {
		dbg := BnxtDebugfsDir(p)
		if fs.Exists(dbg) {
			return newECN(fs, ECNBnxtDebugfs, dbg), nil
		}
		return nil, Unsupportedf("no congestion-control interface for bnxt_re on %s: neither the out-of-tree driver's configfs %s (Broadcom's bnxt_re, after mkdir of its bnxt_re/%s group) nor mainline bnxt_re's debugfs %s (v6.14+, debugfs mounted)", p.Netdev, bnxt, p.RDMADevice, dbg)
	}
	if p.PCI != "" && strings.HasPrefix(p.Driver, "mlx5") {
		if fs.Exists(cc) {
			return newECN(fs, ECNUpstreamMlx5, cc), nil
		}
		if !fs.Exists("/sys/kernel/debug/mlx5") {
			return nil, Unsupportedf("no ECN interface: neither DOCA-OFED sysfs %s nor upstream mlx5 debugfs cc_params (is debugfs mounted at /sys/kernel/debug?)", ofed)
		}
		return nil, Unsupportedf("no ECN interface: upstream mlx5 creates cc_params only when the firmware allows congestion-control query and modify")
	}
	return nil, Unsupportedf("no ECN/DCQCN interface for driver %s on %s", orUnknown(p.Driver), p.Netdev)
}

// ECNDirs are the directories OpenECN looks in for p's ECN knobs, in the
// order it looks: DOCA-OFED's sysfs under the netdev, bnxt_re's configfs
// port group, upstream mlx5's debugfs cc_params.
func ECNDirs(p port.Port) (ofed, bnxt, mlx5 string) {
	return "/sys/class/net/" + p.Netdev + "/ecn",
		fmt.Sprintf("/sys/kernel/config/bnxt_re/%s/ports/%d/cc", p.RDMADevice, p.PortNum),
		"/sys/kernel/debug/mlx5/" + p.PCI + "/cc_params"
}

// BnxtDebugfsDir is mainline bnxt_re's cc_config directory of p's PCI
// function (debugfs.c bnxt_re_debugfs_add_pdev names it after the PCI
// device, not the RDMA device).
func BnxtDebugfsDir(p port.Port) string {
	return "/sys/kernel/debug/bnxt_re/" + p.PCI + "/cc_config"
}

// Held returns e reading below its directory held open, for a burst of
// reads that ends soon (one port's observation): each read then walks
// only the names below the directory instead of the path from the root
// (22 reads a port on DOCA-OFED mlx5). Close it at the end of the burst:
// a descriptor held for every port of a pass would grow the process's
// descriptor table (Dir.Close).
func (e *ECN) Held() *ECN {
	c := *e
	d := e.fs.Dir(e.base)
	c.held = &d
	return &c
}

// Close releases the directory Held holds; for any other ECN it does
// nothing.
func (e *ECN) Close() {
	if e.held != nil {
		e.held.Close()
	}
}

// On returns the same interface reached through fs, not held: what
// OpenECN probed holds for every FS value on the same root, so a caller
// may probe once and keep the answer.
func (e *ECN) On(fs FS) *ECN {
	c := *e
	c.fs = fs
	c.held = nil
	return &c
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// enablePath is the enable file of a priority, relative to e.base.
func (e *ECN) enablePath(dir string, prio int) (string, error) {
	switch e.Kind {
	case ECNUpstreamMlx5:
		return "", Unsupportedf("upstream mlx5 has no per-priority ECN enable (its cc_params are port-wide; the per-priority files are DOCA-OFED's ecn sysfs)")
	case ECNBnxtDebugfs:
		return "", Unsupportedf("mainline bnxt_re's debugfs cc_config has one port-wide enable_cc and no RoCE priority, so no per-priority enable (Broadcom's out-of-tree bnxt_re has roce_prio in configfs)")
	case ECNIrdma:
		return "", Unsupportedf("irdma has no per-priority ECN enable: its configfs switches one congestion-control algorithm on for the whole device (roce_dcqcn_enable, roce_dctcp_enable, roce_timely_enable), which [ecn] mode sets")
	}
	if prio >= 0 && prio < 8 {
		switch dir {
		case "rp":
			return rpEnable[prio], nil
		case "np":
			return npEnable[prio], nil
		}
	}
	return "roce_" + dir + "/enable/" + strconv.Itoa(prio), nil
}

// The enable files of the eight priorities, spelled out rather than
// formatted for each of an audit's thousand reads of them.
var (
	rpEnable = [8]string{"roce_rp/enable/0", "roce_rp/enable/1", "roce_rp/enable/2", "roce_rp/enable/3", "roce_rp/enable/4", "roce_rp/enable/5", "roce_rp/enable/6", "roce_rp/enable/7"}
	npEnable = [8]string{"roce_np/enable/0", "roce_np/enable/1", "roce_np/enable/2", "roce_np/enable/3", "roce_np/enable/4", "roce_np/enable/5", "roce_np/enable/6", "roce_np/enable/7"}
)

// Enabled reads roce_{rp,np}/enable/<prio>; on bnxt_re's configfs, a
// priority is enabled when ecn_enable is on and roce_prio is it (one
// port-wide enable for reaction and notification, one RoCE priority).
func (e *ECN) Enabled(dir string, prio int) (bool, error) {
	if e.Kind == ECNBnxt {
		on, err := e.Hex(BnxtECNEnable)
		if err != nil || on == 0 {
			return false, err
		}
		rp, err := e.Hex(BnxtRoCEPrio)
		return err == nil && rp == int64(prio), err
	}
	p, err := e.enablePath(dir, prio)
	if err != nil {
		return false, err
	}
	s, err := e.read(p)
	if err != nil {
		return false, err
	}
	return s == "1", nil
}

// SetEnabled writes roce_{rp,np}/enable/<prio>. Like every file writer in
// this package it leaves the read-back to its caller: apply reads each step
// back, with retries, through the same readers.
func (e *ECN) SetEnabled(dir string, prio int, on bool) error {
	if e.Kind == ECNBnxt {
		return e.StageBnxtEnable(on, prio)
	}
	p, err := e.enablePath(dir, prio)
	if err != nil {
		return err
	}
	v := "0"
	if on {
		v = "1"
	}
	return e.fs.WriteString(e.base+"/"+p, v)
}

// paramPaths are where a parameter may be, relative to e.base, in the
// order to try (second is "" when there is one place); the error says
// when the interface has no such parameter at all. name is the OFED name
// (rpg_ai_rate, cnp_dscp), upstream the debugfs one (rp_ai_rate,
// np_cnp_dscp); "" when the parameter has no upstream equivalent. Callers
// try the paths directly instead of probing them first: a missing file
// costs one failed open, and every present one a stat less.
func (e *ECN) paramPaths(dir, name, upstream string) (first, second string, err error) {
	switch e.Kind {
	case ECNOFED:
		// The driver creates parameters directly under roce_rp/; NVIDIA's
		// docs show roce_rp/params/. Try both.
		return "roce_" + dir + "/" + name, "roce_" + dir + "/params/" + name, nil
	case ECNBnxt:
		attr, ok := bnxtParams[name]
		if !ok {
			return "", "", Unsupportedf("bnxt_re's congestion control has no equivalent of %s", name)
		}
		return attr, "", nil
	case ECNBnxtDebugfs:
		attr, ok := bnxtDebugfs[name]
		if !ok {
			return "", "", Unsupportedf("mainline bnxt_re's debugfs cc_config has no equivalent of %s", name)
		}
		return attr, "", nil
	case ECNUpstreamMlx5:
		if upstream == "" {
			return "", "", Unsupportedf("upstream mlx5 cc_params has no equivalent of %s", name)
		}
		return upstream, "", nil
	case ECNIrdma:
		if dir != "rp" || !slices.Contains(IrdmaAlgorithms, name) {
			return "", "", Unsupportedf("irdma's configfs has no equivalent of %s (its DCQCN parameters are module parameters of the out-of-tree driver)", name)
		}
		return name, "", nil
	}
	return "", "", Unsupportedf("no ECN interface")
}

// onParam runs op on the first of the parameter's paths (relative to
// e.base) that exists.
func (e *ECN) onParam(dir, name, upstream string, op func(path string) error) error {
	first, second, err := e.paramPaths(dir, name, upstream)
	if err != nil {
		return err
	}
	for _, p := range [2]string{first, second} {
		if p == "" {
			break
		}
		if err := op(p); !isNotExist(err) {
			return err
		}
	}
	switch e.Kind {
	case ECNOFED:
		return Unsupportedf("%s/roce_%s has no %s parameter", e.base, dir, name)
	case ECNUpstreamMlx5:
		return Unsupportedf("cc_params/%s is absent (needs a firmware capability)", upstream)
	}
	return Unsupportedf("%s/%s is absent", e.base, first)
}

// Param reads a DCQCN parameter.
func (e *ECN) Param(dir, name, upstream string) (int64, error) {
	var s string
	err := e.onParam(dir, name, upstream, func(p string) (err error) {
		s, err = e.read(p)
		return err
	})
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 0, 64)
}

// SetParam writes a DCQCN parameter. On bnxt_re's configfs the write
// is only staged: Commit sends it to the firmware.
func (e *ECN) SetParam(dir, name, upstream string, v int64) error {
	val := strconv.FormatInt(v, 10)
	if e.Kind == ECNBnxt {
		val = fmt.Sprintf("0x%x", v) // configfs.c parses with sscanf("%x")
	}
	return e.onParam(dir, name, upstream, func(p string) error { return e.fs.WriteString(e.base+"/"+p, val) })
}

// ParamAttr is the file below the interface's directory that holds the
// parameter (bnxt_re: its configfs or debugfs attribute).
func (e *ECN) ParamAttr(dir, name, upstream string) (string, error) {
	first, _, err := e.paramPaths(dir, name, upstream)
	return first, err
}

// StageBnxtEnable stages, in bnxt_re's configfs, ECN on priority prio
// (roce_prio, then ecn_enable 0x1) or ECN off (ecn_enable 0x0, roce_prio
// left as it is); Commit takes it into effect.
func (e *ECN) StageBnxtEnable(on bool, prio int) error {
	if e.Kind != ECNBnxt {
		return Unsupportedf("not bnxt_re's configfs")
	}
	if !on {
		return e.SetAttr(BnxtECNEnable, "0x0")
	}
	if err := e.SetAttr(BnxtRoCEPrio, fmt.Sprintf("0x%x", prio)); err != nil {
		return err
	}
	return e.SetAttr(BnxtECNEnable, "0x1")
}

// Hex reads an attribute below the interface's directory as a number
// in any base ("0x3" from bnxt_re's configfs, "3" from its debugfs).
func (e *ECN) Hex(attr string) (int64, error) {
	s, err := e.read(attr)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 0, 64)
}

// Attr reads an attribute below the interface's directory as it is.
func (e *ECN) Attr(attr string) (string, error) { return e.read(attr) }

// SetAttr writes raw to an attribute below the interface's directory.
// A missing attribute is an unsupported setting, named.
func (e *ECN) SetAttr(attr, raw string) error {
	err := e.fs.WriteString(e.base+"/"+attr, raw)
	if isNotExist(err) {
		return Unsupportedf("%s/%s is absent", e.base, attr)
	}
	return err
}

// Commit takes staged writes into effect: bnxt_re's configfs apply
// (apply_store with 0x1 sends every staged field in one
// bnxt_qplib_modify_cc, EINVAL when the firmware refuses). Every other
// interface takes each write at once: nothing to do.
func (e *ECN) Commit() error {
	if e.Kind != ECNBnxt {
		return nil
	}
	if err := e.fs.WriteString(e.base+"/"+BnxtApply, "0x1"); err != nil {
		return fmt.Errorf("commit %s/%s: %w", e.base, BnxtApply, err)
	}
	return nil
}

// isNotExist is os.IsNotExist that also sees through wrapping.
func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
