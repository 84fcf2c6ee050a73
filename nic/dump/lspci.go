package dump

import (
	"fmt"
	"strconv"
	"strings"
)

// PCIFunction is one function of `lspci -v[v[v]]` (pciutils lspci.c).
// Strings are as printed; "" and nil were not printed.
type PCIFunction struct {
	// Addr is the function's address with its domain: lspci leaves the
	// domain out when every device is in domain 0000 (lspci(8), -D), so
	// "21:00.0" is "0000:21:00.0".
	Addr     string
	Desc     string // "Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
	NUMANode *int   `json:",omitempty"`
	// LnkCap and LnkSta are the PCIe link's capability and status:
	// speed ("32GT/s") and width (16).
	CapSpeed string `json:",omitempty"`
	CapWidth int    `json:",omitempty"`
	StaSpeed string `json:",omitempty"`
	StaWidth int    `json:",omitempty"`
	// Downgraded: lspci 3.6 and later mark a link status below the
	// capability "(downgraded)".
	Downgraded bool   `json:",omitempty"`
	Driver     string `json:",omitempty"` // "Kernel driver in use"
	At         Source
	AtOf       map[string]Source `json:",omitempty"` // numa, lnksta, driver
}

var (
	// lspciSlotRE is a function's first line: [domain:]bus:dev.fn and its
	// class and name.
	lspciSlotRE = lazyRegexp(`^(?:([0-9a-f]{4,}):)?([0-9a-f]{2}):([0-1][0-9a-f])\.([0-7]) (\S.*)$`)
	lnkRE       = lazyRegexp(`^Lnk(Cap|Sta):\s+(?:Port #\d+, )?Speed ([0-9.]+GT/s)( \(downgraded\))?, Width x(\d+)( \(downgraded\))?`)
)

// parseLspci reads `lspci -v`, `-vv` and `-vvv`: per function a slot line
// and indented detail lines, functions separated by blank lines.
func parseLspci(ls []line) (*Block, []line, []Warning) {
	if !lspciSlotRE().MatchString(ls[0].text) || len(ls) < 2 || !indented(ls[1].text) {
		return nil, ls, nil
	}
	b := &Block{Kind: KindLspci, At: ls[0].at}
	var warns []Warning
	var f *PCIFunction
	flush := func() {
		if f != nil {
			b.PCI = append(b.PCI, *f)
			f = nil
		}
	}
	i := 0
	for ; i < len(ls); i++ {
		l := ls[i]
		t := strings.TrimSpace(l.text)
		if m := lspciSlotRE().FindStringSubmatch(l.text); m != nil {
			flush()
			dom := m[1]
			if dom == "" {
				dom = "0000"
			}
			f = &PCIFunction{Addr: fmt.Sprintf("%s:%s:%s.%s", dom, m[2], m[3], m[4]), Desc: m[5], At: l.at, AtOf: map[string]Source{}}
			continue
		}
		if t == "" {
			if i+1 < len(ls) && lspciSlotRE().MatchString(ls[i+1].text) {
				continue
			}
			break
		}
		if !indented(l.text) || f == nil {
			break
		}
		switch {
		case strings.HasPrefix(t, "NUMA node:"):
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(t, "NUMA node:")))
			if err != nil {
				warns = append(warns, Warning{l.at, fmt.Sprintf("%s: NUMA node %q is not a number: not used", f.Addr, t)})
				continue
			}
			f.NUMANode = &n
			f.AtOf["numa"] = l.at
		case strings.HasPrefix(t, "LnkCap:"), strings.HasPrefix(t, "LnkSta:"):
			m := lnkRE().FindStringSubmatch(t)
			if m == nil {
				warns = append(warns, Warning{l.at, fmt.Sprintf("%s: %q has no speed and width: not used", f.Addr, clip(t))})
				continue
			}
			w, _ := strconv.Atoi(m[4])
			if m[1] == "Cap" {
				f.CapSpeed, f.CapWidth = m[2], w
			} else {
				f.StaSpeed, f.StaWidth = m[2], w
				f.Downgraded = m[3] != "" || m[5] != ""
				f.AtOf["lnksta"] = l.at
			}
		case strings.HasPrefix(t, "Kernel driver in use:"):
			f.Driver = strings.TrimSpace(strings.TrimPrefix(t, "Kernel driver in use:"))
			f.AtOf["driver"] = l.at
		}
	}
	flush()
	return b, ls[i:], warns
}

func indented(s string) bool { return strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\t") }

// PCITreeNode is one function of `lspci -t[v]`: its address and the
// bridge whose secondary bus it sits on ("" for a function on a root bus).
type PCITreeNode struct {
	Addr   string
	Bridge string `json:",omitempty"`
	Name   string `json:",omitempty"` // -tv
	At     Source
}

var (
	// treeRootRE is a root bus in a tree line: "[0000:00]".
	treeRootRE = lazyRegexp(`\[([0-9a-f]{4,}):([0-9a-f]{2})\]`)
	// treeDevRE is a function in a tree line: "+-01.1", "\-00.1",
	// "----00.0", optionally followed by "-[01]" or "-[61-73]", the bridge's
	// secondary bus (range), and, with -v, two spaces and the name.
	treeDevRE = lazyRegexp(`[-+\\]-([0-1][0-9a-f])\.([0-7])(?:-\[([0-9a-f]{2})(?:-[0-9a-f]{2})?\])?(?:--|  (\S[^|]*?)\s*$)?`)
)

// parseLspciTree reads `lspci -t` and `lspci -tv`. lspci draws each bus
// with its functions in one column: a function's bus is the one whose
// first function stands in the same column, so the tree is read by the
// column each function's number starts at.
func parseLspciTree(ls []line) (*Block, []line, []Warning) {
	first := ls[0].text
	if !strings.HasPrefix(strings.TrimLeft(first, " "), "-") && !strings.HasPrefix(first, "+-[") && !strings.HasPrefix(first, "\\-[") {
		return nil, ls, nil
	}
	if !treeRootRE().MatchString(first) && !treeDevRE().MatchString(first) {
		return nil, ls, nil
	}
	b := &Block{Kind: KindLspciTree, At: ls[0].at}
	var warns []Warning
	type bus struct{ dom, num, bridge string }
	cols := map[int]bus{} // column of a bus's functions → the bus
	var pending *bus      // a bus opened on this line, waiting for its first function
	dom := "0000"
	i := 0
	for ; i < len(ls); i++ {
		l := ls[i]
		t := l.text
		if strings.TrimSpace(t) == "" || !strings.ContainsAny(strings.TrimSpace(t)[:1], "-+\\|") {
			break
		}
		pending = nil
		if m := treeRootRE().FindStringSubmatchIndex(t); m != nil {
			dom = t[m[2]:m[3]]
			pending = &bus{dom: dom, num: t[m[4]:m[5]]}
			// Functions of a new root bus replace what the column held.
			t = strings.Repeat(" ", m[1]) + t[m[1]:]
		}
		for _, m := range treeDevRE().FindAllStringSubmatchIndex(t, -1) {
			col := m[2] // where "dd" starts
			var on bus
			if pending != nil {
				on = *pending
				cols[col] = on
				pending = nil
			} else if c, ok := cols[col]; ok {
				on = c
			} else {
				warns = append(warns, Warning{l.at, fmt.Sprintf("lspci tree: function %s.%s at column %d under no bus: not used", t[m[2]:m[3]], t[m[4]:m[5]], col)})
				continue
			}
			addr := fmt.Sprintf("%s:%s:%s.%s", on.dom, on.num, t[m[2]:m[3]], t[m[4]:m[5]])
			n := PCITreeNode{Addr: addr, Bridge: on.bridge, At: l.at}
			if m[8] >= 0 {
				n.Name = t[m[8]:m[9]]
			}
			b.PCITree = append(b.PCITree, n)
			if m[6] >= 0 {
				pending = &bus{dom: on.dom, num: t[m[6]:m[7]], bridge: addr}
			}
		}
	}
	if len(b.PCITree) == 0 {
		return nil, ls, nil
	}
	return b, ls[i:], warns
}
