package hosts

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// mlx5Card is what every port of one mlx5 adapter model and driver shares.
type mlx5Card struct {
	pci       pciAttrs
	hcaType   string // "MT<device id in decimal>"
	speed     int    // netdev speed, Mb/s
	rate      string // ports/1/rate
	fwVer     string
	boardID   string
	driverVer string // ethtool -i version
	ofed      bool   // DOCA-OFED sysfs (ecn/, qos/, tc/) instead of upstream debugfs
	src       string // provenance of the card-level values
}

// mlx5Port is one port (PCI function) of an mlx5 card.
type mlx5Port struct {
	pci          pciFunc
	ifname       string
	ibdev        string
	ifindex      int
	mac          mac
	physPort     int
	sysImageGUID string
	gids         []gid
	withCaptured bool // carries the captured counter values; others read 0
}

// mac is a 48-bit Ethernet address.
type mac uint64

func parseMAC(s string) mac {
	var m mac
	for _, b := range strings.Split(s, ":") {
		v, err := strconv.ParseUint(b, 16, 8)
		if err != nil {
			panic("hosts: bad MAC " + s)
		}
		m = m<<8 | mac(v)
	}
	return m
}

func (m mac) String() string {
	b := m.bytes()
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
}

func (m mac) bytes() [6]byte {
	var b [6]byte
	for i := range 6 {
		b[5-i] = byte(m >> (8 * i))
	}
	return b
}

// nodeGUID is the mlx5 Ethernet port GUID pattern seen in the ibv_devinfo
// captures: MAC b8:59:9f:37:82:68 has node_guid b859:9f03:0037:8268.
func (m mac) nodeGUID() string {
	b := m.bytes()
	return fmt.Sprintf("%02x%02x:%02x03:00%02x:%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5])
}

// linkLocal is the EUI-64 link-local address of the MAC in sysfs form.
func (m mac) linkLocal() string {
	b := m.bytes()
	return fmt.Sprintf("fe80:0000:0000:0000:%02x%02x:%02xff:fe%02x:%02x%02x", b[0]^0x02, b[1], b[2], b[3], b[4], b[5])
}

// mlx5 literal facts (reference §A1.8, §A3, §A4.1; the driver sources
// cited there).
const (
	mlx5MinMTU       = 68
	mlx5MaxMTU       = 9978 // MLX5E_HW2SW_MTU of the ConnectX-6 Dx max
	mlx5DCBXFirmware = dcb.DCBXVerCEE | dcb.DCBXVerIEEE
	mlx5PFCCap       = 8    // mlx5_max_tc()+1
	mlx5TunableFW    = 8000 // firmware default stall watermark, 8 s
)

// mlx5FactoryETS is mlx5e_ets_init: every TC vendor at 100 %, priorities 0
// and 1 swapped.
func mlx5FactoryETS() *dcb.ETS {
	e := &dcb.ETS{ETSCap: 8, PrioTC: [8]uint8{1, 0, 2, 3, 4, 5, 6, 7}}
	for i := range 8 {
		e.TCTxBW[i] = 100
		e.TCTSA[i] = dcb.TSAVendor
	}
	return e
}

// mlx5Privflags are upstream mlx5e private flags with their usual defaults;
// DOCA-OFED adds dropless_rq. Not captured (no public ethtool
// --show-priv-flags capture was found); the names are the driver's.
func mlx5Privflags(ofed bool) map[string]bool {
	f := map[string]bool{
		"rx_cqe_moder":        true,
		"tx_cqe_moder":        false,
		"rx_cqe_compress":     false,
		"rx_striding_rq":      true,
		"rx_no_csum_complete": false,
		"xdp_tx_mpwqe":        true,
		"skb_tx_mpwqe":        true,
		"tx_port_ts":          false,
	}
	if ofed {
		f["dropless_rq"] = false
	}
	return f
}

// mlx5ZeroCounters are ethtool -S names the reference (§A4.1) lists as
// always present on mlx5 that the CX-6 Dx capture's author left out
// because they were zero ("Missing counters are zero").
func mlx5ZeroCounters() []string {
	names := []string{
		// 802.3 (PPCNT)
		"rx_crc_errors_phy", "tx_multicast_phy", "tx_broadcast_phy", "rx_multicast_phy",
		"rx_broadcast_phy", "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy",
		"rx_oversize_pkts_phy", "rx_symbol_err_phy", "rx_mac_control_phy",
		"rx_unsupported_op_phy", "rx_pause_ctrl_phy",
		// global pause: present while pause is on, as in this host
		"rx_global_pause", "rx_global_pause_duration", "rx_global_pause_transition",
		// PFC storm: PCAM pfcc_mask && stall_detect, as the tunable needs
		"tx_pause_storm_warning_events", "tx_pause_storm_error_events",
	}
	for p := 1; p < 8; p++ {
		names = append(names,
			fmt.Sprintf("rx_prio%d_bytes", p), fmt.Sprintf("rx_prio%d_packets", p),
			fmt.Sprintf("rx_prio%d_discards", p), fmt.Sprintf("tx_prio%d_bytes", p),
			fmt.Sprintf("tx_prio%d_packets", p))
	}
	return names
}

// mlx5Stats is the ethtool -S set of an mlx5 port: the CX-6 Dx capture
// plus the zero counters the capture left out. Ports other than the
// captured one get the same names at 0.
func mlx5Stats(c *Captures, captured bool) map[string]uint64 {
	st := map[string]uint64{}
	for _, n := range c.CX6DxStats.Names {
		if captured {
			st[n] = c.CX6DxStats.Values[n]
		} else {
			st[n] = 0
		}
	}
	for _, n := range mlx5ZeroCounters() {
		if _, ok := st[n]; !ok {
			st[n] = 0
		}
	}
	return st
}

// mlx5CongestionCounters are hw_counters of the congestion and extended
// PPCNT sets (reference §A4.2, condition cc_query_allowed / PCAM), named
// as in the rdma statistic capture; the procfs archive lacks them.
func mlx5CongestionCounters() []string {
	return []string{"rp_cnp_ignored", "rp_cnp_handled", "np_ecn_marked_roce_packets", "np_cnp_sent", "rx_icrc_encapsulated"}
}

// mlx5FactoryDCB is the dcbnl state of an mlx5 port at factory defaults:
// default ETS, no PFC, cable length and receive buffer from the mlnx_qos
// capture, DCBX in firmware mode.
func mlx5FactoryDCB(c *Captures) (*dcb.State, error) {
	q := c.QosDefault
	if len(q.BufferSizes) != 8 {
		return nil, fmt.Errorf("mlnx_qos capture: %d receive buffers, want 8", len(q.BufferSizes))
	}
	buf := &dcb.Buffer{}
	var total uint32
	for i, s := range q.BufferSizes {
		buf.Size[i] = s
		total += s
	}
	// Port buffer = buffers + spare, as OFED qos/buffer_size shows
	// (DOC-2933: 262016 = 2 x 130944 + 128).
	buf.TotalSize = total + c.SpareBuffer
	dcbx := uint8(mlx5DCBXFirmware)
	return &dcb.State{
		ETS:     mlx5FactoryETS(),
		PFC:     &dcb.PFC{Cap: mlx5PFCCap, Delay: uint16(q.CableLen)},
		Buffer:  buf,
		Maxrate: &dcb.Maxrate{},
		DCBX:    &dcbx,
	}, nil
}

// addMLX5Port adds one port's sysfs tree and kernel state to h.
func (h *Host) addMLX5Port(c *Captures, card mlx5Card, p mlx5Port) error {
	t := h.tree
	addPCI(t, p.pci, snapshot.DriverMLX5, card.pci)
	addNetdev(t, p.pci, netdevAttrs{
		ifname: p.ifname, ifindex: p.ifindex, mac: p.mac.String(), mtu: 1500,
		speed: card.speed, physPortName: fmt.Sprintf("p%d", p.physPort), src: srcNetdev,
	})
	addIBDev(t, p.pci, ibdevAttrs{
		name: p.ibdev, nodeGUID: p.mac.nodeGUID(), sysImageGUID: p.sysImageGUID,
		fwVer: card.fwVer, hcaType: card.hcaType, boardID: card.boardID,
		state: "4: ACTIVE", physState: "5: LinkUp", rate: card.rate, linkType: "Ethernet",
		src: card.src,
	})
	h.unreadable(addGIDs(t, p.pci, p.ibdev, p.gids, srcGIDEmpty)...)
	if err := h.addMLX5Counters(c, card, p); err != nil {
		return err
	}
	addRdmaCM(t, p.ibdev, "RoCE v2", 0, srcRdmaCM)
	if card.ofed {
		if err := h.addOFEDFiles(c, p); err != nil {
			return err
		}
	} else {
		addUpstreamCC(t, p.pci)
	}

	return h.addMLX5Kernel(c, card, p)
}

// addMLX5Kernel adds the kernel.json state of one mlx5 port at factory
// defaults: link, driver info, pause, rings, flags, counters, tunable, DCB,
// and its PCI function's devlink parameters.
func (h *Host) addMLX5Kernel(c *Captures, card mlx5Card, p mlx5Port) error {
	d, err := mlx5FactoryDCB(c)
	if err != nil {
		return err
	}
	h.Kernel.Links[p.ifname] = &snapshot.LinkState{
		Link: &nic.LinkInfo{
			Index: p.ifindex, MTU: 1500, MinMTU: mlx5MinMTU, MaxMTU: mlx5MaxMTU,
			OperState: "up", AdminUp: true, MAC: p.mac.String(),
		},
		Driver: &nic.DriverInfo{
			Driver: snapshot.DriverMLX5, Version: card.driverVer,
			// mlx5e_ethtool_get_drvinfo: "%d.%d.%04d (%.16s)", fw and board id
			Firmware: fmt.Sprintf("%s (%s)", card.fwVer, card.boardID),
			BusInfo:  p.pci.bdf,
		},
		Pause:                &nic.Pause{Rx: true, Tx: true},
		Rings:                &nic.Rings{Rx: 1024, Tx: 1024, RxMax: 8192, TxMax: 8192},
		PrivFlags:            mlx5Privflags(card.ofed),
		Stats:                mlx5Stats(c, p.withCaptured),
		PFCPreventionTimeout: ptr(uint16(mlx5TunableFW)),
		DCB:                  d,
	}
	if h.Kernel.Devlink == nil {
		h.Kernel.Devlink = map[string][]nic.DevlinkParam{}
	}
	h.Kernel.Devlink["pci/"+p.pci.bdf] = []nic.DevlinkParam{{
		Name: "enable_roce", Generic: true, Type: "bool",
		Values: []nic.DevlinkParamValue{{Cmode: nic.CmodeDriverinit, Value: true}},
	}}
	return nil
}

func ptr[T any](v T) *T { return &v }

// addMLX5Counters adds ports/1/counters and hw_counters. DOCA-OFED hosts:
// the procfs archive's mlx5_0 values on the captured port, the same names
// at 0 elsewhere, plus the congestion counters at 0. Upstream hosts: the
// hw_counters of the rdma statistic capture (an upstream kernel's names).
func (h *Host) addMLX5Counters(c *Captures, card mlx5Card, p mlx5Port) error {
	port := ibdevDir(p.pci, p.ibdev) + "/ports/1"
	for _, sub := range []string{"counters", "hw_counters"} {
		entries := c.procfsDir("class/infiniband/mlx5_0/ports/1/" + sub)
		if len(entries) == 0 {
			return fmt.Errorf("procfs archive has no mlx5_0 %s", sub)
		}
		for _, e := range entries {
			name := path.Base(e.Path)
			val, src := string(e.Data), srcProcfsCounters
			switch {
			case !card.ofed && sub == "hw_counters" && name != "lifespan":
				continue // upstream names come from the rdma statistic capture
			case !card.ofed && name == "lifespan":
				src = srcLifespan
			case !card.ofed:
				val, src = "0\n", srcProcfsNamesOnly
			case !p.withCaptured && name != "lifespan":
				val, src = "0\n", srcProcfsNamesZero
			}
			h.tree.file(port+"/"+sub+"/"+name, val, src)
		}
	}
	if !card.ofed {
		for _, n := range c.OptionalCC.Names {
			if strings.HasPrefix(n, "cc_") {
				continue // optional counters: netlink only, off by default
			}
			h.tree.file(port+"/hw_counters/"+n, fmt.Sprintf("%d\n", c.OptionalCC.Values[n]), srcOptionalCCNames)
		}
		return nil
	}
	for _, n := range mlx5CongestionCounters() {
		if _, ok := c.OptionalCC.Values[n]; !ok {
			return fmt.Errorf("%s not in the rdma statistic capture", n)
		}
		h.tree.file(port+"/hw_counters/"+n, "0\n", srcCongestionZero)
	}
	return nil
}

// addOFEDFiles adds the DOCA-OFED sysfs: ecn/roce_{rp,np} with the full
// DCQCN set, qos/prio2buffer and qos/buffer_size, and the verbs
// traffic_class knob.
func (h *Host) addOFEDFiles(c *Captures, p mlx5Port) error {
	nd := netdevDir(p.pci, p.ifname)
	for _, proto := range []string{"roce_rp", "roce_np"} {
		entries := c.procfsDir("class/net/eth0/ecn/" + proto)
		if len(entries) == 0 {
			return fmt.Errorf("procfs archive has no ecn/%s", proto)
		}
		for _, e := range entries {
			h.tree.file(nd+"/ecn/"+proto+"/"+path.Base(e.Path), string(e.Data), srcProcfsECN)
		}
		for prio := range 8 {
			h.tree.file(fmt.Sprintf("%s/ecn/%s/enable/%d", nd, proto, prio), "1\n", srcECNEnableFactory)
		}
	}
	d, err := mlx5FactoryDCB(c)
	if err != nil {
		return err
	}
	h.tree.file(nd+"/qos/prio2buffer", ofedPrio2Buffer(d.Buffer.PrioBuffer), srcOFEDQos)
	h.tree.file(nd+"/qos/buffer_size", ofedBufferSize(d.Buffer, c.SpareBuffer), srcOFEDQos)
	// main_ext.c traffic_class_show prints nothing until a class is set.
	h.tree.file(ibdevDir(p.pci, p.ibdev)+"/tc/1/traffic_class", "", srcTrafficClass)
	return nil
}

// ofedPrio2Buffer is OFED en_sysfs.c mlx5e_show_prio2buffer.
func ofedPrio2Buffer(p2b [8]uint8) string {
	var b strings.Builder
	b.WriteString("Priority\tBuffer\n")
	for i, v := range p2b {
		fmt.Fprintf(&b, "%d\t\t%d\n", i, v)
	}
	return b.String()
}

// ofedBufferSize is OFED en_sysfs.c mlx5e_show_buffer_size; lossy buffers
// have no xoff/xon thresholds.
func ofedBufferSize(buf *dcb.Buffer, spare uint32) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Port buffer size = %d\n", buf.TotalSize)
	fmt.Fprintf(&b, "Spare buffer size = %d\n", spare)
	b.WriteString("Buffer\tSize\txoff_threshold\txon_threshold\n")
	for i, s := range buf.Size {
		fmt.Fprintf(&b, "%d\t%d\t%d\t\t%d\n", i, s, 0, 0)
	}
	return b.String()
}

// upstreamCCDefaults are the upstream debugfs cc_params (cong.c
// mlx5_ib_dbg_cc_name, without the rtt_resp_* pair that needs the
// roce_cc_general cap) with the reference's §A2.2 "Default seen" values
// (a ConnectX-4 Lx mlxconfig dump). np_cnp_prio_mode has no default in the
// table; 0 (use np_cnp_prio) is assumed.
func upstreamCCDefaults() [][2]string {
	return [][2]string{
		{"rp_clamp_tgt_rate", "0"},
		{"rp_clamp_tgt_rate_ati", "1"},
		{"rp_time_reset", "300"},
		{"rp_byte_reset", "32767"},
		{"rp_threshold", "1"},
		{"rp_ai_rate", "5"},
		{"rp_max_rate", "0"},
		{"rp_hai_rate", "50"},
		{"rp_min_dec_fac", "50"},
		{"rp_min_rate", "1"},
		{"rp_rate_to_set_on_first_cnp", "0"},
		{"rp_dce_tcp_g", "1019"},
		{"rp_dce_tcp_rtt", "1"},
		{"rp_rate_reduce_monitor_period", "4"},
		{"rp_initial_alpha_value", "1023"},
		{"rp_gd", "11"},
		{"np_min_time_between_cnps", "4"},
		{"np_cnp_dscp", "48"},
		{"np_cnp_prio_mode", "0"},
		{"np_cnp_prio", "6"},
	}
}

// addUpstreamCC adds /sys/kernel/debug/mlx5/<bdf>/cc_params ("%d\n" each).
func addUpstreamCC(t *tree, f pciFunc) {
	d := "/sys/kernel/debug/mlx5/" + f.bdf + "/cc_params/"
	for _, kv := range upstreamCCDefaults() {
		src := srcUpstreamCC
		if kv[0] == "np_cnp_prio_mode" {
			src = srcUpstreamCCMode
		}
		t.file(d+kv[0], kv[1]+"\n", src)
	}
}
