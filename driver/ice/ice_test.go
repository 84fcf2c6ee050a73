package ice

import (
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver"
)

func TestFirmwareLLDPFromPrivateFlags(t *testing.T) {
	flags := func(m map[string]bool) driver.LLDPFacts {
		return driver.LLDPFacts{Netdev: "ens5f0", PrivFlags: func() map[string]bool { return m }}
	}
	d := Driver{Module: "ice"}
	for _, tc := range []struct {
		f    driver.LLDPFacts
		want string
	}{
		{flags(map[string]bool{"fw-lldp-agent": true}), "fw-lldp-agent off"},
		{flags(map[string]bool{"fw-lldp-agent": false}), ""},
		{flags(map[string]bool{"disable-fw-lldp": false}), "disable-fw-lldp on"},
		{flags(map[string]bool{"disable-fw-lldp": true}), ""},
		{flags(nil), ""},
		{driver.LLDPFacts{}, ""},
	} {
		got := d.FirmwareLLDP(tc.f)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("case %q: %q", tc.want, got)
		}
	}
}
