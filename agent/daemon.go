package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
)

type agentFlags struct {
	profile     string
	mode        string
	interval    time.Duration
	metricsAddr string
	minGap      time.Duration
	once        bool
}

func newAgentCmd(env *Env) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent -p PROFILE",
		Short: "Keep the host on its profile: drift checks on a timer and on link events, metrics, sd_notify",
		Long: `agent checks the host against the profile every --interval and whenever a RoCE
netdev or its addresses change (a driver reload forgets DCB APP entries, ECN
and rdma_cm settings). In audit mode it reports drift (log, metrics); in
enforce mode it applies the profile with the same journal, read-back, guard
and rollback as apply, at most once per --min-apply-interval (a PFC change
flaps mlx5 links). At start it restores any apply a crash left unfinished and
reverts unconfirmed changes whose --confirm deadline has passed, and it
keeps honouring such deadlines. Under systemd it reports READY=1, STATUS= and
watchdog pings.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.mode != "enforce" && f.mode != "audit" {
				return fmt.Errorf("--mode must be enforce or audit, not %q", f.mode)
			}
			if env.Snapshot != "" && f.mode == "enforce" {
				return errors.New("a snapshot is read-only: use --mode audit")
			}
			return env.runAgent(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.profile, "profile", "p", "", "profile file (required)")
	fl.StringVar(&f.mode, "mode", "audit", "enforce (apply on drift) or audit (report only)")
	fl.DurationVar(&f.interval, "interval", 5*time.Minute, "time between drift checks")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address, e.g. 127.0.0.1:9469")
	fl.DurationVar(&f.minGap, "min-apply-interval", 10*time.Minute, "enforce mode: at most one apply per this interval")
	fl.BoolVar(&f.once, "once", false, "run one check (and apply in enforce mode), then exit")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// agentState is what the loop shares with the metrics endpoint.
type agentState struct {
	mu          sync.Mutex
	profile     string
	lastCheck   time.Time
	lastOK      bool
	drift       int
	unsupported int
	applies     map[string]int
	ports       []string
}

func (env *Env) runAgent(ctx context.Context, f agentFlags) error {
	p, _, err := env.loadProfile(f.profile)
	if err != nil {
		return err
	}
	h, done, err := env.host(ctx)
	if err != nil {
		return err
	}
	defer done()
	st := &agentState{profile: p.Name, applies: map[string]int{}}
	store := env.store()
	if env.Snapshot == "" {
		if err := env.withLock(store, "agent start", func() error { return env.recoverOpen(h, store, true) }); err != nil {
			env.Log.Error("recovering earlier applies", "err", err)
		}
	}
	if f.metricsAddr != "" {
		ln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		srv := &http.Server{Handler: env.metricsHandler(h, st), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		env.Log.Info("serving metrics", "addr", ln.Addr().String())
	}

	trigger := make(chan string, 1)
	poke := func(why string) {
		select {
		case trigger <- why:
		default:
		}
	}
	if env.Snapshot == "" && !f.once {
		env.watchHost(ctx, poke)
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
	var lastApply time.Time
	check := func(why string) {
		env.Log.Debug("drift check", "why", why)
		pl, err := env.makePlan(ctx, f.profile, h, false)
		st.mu.Lock()
		st.lastCheck, st.lastOK = time.Now(), err == nil
		if err == nil {
			st.drift, st.unsupported = len(pl.plan.Changes), len(pl.plan.Unsupported)
			st.ports = st.ports[:0]
			for _, dp := range pl.desired.Ports {
				st.ports = append(st.ports, dp.Port.Netdev)
			}
		}
		st.mu.Unlock()
		if err != nil {
			env.Log.Error("drift check failed", "err", err)
			return
		}
		if !pl.plan.Changed() {
			env.Log.Info("host matches profile", "profile", p.Name, "in_sync", pl.plan.InSync, "unsupported", len(pl.plan.Unsupported))
			_, _ = daemon.SdNotify(false, "STATUS=in sync with "+p.Name)
			return
		}
		var keys []string
		for _, c := range pl.plan.Changes {
			keys = append(keys, c.Key)
		}
		env.Log.Warn("drift", "profile", p.Name, "settings", len(keys), "keys", strings.Join(keys, " "))
		_, _ = daemon.SdNotify(false, fmt.Sprintf("STATUS=%d setting(s) drifted from %s", len(keys), p.Name))
		if f.mode != "enforce" {
			return
		}
		if !lastApply.IsZero() && time.Since(lastApply) < f.minGap {
			env.Log.Info("drift: next apply allowed later", "at", lastApply.Add(f.minGap).Format(time.RFC3339))
			return
		}
		lastApply = time.Now()
		err = env.runApply(ctx, applyFlags{profile: f.profile, output: "text", soak: -1})
		result := "applied"
		switch ExitCode(err) {
		case ExitError:
			result = "failed"
		case ExitRolledBack:
			result = "rolled_back"
		}
		st.mu.Lock()
		st.applies[result]++
		st.mu.Unlock()
		if err != nil {
			env.Log.Error("apply", "result", result, "err", ErrorMessage(err))
		}
	}
	check("start")
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)
	if f.once {
		return nil
	}
	ticker := time.NewTicker(f.interval)
	defer ticker.Stop()
	deadlines := time.NewTicker(time.Second)
	defer deadlines.Stop()
	for {
		select {
		case <-ctx.Done():
			_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
			return nil
		case <-ticker.C:
			check("interval")
		case why := <-trigger:
			// Let a burst of events (driver reload) settle first.
			time.Sleep(2 * time.Second)
			check(why)
		case <-deadlines.C:
			if env.Snapshot == "" {
				env.revertExpired(h, store)
			}
		}
	}
}

// revertExpired honours --confirm deadlines even when the applying process
// and its timer are gone.
func (env *Env) revertExpired(h *host.Host, store apply.Store) {
	open, err := store.Open()
	if err != nil {
		return
	}
	for _, j := range open {
		if j.State == apply.StateConfirmPending && j.Deadline != nil && time.Now().After(*j.Deadline) {
			_ = env.withLock(store, "agent confirm deadline", func() error {
				return env.rollbackIfExpired(h, store, []string{j.ID})
			})
		}
	}
}

func (env *Env) withLock(store apply.Store, who string, fn func() error) error {
	lock, err := store.Acquire(who)
	if err != nil {
		return err
	}
	defer lock.Release()
	return fn()
}

// watchHost pokes the loop when a netdev appears, changes MTU or state, or
// gets an address (a new RoCE v2 GID).
func (env *Env) watchHost(ctx context.Context, poke func(string)) {
	links, err := nic.WatchLinks(ctx, env.Log, nic.WatchOptions{})
	if err != nil {
		env.Log.Warn("no link events; relying on the interval", "err", err)
	}
	addrs, err := nic.WatchAddrs(ctx, env.Log, nic.WatchOptions{})
	if err != nil {
		env.Log.Warn("no address events; relying on the interval", "err", err)
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
func (env *Env) metricsHandler(h *host.Host, st *agentState) http.Handler {
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
