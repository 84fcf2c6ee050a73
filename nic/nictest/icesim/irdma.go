package icesim

import "syscall"

// Irdma is one RDMA device's group of Intel's out-of-tree irdma configfs
// (configfs.c, /sys/kernel/config/irdma/<dev>/) as far as its RoCE
// congestion-control switches go: what each show prints and what each
// store takes. Written independently of driver/ice: the two are checked
// against each other.
type Irdma struct {
	on map[string]bool // iwdev->roce_{dcqcn,dctcp,timely}_en
}

// NewIrdma is a group with every switch off.
func NewIrdma() *Irdma { return &Irdma{on: map[string]bool{}} }

// irdmaSwitches are the stores that go through
// irdma_configfs_set_vsi_attr with IRDMA_ATTR_ROCE_DCQCN, _DCTCP, _TIMELY.
var irdmaSwitches = map[string]bool{"roce_dcqcn_enable": true, "roce_dctcp_enable": true, "roce_timely_enable": true}

// Write is the attribute's store: kstrtobool of the text, else EINVAL;
// the switch is set and nothing else changes (no mutual exclusion: the
// driver keeps each flag as written).
func (m *Irdma) Write(attr, text string) error {
	if !irdmaSwitches[attr] {
		return syscall.ENOENT
	}
	v, ok := kstrtobool(text)
	if !ok {
		return syscall.EINVAL
	}
	m.on[attr] = v
	return nil
}

// Read is the attribute's show: "%d\n" of the switch.
func (m *Irdma) Read(attr string) string {
	if m.on[attr] {
		return "1\n"
	}
	return "0\n"
}

// kstrtobool is lib/kstrtox.c's: the first character decides (y/Y/1 true,
// n/N/0 false), or the first two ("on", "of…" in either case); anything
// else is refused.
func kstrtobool(s string) (bool, bool) {
	if s == "" {
		return false, false
	}
	switch s[0] {
	case 'y', 'Y', '1':
		return true, true
	case 'n', 'N', '0':
		return false, true
	case 'o', 'O':
		if len(s) < 2 {
			return false, false
		}
		switch s[1] {
		case 'n', 'N':
			return true, true
		case 'f', 'F':
			return false, true
		}
	}
	return false, false
}
