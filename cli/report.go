package cli

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/internal/lib/input"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/report"
)

// expectLimit bounds --expect-file: a list of host names.
var expectLimit = input.Limit{Max: 16 << 20, What: "an --expect-file"}

func newReportCmd(env *Env) *cobra.Command {
	var output, expectFile string
	var expect []string
	var maxAge time.Duration
	cmd := &cobra.Command{
		Use:   "report [-o text|markdown|html|json] FILE|DIR...",
		Short: "Fleet view over many hosts' JSON documents (audit, apply, verify, peer, nccl-env, rack sweep)",
		Long: `report reads the -o json documents of audit, apply, verify, peer and nccl-env from many
hosts (files; directories, walked for *.json and for Ansible fact cache files;
the Ansible role's gathered results) and prints the fleet view: hosts × setting
groups (in sync, drift, unsupported, unknown, stale), the drifted values grouped
by "same drift on N hosts", and the hosts that did not report. Records of a rack
sweep (deploy/ansible/sweep.yml) add the pair matrix as a heat map, the worst
pairs and the hosts common to them.
nccl-env documents add, per profile, the GID index each host's
NCCL_IB_GID_INDEX resolves to, naming the hosts that differ from the
profile's most common value; audit documents whose QoS chain finds NCCL's
classes against the profile's add those hosts with their first problem.

A host is named by the "host" of its document, else by its file name.
-o html writes one self-contained page (no external assets).
Only regular files are read (a FIFO, or a symlink to /dev/zero, is listed
as unreadable, not read), each of at most 16 MiB.
Exit 0; 1 when the report lists unreadable files (it is printed all the
same), when a named path does not exist, or on SIGINT/SIGTERM.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !slices.Contains(report.Formats, output) {
				return fmt.Errorf("-o must be one of %s, not %q", strings.Join(report.Formats, ", "), output)
			}
			if expectFile != "" {
				data, err := input.ReadFile(ctx, expectFile, expectLimit)
				if err != nil {
					return err
				}
				expect = append(expect, strings.Fields(string(data))...)
			}
			// The documents are read in parallel and folded as they are
			// read: a fleet of 100,000 hosts is never held document by
			// document (issue 39).
			defer reportGC()()
			f, err := report.Stream(ctx, args, report.Options{Now: time.Now(), MaxAge: maxAge, Expected: expect})
			if err != nil {
				return err
			}
			if err := report.Render(env.Stdout, f, output); err != nil {
				return err
			}
			if n := max(f.ProblemsTotal, len(f.Problems)); n > 0 {
				// The fleet view is printed, and a play or script that
				// reads only the exit code must still see that some of
				// the fleet's documents are not in it.
				return &ExitErr{Code: ExitError, Err: fmt.Errorf("report: %d file(s) could not be read (listed as unreadable)", n)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&output, "output", "o", "text", "output format: "+strings.Join(report.Formats, ", "))
	fl.DurationVar(&maxAge, "max-age", 0, "mark hosts whose newest document is older than this stale (0: never)")
	fl.StringSliceVar(&expect, "expect", nil, "hosts that should have reported (comma-separated); those without a document are listed")
	fl.StringVar(&expectFile, "expect-file", "", "a file of expected hosts, whitespace-separated")
	return cmd
}

// hostName names the host a document describes: the hostname a snapshot
// recorded when root is one (snapshot.json; "" when it recorded none, an
// import without --hostname), else this machine's.
func hostName(root string) string {
	if m, ok, err := snapshot.ReadMeta(root); ok || err != nil {
		return m.Hostname
	}
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// hostName is hostName of the host the command works on. A snapshot's is
// the name it recorded, "" when it recorded none (an import without
// --hostname): never this machine's, which would file another host's data
// under the machine that reads it (report then names the host by its
// document's file name).
func (env *Env) hostName() string {
	if env.Snapshot != "" {
		return hostName(env.Snapshot)
	}
	return hostName(env.Root)
}
