package nic

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

// On a kernel without the devlink genl family (the test machines: 6.18
// without CONFIG_NET_DEVLINK users, reference §A6) every devlink call says
// so with ErrDevlinkUnavailable, which is EOPNOTSUPP. Where devlink exists,
// a device that does not exist must be reported as such instead.
func TestDevlinkOnThisKernel(t *testing.T) {
	ns, l := liveInNS(t)
	var haveDevlink bool
	if err := ns.Do(func() error {
		_, err := netlink.GenlFamilyGet(nl.GENL_DEVLINK_NAME)
		switch {
		case err == nil:
			haveDevlink = true
		case errors.Is(err, syscall.ENOENT):
		default:
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	const dev = "pci/0000:ff:1f.7" // no such device either way
	_, getErr := l.DevlinkParams(dev)
	setErr := l.SetDevlinkParam(dev, "enable_roce", CmodeDriverinit, true)
	for name, err := range map[string]error{"DevlinkParams": getErr, "SetDevlinkParam": setErr} {
		var oe *OpError
		if !errors.As(err, &oe) || oe.Dev != dev {
			t.Errorf("%s error %v does not name the device", name, err)
		}
		if haveDevlink {
			if errors.Is(err, ErrDevlinkUnavailable) || err == nil {
				t.Errorf("%s with devlink present = %v, want the kernel's error for a missing device", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrDevlinkUnavailable) || !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("%s = %v, want ErrDevlinkUnavailable and EOPNOTSUPP", name, err)
		}
		if errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s = %v matches os.ErrNotExist; documented as EOPNOTSUPP only", name, err)
		}
	}
	if !haveDevlink {
		want := "pci/0000:ff:1f.7: devlink get params: devlink not available (no \"devlink\" generic netlink family): operation not supported"
		if getErr.Error() != want {
			t.Errorf("DevlinkParams error\n got %q\nwant %q", getErr, want)
		}
	}
}

func TestSplitDevlinkDev(t *testing.T) {
	for _, tt := range []struct{ in, bus, name string }{
		{"pci/0000:3b:00.0", "pci", "0000:3b:00.0"},
		{"auxiliary/mlx5_core.sf.2", "auxiliary", "mlx5_core.sf.2"},
	} {
		bus, name, err := splitDevlinkDev(tt.in)
		if err != nil || bus != tt.bus || name != tt.name {
			t.Errorf("splitDevlinkDev(%q) = %q, %q, %v", tt.in, bus, name, err)
		}
	}
	for _, bad := range []string{"", "pci", "pci/", "/0000:3b:00.0", "pci/a/b"} {
		if _, _, err := splitDevlinkDev(bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("splitDevlinkDev(%q) = %v, want EINVAL", bad, err)
		}
	}
}

func TestCheckDevlinkValue(t *testing.T) {
	ok := []struct {
		typ uint8
		v   any
	}{
		{nl.DEVLINK_PARAM_TYPE_U8, uint8(1)},
		{nl.DEVLINK_PARAM_TYPE_U16, uint16(1)},
		{nl.DEVLINK_PARAM_TYPE_U32, uint32(4096)},
		{nl.DEVLINK_PARAM_TYPE_STRING, "smfs"},
		{nl.DEVLINK_PARAM_TYPE_BOOL, true},
	}
	for _, c := range ok {
		if err := checkDevlinkValue(c.typ, c.v); err != nil {
			t.Errorf("checkDevlinkValue(%s, %T) = %v", devlinkTypeString(c.typ), c.v, err)
		}
	}
	// Untyped constants in Go are int: the classic mistake must be caught.
	if err := checkDevlinkValue(nl.DEVLINK_PARAM_TYPE_U32, 4096); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("int for u32 = %v, want EINVAL", err)
	}
	if err := checkDevlinkValue(nl.DEVLINK_PARAM_TYPE_BOOL, "true"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("string for bool = %v, want EINVAL", err)
	}
	if err := checkDevlinkValue(4, uint64(1)); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("type 4 (u64 in newer kernels) = %v, want EOPNOTSUPP", err)
	}
}

func TestConvertDevlinkParam(t *testing.T) {
	// As netlink decodes mlx5's enable_roce (generic bool, driverinit).
	in := &netlink.DevlinkParam{
		Name: "enable_roce", IsGeneric: true, Type: nl.DEVLINK_PARAM_TYPE_BOOL,
		Values: []netlink.DevlinkParamValue{{Data: true, CMODE: nl.DEVLINK_PARAM_CMODE_DRIVERINIT}},
	}
	got := convertDevlinkParam(in)
	want := DevlinkParam{Name: "enable_roce", Generic: true, Type: "bool",
		Values: []DevlinkParamValue{{Cmode: CmodeDriverinit, Value: true}}}
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Fatalf("convert = %#v, want %#v", got, want)
	}
	for typ, name := range map[uint8]string{1: "u8", 2: "u16", 3: "u32", 5: "string", 6: "bool", 4: "type4"} {
		if got := devlinkTypeString(typ); got != name {
			t.Errorf("devlinkTypeString(%d) = %q, want %q", typ, got, name)
		}
	}
}
