package hosts

// Provenance strings, shown next to every file in each host's README.
// Capture files are in testdata/captures (see SOURCES.md there); "§" refers
// to shared/reference/roce-host-interfaces.md.
const (
	srcLayout = "layout: relative symlink as on a real host (sysfs class/bus links; §B2: rdmamap needs class/infiniband/<dev> to be a link)"

	srcNetdev = "netdev attributes, consistent with kernel.json links.<if>.link (MAC and ifindex as described there)"

	srcGIDEmpty = "empty GID entry: the all-zero GID; its gid_attrs/types and ndevs files are absent because the kernel fails those reads with EINVAL (§A5) — listed in snapshot.json unreadable"

	srcRdmaCM = "rdma_cm configfs as after `mkdir rdma_cm/<dev>` (pre-created: a fixture tree is not configfs); mode = kernel default for RoCE ports, cma.c CMA_PREFERRED_ROCE_GID_TYPE (\"RoCE v2\"), tos = 0 from cma_add_one (§A2.4)"

	srcProcfsCounters  = "value verbatim from " + capProcfsTtar + " (mlx5_0)"
	srcProcfsNamesZero = "name from " + capProcfsTtar + " (mlx5_0), value 0 (this port carries no captured traffic); lifespan keeps the captured 10"
	srcCongestionZero  = "name from " + capOptionalCC + " (0 there), value 0; the congestion/extended sets (§A4.2) are missing from the procfs archive"

	srcProcfsECN        = "value verbatim from " + capProcfsTtar + " (class/net/eth0/ecn)"
	srcECNEnableFactory = "factory ROCE_CC_PRIO_MASK=255 (§A2.2): enabled on every priority (the archive's 1,1,0,1,1,0,1,1 pattern looks hand-edited and is not used)"

	srcOFEDQos = "format of DOCA-OFED en_sysfs.c mlx5e_show_prio2buffer/mlx5e_show_buffer_size (knneth/mlnx-ofa_kernel @2850235, DOCA 3.2.1 OFED 25.10); values = kernel.json dcb.buffer: buffer 0 = 524160 from " + capQosPCPDefault + ", spare 128 from " + capDoc2933BufSize + ", port size = buffers + spare; lossy buffers have no xoff/xon"

	srcTrafficClass = "DOCA-OFED main_ext.c traffic_class_show: prints nothing until a class is written (tcd->val = -1)"

	srcUpstreamCC     = "upstream debugfs name from cong.c mlx5_ib_dbg_cc_name (\"%d\\n\"); value = the §A2.2 \"Default seen\" column (ConnectX-4 Lx mlxconfig dump), not a capture of this card"
	srcUpstreamCCMode = "upstream debugfs name from cong.c mlx5_ib_dbg_cc_name; no default in §A2.2: 0 (CNP priority from np_cnp_prio) assumed"

	srcCX6Card = "ConnectX-6 Dx literals: hca_type MT4125 = PCI device 0x101d; fw_ver 20.24.4702 and board_id MT_0000000225 from " + capCX6Devinfo + " (a ConnectX-6: no ConnectX-6 Dx capture exists, stand-in); node_guid from the port MAC with the pattern of that capture (MAC b8:59:9f:37:82:68 -> b859:9f03:0037:8268); sys_image_guid = port 0's node_guid; state 4: ACTIVE, phys_state 5: LinkUp and rate from the capture's PORT_ACTIVE, LINK_UP, 4X at 25 Gbps (EDR)"

	srcCX6PCI = "PCI: Mellanox 0x15b3:0x101d (ConnectX-6 Dx), class 0x020000, PCIe Gen4 x16 (16.0 GT/s), NUMA node 0 — literals of the host definition"

	srcCX7Card = "ConnectX-7 literals: hca_type MT4129 = PCI device 0x1021; fw_ver/board_id are the stand-in of " + capCX6Devinfo + " (no ConnectX-7 capture exists); node_guid " + "from the port MAC with that capture's pattern; rate 4X NDR = 400 Gb/s"

	srcCX7PCI = "PCI: Mellanox 0x15b3:0x1021 (ConnectX-7), class 0x020000, PCIe Gen5 x16 (32.0 GT/s), NUMA node 0 — literals of the host definition"

	srcOptionalCCNames = "name and value (0) from " + capOptionalCC + "; cc_rx_ce_pkts/cc_rx_cnp_pkts are left out: optional counters are netlink-only (§A4.2)"
	srcLifespan        = "hw_counters/lifespan: 10 as in " + capProcfsTtar + " (RDMA_HW_STATS_DEFAULT_LIFESPAN)"
	srcProcfsNamesOnly = "name from " + capProcfsTtar + " (mlx5_0 ports/1/counters), value 0 (fresh host)"
)
