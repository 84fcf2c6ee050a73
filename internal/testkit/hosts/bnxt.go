package hosts

import (
	"fmt"
	"strings"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// bnxtREHwCounters are the bnxt_re hw_counters names of upstream
// drivers/infiniband/hw/bnxt_re/hw_counters.c bnxt_re_stat_descs (the
// version with the congestion and doorbell pacing counters; §A4.2 lists
// them with wildcards), in the driver's order.
func bnxtREHwCounters() []string {
	return []string{
		"active_pds", "active_ahs", "active_qps", "active_rc_qps", "active_ud_qps",
		"active_srqs", "active_cqs", "active_mrs", "active_mws",
		"watermark_pds", "watermark_ahs", "watermark_qps", "watermark_rc_qps", "watermark_ud_qps",
		"watermark_srqs", "watermark_cqs", "watermark_mrs", "watermark_mws", "resize_cq_cnt",
		"rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "recoverable_errors",
		"tx_roce_errors", "tx_roce_discards", "rx_roce_errors", "rx_roce_discards",
		"to_retransmits", "seq_err_naks_rcvd", "max_retry_exceeded", "rnr_naks_rcvd", "missing_resp",
		"unrecoverable_err", "bad_resp_err", "local_qp_op_err", "local_protection_err", "mem_mgmt_op_err",
		"remote_invalid_req_err", "remote_access_err", "remote_op_err", "dup_req",
		"res_exceed_max", "res_length_mismatch", "res_exceeds_wqe", "res_opcode_err",
		"res_rx_invalid_rkey", "res_rx_domain_err", "res_rx_no_perm", "res_rx_range_err",
		"res_tx_invalid_rkey", "res_tx_domain_err", "res_tx_no_perm", "res_tx_range_err",
		"res_irrq_oflow", "res_unsup_opcode", "res_unaligned_atomic", "res_rem_inv_err", "res_mem_err",
		"res_srq_err", "res_cmp_err", "res_invalid_dup_rkey", "res_wqe_format_err", "res_cq_load_err",
		"res_srq_load_err", "res_tx_pci_err", "res_rx_pci_err", "oos_drop_count",
		"tx_atomic_req", "tx_read_req", "tx_read_resp", "tx_write_req", "tx_send_req",
		"tx_roce_only_pkts", "tx_roce_only_bytes",
		"rx_atomic_req", "rx_read_req", "rx_read_resp", "rx_write_req", "rx_send_req",
		"rx_roce_only_pkts", "rx_roce_only_bytes", "rx_roce_good_pkts", "rx_roce_good_bytes",
		"rx_out_of_buffer", "tx_cnp_pkts", "rx_cnp_pkts", "rx_ecn_marked_pkts",
		"pacing_reschedule", "pacing_complete", "pacing_alerts", "db_fifo_register",
	}
}

// bnxtRECCAttrs are the files of the out-of-tree bnxt_re configfs cc group
// (configfs.c bnxt_re_cc_attrs, Broadcom's bnxt_re; §E).
func bnxtRECCAttrs() []string {
	return []string{
		"advanced", "apply", "cnp_dscp", "cnp_prio", "cc_mode", "ecn_enable", "g", "init_cr",
		"inact_th", "init_tr", "nph_per_state", "time_pph", "pkts_pph", "rtt", "tcp_cp",
		"roce_dscp", "roce_prio", "ecn_marking", "disable_prio_vlan_tx",
	}
}

// bnxt literal facts.
const (
	bnxtMinMTU = 60   // ETH_ZLEN
	bnxtMaxMTU = 9500 // BNXT_MAX_MTU
	// bnxtPlaceholderMAC: the captures carry no MAC; Broadcom's OUI 00:0a:f7
	// with a placeholder suffix.
	bnxtPlaceholderMAC = "00:0a:f7:00:00:01"
)

const (
	srcBnxtPCI    = "PCI: bus-info 0000:ca:00.1 from " + capBnxtEthtoolI + "; ids 0x14e4:0x16d6 (BCM57412 NetXtreme-E 10G SFP+, a RoCE-capable part matching the capture's \"10G SFP\") assumed; PCIe Gen3 x8; NUMA node 1 assumed for bus 0xca"
	srcBnxtNetdev = "netdev attributes consistent with kernel.json; name = predictable name of PCI 0000:ca:00.1 port p1; MAC " + bnxtPlaceholderMAC + " is a placeholder (Broadcom OUI, no MAC in the captures); speed 10000 (10G SFP)"
	srcBnxtIBDev  = "bnxt_re0: fw_ver = the firmware version of " + capBnxtEthtoolI + "; node_guid = EUI-64 of the placeholder MAC (bnxt_qplib_get_guid); sys_image_guid = node_guid; state 4: ACTIVE, phys_state 5: LinkUp; rate 10 Gb/s = 1X QDR"
	srcBnxtGID    = "link-local GID of the placeholder MAC only (no IP address configured)"
	srcBnxtHW     = "bnxt_re hw_counters name from upstream hw_counters.c bnxt_re_stat_descs (§A4.2 lists them with wildcards), value 0 (RoCE idle: the capture says RoCE is not configured); the out-of-tree driver's own names may differ"
	srcBnxtHWLife = "hw_counters/lifespan: 10 (RDMA_HW_STATS_DEFAULT_LIFESPAN, as in the mlx5 capture)"
	srcBnxtCC     = "bnxt_re configfs cc attribute (Broadcom out-of-tree configfs.c bnxt_re_cc_attrs; §E) as after `mkdir bnxt_re/bnxt_re0` (pre-created). Value: placeholder 0 — shows print \"%#x\\n\" of the driver's cached parameter, which is \"0\\n\" for 0; the real values come from firmware and were not captured. The driver's own defaults (bnxt_re.h BNXT_RE_DEFAULT_ROCE_PRI 3, ROCE_DSCP 26, CNP_PRI 7, CNP_DSCP 48) are what it programs into the DCB APP table, not what these attributes show, so they are not used here. Writes are hex (sscanf %x; newer releases kstrtouint with base 0) and are only staged until `apply`; rocectl reads ecn_enable 0 as ECN off on every priority"
	srcBnxtApply  = "bnxt_re configfs cc/apply: reading it queries firmware and prints a multi-line, chip-dependent summary; left empty here (not captured) — treat apply as a write trigger"
)

// BnxtREFactory is a Broadcom bnxt_en 10G port with the out-of-tree
// bnxt_re RDMA driver, from the Showmax ethtool captures.
func BnxtREFactory(c *Captures) (*Host, error) {
	info := c.BnxtInfo
	if info.Driver != snapshot.DriverBnxt || info.BusInfo == "" {
		return nil, fmt.Errorf("%s: want driver bnxt_en with a bus-info", capBnxtEthtoolI)
	}
	var bus, fn int
	if _, err := fmt.Sscanf(info.BusInfo, "0000:%x:00.%d", &bus, &fn); err != nil {
		return nil, fmt.Errorf("%s: bus-info %q: %w", capBnxtEthtoolI, info.BusInfo, err)
	}
	fw, _, _ := strings.Cut(info.Firmware, "/")
	f := newPCIFunc(bus, fn)
	const ifname, ibdev = "enp202s0f1np1", "bnxt_re0"
	if f.bdf != "0000:ca:00.1" {
		return nil, fmt.Errorf("%s: bus-info %s, the host's names assume 0000:ca:00.1", capBnxtEthtoolI, f.bdf)
	}
	m := parseMAC(bnxtPlaceholderMAC)

	h := newHost("bnxt-re-factory", info.Version,
		"synthetic fixture host: Broadcom bnxt_en + out-of-tree bnxt_re; generated by internal/tools/mkhosts from testdata/captures (see README.md)")
	t := h.tree
	addPCI(t, f, snapshot.DriverBnxt, pciAttrs{
		vendor: "0x14e4", device: "0x16d6", subVendor: "0x14e4", class: "0x020000",
		numaNode: 1, linkSpeed: "8.0 GT/s PCIe", linkWidth: 8, src: srcBnxtPCI,
	})
	addNetdev(t, f, netdevAttrs{ifname: ifname, ifindex: 2, mac: m.String(), mtu: 1500,
		speed: 10000, physPortName: fmt.Sprintf("p%d", fn), src: srcBnxtNetdev})
	guid := eui64GUID(m)
	addIBDev(t, f, ibdevAttrs{name: ibdev, nodeGUID: guid, sysImageGUID: guid, fwVer: fw,
		state: "4: ACTIVE", physState: "5: LinkUp", rate: "10 Gb/sec (1X QDR)", linkType: "Ethernet", src: srcBnxtIBDev})
	ll := m.linkLocal()
	h.unreadable(addGIDs(t, f, ibdev, []gid{
		{addr: ll, typ: "IB/RoCE v1", ndev: ifname, src: srcBnxtGID},
		{addr: ll, typ: "RoCE v2", ndev: ifname, src: srcBnxtGID},
	}, srcGIDEmpty)...)
	hw := ibdevDir(f, ibdev) + "/ports/1/hw_counters/"
	for _, n := range bnxtREHwCounters() {
		t.file(hw+n, "0\n", srcBnxtHW)
	}
	t.file(hw+"lifespan", "10\n", srcBnxtHWLife)
	addRdmaCM(t, ibdev, "RoCE v2", 0, srcRdmaCM)
	cc := "/sys/kernel/config/bnxt_re/" + ibdev + "/ports/1/cc/"
	for _, a := range bnxtRECCAttrs() {
		if a == "apply" {
			t.file(cc+a, "", srcBnxtApply)
			continue
		}
		t.file(cc+a, "0\n", srcBnxtCC)
	}

	stats := map[string]uint64{}
	for _, n := range c.BnxtStats.Names {
		stats[n] = c.BnxtStats.Values[n]
	}
	dcbx := dcb.DCBXVerIEEE
	ets := &dcb.ETS{ETSCap: 8}
	ets.TCTSA = [8]uint8{dcb.TSAETS, dcb.TSAStrict, dcb.TSAStrict, dcb.TSAStrict, dcb.TSAStrict, dcb.TSAStrict, dcb.TSAStrict, dcb.TSAStrict}
	ets.TCTxBW[0] = 100
	h.Kernel.Links[ifname] = &snapshot.LinkState{
		Link: &nic.LinkInfo{Index: 2, MTU: 1500, MinMTU: bnxtMinMTU, MaxMTU: bnxtMaxMTU,
			OperState: "up", AdminUp: true, MAC: m.String()},
		Driver: &nic.DriverInfo{Driver: info.Driver, Version: info.Version,
			Firmware: info.Firmware, BusInfo: info.BusInfo},
		Pause: &nic.Pause{Autoneg: true, Rx: true, Tx: true},
		Rings: &nic.Rings{Rx: 511, Tx: 511, RxMax: 2047, TxMax: 2047},
		Stats: stats,
		DCB: &dcb.State{
			ETS:  ets,
			PFC:  &dcb.PFC{Cap: 8},
			DCBX: &dcbx,
		},
		Errors: map[string]string{
			snapshot.OpPrivFlags: "EOPNOTSUPP",
			snapshot.OpTunable:   "EOPNOTSUPP",
		},
	}
	h.about = []string{
		"A Broadcom NetXtreme-E 10G SFP port (bnxt_en, RHEL 8 kernel " + info.Version + ") with Broadcom's out-of-tree bnxt_re RDMA driver (bnxt_re0), built from the Showmax ethtool -S/-i captures.",
		"Ports: " + portList(h) + ".",
		"RoCE congestion control is the bnxt_re configfs cc group (§E): hex values, committed by writing apply. DCBX is not host-managed (dcbx_cap without HOST); dcbnl ETS/PFC/APP writes need HOST and fail with EINVAL until DCBX is host-managed. (A port whose firmware runs the DCBX agent reports LLD_MANAGED instead, and bnxt_dcbnl_setdcbx then refuses every change: rocectl refuses it at plan time.)",
		"Built only from testdata/captures plus the literal facts named below; values not in any capture are marked as assumptions or placeholders.",
	}
	h.notes = []string{
		"links.*.link: ifindex 2, MTU 1500, min_mtu 60 (ETH_ZLEN) and max_mtu 9500 (BNXT_MAX_MTU); MAC " + bnxtPlaceholderMAC + " placeholder.",
		"links.*.driver: driver, version, firmware and bus-info verbatim from " + capBnxtEthtoolI + ".",
		"links.*.stats: every counter of " + capBnxtEthtoolS + " verbatim, including the per-ring \"[0]: name\" entries.",
		"links.*.errors: privflags EOPNOTSUPP (\"supports-priv-flags: no\" in " + capBnxtEthtoolI + "); tunable EOPNOTSUPP (the 4.18-era bnxt_en answers only ETHTOOL_RX_COPYBREAK; recent bnxt_en added ETHTOOL_PFC_PREVENTION_TOUT through the firmware PFC watchdog and still answers EOPNOTSUPP when the firmware lacks it).",
		"links.*.pause: autoneg on, rx/tx on — bnxt_en's default flow-control autonegotiation; assumed, not captured.",
		"links.*.rings: 511/511 of max 2047 (bnxt.h default and maximum descriptor counts); assumed, not captured.",
		"links.*.dcb: assumed plausible state: dcbx 0x08 (VER_IEEE alone: HOST handed away by a setdcbx, which bnxt_dcbnl_setdcbx takes as dcbx_cap; with a firmware DCBX agent bnxt_dcb_init sets LLD_MANAGED and no change is possible, so that state could not show an apply); ETS ets_cap 8 (bnxt reports bp->max_tc there), every priority on TC0, TC0 ETS at 100 %, other TCs strict; PFC pfc_cap 8 (bnxt reports bp->max_lltc, its lossless queues, there: no capture shows a real value; apply tests set others with Sim.SetQueueCaps), none enabled, delay 0; no APP entries; no buffer or maxrate objects (bnxt has no dcbnl_getbuffer/ieee_getmaxrate).",
		"devlink: none recorded (DevlinkParams answers EOPNOTSUPP).",
		"snapshot.json unreadable: gid_attrs/types and ndevs of the empty GID entries, EINVAL (§A5).",
	}
	return h, nil
}

// eui64GUID is the GUID bnxt_re derives from the MAC (EUI-64), in sysfs
// "%04x:%04x:%04x:%04x" form.
func eui64GUID(m mac) string {
	b := m.bytes()
	return fmt.Sprintf("%02x%02x:%02xff:fe%02x:%02x%02x", b[0]^0x02, b[1], b[2], b[3], b[4], b[5])
}
