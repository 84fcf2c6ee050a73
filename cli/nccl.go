package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

func newNCCLEnvCmd(env *Env) *cobra.Command {
	var profile, format, write string
	var require bool
	cmd := &cobra.Command{
		Use:   "nccl-env -p PROFILE",
		Short: "Print the NCCL defaults derived from the profile and this host (KEY=VALUE)",
		Long: `nccl-env resolves the profile's [nccl] section on this host: IB_HCA = "auto"
becomes the exact-match list of the matched RDMA ports (=mlx5_0:1,...),
IB_GID_INDEX = "auto" the RoCE v2 IPv4 GID index when every port has it at the
same index, or -1 (NCCL 2.21+ selects per device) otherwise; IB_GID_INDEX =
"select" -1 and the family/range/RoCE version NCCL selects by, checked
against every matched port's GID table; the choice and its reason, and notes
(a file-wide IB_TC overriding communicators' traffic class, several GIDs NCCL
could select, a RoCE LAG), go to stderr. IB_TC defaults to the profile's RoCE TOS. --write FILE
writes NCCL's own config format into a managed block (atomically, mode 0644),
keeping every line a user added; for a journalled change with rollback, set
[nccl] write and use apply. When a variable cannot be derived, nothing is
printed on stdout or written, and the exit status is 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "env" && format != "shell" && format != "json" {
				return fmt.Errorf("--output must be env, shell or json, not %q", format)
			}
			if write != "" && env.Snapshot != "" {
				return fmt.Errorf("--write with --snapshot: a snapshot is read-only")
			}
			nd := &doc.NCCLEnv{SchemaVersion: SchemaVersion, Variables: map[string]string{}, Order: []string{}, Errors: []string{}, Diagnostics: []doc.Diagnostic{},
				Host: env.hostName(), GeneratedAt: time.Now().UTC().Format(time.RFC3339)}
			p, err := env.LoadProfile(profile)
			if err != nil {
				if format != "json" {
					return err
				}
				nd.Errors = append(nd.Errors, err.Error())
				nd.Diagnostics = errorDiagnostics(err)
				fmt.Fprintln(env.Stderr, err)
				return env.finishNCCLEnv(format, nd)
			}
			nd.Profile, nd.ProfileHash = p.Name, p.Hash
			nd.Diagnostics = diagnosticsOf(p.Warnings)
			h, done, err := env.Host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			inv := h.Discover()
			var ports []port.Port
			var unknownMatch []string
			for _, pp := range h.Ports(inv, true) {
				if why := p.Match.MatchUnknown(pp); why != "" {
					unknownMatch = append(unknownMatch, why)
					continue
				}
				if p.Match.Matches(pp) {
					ports = append(ports, pp)
				}
			}
			if len(unknownMatch) > 0 {
				// A snapshot that lacks what [match] selects by (an import
				// without ethtool -i) cannot say which ports NCCL gets:
				// neither "no port matches" nor a device list missing
				// some is true.
				for _, why := range unknownMatch {
					nd.Errors = append(nd.Errors, "IB_HCA: cannot derive: "+why)
				}
				return env.finishNCCLEnv(format, nd)
			}
			if len(ports) == 0 {
				// Not this profile's host: nothing to derive, as audit and
				// apply have nothing to do.
				none := &apply.Prepared{Inventory: inv, Desired: &policy.Desired{}}
				nd.Message = none.NoPortsMessage()
				if require {
					nd.Message = ""
					nd.Errors = append(nd.Errors, requireMatchError(none.NoPortsReason()).Error())
				} else {
					nd.Complete = true
				}
				return env.finishNCCLEnv(format, nd)
			}
			if p.NeedsGIDTables() {
				h.ReadGIDTables(ports)
			}
			d := nccl.Derive(p, ports)
			nd.GIDIndex = gidChoiceDoc(d.GID)
			nd.Warnings, nd.Notes = d.Warnings, d.Notes
			if format != "json" {
				for _, w := range d.Warnings {
					fmt.Fprintf(env.Stderr, "warning: %s\n", w)
				}
				for _, n := range d.Notes {
					fmt.Fprintf(env.Stderr, "note: %s\n", n)
				}
			}
			// A refused or unknown choice is reported with the errors below.
			if d.GID != nil && d.GID.Mode != nccl.GIDRefused && d.GID.Mode != nccl.GIDUnknown && format != "json" {
				fmt.Fprintf(env.Stderr, "NCCL_IB_GID_INDEX: %s\n", d.GID)
			}
			for _, u := range d.Unresolved {
				nd.Errors = append(nd.Errors, fmt.Sprintf("%s: cannot derive: %s", strings.TrimPrefix(u.Key, "host.nccl."), u.Reason))
			}
			if len(nd.Errors) > 0 {
				return env.finishNCCLEnv(format, nd)
			}
			nd.Complete = true
			for _, v := range d.Vars {
				nd.Variables[v.Name] = v.Value
				nd.Order = append(nd.Order, v.Name)
			}
			if write != "" {
				err := nccl.UpdateConf(h.FS, write, nil, func(existing []byte) ([]byte, error) {
					data, conflicts, err := nccl.RenderConf(existing, p.Name, d.Vars)
					for _, c := range conflicts {
						fmt.Fprintf(env.Stderr, "%s:%d: %s=%s is now overridden by rocectl's managed block (%s)\n", write, c.Line, c.Name, c.UserValue, c.Managed)
					}
					return data, err
				})
				if err != nil {
					return err
				}
				nd.Written = write
				fmt.Fprintf(env.Stderr, "wrote %d variable(s) to %s\n", len(d.Vars), write)
			}
			return env.finishNCCLEnv(format, nd)
		},
	}
	cmd.Flags().StringVarP(&profile, "profile", "p", "", "profile file (required)")
	cmd.Flags().StringVarP(&format, "output", "o", "env", "output format: env (KEY=VALUE), shell (export lines) or json")
	cmd.Flags().StringVar(&format, "format", "env", "the same as --output")
	cmd.Flags().StringVar(&write, "write", "", "also write the variables to this NCCL config file (e.g. /etc/nccl.conf)")
	cmd.Flags().BoolVar(&require, "require-match", false, requireMatchUsage)
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// finishNCCLEnv prints the document: in JSON whole, in text the variables
// only when they are complete (the errors, or the no-ports message, on
// stderr), and exits 1 when it is not complete.
func (env *Env) finishNCCLEnv(format string, nd *doc.NCCLEnv) error {
	switch format {
	case "json":
		if err := writeJSON(env.Stdout, nd); err != nil {
			return err
		}
	default:
		if nd.Message != "" {
			fmt.Fprintln(env.Stderr, nd.Message)
		}
		for _, e := range nd.Errors {
			fmt.Fprintln(env.Stderr, e)
		}
		if !nd.Complete {
			fmt.Fprintln(env.Stderr, "nothing printed or written: the NCCL variables would be incomplete")
		}
		for _, name := range nd.Order {
			if format == "shell" {
				fmt.Fprintf(env.Stdout, "export %s=%s\n", name, shellQuote(nd.Variables[name]))
			} else {
				fmt.Fprintf(env.Stdout, "%s=%s\n", name, nd.Variables[name])
			}
		}
	}
	if !nd.Complete {
		return silent(ExitError)
	}
	return nil
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
	var output string
	var require bool
	cmd := &cobra.Command{
		Use:   "topo",
		Short: "PCIe distances between GPUs and RDMA NICs, degraded links, and a GPU→NIC / NCCL_IB_HCA proposal",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			// A snapshot's files are packed by default (files.pack):
			// read them as every other command does, through
			// snapshot.Open, not as a directory tree.
			fs := nic.NewFS(env.Root, true)
			if env.Snapshot != "" {
				s, err := snapshot.Open(env.Snapshot)
				if err != nil {
					return err
				}
				fs = s.FS()
			}
			t, err := nccl.ReadTopology(fs)
			if err == nil && require && len(t.NICs) == 0 {
				// topo has no profile: under --require-match, the
				// host must have an RDMA NIC.
				err = requireMatchError("no RDMA NIC found on this host")
			}
			if output == "json" {
				td := doc.Topo{SchemaVersion: SchemaVersion, Topology: topologyDoc(nonNullTopology(t)), Errors: []string{}}
				if err != nil {
					td.Topology = nil // no half-read topology
					td.Errors = append(td.Errors, err.Error())
				}
				if werr := writeJSON(env.Stdout, td); werr != nil {
					return werr
				}
				if err != nil {
					fmt.Fprintln(env.Stderr, err)
					return silent(ExitError)
				}
				return nil
			}
			if err != nil {
				return err
			}
			return RenderTopology(env.Stdout, t)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().BoolVar(&require, "require-match", false, "fail (exit 1) when the host has no RDMA NIC, instead of saying so and exiting 0")
	return cmd
}

// nonNullTopology is t with empty lists where t has none, so that JSON
// readers see [] rather than null.
func nonNullTopology(t *nccl.Topology) *nccl.Topology {
	if t == nil {
		return nil
	}
	c := *t
	if c.GPUs == nil {
		c.GPUs = []nic.PCIDevice{}
	}
	if c.NICs == nil {
		c.NICs = []nic.PCIDevice{}
	}
	if c.Pairs == nil {
		c.Pairs = []nccl.TopoPair{}
	}
	if c.Degraded == nil {
		c.Degraded = []nccl.Degradation{}
	}
	if c.Affinity == nil {
		c.Affinity = []nccl.Affinity{}
	}
	return &c
}

// gidChoiceDoc is nccl's GID index decision as nccl-env's document
// carries it; nil stays nil.
func gidChoiceDoc(c *nccl.GIDChoice) *doc.GIDChoice {
	if c == nil {
		return nil
	}
	return &doc.GIDChoice{Mode: c.Mode, Index: c.Index, Reason: c.Reason}
}

// topologyDoc is the topology as topo's document carries it, each list
// encoded as nccl and nic encode it; nil stays nil.
func topologyDoc(t *nccl.Topology) *doc.Topology {
	if t == nil {
		return nil
	}
	return &doc.Topology{GPUs: mustJSON(t.GPUs), NICs: mustJSON(t.NICs), Pairs: mustJSON(t.Pairs),
		Degraded: mustJSON(t.Degraded), Affinity: mustJSON(t.Affinity), HCAOrder: t.HCAOrder}
}
