package dump

import (
	"fmt"
	"strconv"
	"strings"
)

// DCBPFC is `dcb pfc show dev IF`.
type DCBPFC struct {
	Cap     *uint8
	Enable  *[8]bool
	Delay   *uint16
	Req     *[8]uint64 // requests (pause frames sent)
	Ind     *[8]uint64 // indications (received)
	At      Source
	EnAt    Source
	DelayAt Source
}

func parseDCBPFC(ls []line) (*Block, []line, []Warning) {
	t := strings.TrimSpace(ls[0].text)
	if !strings.HasPrefix(t, "pfc-cap ") && !strings.HasPrefix(t, "prio-pfc ") && !strings.HasPrefix(t, "pg-pfc ") {
		return nil, ls, nil
	}
	p := &DCBPFC{At: ls[0].at}
	var warns []Warning
	i := 0
	for ; i < len(ls); i++ {
		f := strings.Fields(ls[i].text)
		if len(f) == 0 {
			break
		}
		switch f[0] {
		case "pfc-cap", "macsec-bypass", "delay", "mbc":
			kv(f, func(k, v string) {
				switch k {
				case "pfc-cap":
					if n, err := strconv.ParseUint(v, 10, 8); err == nil {
						c := uint8(n)
						p.Cap = &c
					}
				case "delay":
					if n, err := strconv.ParseUint(v, 10, 16); err == nil {
						d := uint16(n)
						p.Delay, p.DelayAt = &d, ls[i].at
					}
				}
			})
		case "prio-pfc", "pg-pfc":
			var en [8]bool
			ok := prioMap(f[1:], func(prio int, v string) bool {
				en[prio] = v == "on"
				return v == "on" || v == "off"
			})
			if !ok {
				warns = append(warns, Warning{ls[i].at, "prio-pfc row is not 8 prio:on|off pairs: not used"})
				continue
			}
			p.Enable, p.EnAt = &en, ls[i].at
		case "requests", "indications":
			var c [8]uint64
			ok := prioMap(f[1:], func(prio int, v string) bool {
				n, err := strconv.ParseUint(v, 10, 64)
				c[prio] = n
				return err == nil
			})
			if !ok {
				warns = append(warns, Warning{ls[i].at, fmt.Sprintf("%s row not used", f[0])})
				continue
			}
			if f[0] == "requests" {
				p.Req = &c
			} else {
				p.Ind = &c
			}
		default:
			return &Block{Kind: KindDCBPFC, At: ls[0].at, DCBPFC: p}, ls[i:], warns
		}
	}
	return &Block{Kind: KindDCBPFC, At: ls[0].at, DCBPFC: p}, ls[i:], warns
}

// prioMap reads exactly the 8 "prio:value" words.
func prioMap(f []string, set func(prio int, v string) bool) bool {
	if len(f) != 8 {
		return false
	}
	seen := 0
	for _, w := range f {
		k, v, ok := strings.Cut(w, ":")
		n, err := strconv.Atoi(k)
		if !ok || err != nil || n < 0 || n > 7 || seen&(1<<n) != 0 || !set(n, v) {
			return false
		}
		seen |= 1 << n
	}
	return true
}

// DCBApp is one DSCP APP entry of `dcb app show dev IF`.
type DCBApp struct {
	DSCP, Prio uint8
	At         Source
}

// dscpNames are the names dcb prints for DSCP values (RFC 4594 classes).
var dscpNames = func() map[string]uint8 {
	m := map[string]uint8{"EF": 46, "VA": 44}
	for c := 0; c < 8; c++ {
		m[fmt.Sprintf("CS%d", c)] = uint8(c << 3)
	}
	for c := 1; c <= 4; c++ {
		for d := 1; d <= 3; d++ {
			m[fmt.Sprintf("AF%d%d", c, d)] = uint8(c<<3 | d<<1)
		}
	}
	return m
}()

func parseDCBApp(ls []line) (*Block, []line, []Warning) {
	if f := strings.Fields(ls[0].text); len(f) == 0 || f[0] != "dscp-prio" {
		return nil, ls, nil
	}
	b := &Block{Kind: KindDCBApp, At: ls[0].at, DCBApps: []DCBApp{}}
	var warns []Warning
	i := 0
	for ; i < len(ls); i++ {
		f := strings.Fields(ls[i].text)
		if len(f) == 0 || !strings.HasSuffix(f[0], "-prio") && f[0] != "default-prio" {
			break
		}
		if f[0] != "dscp-prio" {
			continue // ethtype-prio, port-prio, ...: not what rocectl audits
		}
		for _, w := range f[1:] {
			k, v, ok := strings.Cut(w, ":")
			d, known := dscpNames[k]
			if !known {
				n, err := strconv.ParseUint(k, 10, 8)
				d, known = uint8(n), err == nil && n < 64
			}
			p, err := strconv.ParseUint(v, 10, 8)
			if !ok || !known || err != nil || p > 7 {
				warns = append(warns, Warning{ls[i].at, fmt.Sprintf("dscp-prio entry %q not used", w)})
				continue
			}
			b.DCBApps = append(b.DCBApps, DCBApp{DSCP: d, Prio: uint8(p), At: ls[i].at})
		}
	}
	return b, ls[i:], warns
}
