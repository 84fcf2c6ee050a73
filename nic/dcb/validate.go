package dcb

import (
	"fmt"
	"strings"
)

// Checks rocectl runs before a value reaches the kernel, so that a bad
// profile value is reported with its meaning instead of as an in-band
// EINVAL (or, for the APP table, as a silently skipped entry). The rules are
// the union of what the kernel core (dcbnl.c), mlx5 (en_dcbnl.c) and iproute2
// (dcb/*.c) enforce; see reference §A1.4, §A1.5 and §A1.8.

// ValidateETS checks an ETS configuration: every prio_tc below 8, every TSA
// one the kernel knows, and — when any TC uses ETS — ETS bandwidths that add
// up to exactly 100 (mlx5 and the lab's netdevsim refuse anything else).
//
// Bandwidth given to non-ETS TCs is not an error: mlx5 reports 100 for strict
// and vendor TCs on GET, and the encoder zeroes those before sending (see
// NormalizeETS), which newer kernels require.
func ValidateETS(e ETS) error {
	sum, ets := 0, false
	for tc := range NumTCs {
		if e.PrioTC[tc] >= NumTCs {
			return &ValidationError{Object: "ETS", Field: "prio_tc",
				Reason: fmt.Sprintf("priority %d maps to TC %d, must be < %d", tc, e.PrioTC[tc], NumTCs)}
		}
		switch e.TCTSA[tc] {
		case TSAETS:
			ets = true
			sum += int(e.TCTxBW[tc])
		case TSAStrict, TSACBShaper, TSAVendor:
		default:
			return &ValidationError{Object: "ETS", Field: "tc_tsa",
				Reason: fmt.Sprintf("TC %d has unknown TSA %d (strict 0, cb-shaper 1, ets 2, vendor 255)", tc, e.TCTSA[tc])}
		}
	}
	if ets && sum != 100 {
		return &ValidationError{Object: "ETS", Field: "tc_tx_bw",
			Reason: fmt.Sprintf("bandwidths of ETS TCs add up to %d, must be 100", sum)}
	}
	return nil
}

// NormalizeETS returns e with tc_tx_bw of every non-ETS TC set to 0. The
// kernel ignores that bandwidth, newer kernels reject it (-EINVAL), and mlx5
// reports 100 for strict/vendor TCs, so comparisons between a desired and a
// read-back ETS should be made on normalized values.
func NormalizeETS(e ETS) ETS {
	for tc := range NumTCs {
		if e.TCTSA[tc] != TSAETS {
			e.TCTxBW[tc] = 0
		}
	}
	return e
}

// ValidateBuffer checks a buffer configuration: every prio2buffer below 8
// (the kernel returns -EINVAL otherwise) and, when TotalSize is known (it
// comes from a GET), buffer sizes that fit in it.
func ValidateBuffer(b Buffer) error {
	var sum uint64
	for p := range NumTCs {
		if b.PrioBuffer[p] >= NumTCs {
			return &ValidationError{Object: "BUFFER", Field: "prio2buffer",
				Reason: fmt.Sprintf("priority %d maps to buffer %d, must be < %d", p, b.PrioBuffer[p], NumTCs)}
		}
		sum += uint64(b.Size[p])
	}
	if b.TotalSize != 0 && sum > uint64(b.TotalSize) {
		return &ValidationError{Object: "BUFFER", Field: "buffer_size",
			Reason: fmt.Sprintf("buffers add up to %d bytes, the port has %d", sum, b.TotalSize)}
	}
	return nil
}

// ValidateApps checks APP table entries: a known selector, a priority below
// 8, a protocol that fits the selector (DSCP 0..63, PCP 0..15 = pcp|dei<<3,
// EtherType ≥ 0x600, port ≠ 0) and no entry twice (the generic kernel table
// answers a duplicate with -EEXIST).
func ValidateApps(apps []App) error {
	seen := make(map[App]bool, len(apps))
	for i, a := range apps {
		if err := validateApp(a); err != nil {
			err.Reason = fmt.Sprintf("entry %d {selector %d, priority %d, protocol %d}: %s",
				i, a.Selector, a.Priority, a.Protocol, err.Reason)
			return err
		}
		if seen[a] {
			return &ValidationError{Object: "APP", Reason: fmt.Sprintf(
				"entry %d {selector %d, priority %d, protocol %d} is listed twice", i, a.Selector, a.Priority, a.Protocol)}
		}
		seen[a] = true
	}
	return nil
}

func validateApp(a App) *ValidationError {
	if a.Priority >= NumTCs {
		return &ValidationError{Object: "APP", Field: "priority", Reason: fmt.Sprintf("must be < %d", NumTCs)}
	}
	switch a.Selector {
	case SelDSCP:
		if a.Protocol > MaxDSCP {
			return &ValidationError{Object: "APP", Field: "protocol", Reason: fmt.Sprintf("DSCP must be ≤ %d", MaxDSCP)}
		}
	case SelPCP:
		if a.Protocol > 15 {
			return &ValidationError{Object: "APP", Field: "protocol", Reason: "PCP|DEI<<3 must be ≤ 15"}
		}
	case SelEthertype:
		if a.Protocol < 0x600 {
			return &ValidationError{Object: "APP", Field: "protocol", Reason: "EtherType must be ≥ 0x600"}
		}
	case SelStream, SelDgram, SelAny:
		if a.Protocol == 0 {
			return &ValidationError{Object: "APP", Field: "protocol", Reason: "port must be 1..65535"}
		}
	default:
		return &ValidationError{Object: "APP", Field: "selector",
			Reason: "unknown selector (ethertype 1, stream 2, dgram 3, any 4, dscp 5, pcp 255)"}
	}
	return nil
}

// validateIfname mirrors the kernel's policy for DCB_ATTR_IFNAME
// (NLA_NUL_STRING, at most IFNAMSIZ-1 bytes).
func validateIfname(ifname string) error {
	if ifname == "" || len(ifname) > MaxIfnameLen || strings.IndexByte(ifname, 0) >= 0 {
		return &ValidationError{Object: "ifname",
			Reason: fmt.Sprintf("%q must be 1..%d bytes without NUL", ifname, MaxIfnameLen)}
	}
	return nil
}
