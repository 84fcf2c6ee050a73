package policy

import (
	"reflect"
	"testing"
)

// [firmware] expands per port: per-port keys get the firmware's _P<n>
// suffix, per-device keys none.
func TestFirmwareParams(t *testing.T) {
	p, ds := loadText(t, "name = \"fw\"\n[link]\nmtu = 9000\n[firmware]\ncc_priorities = [3]\ncnp_dscp = 48\ncnp_priority = 6\nats = true\nadvanced_pci_settings = false\n")
	if p == nil {
		t.Fatalf("refused: %v", ds)
	}
	want := []FirmwareParam{
		{"ROCE_CC_PRIO_MASK_P2", 8},
		{"CNP_DSCP_P2", 48},
		{"CNP_802P_PRIO_P2", 6},
		{"ATS_ENABLED", 1},
		{"ADVANCED_PCI_SETTINGS", 0},
	}
	if got := p.Firmware.Params(2); !reflect.DeepEqual(got, want) {
		t.Errorf("Params(2) = %v, want %v", got, want)
	}
	if got := (Firmware{}).Params(1); got != nil {
		t.Errorf("empty [firmware]: %v", got)
	}
}
