package host_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nvconfig"
	"github.com/rocectl/rocectl/policy"
)

func TestFirmwarePort(t *testing.T) {
	for pci, want := range map[string]int{"0000:3b:00.0": 1, "0000:3b:00.1": 2, "0000:af:00.7": 8} {
		if n, err := host.FirmwarePort(pci); err != nil || n != want {
			t.Errorf("%s: %d %v, want %d", pci, n, err, want)
		}
	}
	for _, bad := range []string{"", "0000:3b:00", "0000:3b:00.x", "0000:3b:00.8"} {
		if _, err := host.FirmwarePort(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// texts answers queries with fixed mstconfig output by PCI address: the
// kernel boundary of the firmware, nothing else faked.
type texts map[string]string

func (x texts) Query(_ context.Context, pci string) (*nvconfig.Query, error) {
	t, ok := x[pci]
	if !ok {
		return nil, &nic.NotCapturedError{Op: "mstconfig query", Name: pci}
	}
	return nvconfig.Parse([]byte(t))
}

func (texts) Set(context.Context, string, []nvconfig.Param) error { return errors.New("read-only") }

const header = "Device type:        ConnectX6DX\nConfigurations:                                          Default             Current             Next Boot\n"

// What a firmware setting observes as: the next-boot value, pending with
// the current value (or "unknown" when the firmware says N/A), an error
// for a next-boot value that is no number, unsupported for a parameter
// the firmware does not list.
func TestObserveFirmware(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	fw := texts{
		"0000:3b:00.0": header +
			"*        ROCE_CC_PRIO_MASK_P1                        255                  N/A                  8\n" +
			"         CNP_DSCP_P1                                 48                   48                   ABC\n",
		"0000:3b:00.1": header +
			"*        ROCE_CC_PRIO_MASK_P2                        255                  255                  8\n",
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim, FW: fw}
	cc, dscp := 3, 48
	prios := policy.PrioSet(1 << cc)
	p := &policy.Profile{Name: "fw", Firmware: policy.Firmware{CCPriorities: &prios, CNPDSCP: &dscp}}
	d := host.Place(policy.Resolve(p, h.Ports(h.Discover(), false)))
	o := h.Observe(d)
	for key, want := range map[string]string{"ens1f0np0.firmware.cc_priorities": "[3]", "ens1f1np1.firmware.cc_priorities": "[3]"} {
		if o.Values[key] != want {
			t.Errorf("%s = %q, want %q", key, o.Values[key], want)
		}
	}
	if o.Pending["ens1f0np0.firmware.cc_priorities"] != "unknown" || o.Pending["ens1f1np1.firmware.cc_priorities"] != "[0,1,2,3,4,5,6,7]" {
		t.Errorf("pending %v", o.Pending)
	}
	if e := o.Errors["ens1f0np0.firmware.cnp_dscp"]; e == "" {
		t.Errorf("a next-boot value that is no number: errors %v", o.Errors)
	}
	if u := o.Unsupported["ens1f1np1.firmware.cnp_dscp"]; u == "" {
		t.Errorf("a parameter the firmware does not list: unsupported %v", o.Unsupported)
	}
}
