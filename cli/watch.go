package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/verify"
)

// rocectl watch: a live per-port, per-priority view of the lossless
// fabric's counters, like top. Counter names come from verify (pause:
// PauseCounters; CNP/ECN, storm events, discards: verify/fabric.go);
// this file turns two samples into rates (verify.Rates), lays them out
// (watchLines) and drives a terminal (watchLoop, watchTTY). docs/watch.md
// describes the view and the JSON document.

func newWatchCmd(env *Env) *cobra.Command {
	var profile, output string
	var once, require bool
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
			var none *noPortsError
			if errors.As(err, &none) {
				if require {
					return requireMatchError(none.reason)
				}
				// Nothing to watch: said, exit 0, as every command does
				// (on stderr under -o json, whose stdout is intervals).
				w := env.Stdout
				if output == "json" {
					w = env.Stderr
				}
				fmt.Fprintf(w, "Nothing to watch: %s.\n", none.reason)
				return nil
			}
			if err != nil {
				return err
			}
			if env.Snapshot != "" {
				scope += ", snapshot " + env.Snapshot + " (counters do not move)"
			}
			ticker := time.NewTicker(interval)
			defer ticker.Stop()
			s := &verify.Sampler{K: h.K, FS: &h.FS, Log: h.Log, Sources: verify.Sources(ports), Link: true}
			l := &watchLoop{sample: s.Sample, ticks: ticker.C, out: env.Stdout, json: output == "json", once: once,
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
	cmd.Flags().BoolVar(&require, "require-match", false, requireMatchUsage)
	return cmd
}

// noPortsError is watchPorts' "nothing to watch": no RoCE port, or none
// the profile matches.
type noPortsError struct{ reason string }

func (e *noPortsError) Error() string { return "nothing to watch: " + e.reason }

// watchPorts discovers the RoCE ports, those profile matches when one is
// given, and words what is watched for the header.
func (env *Env) watchPorts(h *host.Host, profile string) ([]port.Port, string, error) {
	inv := h.Discover()
	if profile == "" {
		if len(inv.Ports) == 0 {
			return nil, "", &noPortsError{"no RoCE devices found on this host"}
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
		pr := apply.Prepared{Inventory: inv, Desired: &policy.Desired{}}
		return nil, "", &noPortsError{pr.NoPortsReason()}
	}
	return out, fmt.Sprintf("profile %s", p.Name), nil
}

// watchLoop samples at each tick and shows each interval: on a terminal
// (tty set) redrawn in place, else as plain text snapshots or JSON lines.
type watchLoop struct {
	sample func() *verify.Sample
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
	var last *verify.WatchReport
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
			last = verify.Rates(prev, cur)
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

func (l *watchLoop) show(rep *verify.WatchReport) error {
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
