package dump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// RDMADevice is one device of `ibv_devinfo [-v]` (rdma-core's
// libibverbs/examples/devinfo.c). Strings are as printed; "" was not
// printed.
type RDMADevice struct {
	Name         string
	FWVer        string
	NodeGUID     string
	SysImageGUID string
	VendorPartID string
	BoardID      string
	Ports        []RDMAPort
	At           Source // the hca_id line
}

// RDMAPort is one port of an RDMA device, from ibv_devinfo or from one
// `rdma link` line. A zero number or "" string was not printed.
type RDMAPort struct {
	Device string `json:",omitempty"` // rdma link: the device the line names
	Port   int
	// State and PhysState are the port states as sysfs and `rdma link`
	// name them ("ACTIVE", "LINK_UP"); ibv_devinfo's "PORT_ACTIVE (4)" and
	// "LINK_UP (5)" are read to the same names.
	State     string
	PhysState string `json:",omitempty"`
	LinkLayer string `json:",omitempty"` // "Ethernet", "InfiniBand"
	// ActiveMTU and MaxMTU are bytes: ibv_devinfo prints "4096 (5)", the
	// IBV_MTU enum in brackets.
	ActiveMTU   int       `json:",omitempty"`
	MaxMTU      int       `json:",omitempty"`
	ActiveWidth string    `json:",omitempty"` // "4X (2)"
	ActiveSpeed string    `json:",omitempty"` // "25.0 Gbps (32)"
	GIDs        []PortGID `json:",omitempty"` // ibv_devinfo -v
	Netdev      string    `json:",omitempty"` // rdma link: the netdev the kernel ties to the port
	LID         *int      `json:",omitempty"` // rdma link: an InfiniBand port's LID
	At          Source    // the "port:" line, or the rdma link line
	Extra       []string  `json:",omitempty"` // rdma link words not read (caps, ...)
}

// PortGID is one "GID[ i]: gid, RoCE vN" line of ibv_devinfo -v, the GID
// as printed (v2 entries are compressed).
type PortGID struct {
	Index int
	GID   string
	Type  string // "RoCE v1", "RoCE v2", "" for an InfiniBand port
	At    Source
}

var (
	hcaRE      = lazyRegexp(`^hca_id:\s+(\S+)$`)
	portRE     = lazyRegexp(`^port:\s+(\d+)$`)
	devGIDRE   = lazyRegexp(`^GID\[\s*(\d+)\]:\s+(\S+?)(?:, (RoCE v[12]))?$`)
	mtuRE      = lazyRegexp(`^(\d+) \(\d+\)$`)
	ibvStateRE = lazyRegexp(`^(?:PORT_)?([A-Z_]+) \((\d+)\)$`)
)

// parseIbvDevinfo reads `ibv_devinfo` and `ibv_devinfo -v`: one hca_id
// line per device, device attributes indented once, "port: N" and its
// attributes indented twice. The -v capability lists (flags on lines of
// their own, blank lines between groups) are recognised and skipped: the
// import uses none of them.
func parseIbvDevinfo(ls []line) (*Block, []line, []Warning) {
	if !hcaRE().MatchString(strings.TrimSpace(ls[0].text)) {
		return nil, ls, nil
	}
	b := &Block{Kind: KindIbvDevinfo, At: ls[0].at}
	var warns []Warning
	warn := func(l line, f string, a ...any) { warns = append(warns, Warning{l.at, fmt.Sprintf(f, a...)}) }
	var dev *RDMADevice
	var port *RDMAPort
	flush := func() {
		if dev == nil {
			return
		}
		if port != nil {
			dev.Ports = append(dev.Ports, *port)
			port = nil
		}
		b.Devices = append(b.Devices, *dev)
		dev = nil
	}
	i := 0
	for ; i < len(ls); i++ {
		l := ls[i]
		t := strings.TrimSpace(l.text)
		if m := hcaRE().FindStringSubmatch(t); m != nil {
			flush()
			dev = &RDMADevice{Name: m[1], At: l.at}
			continue
		}
		indented := strings.HasPrefix(l.text, " ") || strings.HasPrefix(l.text, "\t")
		if t != "" && !indented {
			break // the next dump
		}
		if t == "" || dev == nil {
			continue
		}
		if m := portRE().FindStringSubmatch(t); m != nil {
			if port != nil {
				dev.Ports = append(dev.Ports, *port)
			}
			n, _ := strconv.Atoi(m[1])
			port = &RDMAPort{Port: n, At: l.at}
			continue
		}
		if m := devGIDRE().FindStringSubmatch(t); m != nil && port != nil {
			n, _ := strconv.Atoi(m[1])
			port.GIDs = append(port.GIDs, PortGID{Index: n, GID: m[2], Type: m[3], At: l.at})
			continue
		}
		k, v, ok := strings.Cut(t, ":")
		if !ok {
			continue // a capability flag of -v
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if port == nil {
			switch k {
			case "fw_ver":
				dev.FWVer = v
			case "node_guid":
				dev.NodeGUID = v
			case "sys_image_guid":
				dev.SysImageGUID = v
			case "vendor_part_id":
				dev.VendorPartID = v
			case "board_id":
				dev.BoardID = v
			}
			continue
		}
		switch k {
		case "state", "phys_state":
			m := ibvStateRE().FindStringSubmatch(v)
			if m == nil {
				warn(l, "%s/%d %s %q: not a port state", dev.Name, port.Port, k, v)
				continue
			}
			if k == "state" {
				port.State = m[1]
			} else {
				port.PhysState = m[1]
			}
		case "active_mtu", "max_mtu":
			m := mtuRE().FindStringSubmatch(v)
			if m == nil {
				warn(l, "%s/%d %s %q: not an MTU", dev.Name, port.Port, k, v)
				continue
			}
			n, _ := strconv.Atoi(m[1])
			if k == "active_mtu" {
				port.ActiveMTU = n
			} else {
				port.MaxMTU = n
			}
		case "link_layer":
			port.LinkLayer = v
		case "active_width":
			port.ActiveWidth = v
		case "active_speed":
			port.ActiveSpeed = v
		}
	}
	flush()
	return b, ls[i:], warns
}

// rdmaLinkRE is one `rdma link [show]` line (iproute2 rdma/link.c):
// "link DEV/PORT ..." and, before iproute2 4.19, "IDX/PORT: DEV/PORT: ...".
var rdmaLinkRE = lazyRegexp(`^(?:link |\d+/\d+: )([^\s/]+)/(\d+):? +(\S.*)$`)

// parseRdmaLink reads `rdma link [show] [-d]` in the text form: one line
// per port with "key value" words (state, physical_state, netdev, and on
// an InfiniBand port subnet_prefix, lid, sm_lid, lmc), and with -d a
// "caps: <...>" line after it.
func parseRdmaLink(ls []line) (*Block, []line, []Warning) {
	if !rdmaLinkRE().MatchString(strings.TrimSpace(ls[0].text)) {
		return nil, ls, nil
	}
	b := &Block{Kind: KindRdmaLink, At: ls[0].at}
	var warns []Warning
	i := 0
	for ; i < len(ls); i++ {
		t := strings.TrimSpace(ls[i].text)
		if strings.HasPrefix(t, "caps: <") && len(b.RDMALinks) > 0 {
			continue // -d
		}
		m := rdmaLinkRE().FindStringSubmatch(t)
		if m == nil {
			break
		}
		n, _ := strconv.Atoi(m[2])
		p := RDMAPort{Device: m[1], Port: n, At: ls[i].at}
		f := strings.Fields(m[3])
		if len(f)%2 != 0 {
			warns = append(warns, Warning{ls[i].at, fmt.Sprintf("rdma link %s/%d: odd number of key/value words: not used", m[1], n)})
			continue
		}
		for j := 0; j+1 < len(f); j += 2 {
			switch k, v := f[j], f[j+1]; k {
			case "state":
				p.State = v
			case "physical_state":
				p.PhysState = v
			case "netdev":
				p.Netdev = v
			case "lid":
				if lid, err := strconv.Atoi(v); err == nil {
					p.LID = &lid
				}
			case "caps:":
				p.Extra = append(p.Extra, f[j:]...)
				j = len(f)
			default:
				p.Extra = append(p.Extra, k+" "+v)
			}
		}
		if p.State == "" {
			warns = append(warns, Warning{ls[i].at, fmt.Sprintf("rdma link %s/%d without a state: not used", m[1], n)})
			continue
		}
		b.RDMALinks = append(b.RDMALinks, p)
	}
	return b, ls[i:], warns
}

// rdmaLinkJSON is one element of `rdma -j link show`.
type rdmaLinkJSON struct {
	IfName        string `json:"ifname"`
	Port          *int   `json:"port"`
	State         string `json:"state"`
	PhysicalState string `json:"physical_state"`
	Netdev        string `json:"netdev"`
	LID           *int   `json:"lid"`
}

// parseRdmaLinkJSON reads `rdma -j [-p] link show`: a JSON array of
// objects with ifname, port, state, physical_state and netdev. Each port
// is placed at the line its object starts on.
func parseRdmaLinkJSON(ls []line) (*Block, []line, []Warning) {
	t := strings.TrimSpace(ls[0].text)
	if !strings.HasPrefix(t, "[") || !strings.Contains(jsonHead(ls), `"ifname"`) || !strings.Contains(jsonHead(ls), `"physical_state"`) {
		return nil, ls, nil
	}
	raw, n := jsonValue(ls)
	if n == 0 {
		return &Block{Kind: KindRdmaLink, At: ls[0].at}, ls[1:], []Warning{{ls[0].at, "rdma -j link output is not complete JSON: not used"}}
	}
	b := &Block{Kind: KindRdmaLink, At: ls[0].at}
	var warns []Warning
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // [
		return b, ls[n:], []Warning{{ls[0].at, fmt.Sprintf("rdma -j link: %v: not used", err)}}
	}
	for dec.More() {
		at := lineAt(ls, raw, dec.InputOffset())
		var e rdmaLinkJSON
		if err := dec.Decode(&e); err != nil {
			warns = append(warns, Warning{at, fmt.Sprintf("rdma -j link: %v: the rest is not used", err)})
			break
		}
		if e.IfName == "" || e.Port == nil || e.State == "" {
			warns = append(warns, Warning{at, "rdma -j link entry without ifname, port or state: not used"})
			continue
		}
		b.RDMALinks = append(b.RDMALinks, RDMAPort{Device: e.IfName, Port: *e.Port, State: e.State, PhysState: e.PhysicalState, Netdev: e.Netdev, LID: e.LID, At: at})
	}
	return b, ls[n:], warns
}

// jsonHead is the text of the first few lines, to recognise a JSON dump
// by its keys.
func jsonHead(ls []line) string {
	var s strings.Builder
	for i := 0; i < len(ls) && i < 8; i++ {
		s.WriteString(ls[i].text)
	}
	return s.String()
}

// jsonValue returns the JSON value that starts at ls[0] (an object or
// array, on one line or pretty-printed over several) and the number of
// lines it takes; 0 lines when the brackets never close.
func jsonValue(ls []line) ([]byte, int) {
	var buf bytes.Buffer
	depth, inStr, esc := 0, false, false
	for i, l := range ls {
		buf.WriteString(l.text)
		buf.WriteByte('\n')
		for _, c := range []byte(l.text) {
			switch {
			case esc:
				esc = false
			case inStr && c == '\\':
				esc = true
			case c == '"':
				inStr = !inStr
			case inStr:
			case c == '[' || c == '{':
				depth++
			case c == ']' || c == '}':
				depth--
			}
		}
		if depth <= 0 && !inStr {
			return buf.Bytes(), i + 1
		}
	}
	return nil, 0
}

// lineAt returns the source of the line holding byte off of raw, the
// concatenation of ls's lines (each with its newline) that jsonValue
// built; the offset points at the whitespace before a value, so the value
// itself starts at or after it.
func lineAt(ls []line, raw []byte, off int64) Source {
	for off < int64(len(raw)) && (raw[off] == ' ' || raw[off] == '\t' || raw[off] == '\n' || raw[off] == ',' || raw[off] == '\r') {
		off++
	}
	n := bytes.Count(raw[:min(off, int64(len(raw)))], []byte{'\n'})
	if n >= len(ls) {
		n = len(ls) - 1
	}
	return ls[n].at
}
