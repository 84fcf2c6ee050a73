package hosts

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/internal/testkit/ttar"
	"github.com/rocectl/rocectl/nic/dump"
)

// Capture file names in testdata/captures (copied byte for byte from
// shared/fixtures; provenance in testdata/captures/SOURCES.md).
const (
	capCX6DxEthtoolS   = "mlx5-cx6dx-ethtool-S-k5.15-txpause.txt"
	capBnxtEthtoolS    = "bnxt_en-showmax-ethtool-S.txt"
	capBnxtEthtoolI    = "bnxt_en-showmax-ethtool-i.txt"
	capProcfsTtar      = "mlx5-procfs-sysfs-infiniband-ecn.ttar"
	capIBMShowGids     = "mlx5-cx6-show_gids-ibm-spectrumscale.txt"
	capCX6Devinfo      = "mlx5-cx6-ibv_devinfo-v-roce-scaleoutsean.txt"
	capOptionalCC      = "mlx5-rdma-statistic-show-link-rocep8s0f0-optional-cc.txt"
	capQosPCPDefault   = "mlx5-mlnx_qos-trust-pcp-default-centos12.txt"
	capQosNetarbiter   = "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt"
	capDoc2933BufSize  = "mlx5-sysfs-qos-buffer_size-default-mellanox-community-doc2933.txt"
	capDoc2933P2B      = "mlx5-sysfs-qos-prio2buffer-mellanox-community-doc2933.txt"
	capCentosMultiGids = "mlx5-show_gids-centos12-multidev.txt"
	capCX5Bond         = "mlx5-cx5-ibv_devinfo-bond.txt"
	capCX5TwoPort      = "mlx5-cx5-ibv_devinfo-2port-eth.txt"
	capIceEthtoolS     = "ice-e810-ethq-ethtool-S.txt"
	capIceEthtoolI     = "ice-e810-ethq-ethtool-i.txt"
	capIcePrioIntelDoc = "ice-e810-ethtool-S-grep-prio-intel-doc.txt"
)

// Captures holds the parsed captures the hosts are built from.
type Captures struct {
	dir string

	CX6DxStats   Stats           // ethtool -S, ConnectX-6 Dx, kernel 5.15
	BnxtStats    Stats           // ethtool -S, bnxt_en
	BnxtInfo     dump.DriverInfo // ethtool -i, bnxt_en
	IceStats     Stats           // ethtool -S, ice (E810), ethq's test capture
	IceInfo      dump.DriverInfo // ethtool -i, ice (E810), ethq issue #27
	IcePrioDoc   map[string]uint64
	Procfs       map[string]ttar.Entry
	IBMGids      []GidRow // show_gids, ConnectX-6 mlx5_0
	CX6Devinfo   Devinfo  // ibv_devinfo -v, ConnectX-6 mlx5_0
	OptionalCC   Stats    // rdma statistic show link rocep8s0f0/1
	QosDefault   MlnxQos  // mlnx_qos, trust pcp default
	QosLossless  MlnxQos  // mlnx_qos --pfc 0,0,0,1,0,0,0,0 (netarbiter)
	SpareBuffer  uint32   // qos/buffer_size "Spare buffer size", DOC-2933
	CentosGids   []GidRow // show_gids, 8 devices
	Prio2BufDoc  map[int]int
	CX5Bond      map[string]Devinfo // ibv_devinfo after bonding: mlx5_bond_0
	CX5TwoPort   map[string]Devinfo // ibv_devinfo before bonding: mlx5_0, mlx5_1
	procfsPrefix string
}

// Stats is an ordered counter list: names in capture order and values.
type Stats struct {
	Names  []string
	Values map[string]uint64
}

// GidRow is one show_gids line.
type GidRow struct {
	Dev, Port, Index, GID, IPv4, Ver, Netdev string
}

// Devinfo is what the hosts use from ibv_devinfo -v.
type Devinfo struct {
	FwVer, NodeGUID, SysImageGUID, BoardID, VendorPartID string
	ActiveWidth, ActiveSpeed                             string
	GIDs                                                 []DevinfoGID
}

// DevinfoGID is one "GID[ i]: gid, RoCE vN" line.
type DevinfoGID struct {
	Index int
	GID   string // as printed (v2 entries are compressed)
	Type  string // "RoCE v1" | "RoCE v2"
}

// MlnxQos is what the hosts use from mlnx_qos output.
type MlnxQos struct {
	Trust       string
	CableLen    int
	BufferSizes []uint32 // "Receive buffer size (bytes)"; nil if not printed
	PFCEnabled  [8]bool
	DSCP2Prio   map[int]int // "prio:N dscp:a,b,..." rows; nil under trust pcp
}

// The text dumps a person pastes (ethtool -S/-i, show_gids, mlnx_qos) are
// read with nic/dump, the parser `rocectl import` uses, so that the
// fixture hosts and an import read the same captures the same way. A
// capture here must parse cleanly: any warning of nic/dump (a line it
// recognised but could not use, text it did not recognise) is an error.
// ibv_devinfo is read with nic/dump too; `rdma statistic` and the OFED
// qos/buffer_size and qos/prio2buffer sysfs files have no nic/dump parser
// (import does not read them), so their parsers stay below.

// parseDump parses text as exactly one dump of kind k.
func parseDump(text string, k dump.Kind) (*dump.Block, error) {
	blocks, warns := dump.Parse("capture", []byte(text))
	if len(warns) > 0 {
		return nil, fmt.Errorf("%s", warns[0])
	}
	if len(blocks) != 1 || blocks[0].Kind != k {
		return nil, fmt.Errorf("want one %s output, got %d dump(s)", k, len(blocks))
	}
	return &blocks[0], nil
}

// parseEthtoolS reads a whole `ethtool -S` output (with its "NIC
// statistics:" header), counters in capture order.
func parseEthtoolS(s string) (Stats, error) {
	b, err := parseDump(s, dump.KindEthtoolS)
	if err != nil {
		return Stats{}, err
	}
	if b.Stats.Partial {
		return Stats{}, fmt.Errorf("no \"NIC statistics:\" header: not a whole ethtool -S output")
	}
	st := Stats{Values: b.Stats.Values}
	st.Names = b.Stats.Names()
	return st, nil
}

// parseEthtoolI reads `ethtool -i`.
func parseEthtoolI(s string) (dump.DriverInfo, error) {
	b, err := parseDump(s, dump.KindEthtoolI)
	if err != nil {
		return dump.DriverInfo{}, err
	}
	return *b.Driver, nil
}

// parseShowGids reads show_gids output into rows as printed (GIDs in
// show_gids' full form).
func parseShowGids(s string) ([]GidRow, error) {
	b, err := parseDump(s, dump.KindShowGids)
	if err != nil {
		return nil, err
	}
	rows := make([]GidRow, len(b.GIDs))
	for i, g := range b.GIDs {
		ver := "v1"
		if g.RoCEv2 {
			ver = "v2"
		}
		rows[i] = GidRow{Dev: g.Device, Port: strconv.Itoa(g.Port), Index: strconv.Itoa(g.Index),
			GID: g.GID.StringExpanded(), IPv4: g.IPv4, Ver: ver, Netdev: g.Netdev}
	}
	return rows, nil
}

// parseMlnxQos reads trust, cable length, receive buffer sizes, the PFC
// enabled row and the dscp2prio table from mlnx_qos output.
func parseMlnxQos(s string) (MlnxQos, error) {
	b, err := parseDump(s, dump.KindMlnxQos)
	if err != nil {
		return MlnxQos{}, err
	}
	d := b.Qos
	if d.Trust == "" || d.CableLen == nil {
		return MlnxQos{}, fmt.Errorf("trust state or cable length missing")
	}
	q := MlnxQos{Trust: d.Trust, CableLen: int(*d.CableLen), BufferSizes: d.BufferSize}
	if d.PFC != nil {
		q.PFCEnabled = *d.PFC
	}
	if d.DSCP2Prio != nil {
		q.DSCP2Prio = map[int]int{}
		for dscp, prio := range d.DSCP2Prio {
			q.DSCP2Prio[int(dscp)] = int(prio)
		}
	}
	return q, nil
}

// LoadCaptures reads and parses every capture the hosts use from dir.
func LoadCaptures(dir string) (*Captures, error) {
	c := &Captures{dir: dir}
	var err error
	read := func(name string) string {
		if err != nil {
			return ""
		}
		var b []byte
		b, err = os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			err = fmt.Errorf("capture %s: %w", name, err)
		}
		return string(b)
	}
	parse := func(name string, fn func(string) error) {
		text := read(name)
		if err == nil {
			if perr := fn(text); perr != nil {
				err = fmt.Errorf("capture %s: %w", name, perr)
			}
		}
	}
	parse(capCX6DxEthtoolS, func(s string) (e error) { c.CX6DxStats, e = parseEthtoolS(s); return })
	parse(capBnxtEthtoolS, func(s string) (e error) { c.BnxtStats, e = parseEthtoolS(s); return })
	parse(capBnxtEthtoolI, func(s string) (e error) { c.BnxtInfo, e = parseEthtoolI(s); return })
	parse(capIceEthtoolS, func(s string) (e error) { c.IceStats, e = parseEthtoolS(s); return })
	parse(capIceEthtoolI, func(s string) (e error) { c.IceInfo, e = parseEthtoolI(s); return })
	parse(capIcePrioIntelDoc, func(s string) (e error) { c.IcePrioDoc, e = parsePrioLines(s); return })
	parse(capProcfsTtar, func(s string) error {
		entries, e := ttar.Parse(strings.NewReader(s))
		if e != nil {
			return e
		}
		c.Procfs = map[string]ttar.Entry{}
		for _, en := range entries {
			c.Procfs[en.Path] = en
		}
		c.procfsPrefix = "fixtures/sys/"
		return nil
	})
	parse(capIBMShowGids, func(s string) (e error) { c.IBMGids, e = parseShowGids(s); return })
	parse(capCentosMultiGids, func(s string) (e error) { c.CentosGids, e = parseShowGids(s); return })
	parse(capCX6Devinfo, func(s string) (e error) { c.CX6Devinfo, e = parseDevinfo(s); return })
	parse(capCX5Bond, func(s string) (e error) { c.CX5Bond, e = parseDevinfoDevs(s); return })
	parse(capCX5TwoPort, func(s string) (e error) { c.CX5TwoPort, e = parseDevinfoDevs(s); return })
	parse(capOptionalCC, func(s string) (e error) { c.OptionalCC, e = parseRdmaStatistic(s); return })
	parse(capQosPCPDefault, func(s string) (e error) { c.QosDefault, e = parseMlnxQos(s); return })
	parse(capQosNetarbiter, func(s string) (e error) { c.QosLossless, e = parseMlnxQos(s); return })
	parse(capDoc2933BufSize, func(s string) (e error) { c.SpareBuffer, e = parseSpare(s); return })
	parse(capDoc2933P2B, func(s string) (e error) { c.Prio2BufDoc, e = parsePrio2Buffer(s); return })
	if err != nil {
		return nil, err
	}
	return c, nil
}

// procfsDir lists the files of one directory of the procfs archive
// (relative to its fixtures/sys/ root), in archive order.
func (c *Captures) procfsDir(sysDir string) []ttar.Entry {
	prefix := c.procfsPrefix + sysDir + "/"
	var out []ttar.Entry
	for _, e := range c.procfsSorted() {
		if e.Kind == ttar.File && strings.HasPrefix(e.Path, prefix) && !strings.Contains(strings.TrimPrefix(e.Path, prefix), "/") {
			out = append(out, e)
		}
	}
	return out
}

func (c *Captures) procfsSorted() []ttar.Entry {
	out := make([]ttar.Entry, 0, len(c.Procfs))
	for _, k := range slices.Sorted(maps.Keys(c.Procfs)) {
		out = append(out, c.Procfs[k])
	}
	return out
}

// parseDevinfo reads the fields the hosts use from ibv_devinfo -v of one
// device with nic/dump's parser: device attributes, the first port's
// width and speed, and its GIDs.
func parseDevinfo(s string) (Devinfo, error) {
	b, err := parseDump(s, dump.KindIbvDevinfo)
	if err != nil {
		return Devinfo{}, err
	}
	if len(b.Devices) != 1 || len(b.Devices[0].Ports) == 0 {
		return Devinfo{}, fmt.Errorf("want one device with a port, got %d device(s)", len(b.Devices))
	}
	d := devinfoOf(b.Devices[0])
	p := b.Devices[0].Ports[0]
	d.ActiveWidth, d.ActiveSpeed = p.ActiveWidth, p.ActiveSpeed
	for _, g := range p.GIDs {
		d.GIDs = append(d.GIDs, DevinfoGID{Index: g.Index, GID: g.GID, Type: g.Type})
	}
	if d.FwVer == "" || d.NodeGUID == "" || len(d.GIDs) == 0 {
		return d, fmt.Errorf("fw_ver, node_guid or GIDs missing")
	}
	return d, nil
}

func devinfoOf(d dump.RDMADevice) Devinfo {
	return Devinfo{FwVer: d.FWVer, NodeGUID: d.NodeGUID, SysImageGUID: d.SysImageGUID, BoardID: d.BoardID, VendorPartID: d.VendorPartID}
}

// parseDevinfoDevs reads plain ibv_devinfo output (no GIDs) of several
// devices, by hca_id.
func parseDevinfoDevs(s string) (map[string]Devinfo, error) {
	b, err := parseDump(s, dump.KindIbvDevinfo)
	if err != nil {
		return nil, err
	}
	out := map[string]Devinfo{}
	for _, dev := range b.Devices {
		d := devinfoOf(dev)
		if d.FwVer == "" || d.NodeGUID == "" {
			return nil, fmt.Errorf("%s: fw_ver or node_guid missing", dev.Name)
		}
		out[dev.Name] = d
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no hca_id")
	}
	return out, nil
}

// parseRdmaStatistic reads `rdma statistic show link DEV/PORT`: after the
// "link DEV/PORT" words come name/value pairs, wrapped at any point.
func parseRdmaStatistic(s string) (Stats, error) {
	f := strings.Fields(s)
	st := Stats{Values: map[string]uint64{}}
	if len(f) < 2 || f[0] != "link" {
		return st, fmt.Errorf("does not start with \"link DEV/PORT\"")
	}
	f = f[2:]
	if len(f)%2 != 0 {
		return st, fmt.Errorf("odd number of name/value words")
	}
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return st, fmt.Errorf("%s: %w", f[i], err)
		}
		st.Names = append(st.Names, f[i])
		st.Values[f[i]] = v
	}
	return st, nil
}

// parseSpare reads "Spare buffer size = N" from OFED qos/buffer_size.
func parseSpare(s string) (uint32, error) {
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Spare buffer size = "); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			return uint32(n), err
		}
	}
	return 0, fmt.Errorf("no \"Spare buffer size\" line")
}

// parsePrio2Buffer reads OFED qos/prio2buffer ("Priority Buffer" header,
// then "prio buffer" rows; the web copy has blank lines in between).
func parsePrio2Buffer(s string) (map[int]int, error) {
	m := map[int]int{}
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || f[0] == "Priority" {
			continue
		}
		p, err1 := strconv.Atoi(f[0])
		b, err2 := strconv.Atoi(f[1])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad row %q", line)
		}
		m[p] = b
	}
	if len(m) != 8 {
		return nil, fmt.Errorf("%d priorities, want 8", len(m))
	}
	return m, nil
}

// sysfsGID renders an address as the kernel's "%pI6" (full form), which is
// how sysfs gids/<i> and show_gids print it.
func sysfsGID(s string) (string, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", err
	}
	if a.Is4() {
		a = netip.AddrFrom16(a.As16())
	}
	return a.StringExpanded(), nil
}

// parsePrioLines reads the `ethtool -S | grep prio` excerpt of Intel's
// flow-control guide: "name: value" lines without the "NIC statistics:"
// header.
func parsePrioLines(s string) (map[string]uint64, error) {
	out := map[string]uint64{}
	for i, line := range strings.Split(strings.TrimSpace(s), "\n") {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: no \"name: value\"", i+1)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		out[strings.TrimSpace(name)] = v
	}
	return out, nil
}
