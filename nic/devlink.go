package nic

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// ErrDevlinkUnavailable means the kernel has no devlink generic netlink
// family (CONFIG_NET_DEVLINK off, as on kernels without any devlink driver).
// It matches errors.Is(err, syscall.EOPNOTSUPP): to rocectl a missing devlink
// is a missing feature, like dcbnl on a driver without DCB. It deliberately
// does not match os.ErrNotExist, which a caller would read as "no such
// device".
var ErrDevlinkUnavailable = fmt.Errorf("devlink not available (no %q generic netlink family): %w",
	nl.GENL_DEVLINK_NAME, syscall.EOPNOTSUPP)

// devlinkFamily checks that the kernel has devlink before a devlink request,
// so that its absence is told apart from a missing device or parameter.
func (l *Live) devlinkFamily(dev, op string) error {
	_, err := l.genl.GenlFamilyGet(nl.GENL_DEVLINK_NAME)
	if errors.Is(err, syscall.ENOENT) {
		// The generic netlink controller answers ENOENT for an unknown
		// family name.
		return opErr(dev, op, ErrDevlinkUnavailable)
	}
	if err != nil {
		return opErr(dev, op+": resolve devlink generic netlink family", err)
	}
	return nil
}

// DevlinkParams lists a devlink device's parameters with their values per
// configuration mode (devlink dev param show). dev is "bus/name", e.g.
// "pci/0000:3b:00.0".
func (l *Live) DevlinkParams(dev string) ([]DevlinkParam, error) {
	const op = "devlink get params"
	bus, name, err := splitDevlinkDev(dev)
	if err != nil {
		return nil, opErr(dev, op, err)
	}
	if err := l.devlinkFamily(dev, op); err != nil {
		return nil, err
	}
	ps, err := l.genl.DevlinkGetDeviceParams(bus, name)
	if errors.Is(err, netlink.ErrDumpInterrupted) {
		// The parameter set changed during the dump (driver reload);
		// one more dump sees the new set.
		ps, err = l.genl.DevlinkGetDeviceParams(bus, name)
	}
	if err != nil {
		return nil, opErr(dev, op, err)
	}
	out := make([]DevlinkParam, 0, len(ps))
	for _, p := range ps {
		out = append(out, convertDevlinkParam(p))
	}
	return out, nil
}

// SetDevlinkParam sets one parameter in one configuration mode (devlink dev
// param set). value must have the parameter's exact Go
// type: uint8, uint16, uint32, string or bool; anything else is refused with
// EINVAL before the kernel is asked. A driverinit value takes effect only
// after a devlink reload, a permanent one after a firmware reset; the read
// back shows the stored value either way.
func (l *Live) SetDevlinkParam(dev, name string, cmode uint8, value any) error {
	op := fmt.Sprintf("devlink set param %s cmode %s value %v", name, cmodeString(cmode), value)
	bus, devName, err := splitDevlinkDev(dev)
	if err != nil {
		return opErr(dev, op, err)
	}
	if err := l.devlinkFamily(dev, op); err != nil {
		return err
	}
	// Look the parameter up first: netlink's DevlinkSetDeviceParam does the
	// same but formats the failure with %v, losing the errno.
	p, err := l.genl.DevlinkGetDeviceParamByName(bus, devName, name)
	if err != nil {
		return opErr(dev, op, err)
	}
	if err := checkDevlinkValue(p.Type, value); err != nil {
		return opErr(dev, op, err)
	}
	return opErr(dev, op, l.genl.DevlinkSetDeviceParam(bus, devName, name, cmode, value))
}

// splitDevlinkDev splits "bus/name" ("pci/0000:3b:00.0",
// "auxiliary/mlx5_core.sf.2"); device names contain no '/'.
func splitDevlinkDev(dev string) (bus, name string, err error) {
	bus, name, ok := strings.Cut(dev, "/")
	if !ok || bus == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("devlink device %q is not bus/name: %w", dev, syscall.EINVAL)
	}
	return bus, name, nil
}

func convertDevlinkParam(p *netlink.DevlinkParam) DevlinkParam {
	out := DevlinkParam{Name: p.Name, Generic: p.IsGeneric, Type: devlinkTypeString(p.Type)}
	for _, v := range p.Values {
		out.Values = append(out.Values, DevlinkParamValue{Cmode: v.CMODE, Value: v.Data})
	}
	return out
}

// devlinkTypeString names DEVLINK_PARAM_TYPE_* values. Types netlink v1.3.1
// does not decode (newer kernels add u64) come out as "type<N>" with nil
// values, and SetDevlinkParam refuses them.
func devlinkTypeString(t uint8) string {
	switch t {
	case nl.DEVLINK_PARAM_TYPE_U8:
		return "u8"
	case nl.DEVLINK_PARAM_TYPE_U16:
		return "u16"
	case nl.DEVLINK_PARAM_TYPE_U32:
		return "u32"
	case nl.DEVLINK_PARAM_TYPE_STRING:
		return "string"
	case nl.DEVLINK_PARAM_TYPE_BOOL:
		return "bool"
	}
	return fmt.Sprintf("type%d", t)
}

// checkDevlinkValue requires value's Go type to be the one netlink encodes
// for the parameter type, so a mistyped value fails here with a clear
// message instead of inside netlink without an errno.
func checkDevlinkValue(t uint8, value any) error {
	ok := false
	switch t {
	case nl.DEVLINK_PARAM_TYPE_U8:
		_, ok = value.(uint8)
	case nl.DEVLINK_PARAM_TYPE_U16:
		_, ok = value.(uint16)
	case nl.DEVLINK_PARAM_TYPE_U32:
		_, ok = value.(uint32)
	case nl.DEVLINK_PARAM_TYPE_STRING:
		_, ok = value.(string)
	case nl.DEVLINK_PARAM_TYPE_BOOL:
		_, ok = value.(bool)
	default:
		return fmt.Errorf("devlink parameter type %s cannot be set: %w", devlinkTypeString(t), syscall.EOPNOTSUPP)
	}
	if !ok {
		return fmt.Errorf("value %v is %T, the parameter is %s: %w", value, value, devlinkTypeString(t), syscall.EINVAL)
	}
	return nil
}

func cmodeString(c uint8) string {
	switch c {
	case CmodeRuntime:
		return "runtime"
	case CmodeDriverinit:
		return "driverinit"
	case CmodePermanent:
		return "permanent"
	}
	return fmt.Sprintf("cmode%d", c)
}
