package dump

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Stats is `ethtool -S` output: counter name → value, names exactly as
// the driver prints them (bnxt per-ring names contain ": "). At says
// where a counter was read, Names gives them in the order read. Partial
// is set for output without the "NIC statistics:" header (piped through
// grep): only the counters listed are known.
type Stats struct {
	Values  map[string]uint64
	Partial bool
	// order is every counter kept, as read, with its line: the places
	// of a 64-channel mlx5's thousands of counters without a second map
	// (which cost an import a fifth of its time). At is asked of a few.
	order []counterAt
}

type counterAt struct {
	name string
	at   Source
}

// At is where counter name was read; false when it was not.
func (s *Stats) At(name string) (Source, bool) {
	for _, c := range s.order {
		if c.name == name {
			return c.at, true
		}
	}
	return Source{}, false
}

// MarshalJSON writes the counters' places as the map "At" (the corpus
// goldens show them so); only tests encode a Stats.
func (s *Stats) MarshalJSON() ([]byte, error) {
	at := make(map[string]Source, len(s.order))
	for _, c := range s.order {
		at[c.name] = c.at
	}
	return json.Marshal(struct {
		Values  map[string]uint64
		At      map[string]Source
		Partial bool
	}{s.Values, at, s.Partial})
}

// Names are the counters in the order the dump printed them.
func (s *Stats) Names() []string {
	names := make([]string, len(s.order))
	for i, c := range s.order {
		names[i] = c.name
	}
	return names
}

// counterGrammar is one "name: value" row; bnxt prefixes per-ring names
// with "[N]: ". counterLine reads it by hand: ethtool -S of a 64-channel mlx5 is
// thousands of rows per interface, and the regular expression it
// implements (counterGrammar, which the tests hold it to) took half of
// an import's time.
const counterGrammar = `^\s*((?:\[\d+\]: )?[A-Za-z0-9_.\-\[\]]+): (\d+)$`

// counterLine matches s against counterGrammar: the counter's name (with
// bnxt's ring prefix) and its digits.
func counterLine(s string) (name, value string, ok bool) {
	s = strings.TrimLeft(s, " \t\n\f\r") // RE2's \s
	// With the ring prefix first, as the grammar tries it; a line whose
	// "[N]: " is itself the name ("[0]: 5") matches without it.
	if p := ringPrefix(s); p > 0 {
		if n, v, ok := nameValue(s, p); ok {
			return n, v, true
		}
	}
	return nameValue(s, 0)
}

// ringPrefix is the length of a leading "[digits]: ", 0 when there is none.
func ringPrefix(s string) int {
	if len(s) == 0 || s[0] != '[' {
		return 0
	}
	j := 1
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == 1 || !strings.HasPrefix(s[j:], "]: ") {
		return 0
	}
	return j + 3
}

// nameValue reads "name: digits" from s[from:] to the end of s; the name
// is s up to the colon.
func nameValue(s string, from int) (name, value string, ok bool) {
	i := from
	for i < len(s) && counterNameChar(s[i]) {
		i++
	}
	if i == from || !strings.HasPrefix(s[i:], ": ") {
		return "", "", false
	}
	v := s[i+2:]
	if v == "" {
		return "", "", false
	}
	for j := 0; j < len(v); j++ {
		if v[j] < '0' || v[j] > '9' {
			return "", "", false
		}
	}
	return s[:i], v, true
}

func counterNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '-' || c == '[' || c == ']'
}

func parseEthtoolS(ls []line) (*Block, []line, []Warning) {
	t := strings.TrimSpace(ls[0].text)
	partial := t != "NIC statistics:"
	if _, _, ok := counterLine(ls[0].text); partial && !ok {
		return nil, ls, nil
	}
	// Sized for every remaining line (an upper bound): a 64-channel
	// mlx5's thousands of counters grow no map or slice step by step.
	st := &Stats{Values: make(map[string]uint64, len(ls)), order: make([]counterAt, 0, len(ls)), Partial: partial}
	var warns []Warning
	i := 0
	if !partial {
		i = 1
	}
	for ; i < len(ls); i++ {
		name, value, ok := counterLine(ls[i].text)
		if !ok {
			break
		}
		v, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			warns = append(warns, Warning{ls[i].at, fmt.Sprintf("counter %s: %v", name, err)})
			continue
		}
		if _, dup := st.Values[name]; dup {
			warns = append(warns, Warning{ls[i].at, fmt.Sprintf("counter %s printed twice: the first value is kept", name)})
			continue
		}
		st.Values[name] = v
		st.order = append(st.order, counterAt{name, ls[i].at})
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
