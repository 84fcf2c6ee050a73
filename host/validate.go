package host

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nvconfig"
	"github.com/rocectl/rocectl/policy"
)

// ErrInvalidStep is a step that no rocectl writes: read from a journal,
// it must not be acted on (every error of Step.Validate wraps it).
var ErrInvalidStep = errors.New("invalid step")

// rdmaNameMax is IB_DEVICE_NAME_MAX: an RDMA device's name is shorter.
const rdmaNameMax = 64

// Validate checks a step read from a journal before anything reads or
// writes the host through it: that it has the shape Steps and CaptureUndo
// give a step, so that every field a write, an undo or a read-back uses
// is there and means what they take it to mean. A journal comes from disk
// (a version 1 one has no checksum, and any one may be edited by hand):
// a change of a port setting without its port crashed every rollback,
// recovery and abandon that read it.
//
//   - at least one change, each of a known kind, all through the one
//     kernel object the step writes (Steps groups by object), or, in a
//     congestion-control step (ccGroup), ECN settings of one port;
//   - a port setting's change names its port: a netdev the kernel could
//     have, the RDMA device for a setting of the RDMA port, and the one
//     port of the step (a LAG step's changes are on its slaves, which
//     the journal's decoder checks against the step's Slaves);
//   - the NCCL file's saved copy (Undo), if the step has one, is of an
//     absolute path; no other step has one;
//   - the saved DSCP APP tables only on APP steps, each entry a valid
//     DSCP entry.
func (st Step) Validate() error {
	if len(st.Changes) == 0 {
		return fmt.Errorf("%w: it has no changes", ErrInvalidStep)
	}
	var obj *object
	netdev := ""
	for i, c := range st.Changes {
		k, err := kindOf(c.Kind)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidStep, c.Key, err)
		}
		ecnKind := func(k policy.Kind) bool { return k == policy.KindECNEnable || k == policy.KindECNParam }
		if i == 0 {
			obj = k.obj
		} else if k.obj != obj && !(st.Group == ccGroup && ecnKind(c.Kind) && ecnKind(st.Changes[0].Kind)) {
			// A congestion-control step (ccGroup: bnxt_re's staged
			// writes and one commit) holds the enable and the
			// parameters of one port together.
			return fmt.Errorf("%w: %s (%s) is not written through the same kernel object as %s (%s)",
				ErrInvalidStep, c.Key, c.Kind, st.Changes[0].Key, st.Changes[0].Kind)
		}
		if k.where == onHost {
			continue
		}
		p := c.Port
		if p == nil {
			return fmt.Errorf("%w: %s (%s) is a port setting without its port", ErrInvalidStep, c.Key, c.Kind)
		}
		if err := nic.CheckLinkName(p.Netdev); err != nil {
			return fmt.Errorf("%w: %s: %q is not a netdev name", ErrInvalidStep, c.Key, p.Netdev)
		}
		if p.Master != "" {
			if err := nic.CheckLinkName(p.Master); err != nil {
				return fmt.Errorf("%w: %s: %q is not a bond name", ErrInvalidStep, c.Key, p.Master)
			}
		}
		if k.where == onRDMAPort && !validRDMAName(p.RDMADevice) {
			return fmt.Errorf("%w: %s (%s) needs an RDMA device, not %q", ErrInvalidStep, c.Key, c.Kind, p.RDMADevice)
		}
		if p.RDMADevice != "" && !validRDMAName(p.RDMADevice) {
			return fmt.Errorf("%w: %s: %q is not an RDMA device name", ErrInvalidStep, c.Key, p.RDMADevice)
		}
		if p.PortNum < 0 {
			return fmt.Errorf("%w: %s: port number %d", ErrInvalidStep, c.Key, p.PortNum)
		}
		if len(st.Slaves) > 0 {
			continue
		}
		if i == 0 {
			netdev = p.Netdev
		} else if p.Netdev != netdev {
			return fmt.Errorf("%w: %s is on %s, the step's first change on %s", ErrInvalidStep, c.Key, p.Netdev, netdev)
		}
	}
	if u := st.Undo; obj == objNCCLFile && u != nil {
		// A step without one (a journal that never saved the file) is
		// read back as restored and never rewritten.
		if !path.IsAbs(u.Path) || path.Clean(u.Path) != u.Path || strings.ContainsRune(u.Path, 0) {
			return fmt.Errorf("%w: the NCCL file's saved copy is of %q, not an absolute path", ErrInvalidStep, u.Path)
		}
		if u.Absent && len(u.Data) > 0 {
			return fmt.Errorf("%w: the NCCL file's saved copy has content but says there was no file", ErrInvalidStep)
		}
	} else if obj != objNCCLFile && st.Undo != nil {
		return fmt.Errorf("%w: a %s step has a saved file (%q); only the NCCL file's has", ErrInvalidStep, st.Changes[0].Kind, st.Undo.Path)
	}
	if len(st.Firmware) > 0 && obj != objFirmware {
		return fmt.Errorf("%w: a %s step has saved firmware values; only a firmware step has", ErrInvalidStep, st.Changes[0].Kind)
	}
	if obj == objFirmware {
		for _, c := range st.Changes {
			if _, err := FirmwarePort(c.Port.PCI); err != nil || !nvconfig.ValidAddress(c.Port.PCI) {
				return fmt.Errorf("%w: %s: firmware setting on %q, not a PCI address", ErrInvalidStep, c.Key, c.Port.PCI)
			}
			if _, ok := policy.FirmwareSpecByKey(c.Arg); !ok {
				return fmt.Errorf("%w: %s: no firmware parameter %q", ErrInvalidStep, c.Key, c.Arg)
			}
		}
		if err := CheckFirmwareSaved(st); err != nil {
			return err
		}
	}
	tables := []*AppTable{st.DSCPApps}
	for _, s := range st.Slaves {
		tables = append(tables, s.DSCPApps)
	}
	for _, t := range tables {
		if t == nil {
			continue
		}
		if obj != objApp {
			return fmt.Errorf("%w: a %s step has a saved APP table; only a trust or DSCP map step has", ErrInvalidStep, st.Changes[0].Kind)
		}
		for _, a := range t.Entries {
			if a.Selector != dcb.SelDSCP {
				return fmt.Errorf("%w: a saved DSCP APP entry has selector %d", ErrInvalidStep, a.Selector)
			}
		}
		if err := dcb.ValidateApps(t.Entries); err != nil {
			return fmt.Errorf("%w: saved APP table: %v", ErrInvalidStep, err)
		}
	}
	return nil
}

// validRDMAName: an RDMA device name is one path element of
// /sys/class/infiniband, shorter than IB_DEVICE_NAME_MAX.
func validRDMAName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) < rdmaNameMax && !strings.ContainsAny(name, "/\x00")
}
