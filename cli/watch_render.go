package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rocectl/rocectl/verify"
)

// rocectl watch's text view: one verify.WatchReport laid out under a head
// line, in one of two layouts: a table with one column per value, where
// the terminal is wide enough (or the output is not a terminal), and two
// lines per port with the priorities under it on narrow terminals.

// watchCol is one column of the wide table.
type watchCol struct {
	head  string
	width int
	left  bool
}

var watchCols = []watchCol{
	{"PORT", 15, true}, {"LINK", 5, true}, {"PRIO", 6, true},
	{"RX PAUSE%", 9, false}, {"RX PAUSE/s", 10, false}, {"TX PAUSE%", 9, false}, {"TX PAUSE/s", 10, false},
	{"DISC/s", 8, false}, {"CNP TX/s", 9, false}, {"CNP RX/s", 9, false}, {"ECN/s", 8, false}, {"STORM W/E", 10, false},
}

// watchWideWidth is the width the wide table needs.
var watchWideWidth = func() int {
	n := len(watchCols) - 1
	for _, c := range watchCols {
		n += c.width
	}
	return n
}()

func wideRow(cells ...string) string {
	var b strings.Builder
	for i, c := range watchCols {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := ""
		if i < len(cells) {
			v = cells[i]
		}
		if c.left {
			fmt.Fprintf(&b, "%-*s", c.width, v)
		} else {
			fmt.Fprintf(&b, "%*s", c.width, v)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// watchHead is what the first line says: when (the report's time), how
// often, how to quit, and what is watched, the longest part last, where a
// narrow terminal cuts it.
type watchHead struct {
	interval time.Duration
	scope    string
	keys     bool // q quits
}

func (h watchHead) line(at time.Time) string {
	s := "rocectl watch  "
	if !at.IsZero() {
		s += at.Format("15:04:05") + "  "
	}
	s += "every " + h.interval.String() + "  "
	if h.keys {
		s += "(q quits)  "
	}
	return s + h.scope
}

// watchLines lays out one report under the head line; rep nil is the
// screen before the first interval has passed. width 0 is unlimited.
func watchLines(head watchHead, rep *verify.WatchReport, width int) []string {
	if rep == nil {
		return []string{head.line(time.Time{}), "", "sampling: the first rates come after one interval"}
	}
	lines := []string{head.line(rep.Time), ""}
	wide := width == 0 || width >= watchWideWidth
	if wide {
		lines = append(lines, wideRow(colHeads()...))
	}
	for _, p := range rep.Ports {
		if wide {
			lines = append(lines, widePort(p)...)
		} else {
			lines = append(lines, narrowPort(p)...)
		}
	}
	return lines
}

func colHeads() []string {
	h := make([]string, len(watchCols))
	for i, c := range watchCols {
		h[i] = c.head
	}
	return h
}

// rowName is the port's name on screen: a slave of a bond as the guard
// names it, "bond0/ens1f0np0".
func rowName(p verify.WatchPort) string {
	if p.Bond != "" {
		return verify.SlavePort(p.Bond, p.Netdev)
	}
	return p.Netdev
}

func widePort(p verify.WatchPort) []string {
	if p.Error != "" {
		return []string{wideRow(rowName(p), p.Link, p.Error)}
	}
	out := []string{wideRow(rowName(p), p.Link, "port", "", "", "", "",
		fmtRate(sumRates(p.RXDiscardsPerS, p.TXDiscardsPerS)),
		fmtRate(p.CNPSentPerS), fmtRate(p.CNPHandledPerS), fmtRate(p.ECNMarkedPerS), fmtStorm(p))}
	for _, pr := range p.Priorities {
		rx, tx := pausePair(pr.RX), pausePair(pr.TX)
		out = append(out, wideRow("", "", strconv.Itoa(pr.Priority), rx[0], rx[1], tx[0], tx[1], fmtRate(prioDiscards(pr))))
	}
	if g := p.GlobalPause; g != nil {
		rx, tx := pausePair(g.RX), pausePair(g.TX)
		out = append(out, wideRow("", "", "global", rx[0], rx[1], tx[0], tx[1]))
	}
	return append(out, extraLines(p, strings.Repeat(" ", watchCols[0].width+watchCols[1].width+2))...)
}

// extraLines are the lines under a port's rows: its RDMA counters and
// "throttled with no drops", indented by ind.
func extraLines(p verify.WatchPort, ind string) []string {
	var out []string
	if l := rdmaLine(p); l != "" {
		out = append(out, ind+l)
	}
	for _, w := range p.ThrottledWhere {
		scope := "priority " + strconv.Itoa(w.Priority)
		if w.Priority == verify.GlobalPause {
			scope = "global pause"
		}
		out = append(out, fmt.Sprintf("%s! throttled with no drops: %s (%s) paused %.0f%%, every discard counter flat", ind, scope, w.Direction, w.PausePct))
	}
	return out
}

// rdmaLine is "rdma/s oos 0  seq-nak 0 ...": the transport's loss
// counters always (where the driver has them), the others only while
// they move; the CNP and ECN counters have columns of their own.
func rdmaLine(p verify.WatchPort) string {
	var parts []string
	for _, r := range p.RDMA {
		short, loss := rdmaShort(r.Key)
		if short == "" || (!loss && (r.PerS == nil || *r.PerS == 0)) {
			continue
		}
		parts = append(parts, short+" "+fmtRate(r.PerS))
	}
	if len(parts) == 0 {
		return ""
	}
	return "rdma/s  " + strings.Join(parts, "  ")
}

// rdmaShort is the counter's short name on screen and whether it is a
// loss signal; "" for the counters with columns of their own.
func rdmaShort(key string) (string, bool) {
	switch key {
	case "np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets":
		return "", false
	}
	for _, c := range verify.RDMACounters {
		if c.Key == key {
			return c.Short, slices.Contains(verify.RDMALossKeys, key)
		}
	}
	return key, false
}

func narrowPort(p verify.WatchPort) []string {
	if p.Error != "" {
		return []string{fmt.Sprintf("%s %s  %s", rowName(p), p.Link, p.Error)}
	}
	out := []string{fmt.Sprintf("%s %s  cnp tx %s/s rx %s/s  ecn %s/s  disc %s/s  storm %s", rowName(p), p.Link,
		fmtRate(p.CNPSentPerS), fmtRate(p.CNPHandledPerS), fmtRate(p.ECNMarkedPerS),
		fmtRate(sumRates(p.RXDiscardsPerS, p.TXDiscardsPerS)), fmtStorm(p))}
	row := func(name string, rx, tx *verify.WatchPause, disc string) string {
		r, t := pausePair(rx), pausePair(tx)
		s := fmt.Sprintf("  %-7s rx %6s %8s  tx %6s %8s", name, pctSign(r[0]), r[1]+"/s", pctSign(t[0]), t[1]+"/s")
		if disc != "" {
			s += "  disc " + disc + "/s"
		}
		return s
	}
	for _, pr := range p.Priorities {
		out = append(out, row("prio "+strconv.Itoa(pr.Priority), pr.RX, pr.TX, fmtRate(prioDiscards(pr))))
	}
	if g := p.GlobalPause; g != nil {
		out = append(out, row("global", g.RX, g.TX, ""))
	}
	return append(out, extraLines(p, "  ")...)
}

// prioDiscards is what the DISC/s column shows for a priority: buffer
// discards (the lossless failure: too little headroom) where the driver
// counts them, else the priority's receive discards.
func prioDiscards(pr verify.WatchPrio) *float64 {
	if pr.RXBufferDiscardsPerS != nil {
		return pr.RXBufferDiscardsPerS
	}
	return pr.RXDiscardsPerS
}

func pausePair(w *verify.WatchPause) [2]string {
	if w == nil {
		return [2]string{"-", "-"}
	}
	return [2]string{fmtPct(w.PausePct), fmtRate(w.FramesPerS)}
}

// pctSign adds the percent sign to a number, not to "-".
func pctSign(s string) string {
	if s == "-" {
		return s
	}
	return s + "%"
}

func sumRates(a, b *float64) *float64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	s := *a + *b
	return &s
}

func fmtPct(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}

// fmtRate prints a rate in at most six characters: 0, 0.5, 12, 980,
// 12.3k, 4.1M.
func fmtRate(v *float64) string {
	if v == nil {
		return "-"
	}
	x := *v
	switch {
	case x == 0:
		return "0"
	case x < 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x < 1e3:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x < 1e6:
		return strconv.FormatFloat(x/1e3, 'f', 1, 64) + "k"
	case x < 1e9:
		return strconv.FormatFloat(x/1e6, 'f', 1, 64) + "M"
	}
	return strconv.FormatFloat(x/1e9, 'f', 1, 64) + "G"
}

// fmtStorm is "warning/error" totals, with "+N" when new ones came in
// this interval.
func fmtStorm(p verify.WatchPort) string {
	if p.StormWarningEvents == nil && p.StormErrorEvents == nil {
		return "-"
	}
	n := func(v *uint64) string {
		if v == nil {
			return "-"
		}
		return strconv.FormatUint(*v, 10)
	}
	s := n(p.StormWarningEvents) + "/" + n(p.StormErrorEvents)
	if p.StormEventsNew != nil && *p.StormEventsNew > 0 {
		s = "+" + strconv.FormatUint(*p.StormEventsNew, 10) + " " + s
	}
	return s
}
