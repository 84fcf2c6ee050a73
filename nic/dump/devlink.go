package dump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// DevlinkParam is one parameter of `devlink dev param show` (iproute2
// devlink/devlink.c): its name, whether it is generic, and its value per
// configuration mode, each as printed ("true", "2", "dmfs"). The text
// output does not say a numeric parameter's width (u8 … u64).
type DevlinkParam struct {
	Dev     string // "pci/0000:82:00.0"
	Name    string
	Generic bool
	Values  []DevlinkValue
	At      Source // the "name" line
}

// DevlinkValue is one "cmode C value V" line.
type DevlinkValue struct {
	Cmode string // "runtime", "driverinit", "permanent"
	Value string
	// JSON is set for values of `devlink -j`, where the type of the
	// JSON value (bool, number, string) is known.
	JSON string `json:",omitempty"` // "bool", "number", "string"
	At   Source
}

var (
	// devlinkDevRE is the device line, "pci/0000:82:00.0:", and in the
	// one-line form iproute2 uses for a single parameter (and devlink
	// monitor), "pci/0000:82:00.0: name X type generic".
	devlinkDevRE   = lazyRegexp(`^([a-z0-9_.-]+/[^\s:]+(?::[^\s:]+)*):(?:\s+name (\S+) type (\S+))?$`)
	devlinkNameRE  = lazyRegexp(`^name (\S+) type (\S+)$`)
	devlinkValueRE = lazyRegexp(`^cmode (\S+)(?: value (.*))?$`)
)

// parseDevlinkParams reads `devlink dev param show [DEV [name NAME]]`.
// "kernel answers: ..." (the dump stopped at a driver's error) is a
// warning: the device's parameters after it are unknown.
func parseDevlinkParams(ls []line) (*Block, []line, []Warning) {
	m := devlinkDevRE().FindStringSubmatch(strings.TrimSpace(ls[0].text))
	if m == nil || !strings.HasPrefix(m[1], "pci/") && !strings.HasPrefix(m[1], "netdevsim/") && !strings.HasPrefix(m[1], "auxiliary/") {
		return nil, ls, nil
	}
	b := &Block{Kind: KindDevlinkParams, At: ls[0].at}
	var warns []Warning
	var dev string
	var cur *DevlinkParam
	flush := func() {
		if cur != nil {
			b.DevlinkParams = append(b.DevlinkParams, *cur)
			cur = nil
		}
	}
	i := 0
	for ; i < len(ls); i++ {
		l := ls[i]
		t := strings.TrimSpace(l.text)
		if t == "" {
			break
		}
		if m := devlinkDevRE().FindStringSubmatch(t); m != nil {
			flush()
			dev = m[1]
			if m[2] != "" {
				cur = &DevlinkParam{Dev: dev, Name: m[2], Generic: m[3] == "generic", At: l.at}
			}
			continue
		}
		if m := devlinkNameRE().FindStringSubmatch(t); m != nil && dev != "" {
			flush()
			cur = &DevlinkParam{Dev: dev, Name: m[1], Generic: m[2] == "generic", At: l.at}
			continue
		}
		if t == "values:" && cur != nil {
			continue
		}
		if m := devlinkValueRE().FindStringSubmatch(t); m != nil && cur != nil {
			if m[2] == "" {
				warns = append(warns, Warning{l.at, fmt.Sprintf("%s %s cmode %s without a value: not used", dev, cur.Name, m[1])})
				continue
			}
			cur.Values = append(cur.Values, DevlinkValue{Cmode: m[1], Value: m[2], At: l.at})
			continue
		}
		if strings.HasPrefix(t, "kernel answers:") {
			warns = append(warns, Warning{l.at, fmt.Sprintf("devlink stopped (%s): parameters of %s after %s are not in the dump", t, dev, lastParam(b, cur))})
			i++
			break
		}
		break
	}
	flush()
	return b, ls[i:], warns
}

func lastParam(b *Block, cur *DevlinkParam) string {
	if cur != nil {
		return cur.Name
	}
	if n := len(b.DevlinkParams); n > 0 {
		return b.DevlinkParams[n-1].Name
	}
	return "the device line"
}

// devlinkJSON is `devlink -j dev param show`:
// {"param":{"pci/0000:01:00.0":[{"name":…,"type":…,"values":[{"cmode":…,"value":…}]}]}}.
type devlinkJSON struct {
	Param map[string][]struct {
		Name   string `json:"name"`
		Type   string `json:"type"`
		Values []struct {
			Cmode string          `json:"cmode"`
			Value json.RawMessage `json:"value"`
		} `json:"values"`
	} `json:"param"`
}

// parseDevlinkParamsJSON reads `devlink -j [-p] dev param show`. Values
// keep the JSON type devlink gave them (bool, number, string). Every
// parameter is placed at the dump's first line: devlink -j prints all of
// it on one line.
func parseDevlinkParamsJSON(ls []line) (*Block, []line, []Warning) {
	t := strings.TrimSpace(ls[0].text)
	if !strings.HasPrefix(t, "{") || !strings.Contains(jsonHead(ls), `"param"`) {
		return nil, ls, nil
	}
	raw, n := jsonValue(ls)
	b := &Block{Kind: KindDevlinkParams, At: ls[0].at}
	if n == 0 {
		return b, ls[1:], []Warning{{ls[0].at, "devlink -j param output is not complete JSON: not used"}}
	}
	var d devlinkJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		return b, ls[n:], []Warning{{ls[0].at, fmt.Sprintf("devlink -j param output: %v: not used", err)}}
	}
	var warns []Warning
	devs := make([]string, 0, len(d.Param))
	for dev := range d.Param {
		devs = append(devs, dev)
	}
	sort.Strings(devs)
	for _, dev := range devs {
		for _, p := range d.Param[dev] {
			dp := DevlinkParam{Dev: dev, Name: p.Name, Generic: p.Type == "generic", At: ls[0].at}
			for _, v := range p.Values {
				var x any
				if err := json.Unmarshal(v.Value, &x); err != nil || x == nil {
					warns = append(warns, Warning{ls[0].at, fmt.Sprintf("%s %s cmode %s: no value: not used", dev, p.Name, v.Cmode)})
					continue
				}
				dv := DevlinkValue{Cmode: v.Cmode, At: ls[0].at}
				switch x := x.(type) {
				case bool:
					dv.Value, dv.JSON = fmt.Sprint(x), "bool"
				case string:
					dv.Value, dv.JSON = x, "string"
				case float64:
					dv.Value, dv.JSON = string(v.Value), "number"
				default:
					warns = append(warns, Warning{ls[0].at, fmt.Sprintf("%s %s cmode %s: value %s is not a bool, number or string: not used", dev, p.Name, v.Cmode, v.Value)})
					continue
				}
				dp.Values = append(dp.Values, dv)
			}
			b.DevlinkParams = append(b.DevlinkParams, dp)
		}
	}
	return b, ls[n:], warns
}
