package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/report"
	"github.com/rocectl/rocectl/statedir"
)

// NewRootCommand builds the rocectl command tree over env.
func NewRootCommand(env *Env) *cobra.Command {
	root := Program(env, &cobra.Command{
		Use:   "rocectl",
		Short: "Make RoCE hosts lossless and keep them that way",
		Long: `rocectl applies one declarative TOML profile (PFC, trust/DSCP, ECN/DCQCN, MTU,
buffers, RoCE TOS, NCCL defaults) to every RoCE NIC of a host through the
kernel's own interfaces, verifies it, watches the pause counters and rolls
back by itself when they spike.`,
	})
	root.AddCommand(
		newValidateCmd(env),
		newAuditCmd(env),
		newApplyCmd(env),
		newCommitCmd(env),
		newRollbackCmd(env),
		newCaptureCmd(env),
		newImportCmd(env),
		newNCCLEnvCmd(env),
		newTopoCmd(env),
		newVerifyCmd(env),
		newAgentCmd(env),
		newConfirmWatchCmd(env),
		newVersionCmd(env),
		newPeerCmd(env),
		newReportCmd(env),
		newWatchCmd(env),
	)
	registerCompletions(root)
	return root
}

// Program makes root the root command of a rocectl program (rocectl, and
// the daemon's own binary, rocectl-agent): the global flags every program
// takes (--root, --snapshot, --state-dir, --keep-journals, logging,
// --allow-insecure-profile), their checks, and the logger, set up before
// any command of the program runs. It returns root.
func Program(env *Env, root *cobra.Command) *cobra.Command {
	root.Version = currentVersionInfo().short()
	root.SilenceUsage, root.SilenceErrors = true, true
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if env.LogFormat != "text" && env.LogFormat != "json" {
			return fmt.Errorf("--log-format must be text or json, not %q", env.LogFormat)
		}
		if env.KeepJournals < 1 {
			return fmt.Errorf("--keep-journals must be at least 1, not %d", env.KeepJournals)
		}
		if env.Snapshot != "" && cmd.Flags().Changed("root") {
			return errors.New("--root and --snapshot exclude each other: a snapshot is its own root")
		}
		env.setupLog()
		if env.TuneGC {
			tuneGC(cmd.Name())
		}
		return nil
	}
	root.SetVersionTemplate(root.Name() + " {{.Version}}\n")
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&env.Root, "root", env.Root, "prefix for /sys, /sys/kernel/config and /sys/kernel/debug (a copy of a host's tree)")
	pf.StringVar(&env.Snapshot, "snapshot", "", "read the host from a capture directory instead of the live kernel (read-only)")
	pf.StringVar(&env.StateDir, "state-dir", env.StateDir, "journal, lock and last result")
	pf.IntVar(&env.KeepJournals, "keep-journals", statedir.DefaultKeep, "finished apply journals to keep in the state dir (the newest, and always the last committed one)")
	pf.StringVar(&env.LogFormat, "log-format", env.LogFormat, "log format: text or json")
	pf.BoolVarP(&env.Verbose, "verbose", "v", false, "debug logging")
	pf.BoolVar(&env.AllowInsecureProfile, "allow-insecure-profile", false, "accept profile files writable by group or others, or owned by a user other than root and the one running rocectl")
	_ = root.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
	for _, name := range []string{"root", "snapshot", "state-dir"} {
		_ = root.MarkPersistentFlagDirname(name)
	}
	return root
}

// flagValues are the fixed values of enumerated flags, per command, for
// shell completion (Program completes the global flags).
// TestEveryOutputFlagCompletes fails for a command whose -o is in neither
// this table nor registerCompletions' directory flags.
var flagValues = map[string]map[string][]string{
	"audit":    {"output": {"text", "json"}},
	"apply":    {"output": {"text", "json"}},
	"verify":   {"output": {"text", "json"}},
	"version":  {"output": {"text", "json"}},
	"watch":    {"output": {"text", "json"}},
	"peer":     {"output": {"text", "json"}},
	"topo":     {"output": {"text", "json"}},
	"report":   {"output": report.Formats},
	"nccl-env": {"output": {"env", "shell", "json"}, "format": {"env", "shell", "json"}},
}

// registerCompletions teaches `rocectl completion` the values of the
// enumerated flags, and that profiles are .toml files and the path flags
// directories. A flag in flagValues that a command lacks is a mistake in
// the table, so it panics (every test builds the tree).
func registerCompletions(root *cobra.Command) {
	fixed := func(vals []string) cobra.CompletionFunc {
		return cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp)
	}
	for name, flags := range flagValues {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd == root {
			panic("flagValues: no command " + name)
		}
		for flag, vals := range flags {
			if err := cmd.RegisterFlagCompletionFunc(flag, fixed(vals)); err != nil {
				panic(fmt.Sprintf("flagValues: %s --%s: %v", name, flag, err))
			}
		}
	}
	for _, cmd := range root.Commands() {
		if cmd.Flags().Lookup("profile") != nil {
			_ = cmd.MarkFlagFilename("profile", "toml")
		}
	}
	// capture and import write a directory, not a format.
	for _, name := range []string{"capture", "import"} {
		if c, _, err := root.Find([]string{name}); err == nil && c != root {
			_ = c.MarkFlagDirname("output")
		}
	}
}

func newValidateCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "validate PROFILE...",
		Short: "Check profiles; report every problem with file:line:col (exit 0 valid, 1 invalid)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				p, err := policy.Load(path, env.ProfileOptions())
				if err != nil {
					bad++
					fmt.Fprintln(env.Stderr, err)
					continue
				}
				for _, w := range p.Warnings {
					fmt.Fprintln(env.Stderr, w.String())
				}
				fmt.Fprintf(env.Stdout, "%s: ok (profile %q", path, p.Name)
				if n := len(p.Warnings); n > 0 {
					fmt.Fprintf(env.Stdout, ", %d warning(s)", n)
				}
				fmt.Fprintln(env.Stdout, ")")
			}
			if bad > 0 {
				return silent(ExitError)
			}
			return nil
		},
	}
}

func newAuditCmd(env *Env) *cobra.Command {
	var profile, output string
	var require, requireKnown bool
	cmd := &cobra.Command{
		Use:   "audit -p PROFILE",
		Short: "Compare the host with a profile, read-only (exit 0 in sync, 2 drift, refusals included; 1 error)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			pl, done, err := env.openAndPlan(cmd.Context(), profile, false)
			if err != nil {
				return env.jsonOnError(output, err)
			}
			defer done()
			if why := pl.NoPortsReason(); require && why != "" {
				return env.jsonOnError(output, requireMatchError(why))
			}
			notices := env.pendingReverts()
			if output == "json" {
				rep := newReport(pl)
				rep.Warnings = append(rep.Warnings, notices...)
				_, rep.QoSChain = chainProblems(pl, env.recentPeer())
				if err := writeJSON(env.Stdout, rep); err != nil {
					return err
				}
			} else {
				renderPlanText(env.Stdout, pl, "change")
				env.renderChainSection(env.Stdout, pl)
				env.renderPeerSection(env.Stdout)
				for _, n := range notices {
					fmt.Fprintf(env.Stdout, "Warning: %s\n", n)
				}
			}
			// Exit codes that mean one thing: 1 is the audit failing
			// (a setting it could not read, unknowns under
			// --require-known); a change an apply would refuse is
			// drift like any other (2), listed as refused, so that an
			// hourly audit reports drift, not a broken tool.
			switch {
			case len(pl.Plan.Errors) > 0:
				return silent(ExitError)
			case requireKnown && len(pl.Plan.Unknown) > 0:
				if output != "json" {
					fmt.Fprintf(env.Stdout, "Error: %d setting(s) unknown (not in the snapshot) and --require-known is set\n", len(pl.Plan.Unknown))
				}
				return silent(ExitError)
			case pl.Plan.Changed() || len(pl.Plan.Refused) > 0:
				return silent(ExitDrift)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&profile, "profile", "p", "", "profile file (required)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().BoolVar(&require, "require-match", false, requireMatchUsage)
	cmd.Flags().BoolVar(&requireKnown, "require-known", false, "fail (exit 1) when a setting's value is unknown (not captured or not readable), for CI gates")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// pendingReverts words the confirm windows that expired uncommitted: the
// host matches what audit reads, but not for long. Read-only; a state dir
// audit may not read (not root, a snapshot) has nothing to say.
func (env *Env) pendingReverts() []string {
	if env.Snapshot != "" {
		return nil
	}
	js, err := apply.Expired(env.Store(), time.Now())
	if errors.Is(err, os.ErrPermission) {
		return nil
	}
	if err != nil {
		return []string{"cannot tell whether an apply awaits its revert: " + err.Error()}
	}
	var out []string
	for _, j := range js {
		out = append(out, apply.ExpiredNotice(j))
	}
	return out
}

// jsonOnError keeps the -o json contract on early failures (profile
// errors, a held lock, no matching port): one document with errors[] on
// stdout, exit 1, instead of nothing but a message on stderr.
func (env *Env) jsonOnError(output string, err error) error {
	if output != "json" || ErrorMessage(err) == "" {
		return err
	}
	rep := newReport(nil)
	rep.Host, rep.GeneratedAt = env.hostName(), time.Now().UTC().Format(time.RFC3339)
	rep.Errors = append(rep.Errors, err.Error())
	rep.Diagnostics = errorDiagnostics(err)
	_ = writeJSON(env.Stdout, rep)
	fmt.Fprintln(env.Stderr, err)
	return silent(ExitCode(err))
}

func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return fmt.Errorf("-o must be text or json, not %q", o)
	}
	return nil
}
