package generic

import (
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// A driver without known side effects adds nothing to a write but what
// every dcbnl driver does.
func TestGenericAddsNothing(t *testing.T) {
	d := Driver{Module: "rxe"}
	c := policy.Change{Setting: policy.Setting{Kind: policy.KindPFC}}
	if d.Companions(c) != nil || d.Disruptions(&c) != nil || d.UndoBefore(policy.KindETSPrioTC) != nil || d.DeleteAppFirst() {
		t.Error("generic driver has side effects")
	}
	if note, refusal := d.PFCNeedsETS(); note != "" || refusal != "" {
		t.Error("generic driver needs ETS before PFC")
	}
	if c := d.Caps(); c != (driver.Caps{}) {
		t.Errorf("caps %+v", c)
	}
	lld := uint8(dcb.DCBXLLDManaged | dcb.DCBXVerIEEE)
	msg := d.FirmwareLLDP(driver.LLDPFacts{DCBX: func() *uint8 { return &lld }})
	if !strings.HasPrefix(msg, "rxe's firmware runs DCBX") {
		t.Errorf("LLD_MANAGED: %q", msg)
	}
	if msg := (Driver{}).FirmwareLLDP(driver.LLDPFacts{DCBX: func() *uint8 { return &lld }}); !strings.HasPrefix(msg, "the NIC's firmware") {
		t.Errorf("unknown module: %q", msg)
	}
	if m := d.DCBXMode(true, func() uint8 { return dcb.DCBXVerCEE }); m != dcb.DCBXHost|dcb.DCBXVerIEEE|dcb.DCBXVerCEE {
		t.Errorf("host mode: %#x", m)
	}
	if m := d.DCBXMode(false, func() uint8 { t.Error("firmware mode read the port"); return 0 }); m != 0 {
		t.Errorf("firmware mode: %#x", m)
	}
}
