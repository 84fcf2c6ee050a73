package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
	"github.com/rocectl/rocectl/verify"
)

// verifyResult is what verify found, in the types the text output uses;
// its JSON document is doc.Verify (document).
type verifyResult struct {
	Profile, ProfileHash string
	OK                   bool
	Mismatches           []verify.Mismatch
	// Unknown are the settings whose value could not be known (a snapshot
	// that did not capture them, a GID table that could not be read):
	// not checked, so not "holding" either; OK is false with any.
	Unknown     []policy.Unknown
	Traffic     []*verify.LoopbackResult
	Errors      []string
	Diagnostics []doc.Diagnostic
	// MatchedPorts and Message: how many ports the profile selected, and
	// why none when none (nothing checked).
	MatchedPorts *int
	Message      string
}

// document is verify's JSON document.
func (d *verifyResult) document() *doc.Verify {
	v := &doc.Verify{SchemaVersion: SchemaVersion, Profile: d.Profile, ProfileHash: d.ProfileHash, OK: d.OK,
		Mismatches: make([]doc.Mismatch, 0, len(d.Mismatches)), Unknown: unknownDocs([]doc.Unknown{}, d.Unknown),
		Errors: d.Errors, Diagnostics: d.Diagnostics, MatchedPorts: d.MatchedPorts, Message: d.Message}
	for _, m := range d.Mismatches {
		v.Mismatches = append(v.Mismatches, doc.Mismatch{Key: m.Key, Want: m.Want, Have: m.Have, Reason: m.Reason})
	}
	for _, t := range d.Traffic {
		v.Traffic = append(v.Traffic, trafficDoc(t))
	}
	return v
}

// trafficDoc is one verbs test run as verify's document carries it.
func trafficDoc(t *verify.LoopbackResult) *doc.Traffic {
	if t == nil {
		return nil
	}
	d := &doc.Traffic{Device: t.Device, Port: t.Port, GIDIndex: t.GIDIndex, GID: t.GID, PeerGID: t.PeerGID, PathMTU: t.PathMTU,
		TrafficClass: t.TrafficClass, WriteGbps: t.WriteGbps, WriteMsgs: t.WriteMsgs, WriteBytes: t.WriteBytes,
		LatP50: t.LatP50, LatP99: t.LatP99, SendMsgs: t.SendMsgs, CounterDeltas: t.CounterDeltas, PauseWindow: t.PauseWindow}
	if t.PauseDeltas != nil {
		d.PauseDeltas = make([]doc.PauseDelta, len(t.PauseDeltas))
		for i, p := range t.PauseDeltas {
			d.PauseDeltas[i] = doc.PauseDelta{Netdev: p.Netdev, PauseCounter: pauseCounterDocs([]verify.PauseCounter{p.PauseCounter})[0]}
		}
	}
	if t.Errors != nil {
		d.Errors = make([]doc.CompletionError, len(t.Errors))
		for i, e := range t.Errors {
			d.Errors[i] = doc.CompletionError{Op: e.Op, Status: int(e.Status), VendorErr: e.VendorErr, QPN: e.QPN, WRID: e.WRID}
		}
	}
	return d
}

func newVerifyCmd(env *Env) *cobra.Command {
	var profile, output, peer, listen, size string
	var loopback, require bool
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "verify -p PROFILE",
		Short: "Check that the host holds every setting of a profile, and send real verbs traffic",
		Long: `verify reads back every setting the profile makes (want/have per key) and, with
--loopback or [verify] loopback = true, runs RDMA WRITE and SEND traffic between
two RC QPs on each matched port with the profile's GID, TOS and path MTU.
Loopback traffic stays inside the NIC: to exercise the switch, PFC and ECN run
--listen :PORT on one host and --peer HOST:PORT on another.
Exit 0 when everything holds, 1 otherwise: a setting whose value cannot be
known (a snapshot that did not capture it) is not checked, so it fails too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			msgSize, err := parseMessageSize(size)
			if err != nil {
				return err
			}
			d := verifyResult{Mismatches: []verify.Mismatch{}, Unknown: []policy.Unknown{}, Errors: []string{}, Diagnostics: []doc.Diagnostic{}}
			// An early failure is still one document in JSON.
			fail := func(err error) error {
				if output != "json" {
					return err
				}
				d.Errors = append(d.Errors, err.Error())
				d.Diagnostics = errorDiagnostics(err)
				if werr := writeJSON(env.Stdout, d.document()); werr != nil {
					return werr
				}
				fmt.Fprintln(env.Stderr, err)
				return silent(ExitError)
			}
			pl, done, err := env.openAndPlan(cmd.Context(), profile, loopback || peer != "" || listen != "")
			if err != nil {
				return fail(err)
			}
			defer done()
			h := pl.Host
			if duration > 0 {
				pl.Profile.Verify.Duration = duration
			}
			if msgSize > 0 {
				pl.Profile.Verify.MessageSize = msgSize
			}
			d.Profile, d.ProfileHash = pl.Profile.Name, pl.Profile.Hash
			d.Diagnostics = diagnosticsOf(pl.Profile.Warnings)
			matched := len(pl.Desired.Ports)
			d.MatchedPorts = &matched
			if (loopback || peer != "" || listen != "" || pl.Profile.Verify.Loopback) && !verify.VerbsBuiltIn() {
				// Traffic was asked for and this build cannot send it:
				// an error on every host, never "ok" because no port
				// happened to match.
				return fail(errors.New(verbsErrorText(verify.ErrVerbsNotBuiltIn)))
			}
			if why := pl.NoPortsReason(); why != "" {
				if require {
					return fail(requireMatchError(why))
				}
				d.Message = strings.Replace(pl.NoPortsMessage(), "nothing to do", "nothing checked", 1)
			}
			if traffic := loopback || peer != "" || listen != "" || pl.Profile.Verify.Loopback; traffic && env.Snapshot == "" && len(pl.Desired.Ports) > 0 {
				// No agent probe runs during this verify's traffic (and
				// none starts): the state dir's traffic lock, as apply
				// holds it. Waiting for a probe under way is bounded.
				wctx, cancel := context.WithTimeout(cmd.Context(), apply.TrafficWait)
				tl, err := env.Store().Traffic(wctx, "verify -p "+profile)
				cancel()
				switch {
				case err == nil:
					defer tl.Release()
				case errors.Is(err, statedir.ErrLocked) || wctx.Err() != nil:
					return fail(fmt.Errorf("test traffic is running on this host: %w", err))
				default:
					// No state dir to lock (not root, say): said, not
					// fatal; the traffic itself needs no state dir.
					env.Log.Warn("verify: the traffic lock cannot be taken, so an agent's probes are not held off during this verify", "err", err)
				}
			}
			res := verify.Run(cmd.Context(), verify.RunConfig{Desired: pl.Desired, Observe: h.Observe, K: h.K,
				TrafficConfig: apply.TrafficConfig(pl, env.Log), Loopback: loopback, Peer: peer, Listen: listen, Waiting: env.Stderr})
			if res.Mismatches != nil {
				d.Mismatches = res.Mismatches
			}
			if res.Unknown != nil {
				d.Unknown = res.Unknown
			}
			d.Traffic = res.Traffic
			for _, e := range res.Errors {
				msg := verbsErrorText(e.Err)
				if e.Port != "" {
					msg = e.Port + ": " + msg
				}
				d.Errors = append(d.Errors, msg)
			}
			d.OK = res.OK()
			if output == "json" {
				if err := writeJSON(env.Stdout, d.document()); err != nil {
					return err
				}
			} else {
				for _, m := range d.Mismatches {
					fmt.Fprintln(env.Stdout, m.String())
				}
				for _, u := range d.Unknown {
					fmt.Fprintf(env.Stdout, "%s: unknown (%s), not checked\n", u.Key, u.Reason)
				}
				for _, t := range d.Traffic {
					fmt.Fprintf(env.Stdout, "traffic: %s port %d gid[%d] %s tos %d mtu %d: write %.3f Gb/s (%d msgs), latency p50 %v p99 %v",
						t.Device, t.Port, t.GIDIndex, t.GID, t.TrafficClass, t.PathMTU, t.WriteGbps, t.WriteMsgs, t.LatP50, t.LatP99)
					if len(t.CounterDeltas) > 0 {
						fmt.Fprintf(env.Stdout, ", counters %v", t.CounterDeltas)
					}
					for _, c := range t.PauseDeltas {
						if c.Frames > 0 || c.DurationUs > 0 {
							fmt.Fprintf(env.Stdout, ", %s %s pause %s: %d frames", c.Netdev, c.Direction, c.Scope(), c.Frames)
							if c.HasDuration {
								fmt.Fprintf(env.Stdout, ", %d µs", c.DurationUs)
							}
						}
					}
					fmt.Fprintln(env.Stdout)
				}
				for _, e := range d.Errors {
					fmt.Fprintln(env.Stdout, "error:", e)
				}
				if n := len(d.Unknown); n > 0 {
					fmt.Fprintf(env.Stdout, "verify: %d setting(s) unknown, not checked: nothing is said about them holding\n", n)
				}
				if d.Message != "" {
					fmt.Fprintln(env.Stdout, d.Message)
				} else if d.OK {
					fmt.Fprintf(env.Stdout, "verify: %d setting(s) hold their profile values", len(pl.Desired.All())-len(pl.Plan.Unsupported))
					if len(d.Traffic) > 0 {
						fmt.Fprintf(env.Stdout, "; verbs traffic passed")
					}
					fmt.Fprintln(env.Stdout, ".")
				}
			}
			if !d.OK {
				return silent(ExitError)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&profile, "profile", "p", "", "profile file (required)")
	fl.StringVarP(&output, "output", "o", "text", "output format: text or json")
	fl.BoolVar(&loopback, "loopback", false, "run verbs loopback traffic on each matched port")
	fl.StringVar(&peer, "peer", "", "two-host mode: connect to the rocectl verify --listen at `HOST:PORT`")
	fl.StringVar(&listen, "listen", "", "two-host mode: wait for a peer on `ADDR` (e.g. :18515)")
	fl.DurationVar(&duration, "duration", 0, "traffic time per operation (overrides [verify] duration)")
	fl.StringVar(&size, "size", "", "bytes per message, e.g. 65536 or 1MiB (overrides [verify] message_size)")
	fl.BoolVar(&require, "require-match", false, requireMatchUsage)
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// parseMessageSize reads --size: "" is the profile's, otherwise 1 byte to
// 1 GiB, the bounds of [verify] message_size.
func parseMessageSize(s string) (policy.Size, error) {
	if s == "" {
		return 0, nil
	}
	v, err := policy.ParseSize(s)
	if err != nil {
		return 0, fmt.Errorf("--size: %w", err)
	}
	if v == 0 || v > 1<<30 {
		return 0, fmt.Errorf("--size must be 1 byte to 1GiB, not %s", s)
	}
	return v, nil
}

// verbsErrorText is err's message; when it is the stub's "not built in",
// it also says which build has verbs: `make build` makes a static binary
// without them, and nothing else would tell the operator so.
func verbsErrorText(err error) string {
	if errors.Is(err, verify.ErrVerbsNotBuiltIn) {
		return err.Error() + "; this rocectl was built without them: use " + verbsHint
	}
	return err.Error()
}
