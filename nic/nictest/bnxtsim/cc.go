package bnxtsim

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// CC is one port's congestion-control group of Broadcom's out-of-tree
// bnxt_re configfs (bnxt_re/configfs.c, /sys/kernel/config/bnxt_re/<dev>/
// ports/<n>/cc/): the driver's cached parameters (rdev->cc_param), which
// every *_show prints, the fields staged since the last apply (the
// modify mask), and what the firmware holds. Written independently of
// driver/bnxt: the two are checked against each other.
type CC struct {
	cached   map[string]uint32
	staged   map[string]bool
	firmware map[string]uint32
	// Refuse makes the firmware refuse the next apply
	// (bnxt_qplib_modify_cc failing): apply_store answers EINVAL.
	Refuse bool
}

// NewCC is a group whose driver and firmware hold fw.
func NewCC(fw map[string]uint32) *CC {
	c := &CC{cached: map[string]uint32{}, staged: map[string]bool{}, firmware: map[string]uint32{}}
	for k, v := range fw {
		c.cached[k], c.firmware[k] = v, v
	}
	return c
}

// NewCCWith is a group whose driver holds v for name alone.
func NewCCWith(name string, v uint32) *CC { return NewCC(map[string]uint32{name: v}) }

// ccStore is one attribute's store: how configfs.c takes the parsed
// value (sscanf "%x"), or EINVAL.
var ccStore = map[string]func(c *CC, v uint32) (uint32, error){
	"ecn_enable": func(_ *CC, v uint32) (uint32, error) { return v & 0xFF, nil }, // ecn_enable_store
	"cc_mode": func(_ *CC, v uint32) (uint32, error) { // cc_mode_store
		if v > 1 {
			return 0, syscall.EINVAL
		}
		return v, nil
	},
	"cnp_dscp":  dscpStore, // cnp_dscp_store
	"roce_dscp": dscpStore, // roce_dscp_store
	// cnp_prio_store and roce_prio_store test the cached value, not the
	// new one, and keep the low three bits.
	"cnp_prio":  prioStore("cnp_prio"),
	"roce_prio": prioStore("roce_prio"),
	"g":         func(_ *CC, v uint32) (uint32, error) { return v & 0xFF, nil },   // g_store
	"init_cr":   func(_ *CC, v uint32) (uint32, error) { return v & 0xFFFF, nil }, // init_cr_store
	"rtt":       func(_ *CC, v uint32) (uint32, error) { return v & 0xFFFF, nil }, // rtt_store
}

func dscpStore(_ *CC, v uint32) (uint32, error) {
	if v > 0x3F {
		return 0, syscall.EINVAL
	}
	return v, nil
}

func prioStore(name string) func(c *CC, v uint32) (uint32, error) {
	return func(c *CC, v uint32) (uint32, error) {
		if c.cached[name] > 7 {
			return 0, syscall.EINVAL
		}
		return v & 0x07, nil
	}
}

// Write is a write(2) of data to attribute name: a store stages the
// value, apply with 0x1 sends what is staged.
func (c *CC) Write(name, data string) error {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(data), "0x"), 16, 32)
	if err != nil {
		return syscall.EINVAL // sscanf leaves val unset; the driver would use garbage
	}
	if name == "apply" {
		return c.apply(uint32(v))
	}
	store, ok := ccStore[name]
	if !ok {
		return fmt.Errorf("%s: %w", name, syscall.ENOENT)
	}
	n, err := store(c, uint32(v))
	if err != nil {
		return err
	}
	c.cached[name] = n
	c.staged[name] = true
	return nil
}

// apply is apply_store: with BNXT_RE_MODIFY_CC (1), every staged field
// goes to the firmware in one bnxt_qplib_modify_cc, EINVAL when it
// refuses; the mask is cleared either way, and the cache keeps what was
// staged.
func (c *CC) apply(v uint32) error {
	var err error
	if v == 1 && len(c.staged) > 0 {
		if c.Refuse {
			c.Refuse = false
			err = syscall.EINVAL
		} else {
			for k := range c.staged {
				c.firmware[k] = c.cached[k]
			}
		}
	}
	c.staged = map[string]bool{}
	return err
}

// Read is what the attribute's show prints: the cached field, C's
// "%#x" ("0" for zero, no 0x).
func (c *CC) Read(name string) string {
	if c.cached[name] == 0 {
		return "0\n"
	}
	return fmt.Sprintf("%#x\n", c.cached[name])
}

// Firmware is what the firmware holds for name: what the NIC does.
func (c *CC) Firmware(name string) uint32 { return c.firmware[name] }

// Pending says whether writes are staged and not applied.
func (c *CC) Pending() bool { return len(c.staged) > 0 }
