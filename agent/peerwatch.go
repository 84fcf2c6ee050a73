package agent

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/peer"
	"github.com/rocectl/rocectl/policy"
)

// peerWatch is the daemon's passive LLDP listener: one socket per matched
// port, blocked in recv (a BPF filter passes only incoming LLDP), judging
// every frame the switch sends against the profile. Where the port's
// driver reports the switch's DCBX through dcbnl (pollDriver, at each
// check interval), that is what the port is judged by and its LLDP frames
// are not recorded: the driver's view is what the NIC negotiated, and one
// source per port keeps the verdict from flapping between two. It keeps
// the last verdict per port for /metrics and writes them to the state dir
// for audit.
type peerWatch struct {
	expect   lldp.Expect
	profile  string
	host     string // this machine's hostname, for the fleet report
	dir      string // state dir; "" writes nothing
	log      *slog.Logger
	onResult func(peer.Result) // tests: called after each verdict

	mu      sync.Mutex
	results map[string]peer.Result
	// byDriver marks the ports whose driver reported a peer at the last
	// poll.
	byDriver map[string]bool
}

var (
	descPeerConsistent = prometheus.NewDesc("rocectl_peer_consistent",
		"1 when the switch's DCBX (heard in LLDP, or reported by the driver through dcbnl) agrees with the profile, 0 on a mismatch; absent until it was known.", []string{"device"}, nil)
	descPeerPFC = prometheus.NewDesc("rocectl_peer_pfc_enabled_bitmap",
		"The PFC enable bitmap the switch announces (bit p = priority p).", []string{"device"}, nil)
	descPeerHeard = prometheus.NewDesc("rocectl_peer_last_frame_timestamp_seconds",
		"When the last LLDP frame of the switch was heard on the port.", []string{"device"}, nil)
)

func newPeerWatch(expect lldp.Expect, profile, dir string, log *slog.Logger) *peerWatch {
	host, _ := os.Hostname()
	return &peerWatch{expect: expect, profile: profile, host: host, dir: dir, log: log, results: map[string]peer.Result{}, byDriver: map[string]bool{}}
}

// pollDriver reads each port's DCB state and records the verdict on the
// switch's DCBX its driver reports. A port whose driver stops reporting one
// (link down, firmware renegotiating) turns unknown until LLDP or the
// driver tells again.
func (w *peerWatch) pollDriver(k nic.Kernel, netdevs []string) {
	for _, nd := range netdevs {
		st, err := k.DCB(nd)
		if err != nil {
			w.log.Debug("switch peer: no DCB state", "device", nd, "err", err)
			continue
		}
		di, _ := k.DriverInfo(nd) // best effort: names the driver's quirks
		r := peer.Result{Netdev: nd, Driver: di.Driver}
		ok, why := peer.JudgeDriver(&r, st, w.expect)
		w.mu.Lock()
		was := w.byDriver[nd]
		w.byDriver[nd] = ok
		w.mu.Unlock()
		switch {
		case ok:
			w.record(r)
		case was:
			if why == "" {
				why = "the driver no longer reports the switch's DCBX"
			}
			w.record(peer.Result{Netdev: nd, Driver: di.Driver, Source: peer.SourceDCBNL, Verdict: peer.Unknown, Reason: why})
		}
	}
}

func (w *peerWatch) usesDriver(nd string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byDriver[nd]
}

// start listens on every netdev until ctx ends; the goroutines report to wg.
// A port whose socket cannot be opened is logged and left out.
func (w *peerWatch) start(ctx context.Context, wg *sync.WaitGroup, netdevs []string) {
	for _, nd := range netdevs {
		l, err := lldp.Listen(nd)
		if err != nil {
			w.log.Warn("switch peer: cannot listen for LLDP", "device", nd, "err", err)
			continue
		}
		stop := context.AfterFunc(ctx, func() { l.Close() })
		wg.Go(func() {
			defer stop()
			defer l.Close()
			for {
				rec, err := l.Read(time.Time{})
				if err != nil {
					// Shutdown closes the socket under the Read: that
					// is the watch's normal end, not a failure.
					if errors.Is(err, os.ErrClosed) || ctx.Err() != nil {
						w.log.Debug("switch peer: LLDP listener closed", "device", nd)
					} else {
						w.log.Warn("switch peer: LLDP listener stopped", "device", nd, "err", err)
					}
					return
				}
				if rec.Err != nil {
					w.log.Debug("switch peer: malformed LLDP frame", "device", nd, "err", rec.Err)
					continue
				}
				if w.usesDriver(nd) {
					w.log.Debug("switch peer: LLDP frame not recorded: the driver reports the switch's DCBX", "device", nd)
					continue
				}
				r := peer.Result{Netdev: nd}
				peer.Judge(&r, rec, w.expect)
				w.record(r)
			}
		})
	}
}

func (w *peerWatch) record(r peer.Result) {
	w.mu.Lock()
	prev, seen := w.results[r.Netdev]
	w.results[r.Netdev] = r
	rep := &peer.Report{SchemaVersion: 1, Profile: w.profile, Host: w.host, CheckedAt: time.Now().UTC()}
	for _, x := range w.results {
		rep.Ports = append(rep.Ports, x)
	}
	w.mu.Unlock()
	sort.Slice(rep.Ports, func(i, j int) bool { return rep.Ports[i].Netdev < rep.Ports[j].Netdev })
	if !seen || prev.Verdict != r.Verdict {
		w.log.Info("switch peer", "device", r.Netdev, "switch", r.Switch(), "source", r.SourceText(), "verdict", r.Verdict, "mismatches", len(r.Mismatches))
	}
	if w.dir != "" {
		if err := peer.WriteState(w.dir, rep); err != nil {
			w.log.Debug("switch peer: result not stored", "err", err)
		}
	}
	if w.onResult != nil {
		w.onResult(r)
	}
}

func (w *peerWatch) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPeerConsistent
	ch <- descPeerPFC
	ch <- descPeerHeard
}

func (w *peerWatch) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for nd, r := range w.results {
		if r.HeardAt != nil {
			ch <- prometheus.MustNewConstMetric(descPeerHeard, prometheus.GaugeValue, float64(r.HeardAt.UnixNano())/1e9, nd)
		}
		if r.Verdict == peer.Consistent || r.Verdict == peer.Mismatch {
			v := 0.0
			if r.Verdict == peer.Consistent {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descPeerConsistent, prometheus.GaugeValue, v, nd)
		}
		if en, ok := r.PFCEnable(); ok {
			ch <- prometheus.MustNewConstMetric(descPeerPFC, prometheus.GaugeValue, float64(en), nd)
		}
	}
}

// matchedNetdevs lists the netdevs of the ports p matches on h.
func matchedNetdevs(h *host.Host, p *policy.Profile) []string {
	d := policy.Resolve(p, h.Ports(h.Discover(), false))
	var out []string
	for _, dp := range d.Ports {
		out = append(out, dp.Port.Netdev)
	}
	return out
}
