package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// NCCLEnvDoc is the JSON document of nccl-env. Variables is empty unless
// every variable was derived: a partial list is never a result.
type NCCLEnvDoc struct {
	SchemaVersion int               `json:"schema_version"`
	Profile       string            `json:"profile"`
	ProfileHash   string            `json:"profile_hash"`
	Complete      bool              `json:"complete"`
	Variables     map[string]string `json:"variables"`
	// Order is the variables' names in the order they are printed and
	// written.
	Order []string `json:"order"`
	// GIDIndex says how IB_GID_INDEX = "auto" was decided; absent when
	// the profile does not ask for it.
	GIDIndex *nccl.GIDChoice `json:"gid_index,omitempty"`
	Errors   []string        `json:"errors"`
	// Diagnostics: the profile's problems, structured.
	Diagnostics []Diagnostic `json:"diagnostics"`
	Message     string       `json:"message,omitempty"`
	Written     string       `json:"written,omitempty"`
}

func newNCCLEnvCmd(env *Env) *cobra.Command {
	var profile, format, write string
	var require bool
	cmd := &cobra.Command{
		Use:   "nccl-env -p PROFILE",
		Short: "Print the NCCL defaults derived from the profile and this host (KEY=VALUE)",
		Long: `nccl-env resolves the profile's [nccl] section on this host: IB_HCA = "auto"
becomes the exact-match list of the matched RDMA ports (=mlx5_0:1,...),
IB_GID_INDEX = "auto" the RoCE v2 IPv4 GID index when every port has it at the
same index, or -1 (NCCL 2.21+ selects per device) otherwise; the choice and its
reason go to stderr. IB_TC defaults to the profile's RoCE TOS. --write FILE
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
			doc := &NCCLEnvDoc{SchemaVersion: SchemaVersion, Variables: map[string]string{}, Order: []string{}, Errors: []string{}, Diagnostics: []Diagnostic{}}
			p, err := env.LoadProfile(profile)
			if err != nil {
				if format != "json" {
					return err
				}
				doc.Errors = append(doc.Errors, err.Error())
				doc.Diagnostics = errorDiagnostics(err)
				fmt.Fprintln(env.Stderr, err)
				return env.finishNCCLEnv(format, doc)
			}
			doc.Profile, doc.ProfileHash = p.Name, p.Hash
			doc.Diagnostics = diagnosticsOf(p.Warnings)
			h, done, err := env.Host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			inv := h.Discover()
			var ports []port.Port
			for _, pp := range h.Ports(inv, true) {
				if p.Match.Matches(pp) {
					ports = append(ports, pp)
				}
			}
			if len(ports) == 0 {
				// Not this profile's host: nothing to derive, as audit and
				// apply have nothing to do.
				doc.Message = (&apply.Prepared{Inventory: inv, Desired: &policy.Desired{}}).NoPortsMessage()
				if require {
					doc.Errors = append(doc.Errors, doc.Message)
				} else {
					doc.Complete = true
				}
				return env.finishNCCLEnv(format, doc)
			}
			d := nccl.Derive(p, ports)
			doc.GIDIndex = d.GID
			// A refused or unknown choice is reported with the errors below.
			if d.GID != nil && d.GID.Mode != nccl.GIDRefused && d.GID.Mode != nccl.GIDUnknown && format != "json" {
				fmt.Fprintf(env.Stderr, "NCCL_IB_GID_INDEX: %s\n", d.GID)
			}
			for _, u := range d.Unresolved {
				doc.Errors = append(doc.Errors, fmt.Sprintf("%s: cannot derive: %s", strings.TrimPrefix(u.Key, "host.nccl."), u.Reason))
			}
			if len(doc.Errors) > 0 {
				return env.finishNCCLEnv(format, doc)
			}
			doc.Complete = true
			for _, v := range d.Vars {
				doc.Variables[v.Name] = v.Value
				doc.Order = append(doc.Order, v.Name)
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
				doc.Written = write
				fmt.Fprintf(env.Stderr, "wrote %d variable(s) to %s\n", len(d.Vars), write)
			}
			return env.finishNCCLEnv(format, doc)
		},
	}
	cmd.Flags().StringVarP(&profile, "profile", "p", "", "profile file (required)")
	cmd.Flags().StringVarP(&format, "output", "o", "env", "output format: env (KEY=VALUE), shell (export lines) or json")
	cmd.Flags().StringVar(&format, "format", "env", "the same as --output")
	cmd.Flags().StringVar(&write, "write", "", "also write the variables to this NCCL config file (e.g. /etc/nccl.conf)")
	cmd.Flags().BoolVar(&require, "require-match", false, "fail (exit 1) when no RoCE port matches the profile, instead of printing nothing")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

// finishNCCLEnv prints the document: in JSON whole, in text the variables
// only when they are complete (the errors, or the no-ports message, on
// stderr), and exits 1 when it is not complete.
func (env *Env) finishNCCLEnv(format string, doc *NCCLEnvDoc) error {
	switch format {
	case "json":
		if err := writeJSON(env.Stdout, doc); err != nil {
			return err
		}
	default:
		if doc.Message != "" {
			fmt.Fprintln(env.Stderr, doc.Message)
		}
		for _, e := range doc.Errors {
			fmt.Fprintln(env.Stderr, e)
		}
		if !doc.Complete {
			fmt.Fprintln(env.Stderr, "nothing printed or written: the NCCL variables would be incomplete")
		}
		for _, name := range doc.Order {
			if format == "shell" {
				fmt.Fprintf(env.Stdout, "export %s=%s\n", name, shellQuote(doc.Variables[name]))
			} else {
				fmt.Fprintf(env.Stdout, "%s=%s\n", name, doc.Variables[name])
			}
		}
	}
	if !doc.Complete {
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

// TopoDoc is the JSON document of topo.
type TopoDoc struct {
	SchemaVersion int `json:"schema_version"`
	*nccl.Topology
	Errors []string `json:"errors"`
}

func newTopoCmd(env *Env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "topo",
		Short: "PCIe distances between GPUs and RDMA NICs, degraded links, and a GPU→NIC / NCCL_IB_HCA proposal",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			fs := nic.NewFS(env.Root, true)
			if env.Snapshot != "" {
				fs = nic.NewFS(env.Snapshot, true)
			}
			t, err := nccl.ReadTopology(fs)
			if output == "json" {
				doc := TopoDoc{SchemaVersion: SchemaVersion, Topology: nonNullTopology(t), Errors: []string{}}
				if err != nil {
					doc.Topology = nil // no half-read topology
					doc.Errors = append(doc.Errors, err.Error())
				}
				if werr := writeJSON(env.Stdout, doc); werr != nil {
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
