package agentcmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/agent"
	"github.com/rocectl/rocectl/cli"
)

// Name is the daemon's binary; `rocectl agent` runs it (cli.AgentBinary).
const Name = cli.AgentBinary

// NewRootCommand builds rocectl-agent's command over env.
func NewRootCommand(env *cli.Env) *cobra.Command {
	var mode string
	cfg := agent.Config{}
	var probe agent.ProbeConfig
	cmd := cli.Program(env, &cobra.Command{
		Use:   Name + " -p PROFILE",
		Short: "Keep the host on its profile: drift checks on a timer and on link events, metrics, sd_notify",
		Long: Name + ` checks the host against the profile every --interval and whenever a
RoCE netdev or its addresses change (a driver reload forgets DCB APP
entries, ECN and rdma_cm settings). In audit mode it reports drift (log,
metrics); in enforce mode it applies the profile with the same journal,
read-back, guard and rollback as rocectl apply, at most once per
--min-apply-interval (a PFC change flaps mlx5 links). At start it restores
any apply a crash left unfinished and reverts unconfirmed changes whose
--confirm deadline has passed, and it keeps honouring such deadlines.
Under systemd it reports READY=1, STATUS= and watchdog pings.
With --probe-peer it keeps small verbs probes going to other hosts' agents
(--probe-listen on theirs), one every --probe-interval per peer and never
while an apply or verify runs, and marks pairs that degrade (metrics).
"rocectl agent ARGS" runs it with the same arguments.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if mode != "enforce" && mode != "audit" {
				return fmt.Errorf("--mode must be enforce or audit, not %q", mode)
			}
			if env.Snapshot != "" && mode == "enforce" {
				return errors.New("a snapshot is read-only: use --mode audit")
			}
			if len(probe.Peers) > 0 || probe.Listen != "" {
				if err := probe.Check(); err != nil {
					return err
				}
				switch {
				case env.Snapshot != "":
					return errors.New("--probe-peer/--probe-listen send traffic: not on a snapshot")
				case agent.ProbingBuiltIn() != nil:
					return fmt.Errorf("--probe-peer/--probe-listen: %w; this %s was built without them (make build-verbs, or the Debian package)", agent.ProbingBuiltIn(), Name)
				}
				cfg.Probe = &probe
			}
			// The profile's warnings once on stderr, as every command
			// prints them; the daemon logs them too.
			if _, err := env.LoadProfile(cfg.Profile); err != nil {
				return err
			}
			h, done, err := env.Host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			cfg.Enforce = mode == "enforce"
			cfg.LoadOptions = env.ProfileOptions()
			cfg.Host, cfg.ReadOnly = h, env.Snapshot != ""
			cfg.Store, cfg.Log = env.Store(), env.Log
			cfg.Version, cfg.Revision = cli.Version, cli.Revision
			cli.TuneDaemonGC()
			return agent.Run(cmd.Context(), cfg)
		},
	})
	fl := cmd.Flags()
	fl.StringVarP(&cfg.Profile, "profile", "p", "", "profile file (required)")
	fl.StringVar(&mode, "mode", "audit", "enforce (apply on drift) or audit (report only)")
	fl.DurationVar(&cfg.Interval, "interval", 5*time.Minute, "time between drift checks")
	fl.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address, e.g. 127.0.0.1:9469")
	fl.DurationVar(&cfg.CounterInterval, "counter-interval", time.Second, "with --metrics-addr: how often NIC counters are polled")
	fl.DurationVar(&cfg.MinApplyInterval, "min-apply-interval", 10*time.Minute, "enforce mode: at most one apply per this interval")
	fl.BoolVar(&cfg.Once, "once", false, "run one check (and apply in enforce mode), then exit")
	fl.BoolVar(&cfg.RequireMatch, "require-match", false, "fail (exit 1) when the first check finds no RoCE port matching the profile; later such checks count as failed (rocectl_last_check_success 0), not in sync")
	fl.StringArrayVar(&probe.Peers, "probe-peer", nil, "probe the agent serving probes at `HOST:PORT` (repeat for each peer; at most 64)")
	fl.StringVar(&probe.Listen, "probe-listen", "", "serve other agents' probes on `ADDR`, e.g. :18516")
	fl.DurationVar(&probe.Interval, "probe-interval", agent.DefaultProbeInterval, "time between two probes of one peer (at least 10s)")
	_ = cmd.MarkFlagRequired("profile")
	_ = cmd.MarkFlagFilename("profile", "toml")
	_ = cmd.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"audit", "enforce"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
