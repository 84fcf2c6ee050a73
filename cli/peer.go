package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/peer"
)

// peerRecent is how old a stored peer result may be for audit to show it.
const peerRecent = 10 * time.Minute

func newPeerCmd(env *Env) *cobra.Command {
	var profile, output string
	var wait time.Duration
	var netdevs []string
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
LLDP, a link down, LLDP off). It coexists with lldpd/lldpad: every packet
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
				if msg := pl.NoPortsMessage(); msg != "" {
					return errors.New(msg)
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
				*r = peer.Result{Netdev: pt.netdev, Driver: pt.driver, FirmwareLLDP: firmwareLLDP(h.K, pt.netdev, pt.driver)}
				// The driver's view first: it answers at once, and where
				// the firmware takes the frames it is the only one.
				if st, err := h.K.DCB(pt.netdev); err == nil {
					_, driverWhy[i] = peer.JudgeDriver(r, st, e)
				}
			}
			listenPeers(cmd.Context(), h.K, rep.Ports, driverWhy, e, time.Now().Add(wait), wait)
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
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// listenPeers listens on every port without a verdict yet (the driver
// gave none) at once, until each has heard a valid frame or the deadline
// passes, and fills in the verdicts. driverWhy[i] is why port i's driver
// gave none, if it has peer ops.
func listenPeers(ctx context.Context, k nic.Kernel, ports []peer.Result, driverWhy []string, e lldp.Expect, deadline time.Time, wait time.Duration) {
	var wg sync.WaitGroup
	for i := range ports {
		r := &ports[i]
		if r.Verdict != "" {
			continue
		}
		why := driverWhy[i]
		l, err := lldp.Listen(r.Netdev)
		if err != nil {
			r.Verdict, r.Reason = peer.Error, err.Error()
			if why != "" {
				r.Reason += "; " + why
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.Close()
			stop := context.AfterFunc(ctx, func() { l.Close() })
			defer stop()
			var bad []error
			for {
				rec, err := l.Read(deadline)
				switch {
				case err != nil:
					r.Verdict, r.Reason = peer.Unknown, silentReason(k, r, why, bad, wait)
					if !errors.Is(err, os.ErrDeadlineExceeded) {
						r.Reason = err.Error()
						if ctx.Err() != nil {
							r.Reason = "interrupted: " + ctx.Err().Error()
						}
					}
					return
				case rec.Err != nil:
					bad = append(bad, rec.Err)
				default:
					peer.Judge(r, rec, e)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// silentReason words the likely reason a port heard no usable frame;
// driverWhy is why its driver reported no peer either, if it has peer ops.
func silentReason(k nic.Kernel, r *peer.Result, driverWhy string, bad []error, wait time.Duration) string {
	switch {
	case len(bad) > 0:
		return fmt.Sprintf("heard %d malformed LLDP frame(s) and no valid one; last: %v", len(bad), bad[len(bad)-1])
	case driverWhy != "" && r.FirmwareLLDP != "":
		return fmt.Sprintf("no LLDP frame in %s and %s; %s", wait, driverWhy, r.FirmwareLLDP)
	case driverWhy != "":
		return fmt.Sprintf("no LLDP frame in %s and %s", wait, driverWhy)
	case r.FirmwareLLDP != "":
		return r.FirmwareLLDP
	}
	if li, err := k.Link(r.Netdev); err == nil && li.OperState != "up" && li.OperState != "unknown" {
		return fmt.Sprintf("no LLDP frame in %s: the link is %s", wait, li.OperState)
	}
	return fmt.Sprintf("no LLDP frame in %s: LLDP is off on the switch port, its transmit interval is longer than --wait, or something on the way consumes it", wait)
}

// firmwareLLDP says when the NIC's firmware runs its own LLDP agent and
// takes the switch's frames before the host sees them: mlx5 in firmware
// DCBX mode (dcbnl DCBX mode without DCB_CAP_DCBX_HOST, audit's qos.dcbx
// "firmware"), ice with the private flag fw-lldp-agent on, i40e with
// disable-fw-lldp off; for any other driver, a DCBX mode with
// DCB_CAP_DCBX_LLD_MANAGED says the firmware runs DCBX, which may take the
// frames. "" when not, or when it cannot be told.
func firmwareLLDP(k nic.Kernel, netdev, driver string) string {
	switch driver {
	case "mlx5_core":
		st, err := k.DCB(netdev)
		if err == nil && st.DCBX != nil && *st.DCBX&dcb.DCBXHost == 0 {
			return "mlx5 in firmware DCBX mode (qos.dcbx = firmware): the NIC's LLDP agent consumes the switch's LLDP and the host never sees it, and mlx5 reports no peer through dcbnl; read the peer with mlnx_qos or set qos.dcbx = \"host\""
		}
	case "ice", "i40e":
		flags, err := k.PrivFlags(netdev)
		if err != nil {
			return ""
		}
		if on, ok := flags["fw-lldp-agent"]; ok && on {
			return "ice firmware LLDP agent is on (ethtool private flag fw-lldp-agent): the firmware consumes the switch's LLDP; ethtool --set-priv-flags " + netdev + " fw-lldp-agent off lets the host hear it"
		}
		if off, ok := flags["disable-fw-lldp"]; ok && !off {
			return "i40e firmware LLDP agent is on (ethtool private flag disable-fw-lldp off): the firmware consumes the switch's LLDP; ethtool --set-priv-flags " + netdev + " disable-fw-lldp on lets the host hear it"
		}
	default:
		st, err := k.DCB(netdev)
		if err == nil && st.DCBX != nil && *st.DCBX&dcb.DCBXLLDManaged != 0 {
			name := driver
			if name == "" {
				name = "the NIC"
			}
			return name + "'s firmware runs DCBX (DCBX mode LLD_MANAGED): its LLDP agent may take the switch's frames before the host sees them"
		}
	}
	return ""
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
