package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/nic/snapshot"
)

func newCaptureCmd(env *Env) *cobra.Command {
	var out, source string
	var tree bool
	cmd := &cobra.Command{
		Use:   "capture -o DIR",
		Short: "Snapshot everything rocectl reads from this host (read-only; a support bundle)",
		Long: `capture writes the sysfs/configfs/debugfs files rocectl reads (with their real
symlinks) and what rtnetlink, dcbnl, ethtool and devlink report, into DIR, in
the format of docs/snapshot-format.md, with the NCCL config files
($NCCL_CONF_FILE or ~/.nccl.conf, and /etc/nccl.conf) at their paths. The
files are packed into one, DIR/files.pack (a 64-port host's 9,000 files make
about 1 MB); --tree writes them as a directory tree instead. Audit it
anywhere with rocectl audit -p PROFILE --snapshot DIR. Nothing on the host
is changed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, done, err := env.Host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			// The name audit reports for this host (the recorded name
			// when the root is a copy of a host's tree), so that the
			// capture audits as the host itself does.
			host := env.hostName()
			var uts unix.Utsname
			_ = unix.Uname(&uts)
			if source == "" {
				source = fmt.Sprintf("rocectl capture on %s, root %s", host, h.FS.Root())
			}
			meta := snapshot.Meta{CapturedAt: time.Now().UTC().Format(time.RFC3339), Hostname: host,
				Kernel: unix.ByteSliceToString(uts.Release[:]), RocectlVersion: Version, Source: source}
			home, _ := os.UserHomeDir()
			// The ConnectX devices' NVConfig as mstconfig prints it, where
			// the host's firmware reader can print it (the live host).
			var fw snapshot.FirmwareText
			if r, ok := h.FW.(interface {
				QueryText(context.Context, string) (string, error)
			}); ok {
				fw = func(pci string) (string, error) { return r.QueryText(cmd.Context(), pci) }
			}
			inv, err := snapshot.Capture(h.FS, h.K, out, meta, snapshot.NCCLConfFiles(os.Getenv, home), fw, env.Log)
			if err != nil {
				return err
			}
			if !tree {
				if err := snapshot.Pack(out); err != nil {
					return err
				}
			}
			s, err := snapshot.Open(out)
			if err != nil {
				return fmt.Errorf("the capture does not read back: %w", err)
			}
			fmt.Fprintf(env.Stdout, "Capture written to %s: %s (%d unreadable file(s) listed in snapshot.json).\n",
				out, snapshot.Describe(inv, len(s.State().Links)), len(s.Meta.Unreadable))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "directory to write (must be empty or absent)")
	cmd.Flags().StringVar(&source, "source", "", "free text recorded as the capture's source")
	cmd.Flags().BoolVar(&tree, "tree", false, "write the files as a directory tree, not packed into files.pack")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}
