package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/peer"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/statedir"
	"github.com/rocectl/rocectl/verify"
)

// Config is what the daemon keeps, and how.
type Config struct {
	// Profile is the profile file, loaded again at every check (an edit
	// takes effect without a restart).
	Profile     string
	LoadOptions policy.LoadOptions
	// Enforce applies the profile on drift; otherwise drift is only
	// reported.
	Enforce bool
	// RequireMatch makes a check that finds no RoCE port the profile
	// matches (NICs gone, driver not loaded) a failed check, and Run fail
	// when the first one does (ErrNoMatch): not "in sync".
	RequireMatch bool
	// Interval is the time between drift checks; MinApplyInterval the
	// least time between two applies (a PFC change flaps mlx5 links).
	Interval         time.Duration
	MinApplyInterval time.Duration
	// MetricsAddr, when set, serves /metrics there; NIC counters are
	// then polled every CounterInterval (0: one second).
	MetricsAddr     string
	CounterInterval time.Duration
	// Version is rocectl's version, and Revision the VCS revision the
	// build was given (empty: what Go stamped), for rocectl_build_info.
	Version, Revision string
	// Once runs one check (and apply), then returns.
	Once bool
	// Host is the host to keep. ReadOnly (a snapshot) leaves out what
	// writes or watches: recovery, link events, confirm deadlines.
	Host     *host.Host
	ReadOnly bool
	Store    apply.Store
	Log      *slog.Logger
	// Notify sends one sd_notify(3) state (READY=1, STATUS=..., WATCHDOG=1);
	// nil sends it to $NOTIFY_SOCKET, and nowhere without one.
	Notify func(state string)
	// Watchdog is systemd's WatchdogSec: 0 takes it from $WATCHDOG_USEC
	// (none: no pings).
	Watchdog time.Duration
	// Probe, when set, keeps verbs probes going to its peers and serves
	// theirs (probe.go); nil: no probing.
	Probe *ProbeConfig
}

// state is what the loop shares with the metrics endpoint.
type state struct {
	mu          sync.Mutex
	profile     string
	lastCheck   time.Time
	lastOK      bool
	driftGroups []driftGroup
	unsupported int
	// fwPending counts, per netdev, the firmware settings whose next-boot
	// value holds the profile's and whose current value does not yet
	// (rocectl_firmware_pending_settings): a reset or reboot is due.
	fwPending map[string]int
	applies   map[string]int
	// lastApply is the last apply's result ("" before the first),
	// lastApplyAt when it ended.
	lastApply   string
	lastApplyAt time.Time
	// guard is "idle", "soaking" or "tripped" (rocectl_guard_state);
	// storms counts the guard's storms by netdev.
	guard  string
	storms map[string]int
	ports  []portRef
	// probePort is the port probes run on, the first the profile
	// matched at the last check (nil: none), with its traffic settings.
	probePort *port.Port
	traffic   verify.TrafficConfig
	// storm is every watched port's storm state (its own lock).
	storm *storms
}

// driftGroup is the drift of one setting kind on one port ("" device:
// host settings), and how many of its settings could not be compared.
type driftGroup struct {
	device, kind string
	n            int // settings that differ from the profile
	// read counts the settings whose host value was read (or found
	// unsupported): without one, the group has no drift to report.
	read int
	// notCaptured counts settings the source does not hold (a snapshot
	// imported from dumps), unreadable those whose read failed.
	notCaptured, unreadable int
}

// firmwarePending counts the plan's pending firmware settings per netdev
// (rocectl_firmware_pending_settings).
func firmwarePending(pr *apply.Prepared) map[string]int {
	out := map[string]int{}
	for _, pd := range pr.Plan.Pending {
		dev := ""
		if pd.Port != nil {
			dev = pd.Port.Netdev
		}
		out[dev]++
	}
	return out
}

// portRefs returns the ports of the last good check.
func (st *state) portRefs() []portRef {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.ports)
}

// driftGroups counts the plan's changes per port and setting kind, with a
// zero for every kind the profile sets and the host holds: an alert on
// rocectl_drift_settings > 0 then has a series to watch from the start.
// Settings whose value is unknown (not captured, or unreadable) are
// counted apart and never as in sync: a group none of whose settings was
// read has no drift series at all, only its unknown count.
func driftGroups(pr *apply.Prepared) []driftGroup {
	type key struct{ device, kind string }
	keyOf := func(s policy.Setting) key {
		k := key{kind: s.Kind.String()}
		if s.Port != nil {
			k.device = s.Port.Netdev
		}
		return k
	}
	groups := map[key]*driftGroup{}
	of := func(k key) *driftGroup {
		g := groups[k]
		if g == nil {
			g = &driftGroup{device: k.device, kind: k.kind}
			groups[k] = g
		}
		return g
	}
	byKey := map[string]key{}
	for _, s := range pr.Desired.All() {
		k := keyOf(s)
		byKey[s.Key] = k
		of(k).read++
	}
	// keyOfName finds the group of a plan entry by its key; an unknown
	// the profile did not set as such (NCCL variables that could not be
	// derived) belongs to the host's nccl kind.
	keyOfName := func(name string, p *port.Port) key {
		if k, ok := byKey[name]; ok {
			return k
		}
		k := key{kind: policy.KindNCCL.String()}
		if p != nil {
			k.device = p.Netdev
		}
		return k
	}
	for _, c := range pr.Plan.Changes {
		of(keyOf(c.Setting)).n++
	}
	for _, u := range pr.Plan.Unknown {
		g := of(keyOfName(u.Key, u.Port))
		g.notCaptured++
		if _, ok := byKey[u.Key]; ok {
			g.read--
		}
	}
	for _, e := range pr.Plan.Errors {
		g := of(keyOfName(e.Key, e.Port))
		g.unreadable++
		if _, ok := byKey[e.Key]; ok {
			g.read--
		}
	}
	out := make([]driftGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b driftGroup) int {
		return cmp.Or(cmp.Compare(a.device, b.device), cmp.Compare(a.kind, b.kind))
	})
	return out
}

// loop is one running daemon.
type loop struct {
	cfg       Config
	log       *slog.Logger
	notify    func(state string)
	wd        *watchdog
	st        *state
	drift     DriftTracker
	lastApply time.Time
	// profileHash is the last profile whose warnings were logged.
	profileHash string
	// noticed are the expired confirm windows an audit-mode agent has
	// reported (it reverts nothing, and says so once).
	noticed map[string]bool
}

// newLoop fills in the defaults of cfg.
func newLoop(cfg Config) *loop {
	l := &loop{cfg: cfg, log: cfg.Log, notify: cfg.Notify, st: &state{applies: map[string]int{}, storms: map[string]int{}}, noticed: map[string]bool{}}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.notify == nil {
		l.notify = func(state string) { _, _ = daemon.SdNotify(false, state) }
	}
	l.wd = &watchdog{every: cfg.Watchdog, notify: l.notify}
	if l.wd.every == 0 {
		l.wd.every, _ = daemon.SdWatchdogEnabled(false)
	}
	return l
}

// ErrNoMatch is a check under Config.RequireMatch that found no RoCE port
// the profile matches.
var ErrNoMatch = errors.New("no RoCE port matches the profile (--require-match)")

// Run keeps the host on its profile until ctx ends (or after one check
// with Once). It returns an error only when it cannot start: the profile
// does not load, the metrics address cannot be listened on, or, with
// RequireMatch, the first check matches no port (ErrNoMatch).
func Run(ctx context.Context, cfg Config) error {
	l := newLoop(cfg)
	p, err := l.loadProfile()
	if err != nil {
		return err
	}
	l.st.profile = p.Name
	l.st.storm = newStorms(p.Guard)
	// Goroutines started here end with Run: cancel stops them, and wg
	// (deferred first, so it waits last) joins those that report to it.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h, store := cfg.Host, cfg.Store
	if !cfg.ReadOnly {
		if err := withLock(store.Store, "agent start", func() error { return l.recover(false) }); err != nil {
			l.log.Error("recovering earlier applies", "err", err)
		}
	}
	var pw *peerWatch // the switch peer's DCBX, on the ports matched at start
	var peerPorts []string
	if !cfg.ReadOnly && !cfg.Once {
		pw = newPeerWatch(peer.Expect(p), p.Name, store.Dir, l.log)
		peerPorts = matchedNetdevs(h, p)
		pw.pollDriver(h.K, peerPorts) // before the listeners: a port the driver answers for ignores its frames
		pw.start(ctx, &wg, peerPorts)
	}
	var prb *prober
	if cfg.Probe != nil && !cfg.ReadOnly && !cfg.Once {
		prb = newProber(*cfg.Probe, l.log, l.probe, trafficGate(store.Store, "agent probe"))
	}
	var ctrs *counters
	if cfg.MetricsAddr != "" {
		ctrs = newCounters(h, l.log)
		ctrs.storm = l.st.storm
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			newCollector(l.st, ctrs, cfg.Version, cfg.Revision))
		if pw != nil {
			reg.MustRegister(pw)
		}
		if prb != nil {
			reg.MustRegister(prb)
		}
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(l.log.Handler(), slog.LevelError), ErrorHandling: promhttp.ContinueOnError}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		wg.Go(func() { _ = srv.Serve(ln) })
		defer srv.Close()
		l.log.Info("serving metrics", "addr", ln.Addr().String())
	}

	trigger := make(chan string, 1)
	poke := func(why string) {
		select {
		case trigger <- why:
		default:
		}
	}
	if !cfg.ReadOnly && !cfg.Once {
		watchHost(ctx, &wg, l.log, poke)
	}
	if err := l.check(ctx, "start"); errors.Is(err, ErrNoMatch) {
		return err
	}
	if ctrs != nil && !cfg.Once {
		// A first poll before READY, so that the first scrape has the
		// counters; then one every CounterInterval.
		ctrs.poll(l.st.portRefs(), time.Now())
		interval := cfg.CounterInterval
		if interval <= 0 {
			interval = counterDefaultInterval
		}
		wg.Go(func() { ctrs.run(ctx, interval, l.st.portRefs) })
	}
	if prb != nil {
		if err := l.startProbing(ctx, &wg, prb); err != nil {
			return err
		}
	}
	l.notify(daemon.SdNotifyReady)
	if cfg.Once {
		return nil
	}
	ticker := time.NewTicker(cfg.Interval)
	defer ticker.Stop()
	deadlines := time.NewTicker(time.Second)
	defer deadlines.Stop()
	// The loop pings the watchdog itself, at each wake-up, so a check that
	// hangs stops the pings; wdTick wakes it often enough when nothing else
	// does. Nothing in the loop blocks but a check (whose apply pings from
	// its soak): events settle on a timer of the select, not in a sleep.
	var wdTick <-chan time.Time
	if l.wd.every > 0 {
		t := time.NewTicker(l.wd.every / 2)
		defer t.Stop()
		wdTick = t.C
	}
	var settle <-chan time.Time // a check after a burst of events
	var settleWhy string
	for {
		l.wd.ping()
		select {
		case <-ctx.Done():
			l.notify(daemon.SdNotifyStopping)
			return nil
		case <-ticker.C:
			l.check(ctx, "interval")
			if pw != nil {
				pw.pollDriver(h.K, peerPorts)
			}
		case why := <-trigger:
			// Let a burst of events (driver reload) settle first; those
			// that come meanwhile are seen by the same check.
			if settle == nil {
				settle, settleWhy = time.After(2*time.Second), why
			}
		case <-settle:
			settle = nil
			l.check(ctx, settleWhy)
		case <-deadlines.C:
			l.revertExpired()
			l.st.storm.tick(time.Now())
		case <-wdTick:
		}
	}
}

// watchdog sends systemd's WATCHDOG=1 for the loop. Only the loop's
// goroutine pings: at each wake-up of the loop and, while the loop runs an
// enforce-mode apply, at each poll of the guard's soak (as its Progress),
// for the soak is work, not a hang (the profile's window, up to hours). So
// a check or an apply that stops making progress stops the pings and
// systemd restarts the agent. Pings closer together than a quarter of
// WatchdogSec are dropped: the loop wakes every second.
type watchdog struct {
	every  time.Duration // WatchdogSec; 0: no watchdog
	notify func(string)
	last   time.Time
}

func (w *watchdog) ping() {
	if w.every <= 0 {
		return
	}
	now := time.Now()
	if !w.last.IsZero() && now.Sub(w.last) < w.every/4 {
		return
	}
	w.last = now
	w.notify(daemon.SdNotifyWatchdog)
}

// Write takes the guard's progress line: one poll of the soak, one ping.
func (w *watchdog) Write(p []byte) (int, error) {
	w.ping()
	return len(p), nil
}

// loadProfile loads the profile and logs its warnings when it is new or
// was edited.
func (l *loop) loadProfile() (*policy.Profile, error) {
	p, err := policy.Load(l.cfg.Profile, l.cfg.LoadOptions)
	if err != nil {
		return nil, err
	}
	if p.Hash != l.profileHash {
		l.profileHash = p.Hash
		for _, w := range p.Warnings {
			l.log.Warn("profile", "warning", w.String())
		}
	}
	return p, nil
}

// check compares the host with the profile, logs drift when the drifted
// set changed, and applies in enforce mode. It returns why the check
// failed, if it did (the failure is logged and reported already).
func (l *loop) check(ctx context.Context, why string) error {
	l.log.Debug("drift check", "why", why)
	p, err := l.loadProfile()
	var pr *apply.Prepared
	if err == nil {
		pr = apply.Prepare(l.cfg.Host, p, false)
		if msg := pr.NoPortsMessage(); l.cfg.RequireMatch && msg != "" {
			err = fmt.Errorf("%w: %s", ErrNoMatch, msg)
		}
	}
	st := l.st
	st.mu.Lock()
	st.lastCheck, st.lastOK = time.Now(), err == nil
	if err == nil {
		st.driftGroups, st.unsupported = driftGroups(pr), len(pr.Plan.Unsupported)
		st.fwPending = firmwarePending(pr)
		st.ports = portRefsOf(pr.Desired.Ports)
		st.probePort, st.traffic = nil, apply.TrafficConfig(pr, l.log)
		if len(pr.Desired.Ports) > 0 {
			p := pr.Desired.Ports[0].Port
			st.probePort = &p
		}
	}
	st.mu.Unlock()
	if err != nil {
		// The next good check reports the drift afresh.
		l.drift.Reset()
		l.log.Error("drift check failed", "err", err)
		l.notify("STATUS=drift check failed: " + err.Error())
		return err
	}
	keys := pr.DriftedKeys()
	change := l.drift.Observe(keys)
	switch change {
	case DriftCleared:
		l.log.Info("host matches profile", "profile", p.Name, "in_sync", pr.Plan.InSync, "unsupported", len(pr.Plan.Unsupported),
			"firmware_pending", len(pr.Plan.Pending))
	case DriftChanged:
		l.log.Warn("drift", "profile", p.Name, "settings", len(keys), "keys", strings.Join(keys, " "))
	default:
		l.log.Debug("drift unchanged", "profile", p.Name, "settings", len(keys))
	}
	if len(keys) == 0 {
		if n := len(pr.Plan.Pending); n > 0 {
			// In sync for the next boot: the reset is the operator's.
			l.notify(fmt.Sprintf("STATUS=in sync with %s; %d firmware setting(s) pending a firmware reset or reboot", p.Name, n))
			return nil
		}
		l.notify("STATUS=in sync with " + p.Name)
		return nil
	}
	l.notify(fmt.Sprintf("STATUS=%d setting(s) drifted from %s", len(keys), p.Name))
	if !l.cfg.Enforce {
		return nil
	}
	// A port still stormed (the guard rolled back, or the poll sees one)
	// holds every apply until it is restored: applying now would bring
	// the storm back. A profile whose guard is off asked for no storm
	// reactions.
	if ports, until := st.storm.held(time.Now()); len(ports) > 0 && p.Guard.Enabled {
		l.log.Warn("drift: apply held while a port is stormed", "ports", strings.Join(ports, " "), "restore_at", until.Format(time.RFC3339))
		return nil
	}
	if !l.lastApply.IsZero() && time.Since(l.lastApply) < l.cfg.MinApplyInterval {
		level := slog.LevelInfo
		if change == DriftSame {
			level = slog.LevelDebug
		}
		l.log.Log(ctx, level, "drift: next apply allowed later", "at", l.lastApply.Add(l.cfg.MinApplyInterval).Format(time.RFC3339))
		return nil
	}
	l.lastApply = time.Now()
	result, storm := l.apply(ctx)
	st.mu.Lock()
	st.applies[result]++
	st.lastApply, st.lastApplyAt = result, time.Now()
	st.guard = "idle"
	if storm != nil {
		st.guard = "tripped"
		st.storms[storm.Port]++
	}
	st.mu.Unlock()
	if storm != nil {
		// Rolled back: the rollback stopped the port's PFC counters, so
		// the restore goes by the clock.
		st.storm.trip(storm, result == "rolled_back")
	}
	return nil
}

// setGuard records the guard's state for rocectl_guard_state.
func (st *state) setGuard(s string) {
	st.mu.Lock()
	st.guard = s
	st.mu.Unlock()
}

// apply runs the profile's change as `rocectl apply` does (lock, recovery,
// a fresh plan, apply.Run) and logs one line with its result; it returns
// the metrics label of that result (applied, failed or rolled_back) and the
// storm that tripped the guard, if one did.
func (l *loop) apply(ctx context.Context) (string, *verify.Storm) {
	lock, err := l.cfg.Store.Acquire("apply -p " + l.cfg.Profile)
	if err != nil {
		l.log.Error("apply", "result", "failed", "err", err)
		return "failed", nil
	}
	defer lock.Release()
	if err := l.recover(true); err != nil {
		l.log.Error("apply", "result", "failed", "err", err)
		return "failed", nil
	}
	p, err := l.loadProfile()
	if err != nil {
		l.log.Error("apply", "result", "failed", "err", err)
		return "failed", nil
	}
	pr := apply.Prepare(l.cfg.Host, p, false)
	if !pr.Plan.Changed() {
		l.log.Info("apply", "result", "applied", "changes", 0, "note", "the host matched the profile again before the apply")
		return "applied", nil
	}
	// Written and read back: verification and the guard's soak follow.
	soaking := func(*apply.Result) { l.st.setGuard("soaking") }
	// The soak's progress lines are the watchdog's pings (see watchdog).
	res, err := apply.Run(ctx, pr, apply.RunOptions{Store: l.cfg.Store, Command: "agent apply", Log: l.log,
		Applied: soaking, Progress: l.wd})
	if err != nil {
		l.log.Error("apply", "result", "failed", "profile", p.Name, "changes", len(pr.Plan.Changes), "err", err)
		return "failed", nil
	}
	result, level := "applied", slog.LevelInfo
	switch {
	case res.Outcome == apply.Failed || res.RollbackErr != nil:
		result, level = "failed", slog.LevelError
	case res.Outcome == apply.RolledBack:
		result, level = "rolled_back", slog.LevelError
	}
	attrs := []any{"result", result, "profile", p.Name, "journal", res.JournalID, "changes", res.Changes,
		"steps", res.Steps, "restored", len(res.Restored), "unchanged", len(res.Unchanged), "duration", res.Duration.Round(time.Millisecond).String()}
	if errs := res.Errors(); len(errs) > 0 {
		attrs = append(attrs, "err", strings.Join(errs, "; "))
	}
	l.log.Log(ctx, level, "apply", attrs...)
	return result, res.Storm
}

// recover restores what an earlier rocectl left unfinished (and expired
// confirm windows); with blockPending an open confirm window is an error.
func (l *loop) recover(blockPending bool) error {
	done, err := apply.Recover(l.cfg.Host, l.cfg.Store, !blockPending, time.Now())
	for _, r := range done {
		if r.Err == nil {
			l.log.Warn("restored an earlier apply", "journal", r.Journal.ID, "profile", r.Journal.Profile,
				"state", r.State, "expired_confirm", r.Expired, "restored", len(r.Journal.Restored), "unchanged", len(r.Journal.Unchanged))
		}
	}
	return err
}

// revertExpired honours --confirm deadlines even when the applying process
// and its timer are gone.
// In audit mode (read-only) it reverts nothing but says, once per apply,
// that the host holds changes about to be reverted.
func (l *loop) revertExpired() {
	js, err := apply.Expired(l.cfg.Store, time.Now())
	if err != nil {
		return
	}
	for _, j := range js {
		if l.cfg.ReadOnly {
			if !l.noticed[j.ID] {
				l.noticed[j.ID] = true
				l.log.Warn(apply.ExpiredNotice(j), "journal", j.ID, "deadline", j.Deadline.Format(time.RFC3339), "pending_revert", true)
			}
			continue
		}
		err := withLock(l.cfg.Store.Store, "agent confirm deadline", func() error {
			j, reverted, err := apply.RevertExpired(l.cfg.Host, l.cfg.Store, j.ID, time.Now())
			if reverted {
				l.log.Warn("reverted an unconfirmed apply", "journal", j.ID, "deadline", j.Deadline.Format(time.RFC3339), "restored", len(j.Restored), "unchanged", len(j.Unchanged))
			}
			return err
		})
		// A held lock is another rocectl at work: the next second retries.
		if err != nil && !errors.Is(err, statedir.ErrLocked) {
			l.log.Error("confirm deadline", "journal", j.ID, "err", err)
		}
	}
}

func withLock(store statedir.Store, who string, fn func() error) error {
	lock, err := store.Acquire(who)
	if err != nil {
		return err
	}
	defer lock.Release()
	return fn()
}

// watchHost pokes the loop when a netdev appears, changes MTU or state, or
// gets an address (a new RoCE v2 GID), until ctx ends. Its goroutine
// reports to wg; it ends once both watchers have closed their channels,
// which they do only after their own goroutines are gone.
func watchHost(ctx context.Context, wg *sync.WaitGroup, log *slog.Logger, poke func(string)) {
	links, err := nic.WatchLinks(ctx, log, nic.WatchOptions{})
	if err != nil {
		log.Warn("no link events; relying on the interval", "err", err)
	}
	addrs, err := nic.WatchAddrs(ctx, log, nic.WatchOptions{})
	if err != nil {
		log.Warn("no address events; relying on the interval", "err", err)
	}
	wg.Go(func() {
		for links != nil || addrs != nil {
			select {
			case ev, ok := <-links:
				if !ok {
					links = nil
					continue
				}
				poke(fmt.Sprintf("link %s %s", ev.Name, ev.Kind))
			case ev, ok := <-addrs:
				if !ok {
					addrs = nil
					continue
				}
				poke(fmt.Sprintf("address %s on %s %s", ev.Prefix, ev.Name, ev.Kind))
			}
		}
	})
}
