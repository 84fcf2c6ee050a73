package bnxtsim

import (
	"errors"
	"syscall"
	"testing"
)

func TestCCStagesUntilApply(t *testing.T) {
	c := NewCC(map[string]uint32{"ecn_enable": 0, "roce_prio": 0, "cnp_dscp": 0})
	for _, w := range [][2]string{{"roce_prio", "0x3"}, {"ecn_enable", "0x1"}, {"cnp_dscp", "0x30"}} {
		if err := c.Write(w[0], w[1]); err != nil {
			t.Fatal(err)
		}
	}
	if c.Read("roce_prio") != "0x3\n" || c.Firmware("roce_prio") != 0 || !c.Pending() {
		t.Fatalf("staged: show %q firmware %d", c.Read("roce_prio"), c.Firmware("roce_prio"))
	}
	if err := c.Write("apply", "0x1"); err != nil {
		t.Fatal(err)
	}
	if c.Firmware("roce_prio") != 3 || c.Firmware("ecn_enable") != 1 || c.Firmware("cnp_dscp") != 0x30 || c.Pending() {
		t.Errorf("after apply: firmware %v", c.firmware)
	}

	// A refused apply clears the mask; the cache shows the new value.
	c.Refuse = true
	_ = c.Write("cnp_dscp", "0x2e")
	if err := c.Write("apply", "0x1"); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("refused apply: %v", err)
	}
	if c.Read("cnp_dscp") != "0x2e\n" || c.Firmware("cnp_dscp") != 0x30 || c.Pending() {
		t.Errorf("after a refused apply: show %q firmware %#x pending %v", c.Read("cnp_dscp"), c.Firmware("cnp_dscp"), c.Pending())
	}
}

func TestCCStoreRanges(t *testing.T) {
	c := NewCC(nil)
	if err := c.Write("cnp_dscp", "0x40"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("cnp_dscp 0x40: %v", err)
	}
	if err := c.Write("cc_mode", "0x2"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("cc_mode 2: %v", err)
	}
	if err := c.Write("cnp_prio", "0x9"); err != nil || c.Read("cnp_prio") != "0x1\n" {
		t.Errorf("cnp_prio 9: %v, shows %q (the store keeps val & 7)", err, c.Read("cnp_prio"))
	}
}
