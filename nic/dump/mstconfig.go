package dump

import (
	"fmt"
	"strings"

	"github.com/rocectl/rocectl/nic/nvconfig"
)

// NVConfigDump is one device's `mstconfig q` / `mlxconfig q` output (with
// or without -e), as the tool printed it: the snapshot keeps the text,
// which nic/nvconfig parses when it is read.
type NVConfigDump struct {
	// Addr is the device as the dump's "Device:" line names it,
	// completed to DDDD:BB:DD.F ("c2:00.0" is 0000:c2:00.0); "" when it
	// names none or no PCI address.
	Addr     string
	Text     string
	Settings int
	Columns  string // "Default, Current, Next Boot"
}

// parseMstconfig reads a query's output: the "Device #n:" opening
// (mlxcfg_ui.cpp printOpening) through its "Configurations:" table, up to
// the next device's opening. The text must parse as nic/nvconfig does.
func parseMstconfig(ls []line) (*Block, []line, []Warning) {
	t := strings.TrimSpace(ls[0].text)
	if !strings.HasPrefix(t, "Device #") || !strings.HasSuffix(t, ":") {
		return nil, ls, nil
	}
	n := 1
	for n < len(ls) && !strings.HasPrefix(strings.TrimSpace(ls[n].text), "Device #") {
		n++
	}
	var sb strings.Builder
	for _, l := range ls[:n] {
		sb.WriteString(l.text)
		sb.WriteByte('\n')
	}
	b := &Block{Kind: KindMstconfig, At: ls[0].at}
	q, err := nvconfig.Parse([]byte(sb.String()))
	if err != nil {
		return b, ls[n:], []Warning{{ls[0].at, fmt.Sprintf("mstconfig query not usable: %v", err)}}
	}
	var cols []string
	for _, c := range q.Columns {
		if c != nvconfig.New {
			cols = append(cols, string(c))
		}
	}
	b.NVConfig = &NVConfigDump{Addr: fullPCI(q.Device.Address), Text: sb.String(), Settings: len(q.Settings), Columns: strings.Join(cols, ", ")}
	return b, ls[n:], nil
}

// fullPCI completes a PCI address to DDDD:BB:DD.F (mstconfig prints the
// address as given on its command line); "" when a is none.
func fullPCI(a string) string {
	a = strings.ToLower(strings.TrimSpace(a))
	if strings.Count(a, ":") == 1 {
		a = "0000:" + a
	}
	if !nvconfig.ValidAddress(a) {
		return ""
	}
	return a
}

// addNVConfig stores a query in the snapshot under its device's address.
func (im *Import) addNVConfig(b Block) {
	d := b.NVConfig
	if d == nil {
		return
	}
	if d.Addr == "" {
		im.Warnings = append(im.Warnings, Warning{b.At, "mstconfig query names no PCI address (its \"Device:\" line): not used"})
		return
	}
	if old, ok := im.State.Firmware[d.Addr]; ok && old != d.Text {
		im.Warnings = append(im.Warnings, Warning{b.At, fmt.Sprintf("a second, different mstconfig query of %s: the later one is used", d.Addr)})
	}
	if im.State.Firmware == nil {
		im.State.Firmware = map[string]string{}
	}
	im.State.Firmware[d.Addr] = d.Text
	im.Facts = append(im.Facts, Fact{Netdev: d.Addr, What: fmt.Sprintf("mstconfig q: %d NVConfig setting(s) (%s)", d.Settings, d.Columns), From: b.At})
}
