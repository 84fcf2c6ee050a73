package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/peer"
	"github.com/rocectl/rocectl/policy"
)

// chainProblems are the QoS chain's disagreements: the host's facts
// (host-wide: its NCCL classes, managed or in an unmanaged
// /etc/nccl.conf; per matched port: what audit read for the settings the
// profile manages) and, when a recent peer result holds the switch's
// DCBX, the switch's. Each names both sides and the arithmetic
// (policy.CheckChain). Empty when the profile states no intent (no data
// class, no placed TOS) or nothing disagrees.
func chainProblems(pl *apply.Prepared, switchRep *peer.Report) (policy.Intent, []doc.ChainProblem) {
	in, ok := pl.Profile.Intent()
	if !ok || pl.Observed == nil {
		return in, nil
	}
	var out []doc.ChainProblem
	host, ports := policy.HostViews(pl.Desired, pl.Observed)
	conf := confFacts(pl)
	host.TOS = append(host.TOS, conf.TOS...)
	if conf.FifoTC != nil {
		host.FifoTC = conf.FifoTC
	}
	if conf.SL != nil {
		host.SL = conf.SL
	}
	for _, pr := range policy.CheckChain(in, "host", host) {
		out = append(out, doc.ChainProblem{Side: "host", Key: pr.Key, Message: pr.Msg})
	}
	for _, pv := range ports {
		for _, pr := range policy.CheckChain(in, "host", pv.View) {
			out = append(out, doc.ChainProblem{Side: "host", Port: pv.Port, Key: pr.Key, Message: pr.Msg})
		}
	}
	if switchRep != nil {
		for _, r := range switchRep.Ports {
			v, ok := switchView(r)
			if !ok {
				continue
			}
			for _, pr := range policy.CheckChain(in, "switch", v) {
				src := r.Source
				if src == "" {
					src = peer.SourceLLDP
				}
				out = append(out, doc.ChainProblem{Side: "switch", Port: r.Netdev, Switch: r.Switch(), Source: src, Key: pr.Key, Message: pr.Msg})
			}
		}
	}
	return in, out
}

// chainLine is one problem as the text section prints it.
func chainLine(c doc.ChainProblem) string {
	switch {
	case c.Side == "switch":
		return fmt.Sprintf("switch %s (%s, %s): %s: %s", c.Switch, c.Port, peer.Result{Source: c.Source}.SourceText(), c.Key, c.Message)
	case c.Port == "":
		return fmt.Sprintf("host: %s: %s", c.Key, c.Message)
	}
	return fmt.Sprintf("host %s: %s: %s", c.Port, c.Key, c.Message)
}

// chainLines is chainProblems as the text section's lines.
func chainLines(pl *apply.Prepared, switchRep *peer.Report) (policy.Intent, []string) {
	in, probs := chainProblems(pl, switchRep)
	lines := make([]string, len(probs))
	for i, c := range probs {
		lines[i] = chainLine(c)
	}
	return in, lines
}

// recentPeer is the last peer result, when recent and the host is live
// (a snapshot has no switch).
func (env *Env) recentPeer() *peer.Report {
	if env.Snapshot != "" {
		return nil
	}
	if r, err := peer.ReadState(env.StateDir); err == nil && r != nil && time.Since(r.CheckedAt) <= peerRecent {
		return r
	}
	return nil
}

// switchView is what the switch announces in DCBX, as a chain view: its
// PFC enable set and, in IEEE DCBX, its DSCP application entries (CEE has
// no DSCP selector; a DSCP announced on several priorities is left out,
// the peer check reports it).
func switchView(r peer.Result) (policy.View, bool) {
	var v policy.View
	if en, ok := r.PFCEnable(); ok {
		s := policy.PrioSet(en)
		v.PFC = &s
	}
	if f := r.Frame; f != nil && f.DCBX() == "ieee" && f.IEEE != nil {
		m := map[int]int{}
		twice := map[int]bool{}
		for _, a := range f.IEEE.App {
			if a.Selector != lldp.SelDSCP {
				continue
			}
			d := int(a.Protocol)
			if p, seen := m[d]; seen && p != int(a.Priority) {
				twice[d] = true
			}
			m[d] = int(a.Priority)
		}
		for d := range twice {
			delete(m, d)
		}
		if len(m) > 0 {
			v.Map = m
		}
	}
	return v, v.PFC != nil || v.Map != nil
}

// renderChainSection is audit's "QoS chain" section, printed only when
// something along the chain disagrees with the profile's intent.
func (env *Env) renderChainSection(w io.Writer, pl *apply.Prepared) {
	in, lines := chainLines(pl, env.recentPeer())
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nQoS chain (%s):\n", in)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}

// ncclConfPath is the NCCL config file every NCCL process on the host
// reads last (src/misc/param.cc: $NCCL_CONF_FILE or ~/.nccl.conf, then
// /etc/nccl.conf).
const ncclConfPath = "/etc/nccl.conf"

// confFacts are the NCCL classes /etc/nccl.conf sets on a host whose
// profile does not manage that file (a profile that does has them
// observed as settings): what every NCCL job there marks its traffic
// with, unless its environment says otherwise. A file that is absent or
// cannot be read has nothing to judge.
func confFacts(pl *apply.Prepared) policy.View {
	var v policy.View
	if pl.Host == nil || pl.Profile.NCCL.Write != nil && *pl.Profile.NCCL.Write == ncclConfPath {
		return v
	}
	data, _, exists, err := nccl.ReadConf(pl.Host.FS, ncclConfPath)
	if err != nil || !exists {
		return v
	}
	for _, cv := range nccl.ParseConf(data) {
		n, err := strconv.Atoi(cv.Value)
		if err != nil {
			continue
		}
		v.AddNCCL(cv.Name, policy.Fact{Key: ncclConfPath + " " + cv.Name, Value: n})
	}
	return v
}
