// Package agent is rocectl's daemon: it keeps a host on its profile. It
// checks for drift on a timer and on link and address events, logs drift
// when the drifted set changes (a pure DriftTracker decides), applies the
// profile in enforce mode through apply.Run, honours --confirm deadlines,
// serves Prometheus metrics and talks to systemd (READY, STATUS,
// watchdog). The `rocectl agent` command (package cli) starts it.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
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
	// Interval is the time between drift checks; MinApplyInterval the
	// least time between two applies (a PFC change flaps mlx5 links).
	Interval         time.Duration
	MinApplyInterval time.Duration
	// MetricsAddr, when set, serves /metrics there.
	MetricsAddr string
	// Once runs one check (and apply), then returns.
	Once bool
	// Host is the host to keep. ReadOnly (a snapshot) leaves out what
	// writes or watches: recovery, link events, confirm deadlines.
	Host     *host.Host
	ReadOnly bool
	Store    apply.Store
	Log      *slog.Logger
}

// state is what the loop shares with the metrics endpoint.
type state struct {
	mu          sync.Mutex
	profile     string
	lastCheck   time.Time
	lastOK      bool
	drift       int
	unsupported int
	applies     map[string]int
	ports       []string
}

// loop is one running daemon.
type loop struct {
	cfg       Config
	log       *slog.Logger
	st        *state
	drift     DriftTracker
	lastApply time.Time
	// profileHash is the last profile whose warnings were logged.
	profileHash string
	// noticed are the expired confirm windows an audit-mode agent has
	// reported (it reverts nothing, and says so once).
	noticed map[string]bool
}

// Run keeps the host on its profile until ctx ends (or after one check
// with Once). It returns an error only when it cannot start: the profile
// does not load, or the metrics address cannot be listened on.
func Run(ctx context.Context, cfg Config) error {
	l := &loop{cfg: cfg, log: cfg.Log, st: &state{applies: map[string]int{}}, noticed: map[string]bool{}}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	p, err := l.loadProfile()
	if err != nil {
		return err
	}
	l.st.profile = p.Name
	// Goroutines started here (watchdog, link events) end with Run.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h, store := cfg.Host, cfg.Store
	if !cfg.ReadOnly {
		if err := withLock(store, "agent start", func() error { return l.recover(false) }); err != nil {
			l.log.Error("recovering earlier applies", "err", err)
		}
	}
	if cfg.MetricsAddr != "" {
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		srv := &http.Server{Handler: metricsHandler(h, l.st), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
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
		watchHost(ctx, l.log, poke)
	}
	// Watchdog pings come from their own goroutine: an enforce-mode apply
	// blocks the loop for its whole soak window (the profile's, up to
	// hours), which is work, not a hang.
	if wd, _ := daemon.SdWatchdogEnabled(false); wd > 0 {
		go func() {
			t := time.NewTicker(wd / 2)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
				}
			}
		}()
	}
	l.check(ctx, "start")
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)
	if cfg.Once {
		return nil
	}
	ticker := time.NewTicker(cfg.Interval)
	defer ticker.Stop()
	deadlines := time.NewTicker(time.Second)
	defer deadlines.Stop()
	for {
		select {
		case <-ctx.Done():
			_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
			return nil
		case <-ticker.C:
			l.check(ctx, "interval")
		case why := <-trigger:
			// Let a burst of events (driver reload) settle first.
			select {
			case <-ctx.Done():
				continue
			case <-time.After(2 * time.Second):
			}
			l.check(ctx, why)
		case <-deadlines.C:
			l.revertExpired()
		}
	}
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
// set changed, and applies in enforce mode.
func (l *loop) check(ctx context.Context, why string) {
	l.log.Debug("drift check", "why", why)
	p, err := l.loadProfile()
	var pr *apply.Prepared
	if err == nil {
		pr = apply.Prepare(l.cfg.Host, p, false)
	}
	st := l.st
	st.mu.Lock()
	st.lastCheck, st.lastOK = time.Now(), err == nil
	if err == nil {
		st.drift, st.unsupported = len(pr.Plan.Changes), len(pr.Plan.Unsupported)
		st.ports = st.ports[:0]
		for _, dp := range pr.Desired.Ports {
			st.ports = append(st.ports, dp.Port.Netdev)
		}
	}
	st.mu.Unlock()
	if err != nil {
		// The next good check reports the drift afresh.
		l.drift.Reset()
		l.log.Error("drift check failed", "err", err)
		return
	}
	keys := pr.DriftedKeys()
	change := l.drift.Observe(keys)
	switch change {
	case DriftCleared:
		l.log.Info("host matches profile", "profile", p.Name, "in_sync", pr.Plan.InSync, "unsupported", len(pr.Plan.Unsupported))
	case DriftChanged:
		l.log.Warn("drift", "profile", p.Name, "settings", len(keys), "keys", strings.Join(keys, " "))
	default:
		l.log.Debug("drift unchanged", "profile", p.Name, "settings", len(keys))
	}
	if len(keys) == 0 {
		_, _ = daemon.SdNotify(false, "STATUS=in sync with "+p.Name)
		return
	}
	_, _ = daemon.SdNotify(false, fmt.Sprintf("STATUS=%d setting(s) drifted from %s", len(keys), p.Name))
	if !l.cfg.Enforce {
		return
	}
	if !l.lastApply.IsZero() && time.Since(l.lastApply) < l.cfg.MinApplyInterval {
		level := slog.LevelInfo
		if change == DriftSame {
			level = slog.LevelDebug
		}
		l.log.Log(ctx, level, "drift: next apply allowed later", "at", l.lastApply.Add(l.cfg.MinApplyInterval).Format(time.RFC3339))
		return
	}
	l.lastApply = time.Now()
	result := l.apply(ctx)
	st.mu.Lock()
	st.applies[result]++
	st.mu.Unlock()
}

// apply runs the profile's change as `rocectl apply` does (lock, recovery,
// a fresh plan, apply.Run) and logs one line with its result; it returns
// the metrics label of that result: applied, failed or rolled_back.
func (l *loop) apply(ctx context.Context) string {
	lock, err := l.cfg.Store.Acquire("apply -p " + l.cfg.Profile)
	if err != nil {
		l.log.Error("apply", "result", "failed", "err", err)
		return "failed"
	}
	defer lock.Release()
	if err := l.recover(true); err != nil {
		l.log.Error("apply", "result", "failed", "err", err)
		return "failed"
	}
	p, err := l.loadProfile()
	if err != nil {
		l.log.Error("apply", "result", "failed", "err", err)
		return "failed"
	}
	pr := apply.Prepare(l.cfg.Host, p, false)
	if !pr.Plan.Changed() {
		l.log.Info("apply", "result", "applied", "changes", 0, "note", "the host matched the profile again before the apply")
		return "applied"
	}
	res, err := apply.Run(ctx, pr, apply.RunOptions{Store: l.cfg.Store, Command: "agent apply", Log: l.log})
	if err != nil {
		l.log.Error("apply", "result", "failed", "profile", p.Name, "changes", len(pr.Plan.Changes), "err", err)
		return "failed"
	}
	result, level := "applied", slog.LevelInfo
	switch {
	case res.Outcome == apply.Failed || res.RollbackErr != nil:
		result, level = "failed", slog.LevelError
	case res.Outcome == apply.RolledBack:
		result, level = "rolled_back", slog.LevelError
	}
	attrs := []any{"result", result, "profile", p.Name, "journal", res.JournalID, "changes", res.Changes,
		"steps", res.Steps, "restored", len(res.Restored), "duration", res.Duration.Round(time.Millisecond).String()}
	if errs := res.Errors(); len(errs) > 0 {
		attrs = append(attrs, "err", strings.Join(errs, "; "))
	}
	l.log.Log(ctx, level, "apply", attrs...)
	return result
}

// recover restores what an earlier rocectl left unfinished (and expired
// confirm windows); with blockPending an open confirm window is an error.
func (l *loop) recover(blockPending bool) error {
	done, err := apply.Recover(l.cfg.Host, l.cfg.Store, !blockPending, time.Now())
	for _, r := range done {
		if r.Err == nil {
			l.log.Warn("restored an earlier apply", "journal", r.Journal.ID, "profile", r.Journal.Profile,
				"state", r.State, "expired_confirm", r.Expired, "restored", len(r.Journal.Restored))
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
		err := withLock(l.cfg.Store, "agent confirm deadline", func() error {
			j, reverted, err := apply.RevertExpired(l.cfg.Host, l.cfg.Store, j.ID, time.Now())
			if reverted {
				l.log.Warn("reverted an unconfirmed apply", "journal", j.ID, "deadline", j.Deadline.Format(time.RFC3339), "restored", len(j.Restored))
			}
			return err
		})
		// A held lock is another rocectl at work: the next second retries.
		if err != nil && !errors.Is(err, apply.ErrLocked) {
			l.log.Error("confirm deadline", "journal", j.ID, "err", err)
		}
	}
}

func withLock(store apply.Store, who string, fn func() error) error {
	lock, err := store.Acquire(who)
	if err != nil {
		return err
	}
	defer lock.Release()
	return fn()
}

// watchHost pokes the loop when a netdev appears, changes MTU or state, or
// gets an address (a new RoCE v2 GID).
func watchHost(ctx context.Context, log *slog.Logger, poke func(string)) {
	links, err := nic.WatchLinks(ctx, log, nic.WatchOptions{})
	if err != nil {
		log.Warn("no link events; relying on the interval", "err", err)
	}
	addrs, err := nic.WatchAddrs(ctx, log, nic.WatchOptions{})
	if err != nil {
		log.Warn("no address events; relying on the interval", "err", err)
	}
	go func() {
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
	}()
}

// metricsHandler serves the Prometheus text format by hand: a handful of
// gauges and counters do not need a client library.
func metricsHandler(h *host.Host, st *state) http.Handler {
	var statsMu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		st.mu.Lock()
		prof := st.profile
		fmt.Fprintf(w, "# HELP rocectl_drift_settings Settings that differ from the profile at the last check.\n# TYPE rocectl_drift_settings gauge\nrocectl_drift_settings{profile=%q} %d\n", prof, st.drift)
		fmt.Fprintf(w, "# HELP rocectl_unsupported_settings Profile settings this host cannot take.\n# TYPE rocectl_unsupported_settings gauge\nrocectl_unsupported_settings{profile=%q} %d\n", prof, st.unsupported)
		ok := 0
		if st.lastOK {
			ok = 1
		}
		fmt.Fprintf(w, "# HELP rocectl_last_check_success Whether the last drift check could read the host.\n# TYPE rocectl_last_check_success gauge\nrocectl_last_check_success %d\n", ok)
		fmt.Fprintf(w, "# HELP rocectl_last_check_timestamp_seconds Time of the last drift check.\n# TYPE rocectl_last_check_timestamp_seconds gauge\nrocectl_last_check_timestamp_seconds %d\n", st.lastCheck.Unix())
		fmt.Fprintf(w, "# HELP rocectl_applies_total Applies by the agent, by result.\n# TYPE rocectl_applies_total counter\n")
		for _, res := range []string{"applied", "failed", "rolled_back"} {
			fmt.Fprintf(w, "rocectl_applies_total{result=%q} %d\n", res, st.applies[res])
		}
		ports := append([]string(nil), st.ports...)
		st.mu.Unlock()

		statsMu.Lock()
		defer statsMu.Unlock()
		fmt.Fprintf(w, "# HELP rdma_roce_pfc_pause_frames_total PFC pause frames per priority.\n# TYPE rdma_roce_pfc_pause_frames_total counter\n")
		var dur, storms []string
		for _, nd := range ports {
			stats, err := h.K.Stats(nd)
			if err != nil {
				continue
			}
			for _, name := range sortedStatNames(stats) {
				var dir string
				var prio int
				if n, _ := fmt.Sscanf(name, "%2s_prio%d_pause", &dir, &prio); n == 2 && (dir == "rx" || dir == "tx") {
					lbl := fmt.Sprintf("{netdev=%q,direction=%q,priority=\"%d\"}", nd, dir, prio)
					switch {
					case name == fmt.Sprintf("%s_prio%d_pause", dir, prio):
						fmt.Fprintf(w, "rdma_roce_pfc_pause_frames_total%s %d\n", lbl, stats[name])
					case name == fmt.Sprintf("%s_prio%d_pause_duration", dir, prio):
						dur = append(dur, fmt.Sprintf("rdma_roce_pfc_pause_duration_total%s %d", lbl, stats[name]))
					}
				}
				if sev, ok := strings.CutPrefix(name, "tx_pause_storm_"); ok {
					storms = append(storms, fmt.Sprintf("rdma_netdev_pause_storm_events_total{netdev=%q,severity=%q} %d", nd, strings.TrimSuffix(sev, "_events"), stats[name]))
				}
			}
		}
		fmt.Fprintf(w, "# HELP rdma_roce_pfc_pause_duration_total Time paused per priority, microseconds.\n# TYPE rdma_roce_pfc_pause_duration_total counter\n%s", lines(dur))
		fmt.Fprintf(w, "# HELP rdma_netdev_pause_storm_events_total NIC pause-storm watchdog events.\n# TYPE rdma_netdev_pause_storm_events_total counter\n%s", lines(storms))
	})
}

func lines(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return strings.Join(ss, "\n") + "\n"
}

func sortedStatNames(m map[string]uint64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
