package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/peer"
)

// peerRecent is how old a stored peer result may be for audit to show it.
const peerRecent = 10 * time.Minute

func newPeerCmd(env *Env) *cobra.Command {
	var profile, output string
	var wait time.Duration
	var netdevs []string
	var require bool
	cmd := &cobra.Command{
		Use:   "peer -p PROFILE",
		Short: "Compare the switch's DCBX (from LLDP or the driver) with the profile (exit 0 consistent, 2 mismatch, 1 error or unknown)",
		Long: `peer compares the DCBX the link partner announces (IEEE 802.1Qaz
ETS/PFC/Application Priority, or CEE) with the profile: the PFC priorities,
the switch's willing bit, the DSCP → priority entries of the RoCE data and
CNP DSCPs, and the ETS class of each lossless priority.

Where the NIC firmware runs DCBX and the driver reports what the switch
announced through dcbnl (qede, cxgb4), that is read at once ("from the
driver's DCBX (dcbnl)"); what such a driver cannot tell (the PFC willing
bit, on some drivers DSCP entries) is listed as not checked. Every other
port listens for the partner's LLDP frames ("from LLDP") and returns as
soon as every port has heard its partner. A port that heard nothing within
--wait is "unknown", with the likely reason (a NIC whose firmware consumes
LLDP, a link down, LLDP off); one that heard only malformed frames says
how many, the last one's error and, when they were of more than one kind,
how many of each. It coexists with lldpd/lldpad: every packet
socket gets its own copy.

--netdev checks the named netdevs instead of the profile's matched RoCE
ports (repeatable), e.g. a port without an RDMA device.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if env.Snapshot != "" {
				return errors.New("peer listens on the live links; it cannot read a snapshot")
			}
			if wait <= 0 {
				return fmt.Errorf("--wait must be positive, not %s", wait)
			}
			p, err := env.LoadProfile(profile)
			if err != nil {
				return err
			}
			h, done, err := env.Host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			type port struct{ netdev, driver string }
			var ports []port
			if len(netdevs) > 0 {
				for _, n := range netdevs {
					di, _ := h.K.DriverInfo(n) // best effort: only the firmware check uses it
					ports = append(ports, port{n, di.Driver})
				}
			} else {
				pl := apply.Prepare(h, p, false)
				if why := pl.NoPortsReason(); why != "" {
					if require {
						return requireMatchError(why)
					}
					// Nothing to check: said, exit 0, as every command does.
					msg := strings.Replace(pl.NoPortsMessage(), "nothing to do", "nothing checked", 1)
					if output == "json" {
						return writeJSON(env.Stdout, &doc.Peer{SchemaVersion: 1, Profile: p.Name, Host: env.hostName(),
							CheckedAt: time.Now().UTC(), Ports: []doc.PeerResult{}, Message: msg})
					}
					fmt.Fprintln(env.Stdout, msg)
					return nil
				}
				for _, dp := range pl.Desired.Ports {
					ports = append(ports, port{dp.Port.Netdev, dp.Port.Driver})
				}
			}
			rep := &peer.Report{SchemaVersion: 1, Profile: p.Name, Host: env.hostName(), Ports: make([]peer.Result, len(ports))}
			e := peer.Expect(p)
			driverWhy := make([]string, len(ports))
			for i, pt := range ports {
				r := &rep.Ports[i]
				*r = peer.Result{Netdev: pt.netdev, Driver: pt.driver, FirmwareLLDP: peer.FirmwareLLDP(h.K, pt.netdev, pt.driver)}
				// The driver's view first: it answers at once, and where
				// the firmware takes the frames it is the only one.
				if st, err := h.K.DCB(pt.netdev); err == nil {
					_, driverWhy[i] = peer.JudgeDriver(r, st, e)
				}
			}
			peer.Listen(cmd.Context(), h.K, rep.Ports, driverWhy, e, time.Now().Add(wait), wait)
			rep.CheckedAt = time.Now().UTC()
			if err := peer.WriteState(env.StateDir, rep); err != nil {
				env.Log.Debug("peer result not stored for audit", "err", err)
			}
			if output == "json" {
				if err := writeJSON(env.Stdout, peerDoc(rep)); err != nil {
					return err
				}
			} else {
				renderPeerText(env.Stdout, rep)
			}
			return silent(peerExit(rep))
		},
	}
	cmd.Flags().StringVarP(&profile, "profile", "p", "", "profile file (required)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().DurationVar(&wait, "wait", 35*time.Second, "how long to listen for each port's partner (switches send LLDP every 30 s by default)")
	cmd.Flags().StringArrayVar(&netdevs, "netdev", nil, "check this netdev instead of the profile's matched ports (repeatable)")
	cmd.Flags().BoolVar(&require, "require-match", false, requireMatchUsage)
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// peerExit: 2 when any port mismatches, else 1 when any could not be
// checked (error or unknown: consistency was not shown), else 0.
func peerExit(rep *peer.Report) int {
	code := ExitOK
	for _, r := range rep.Ports {
		switch r.Verdict {
		case peer.Mismatch:
			return ExitDrift
		case peer.Unknown, peer.Error:
			code = ExitError
		}
	}
	return code
}

// renderPeerText prints one block per port; every mismatch is one line
// naming the port, the switch and its port ID, what each side says.
func renderPeerText(w io.Writer, rep *peer.Report) {
	n := map[string]int{}
	for _, r := range rep.Ports {
		n[r.Verdict]++
		src := r.SourceText()
		switch r.Verdict {
		case peer.Consistent:
			fmt.Fprintf(w, "  %s <-> %s: consistent (%s DCBX, %s)\n", r.Netdev, r.Switch(), strings.ToUpper(r.DCBX), src)
		case peer.Mismatch:
			fmt.Fprintf(w, "~ %s <-> %s: %d mismatch(es) (%s DCBX, %s)\n", r.Netdev, r.Switch(), len(r.Mismatches), strings.ToUpper(r.DCBX), src)
			for _, m := range r.Mismatches {
				fmt.Fprintf(w, "    %s <-> %s: %s: switch says %s, profile says %s (%s)\n", r.Netdev, r.Switch(), m.Key, m.Switch, m.Profile, src)
			}
		default:
			fmt.Fprintf(w, "? %s: %s: %s\n", r.Netdev, r.Verdict, r.Reason)
		}
		for _, u := range r.Unchecked {
			fmt.Fprintf(w, "    not checked: %s\n", u)
		}
		if r.FirmwareLLDP != "" && r.Verdict != peer.Unknown && r.Source != peer.SourceDCBNL {
			fmt.Fprintf(w, "    note: %s\n", r.FirmwareLLDP)
		}
	}
	fmt.Fprintf(w, "%d port(s): %d consistent, %d mismatch, %d unknown, %d error.\n", len(rep.Ports),
		n[peer.Consistent], n[peer.Mismatch], n[peer.Unknown], n[peer.Error])
}

// renderPeerSection is audit's "switch peer" section: the last peer
// result of `rocectl peer` or the agent, when recent.
func (env *Env) renderPeerSection(w io.Writer) {
	if env.Snapshot != "" {
		return
	}
	rep, err := peer.ReadState(env.StateDir)
	if err != nil || rep == nil || time.Since(rep.CheckedAt) > peerRecent {
		return
	}
	fmt.Fprintf(w, "\nSwitch peer (DCBX, checked %s ago):\n", time.Since(rep.CheckedAt).Round(time.Second))
	for _, r := range rep.Ports {
		age := ""
		if r.HeardAt != nil {
			age = fmt.Sprintf(", frame %s old", time.Since(*r.HeardAt).Round(time.Second))
		}
		from := ""
		if r.Verdict == peer.Consistent || r.Verdict == peer.Mismatch {
			from = " " + r.SourceText()
		}
		fmt.Fprintf(w, "  %s <-> %s: %s%s%s\n", r.Netdev, r.Switch(), r.Verdict, from, age)
		for _, m := range r.Mismatches {
			fmt.Fprintf(w, "    %s: switch says %s, profile says %s\n", m.Key, m.Switch, m.Profile)
		}
		if r.Reason != "" {
			fmt.Fprintf(w, "    %s\n", r.Reason)
		}
	}
}

// peerDoc is the peer report as its JSON document (doc.Peer) carries it:
// the frame and the driver's peer encoded as lldp and peer encode them.
func peerDoc(rep *peer.Report) *doc.Peer {
	d := &doc.Peer{SchemaVersion: rep.SchemaVersion, Profile: rep.Profile, Host: rep.Host, CheckedAt: rep.CheckedAt}
	if rep.Ports != nil {
		d.Ports = make([]doc.PeerResult, len(rep.Ports))
	}
	for i, r := range rep.Ports {
		p := doc.PeerResult{Netdev: r.Netdev, Driver: r.Driver, Verdict: r.Verdict, Reason: r.Reason, FirmwareLLDP: r.FirmwareLLDP,
			Source: r.Source, HeardAt: r.HeardAt, DCBX: r.DCBX, Unchecked: r.Unchecked}
		if r.Mismatches != nil {
			p.Mismatches = make([]doc.PeerMismatch, len(r.Mismatches))
			for j, m := range r.Mismatches {
				p.Mismatches[j] = doc.PeerMismatch{Key: m.Key, Switch: m.Switch, Profile: m.Profile}
			}
		}
		if r.Frame != nil {
			p.Frame = mustJSON(r.Frame)
		}
		if r.DriverPeer != nil {
			p.DriverPeer = mustJSON(r.DriverPeer)
		}
		d.Ports[i] = p
	}
	return d
}
