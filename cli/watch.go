package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/verify"
)

// rocectl watch: a live per-port, per-priority view of the lossless
// fabric's counters, like top. Counter names come from verify (pause:
// PauseCounters; CNP/ECN, storm events, discards: verify/fabric.go);
// this file turns two samples into rates (watchRates), lays them out
// (watchLines) and drives a terminal (watchLoop, watchTTY). docs/watch.md
// describes the view and the JSON document.

func newWatchCmd(env *Env) *cobra.Command {
	var profile, output string
	var once bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "watch [-p PROFILE] [--once] [-o json] [--interval D]",
		Short: "Live per-port, per-priority view of pause, CNP/ECN, discards and storm events (q quits)",
		Long: `watch samples every RoCE port's counters (or those a profile matches) every
--interval and shows per priority the time paused (% of the interval) and
pause frames/s received and sent, global pause, CNPs sent/handled, ECN-marked
packets and discards per second, the NIC's storm-prevention events and the
link state. On a terminal it refreshes in place (q or Ctrl-C quits); piped, it
prints one plain snapshot per interval; -o json prints one JSON object per
interval; --once waits one interval, prints, and exits.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if interval <= 0 {
				return fmt.Errorf("--interval must be positive, not %s", interval)
			}
			h, done, err := env.Host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			ports, scope, err := env.watchPorts(h, profile)
			if err != nil {
				return err
			}
			if env.Snapshot != "" {
				scope += ", snapshot " + env.Snapshot + " (counters do not move)"
			}
			ticker := time.NewTicker(interval)
			defer ticker.Stop()
			s := &watchSampler{h: h, ports: ports, now: time.Now}
			l := &watchLoop{sample: s.sample, ticks: ticker.C, out: env.Stdout, json: output == "json", once: once,
				head: watchHead{interval: interval, scope: scope}}
			if !l.json && !once {
				in, _ := cmd.InOrStdin().(*os.File)
				out, _ := env.Stdout.(*os.File)
				if out != nil && isTerminal(out) {
					t, err := openWatchTTY(in, out)
					if err != nil {
						return err
					}
					defer t.restore()
					l.tty = t
					l.head.keys = t.in != nil
				}
			}
			return l.run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(&profile, "profile", "p", "", "watch only the ports this profile matches (default: every RoCE port)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json (one object per interval)")
	cmd.Flags().BoolVar(&once, "once", false, "take two samples one interval apart, print the rates and exit")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "time between samples")
	return cmd
}

// watchPorts discovers the RoCE ports, those profile matches when one is
// given, and words what is watched for the header.
func (env *Env) watchPorts(h *host.Host, profile string) ([]port.Port, string, error) {
	inv := h.Discover()
	if profile == "" {
		if len(inv.Ports) == 0 {
			return nil, "", errors.New("nothing to watch: " + nic.ErrNoRoCE.Error())
		}
		return inv.Ports, "all RoCE ports", nil
	}
	p, err := env.LoadProfile(profile)
	if err != nil {
		return nil, "", err
	}
	var out []port.Port
	for i, pp := range h.Ports(inv, false) {
		if p.Match.Matches(pp) {
			out = append(out, inv.Ports[i])
		}
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("nothing to watch: no RoCE port matches profile %q", p.Name)
	}
	return out, fmt.Sprintf("profile %s", p.Name), nil
}

// portSample is one read of one port's counters.
type portSample struct {
	port port.Port
	// bond is, for a slave of a bond (RoCE LAG), the bond; slaves, for a
	// bond, its slaves, which have the NIC counters the bond lacks.
	bond   string
	slaves []string
	link   string
	err    error
	pause  []verify.PauseCounter
	cong   verify.Congestion
	storm  verify.StormEvents
	disc   verify.Discards
}

// watchSample is one read of every watched port, at one time.
type watchSample struct {
	at    time.Time
	ports []portSample
}

// watchSampler reads the watched ports through the host's kernel: ethtool
// -S (pause, storm events, discards), rtnetlink (link state) and the RDMA
// port's hw_counters (CNP, ECN).
type watchSampler struct {
	h     *host.Host
	ports []port.Port
	now   func() time.Time
}

func (s *watchSampler) sample() *watchSample {
	out := &watchSample{at: s.now(), ports: make([]portSample, 0, len(s.ports))}
	for _, p := range s.ports {
		if p.Bond == nil || len(p.Bond.Slaves) == 0 {
			out.ports = append(out.ports, s.portSample(p, true))
			continue
		}
		// A bond (RoCE LAG) has no ethtool -S counters: its row has the
		// link and the LAG device's RDMA counters, and each slave a row
		// of its own with its pause, storm events and discards.
		ps := s.portSample(p, false)
		for _, m := range p.Bond.Slaves {
			ps.slaves = append(ps.slaves, m.Netdev)
		}
		out.ports = append(out.ports, ps)
		for _, m := range p.Bond.Slaves {
			sl := s.portSample(port.Port{Netdev: m.Netdev, PCI: m.PCI, Driver: m.Driver}, true)
			sl.bond = p.Netdev
			out.ports = append(out.ports, sl)
		}
	}
	return out
}

// portSample reads one port: its link state, its ethtool -S counters when
// nicStats, and its RDMA port's hw_counters when it has an RDMA device.
func (s *watchSampler) portSample(p port.Port, nicStats bool) portSample {
	ps := portSample{port: p, link: "?"}
	if li, err := s.h.K.Link(p.Netdev); err == nil && li.OperState != "" {
		ps.link = li.OperState
	}
	if nicStats {
		if stats, err := s.h.K.Stats(p.Netdev); err != nil {
			ps.err = err
		} else {
			ps.pause = verify.PauseCounters(stats)
			ps.storm = verify.StormEventCounters(stats)
			ps.disc = verify.DiscardCounters(stats)
		}
	}
	if p.RDMADevice != "" {
		// A port without hw_counters has no congestion data: "-", not an error.
		if hw, err := verify.ReadHWCounters(s.h.FS, p.RDMADevice, p.PortNum, s.h.Log); err == nil {
			ps.cong = verify.CongestionCounters(hw)
		}
	}
	return ps
}

// watchReport is what one interval shows, and the -o json document (one
// per interval; docs/watch.md): doc.Watch, and its parts below.
type (
	watchReport    = doc.Watch
	watchPort      = doc.WatchPort
	watchPrio      = doc.WatchPrio
	watchPausePair = doc.WatchPausePair
	watchPause     = doc.WatchPause
)

// counterDiff is cur-prev for a free-running 64-bit counter. A smaller
// value is a reset (driver reload, firmware reset; these counters are 64
// bits wide, so never a wrap), and what it counted since is cur.
func counterDiff(prev, cur uint64) uint64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// perSecond is the counter's rate over secs, nil unless both samples
// have it.
func perSecond(prev, cur *uint64, secs float64) *float64 {
	if prev == nil || cur == nil || secs <= 0 {
		return nil
	}
	r := float64(counterDiff(*prev, *cur)) / secs
	return &r
}

// watchRates turns two samples into the interval's report. Ports are
// matched by netdev; a port new in cur has totals but no rates yet.
func watchRates(prev, cur *watchSample) *watchReport {
	secs := cur.at.Sub(prev.at).Seconds()
	rep := &watchReport{SchemaVersion: SchemaVersion, Time: cur.at, IntervalS: secs, Ports: []watchPort{}}
	before := map[string]*portSample{}
	for i := range prev.ports {
		before[prev.ports[i].port.Netdev] = &prev.ports[i]
	}
	for i := range cur.ports {
		c := &cur.ports[i]
		p := before[c.port.Netdev]
		if p == nil || p.err != nil {
			p = &portSample{}
		}
		rep.Ports = append(rep.Ports, portRates(p, c, secs))
	}
	return rep
}

func portRates(p, c *portSample, secs float64) watchPort {
	w := watchPort{Netdev: c.port.Netdev, Bond: c.bond, Slaves: c.slaves, RDMADevice: c.port.RDMADevice, Port: c.port.PortNum, Link: c.link,
		Priorities: []watchPrio{}}
	if c.err != nil {
		w.Error = c.err.Error()
		return w
	}
	type key struct {
		prio int
		dir  string
	}
	prevPause := map[key]*verify.PauseCounter{}
	for i := range p.pause {
		prevPause[key{p.pause[i].Priority, p.pause[i].Direction}] = &p.pause[i]
	}
	prios := map[int]*watchPrio{}
	for _, pc := range c.pause {
		wp := pauseRate(prevPause[key{pc.Priority, pc.Direction}], pc, secs)
		if pc.Priority == verify.GlobalPause {
			if w.GlobalPause == nil {
				w.GlobalPause = &watchPausePair{}
			}
			setDir(&w.GlobalPause.RX, &w.GlobalPause.TX, pc.Direction, wp)
			continue
		}
		pr := prios[pc.Priority]
		if pr == nil {
			w.Priorities = append(w.Priorities, watchPrio{Priority: pc.Priority})
			pr = &w.Priorities[len(w.Priorities)-1]
			prios[pc.Priority] = pr
		}
		setDir(&pr.RX, &pr.TX, pc.Direction, wp)
	}
	// prios points into w.Priorities: it is complete now and no longer
	// grows, so the pointers stay valid.
	for prio, pr := range prios {
		pr.RXDiscardsPerS = perSecond(p.disc.Prio[prio], c.disc.Prio[prio], secs)
		pr.RXBufferDiscardsPerS = perSecond(p.disc.PrioBuffer[prio], c.disc.PrioBuffer[prio], secs)
	}
	w.CNPSentPerS = perSecond(p.cong.CNPSent, c.cong.CNPSent, secs)
	w.CNPHandledPerS = perSecond(p.cong.CNPHandled, c.cong.CNPHandled, secs)
	w.ECNMarkedPerS = perSecond(p.cong.ECNMarked, c.cong.ECNMarked, secs)
	w.RXDiscardsPerS = perSecond(p.disc.RX, c.disc.RX, secs)
	w.TXDiscardsPerS = perSecond(p.disc.TX, c.disc.TX, secs)
	w.StormWarningEvents, w.StormErrorEvents = c.storm.Warning, c.storm.Error
	var fresh uint64
	seen := false
	for _, ev := range [][2]*uint64{{p.storm.Warning, c.storm.Warning}, {p.storm.Error, c.storm.Error}} {
		if ev[0] != nil && ev[1] != nil {
			fresh += counterDiff(*ev[0], *ev[1])
			seen = true
		}
	}
	if seen {
		w.StormEventsNew = &fresh
	}
	return w
}

func setDir(rx, tx **watchPause, dir string, v *watchPause) {
	if dir == "rx" {
		*rx = v
	} else {
		*tx = v
	}
}

// pauseRate is one pause counter pair over the interval: frames/s and,
// with a duration counter, occupancy = duration delta (µs) / elapsed,
// capped at 100 % (a counter updated a little after the sample was taken
// can overshoot).
func pauseRate(prev *verify.PauseCounter, cur verify.PauseCounter, secs float64) *watchPause {
	w := &watchPause{Frames: cur.Frames}
	if prev == nil || secs <= 0 {
		return w
	}
	if cur.FramesName != "" && prev.FramesName == cur.FramesName {
		w.FramesPerS = perSecond(&prev.Frames, &cur.Frames, secs)
	}
	if cur.HasDuration && prev.HasDuration && prev.DurationName == cur.DurationName {
		pct := float64(counterDiff(prev.DurationUs, cur.DurationUs)) / (secs * 1e6) * 100
		pct = math.Min(pct, 100)
		w.PausePct = &pct
	}
	return w
}

// The text view. Two layouts: a table with one column per value, where
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
func watchLines(head watchHead, rep *watchReport, width int) []string {
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

// name is the port's name on screen: a slave of a bond as the guard
// names it, "bond0/ens1f0np0".
func portName(p watchPort) string {
	if p.Bond != "" {
		return verify.SlavePort(p.Bond, p.Netdev)
	}
	return p.Netdev
}

func widePort(p watchPort) []string {
	if p.Error != "" {
		return []string{wideRow(portName(p), p.Link, p.Error)}
	}
	out := []string{wideRow(portName(p), p.Link, "port", "", "", "", "",
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
	return out
}

func narrowPort(p watchPort) []string {
	if p.Error != "" {
		return []string{fmt.Sprintf("%s %s  %s", portName(p), p.Link, p.Error)}
	}
	out := []string{fmt.Sprintf("%s %s  cnp tx %s/s rx %s/s  ecn %s/s  disc %s/s  storm %s", portName(p), p.Link,
		fmtRate(p.CNPSentPerS), fmtRate(p.CNPHandledPerS), fmtRate(p.ECNMarkedPerS),
		fmtRate(sumRates(p.RXDiscardsPerS, p.TXDiscardsPerS)), fmtStorm(p))}
	row := func(name string, rx, tx *watchPause, disc string) string {
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
	return out
}

// prioDiscards is what the DISC/s column shows for a priority: buffer
// discards (the lossless failure: too little headroom) where the driver
// counts them, else the priority's receive discards.
func prioDiscards(pr watchPrio) *float64 {
	if pr.RXBufferDiscardsPerS != nil {
		return pr.RXBufferDiscardsPerS
	}
	return pr.RXDiscardsPerS
}

func pausePair(w *watchPause) [2]string {
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
func fmtStorm(p watchPort) string {
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

// watchLoop samples at each tick and shows each interval: on a terminal
// (tty set) redrawn in place, else as plain text snapshots or JSON lines.
type watchLoop struct {
	sample func() *watchSample
	// ticks: one sample each; closed, the loop ends (tests script it).
	ticks <-chan time.Time
	out   io.Writer
	json  bool
	once  bool
	head  watchHead
	tty   *watchTTY
}

func (l *watchLoop) run(ctx context.Context) error {
	var keys <-chan struct{}
	var winch chan os.Signal
	if l.tty != nil {
		// Own context: the key reader stops before run returns, whether
		// the loop ended by q, Ctrl-C or a closed tick channel.
		kctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		keys = l.tty.keys(kctx, &wg)
		winch = make(chan os.Signal, 1)
		signal.Notify(winch, unix.SIGWINCH)
		defer signal.Stop(winch)
		l.tty.draw(watchLines(l.head, nil, l.tty.width()))
	}
	prev := l.sample()
	var last *watchReport
	for {
		select {
		case <-ctx.Done():
			if l.once {
				return ctx.Err()
			}
			return nil
		case <-keys:
			return nil
		case <-winch:
			l.tty.resize()
			l.tty.draw(watchLines(l.head, last, l.tty.width()))
		case _, ok := <-l.ticks:
			if !ok {
				return nil
			}
			cur := l.sample()
			last = watchRates(prev, cur)
			prev = cur
			if err := l.show(last); err != nil {
				return err
			}
			if l.once {
				return nil
			}
		}
	}
}

func (l *watchLoop) show(rep *watchReport) error {
	switch {
	case l.json:
		// One compact object per line, so that a consumer can read the
		// stream line by line (jq -c, a log shipper).
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = l.out.Write(append(b, '\n'))
		return err
	case l.tty != nil:
		l.tty.draw(watchLines(l.head, rep, l.tty.width()))
		return nil
	}
	_, err := io.WriteString(l.out, strings.Join(watchLines(l.head, rep, 0), "\n")+"\n\n")
	return err
}

// watchTTY is the terminal watch draws on: the alternate screen (the
// shell's screen comes back untouched on exit), no cursor, and the
// keyboard in cbreak mode (keys arrive one by one without echo; ISIG stays
// on, so Ctrl-C is SIGINT, which cancels the command's context). restore
// undoes all of it.
type watchTTY struct {
	in, out *os.File
	saved   *unix.Termios // stdin's mode before; nil when stdin is no terminal

	mu   sync.Mutex
	w, h int
}

// Terminal control sequences (xterm; ECMA-48 for the CSI ones).
const (
	ansiAltScreen   = "\x1b[?1049h" // save the cursor, switch to the alternate screen
	ansiMainScreen  = "\x1b[?1049l" // back to the main screen, cursor restored
	ansiHideCursor  = "\x1b[?25l"
	ansiShowCursor  = "\x1b[?25h"
	ansiHome        = "\x1b[H"
	ansiClearEOL    = "\x1b[K"
	ansiClearBelow  = "\x1b[J"
	watchPollMillis = 100 // how soon the key reader notices the end
)

func openWatchTTY(in, out *os.File) (*watchTTY, error) {
	t := &watchTTY{in: in, out: out}
	if in != nil {
		if st, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS); err == nil {
			raw := *st
			raw.Lflag &^= unix.ICANON | unix.ECHO
			raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
			if err := unix.IoctlSetTermios(int(in.Fd()), unix.TCSETS, &raw); err != nil {
				return nil, fmt.Errorf("terminal mode: %w", err)
			}
			t.saved = st
		} else {
			t.in = nil // no keyboard: Ctrl-C still ends it (SIGINT)
		}
	}
	t.resize()
	_, err := io.WriteString(out, ansiAltScreen+ansiHideCursor)
	return t, err
}

// restore leaves the alternate screen, shows the cursor and puts the
// keyboard back in the mode it had (cooked, for a shell).
func (t *watchTTY) restore() {
	_, _ = io.WriteString(t.out, ansiShowCursor+ansiMainScreen)
	if t.saved != nil {
		_ = unix.IoctlSetTermios(int(t.in.Fd()), unix.TCSETS, t.saved)
	}
}

func (t *watchTTY) resize() {
	w, h := 80, 24
	if ws, err := unix.IoctlGetWinsize(int(t.out.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 && ws.Row > 0 {
		w, h = int(ws.Col), int(ws.Row)
	}
	t.mu.Lock()
	t.w, t.h = w, h
	t.mu.Unlock()
}

func (t *watchTTY) width() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w
}

// draw writes a frame in one write: from the top left, each line cut to
// the width and cleared to its end, the rest of the screen cleared. Lines
// beyond the height give way to a note saying how many are hidden; the
// last line gets no newline, so the screen never scrolls.
func (t *watchTTY) draw(lines []string) {
	t.mu.Lock()
	w, h := t.w, t.h
	t.mu.Unlock()
	if len(lines) > h {
		hidden := len(lines) - h + 1
		lines = append(lines[:h-1:h-1], fmt.Sprintf("... %d more lines: enlarge the window", hidden))
	}
	var b strings.Builder
	b.WriteString(ansiHome)
	for i, l := range lines {
		if len(l) > w {
			l = l[:w]
		}
		b.WriteString(l)
		b.WriteString(ansiClearEOL)
		if i < len(lines)-1 {
			b.WriteString("\r\n")
		}
	}
	b.WriteString(ansiClearBelow)
	_, _ = io.WriteString(t.out, b.String())
}

// keys reads the keyboard until ctx ends and closes the returned channel
// at q, Q or Ctrl-C (a byte only when ISIG is off). It polls, so that it
// notices the end within watchPollMillis and wg.Wait returns: a blocked
// read would outlive the loop.
func (t *watchTTY) keys(ctx context.Context, wg *sync.WaitGroup) <-chan struct{} {
	quit := make(chan struct{})
	if t.in == nil {
		return quit
	}
	fd := int(t.in.Fd())
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 64)
		for ctx.Err() == nil {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, watchPollMillis)
			if errors.Is(err, unix.EINTR) || n == 0 {
				continue
			}
			if err != nil || fds[0].Revents&unix.POLLIN == 0 {
				return // stdin closed or gone: keep watching, Ctrl-C still works
			}
			k, err := unix.Read(fd, buf)
			if err != nil || k <= 0 {
				return
			}
			for _, c := range buf[:k] {
				if c == 'q' || c == 'Q' || c == 3 {
					close(quit)
					return
				}
			}
		}
	}()
	return quit
}
