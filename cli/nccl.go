package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
)

func newNCCLEnvCmd(env *Env) *cobra.Command {
	var profile, format, write string
	cmd := &cobra.Command{
		Use:   "nccl-env -p PROFILE",
		Short: "Print the NCCL defaults derived from the profile and this host (KEY=VALUE)",
		Long: `nccl-env resolves the profile's [nccl] section on this host: IB_HCA = "auto"
becomes the exact-match list of the matched RDMA ports (=mlx5_0:1,...),
IB_GID_INDEX = "auto" the RoCE v2 IPv4 GID index found on them, IB_TC defaults
to the profile's RoCE TOS. --write FILE writes NCCL's own config format into a
managed block (atomically, mode 0644), keeping every line a user added; for a
journalled change with rollback, set [nccl] write and use apply.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "env" && format != "shell" && format != "json" {
				return fmt.Errorf("--format must be env, shell or json, not %q", format)
			}
			p, err := env.loadProfile(profile)
			if err != nil {
				return err
			}
			h, done, err := env.host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			inv := h.Discover()
			var ports []policy.Port
			for _, pp := range h.PolicyPorts(inv, true) {
				if p.Match.Matches(pp) {
					ports = append(ports, pp)
				}
			}
			vars, unresolved := nccl.Env(p, ports)
			for _, u := range unresolved {
				fmt.Fprintf(env.Stderr, "%s: cannot derive: %s\n", strings.TrimPrefix(u.Key, "host.nccl."), u.Reason)
			}
			switch format {
			case "json":
				m := map[string]string{}
				for _, v := range vars {
					m[v.Name] = v.Value
				}
				if err := writeJSON(env.Stdout, m); err != nil {
					return err
				}
			default:
				for _, v := range vars {
					if format == "shell" {
						fmt.Fprintf(env.Stdout, "export %s=%s\n", v.Name, shellQuote(v.Value))
					} else {
						fmt.Fprintf(env.Stdout, "%s=%s\n", v.Name, v.Value)
					}
				}
			}
			if write != "" {
				if env.Snapshot != "" {
					return fmt.Errorf("--write with --snapshot: a snapshot is read-only")
				}
				var nv []nccl.Var
				for _, v := range vars {
					nv = append(nv, nccl.Var{Name: v.Name, Value: v.Value})
				}
				existing, _ := readFileIfExists(h.FS.Path(write))
				data, conflicts, err := nccl.RenderConf(existing, p.Name, nv)
				if err != nil {
					return err
				}
				for _, c := range conflicts {
					fmt.Fprintf(env.Stderr, "%s:%d: %s=%s is now overridden by rocectl's managed block (%s)\n", write, c.Line, c.Name, c.UserValue, c.Managed)
				}
				if err := nccl.WriteConf(h.FS, write, data); err != nil {
					return err
				}
				fmt.Fprintf(env.Stderr, "wrote %d variable(s) to %s\n", len(nv), write)
			}
			if len(unresolved) > 0 {
				return silent(ExitError)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&profile, "profile", "p", "", "profile file (required)")
	cmd.Flags().StringVar(&format, "format", "env", "output format: env (KEY=VALUE), shell (export lines) or json")
	cmd.Flags().StringVar(&write, "write", "", "also write the variables to this NCCL config file (e.g. /etc/nccl.conf)")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// shellQuote quotes a value for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("=_-.,:/+^@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newTopoCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "topo",
		Short: "PCIe distances between GPUs and RDMA NICs, degraded links, and a GPU→NIC / NCCL_IB_HCA proposal",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fs := nic.NewFS(env.Root, true)
			if env.Snapshot != "" {
				fs = nic.NewFS(env.Snapshot, true)
			}
			t, err := nccl.ReadTopology(fs)
			if err != nil {
				return err
			}
			return RenderTopology(env.Stdout, t)
		},
	}
}
