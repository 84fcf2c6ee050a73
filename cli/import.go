package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/internal/lib/input"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dump"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// ImportLimit bounds each input of rocectl import, a file or stdin: the
// largest real dumps (lspci -vvv of a GPU host, ethtool -S of a bnxt_en
// port with its per-ring counters) are a few MiB at most.
var ImportLimit = input.Limit{Max: 16 << 20, What: "an import input"}

func newImportCmd(env *Env) *cobra.Command {
	var out, netdev, hostname string
	cmd := &cobra.Command{
		Use:   "import -o DIR FILE... (- for stdin)",
		Short: "Build a snapshot from pasted tool output (mlnx_qos, ethtool, show_gids, ip, dcb, devlink, rdma, ibv_devinfo, lspci, nvidia-smi, mstconfig)",
		Long: `import reads the text output of mlnx_qos, ethtool -S/-a/-i, show_gids,
ip -d -s link, iproute2's dcb, devlink dev param show, rdma link, ibv_devinfo,
lspci -vvv/-t, nvidia-smi topo -m and mstconfig/mlxconfig q (a ConnectX's
firmware NVConfig: default, current and next-boot values, kept by the
device's PCI address for audit's [firmware] settings), recognising each by its content (several
commands per file, with or without prompt lines), and writes a snapshot to DIR
for rocectl audit --snapshot DIR. It prints where each fact came from
(file:line) and warns about what it recognised but could not use (a snapshot
has no place for RDMA devices, PCI functions or the GPU/NIC matrix of dumps;
show_gids's GID tables it holds, as the sysfs files show_gids reads, so that
nccl-env --snapshot DIR picks the GID index NCCL would).
Everything the dumps do not contain is recorded as not captured: audit shows
it as unknown (not in the snapshot), never as supported or unsupported.
Dumps that do not name their interface (mlnx_qos, ethtool -S without the
command line) are tied to --netdev. Two ethtool -S dumps of one interface
are two samples, in the order given: global pause counters that rose
between them are shown by audit as "inferred: in use (from FILE:LINE →
FILE:LINE)", still unknown, never as a value.
Dumps that contradict each other are refused, every disagreement
listed: prompts naming two hosts; one netdev with two MACs or PCI
functions; one RDMA port with two netdevs or default GIDs; two different
mlnx_qos, ethtool -a/-i or dcb outputs of one interface from two files.
A dump that names no host or device cannot contradict the others: the
import notes it.
Each FILE must be a regular file (a FIFO or /dev/zero is refused, not
read) of at most 16 MiB; stdin (-) is read up to 16 MiB. SIGINT and
SIGTERM stop the import, a read of stdin included, and nothing is
written.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var blocks []dump.Block
			var warns []dump.Warning
			ctx := cmd.Context()
			for _, f := range args {
				var b []byte
				var err error
				name := f
				if f == "-" {
					name = "stdin"
					b, err = input.Read(ctx, cmd.InOrStdin(), name, ImportLimit)
				} else {
					b, err = input.ReadFile(ctx, f, ImportLimit)
					name = filepath.Base(f)
				}
				if err != nil {
					return fmt.Errorf("import: %w", err)
				}
				bs, ws := dump.Parse(name, b)
				blocks = append(blocks, bs...)
				warns = append(warns, ws...)
			}
			im, err := dump.Build(blocks, netdev)
			if err != nil {
				return err
			}
			warns = append(warns, im.Warnings...)
			if len(im.State.Links) == 0 && im.GIDTables() == 0 && len(im.State.Firmware) == 0 {
				for _, w := range warns {
					fmt.Fprintf(env.Stderr, "warning: %s\n", w)
				}
				return fmt.Errorf("import: nothing usable in %d file(s)", len(args))
			}
			meta := snapshot.Meta{CapturedAt: time.Now().UTC().Format(time.RFC3339), Hostname: hostname,
				RocectlVersion: Version, Source: fmt.Sprintf("rocectl import of %d file(s)", len(args)),
				// No sysfs/configfs/debugfs file was captured: the
				// only ones there are the GID tables show_gids printed,
				// under dump.ImportDevices. Nor an NCCL config file.
				NotCaptured: []string{"/sys", "/etc"}}
			// The GID tables' files are written to a private directory
			// first, the source snapshot.Write copies them from.
			src, gidPaths := nic.NewFS("/", true), []string(nil)
			if im.GIDTables() > 0 {
				tmp, err := os.MkdirTemp("", "rocectl-import-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				if gidPaths, err = im.WriteSysTree(tmp); err != nil {
					return fmt.Errorf("import: GID tables: %w", err)
				}
				src = nic.NewFS(tmp, true)
			}
			if err := snapshot.Write(out, meta, im.State, src, gidPaths); err != nil {
				return err
			}
			for _, f := range im.Facts {
				fmt.Fprintf(env.Stdout, "  %s\n", f)
			}
			for _, w := range warns {
				fmt.Fprintf(env.Stdout, "  warning: %s\n", w)
			}
			if len(args) > 1 {
				for _, f := range im.Anonymous {
					fmt.Fprintf(env.Stdout, "  note: %s names no host, MAC, PCI function or RDMA port: nothing shows it is of the same host as the other dumps\n", f)
				}
			}
			gidTables := ""
			if n := im.GIDTables(); n > 0 {
				gidTables = fmt.Sprintf(", %d GID table(s)", n)
			}
			if n := len(im.State.Firmware); n > 0 {
				gidTables += fmt.Sprintf(", %d device(s)' firmware NVConfig", n)
			}
			fmt.Fprintf(env.Stdout, "Snapshot written to %s: %d netdev(s)%s, %d fact(s), %d warning(s); everything else is recorded as not captured.\n",
				out, len(im.State.Links), gidTables, len(im.Facts), len(warns))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "directory to write (must be empty or absent)")
	cmd.Flags().StringVar(&netdev, "netdev", "", "interface of the dumps that do not name one (mlnx_qos, ethtool -S without its command line)")
	cmd.Flags().StringVar(&hostname, "hostname", "", "hostname recorded in the snapshot")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}
