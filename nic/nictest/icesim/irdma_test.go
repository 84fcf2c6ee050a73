package icesim

import (
	"errors"
	"syscall"
	"testing"
)

// irdma's switch stores take kstrtobool's words and refuse the rest
// (irdma_configfs_set_vsi_attr).
func TestIrdmaSwitchStores(t *testing.T) {
	m := NewIrdma()
	for _, tc := range []struct {
		text string
		on   bool
		err  error
	}{
		{"1", true, nil}, {"0", false, nil}, {"y\n", true, nil}, {"N", false, nil},
		{"on", true, nil}, {"off", false, nil}, {"2", false, syscall.EINVAL}, {"", false, syscall.EINVAL}, {"o", false, syscall.EINVAL},
	} {
		m.on["roce_dcqcn_enable"] = !tc.on // so that a taken write shows
		err := m.Write("roce_dcqcn_enable", tc.text)
		if !errors.Is(err, tc.err) {
			t.Errorf("%q: %v, want %v", tc.text, err, tc.err)
			continue
		}
		if err == nil && m.Read("roce_dcqcn_enable") != map[bool]string{true: "1\n", false: "0\n"}[tc.on] {
			t.Errorf("%q read back %q", tc.text, m.Read("roce_dcqcn_enable"))
		}
	}
	if err := m.Write("roce_cwnd", "1"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("not a switch: %v", err)
	}
}
