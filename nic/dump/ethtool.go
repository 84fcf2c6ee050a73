package dump

import (
	"fmt"
	"strconv"
	"strings"
)

// Stats is `ethtool -S` output: counter name → value, names exactly as
// the driver prints them (bnxt per-ring names contain ": "). At maps a
// counter to its line. Partial is set for output without the "NIC
// statistics:" header (piped through grep): only the counters listed
// are known.
type Stats struct {
	Values  map[string]uint64
	At      map[string]Source
	Partial bool
}

// counterRE is one "name: value" row; bnxt prefixes per-ring names with
// "[N]: ".
var counterRE = lazyRegexp(`^\s*((?:\[\d+\]: )?[A-Za-z0-9_.\-\[\]]+): (\d+)$`)

func parseEthtoolS(ls []line) (*Block, []line, []Warning) {
	t := strings.TrimSpace(ls[0].text)
	partial := t != "NIC statistics:"
	if partial && !counterRE().MatchString(ls[0].text) {
		return nil, ls, nil
	}
	st := &Stats{Values: map[string]uint64{}, At: map[string]Source{}, Partial: partial}
	var warns []Warning
	i := 0
	if !partial {
		i = 1
	}
	for ; i < len(ls); i++ {
		m := counterRE().FindStringSubmatch(ls[i].text)
		if m == nil {
			break
		}
		v, err := strconv.ParseUint(m[2], 10, 64)
		if err != nil {
			warns = append(warns, Warning{ls[i].at, fmt.Sprintf("counter %s: %v", m[1], err)})
			continue
		}
		if _, dup := st.Values[m[1]]; dup {
			warns = append(warns, Warning{ls[i].at, fmt.Sprintf("counter %s printed twice: the first value is kept", m[1])})
			continue
		}
		st.Values[m[1]] = v
		st.At[m[1]] = ls[i].at
	}
	return &Block{Kind: KindEthtoolS, At: ls[0].at, Stats: st}, ls[i:], warns
}

// Pause is `ethtool -a IF`.
type Pause struct {
	Autoneg, RX, TX bool
	At              Source
}

var pauseHeadRE = lazyRegexp(`^Pause parameters for (\S+):$`)

func parseEthtoolA(ls []line) (*Block, []line, []Warning) {
	m := pauseHeadRE().FindStringSubmatch(strings.TrimSpace(ls[0].text))
	if m == nil {
		return nil, ls, nil
	}
	var warns []Warning
	seen := map[string]bool{}
	p := &Pause{At: ls[0].at}
	i := 1
	for ; i < len(ls); i++ {
		k, v, ok := strings.Cut(strings.TrimSpace(ls[i].text), ":")
		if !ok {
			break
		}
		v = strings.TrimSpace(v)
		var dst *bool
		switch k {
		case "Autonegotiate":
			dst = &p.Autoneg
		case "RX":
			dst = &p.RX
		case "TX":
			dst = &p.TX
		case "RX negotiated", "TX negotiated":
			continue // ethtool 5.x/6.x with autoneg: the link partner's result
		default:
			if strings.HasPrefix(k, "Statistics") || strings.HasPrefix(ls[i].text, " ") || strings.HasPrefix(ls[i].text, "\t") {
				continue // --include-statistics
			}
		}
		if dst == nil {
			break // a line of another block: this one ends here
		}
		switch v {
		case "on":
			*dst = true
		case "off":
		default:
			warns = append(warns, Warning{ls[i].at, fmt.Sprintf("%s: %q is neither on nor off", k, v)})
			return &Block{Kind: KindEthtoolA, Netdev: m[1], At: ls[0].at}, ls[i+1:], warns
		}
		seen[k] = true
	}
	if !seen["Autonegotiate"] || !seen["RX"] || !seen["TX"] {
		warns = append(warns, Warning{ls[0].at, "pause parameters incomplete (want Autonegotiate, RX, TX): not used"})
		return &Block{Kind: KindEthtoolA, Netdev: m[1], At: ls[0].at}, ls[i:], warns
	}
	return &Block{Kind: KindEthtoolA, Netdev: m[1], At: ls[0].at, Pause: p}, ls[i:], warns
}

// DriverInfo is `ethtool -i IF`.
type DriverInfo struct {
	Driver, Version, Firmware, BusInfo string
	At                                 Source
}

func parseEthtoolI(ls []line) (*Block, []line, []Warning) {
	if !strings.HasPrefix(strings.TrimSpace(ls[0].text), "driver:") {
		return nil, ls, nil
	}
	d := &DriverInfo{At: ls[0].at}
	i := 0
	for ; i < len(ls); i++ {
		k, v, ok := strings.Cut(strings.TrimSpace(ls[i].text), ":")
		if !ok || strings.Contains(k, " ") {
			break
		}
		v = strings.TrimSpace(v)
		switch k {
		case "driver":
			if i > 0 {
				return &Block{Kind: KindEthtoolI, At: ls[0].at, Driver: d}, ls[i:], nil
			}
			d.Driver = v
		case "version":
			d.Version = v
		case "firmware-version":
			d.Firmware = v
		case "bus-info":
			d.BusInfo = v
		case "expansion-rom-version", "supports-statistics", "supports-test", "supports-eeprom-access",
			"supports-register-dump", "supports-priv-flags":
		default:
			return &Block{Kind: KindEthtoolI, At: ls[0].at, Driver: d}, ls[i:], nil
		}
	}
	return &Block{Kind: KindEthtoolI, At: ls[0].at, Driver: d}, ls[i:], nil
}
