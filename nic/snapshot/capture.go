package snapshot

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nvconfig"
)

// Capture reads everything rocectl reads from a host — the RoCE ports'
// sysfs/configfs/debugfs files, every netdev's rtnetlink/ethtool/dcbnl
// state, devlink parameters and the PCI attributes topo needs — and writes
// it to dir as a snapshot. It only reads, with one exception that
// cma_roce_tos shares: rdma_cm's configfs directory of a device must exist
// to be read, so a missing one is created and removed again (values are
// kept by the kernel either way).
//
// files are further host paths outside /sys to keep at the same path in the
// snapshot: the NCCL config files (NCCLConfFiles), so that auditing the
// capture against a profile with [nccl] write reads the file the host has.
// Absent ones are skipped; unreadable ones are listed in Meta.Unreadable.
//
// fw, when not nil, queries a ConnectX device's NVConfig as mstconfig
// prints it (nvconfig.Reader.QueryText): each mlx5 PCI function's query is
// kept in kernel.json, so that auditing the capture against [firmware]
// reads what the host's firmware held. A device whose query fails (no
// mstconfig, a locked-down device) is left not captured, and logged.
func Capture(fs nic.FS, k nic.Kernel, dir string, meta Meta, files []string, fw FirmwareText, log *slog.Logger) (*nic.Inventory, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	inv := nic.Discover(fs, k, log)
	if meta.CapturedAt == "" {
		meta.CapturedAt = time.Now().UTC().Format(time.RFC3339)
	}
	st := &KernelState{Links: map[string]*LinkState{}, Devlink: map[string][]nic.DevlinkParam{}, Errors: map[string]string{}}
	// The RDMA netlink view discovery used, so that discovery of the
	// snapshot sees the ports as the host's did.
	// A socket or dump that failed with an errno is kept as such.
	if rl, ok := k.(nic.RDMALinker); ok {
		links, err := rl.RDMALinks(fs)
		var en syscall.Errno
		switch {
		case err == nil && inv.RDMASource == nic.RDMASourceNetlink:
			st.RDMA = &RDMAState{Links: links}
		case errors.As(err, &en):
			st.Errors[OpRDMANetlink] = ErrnoName(en)
		}
	}
	netdevs, _ := fs.ReadDir("/sys/class/net")
	for _, nd := range netdevs {
		if nd == "lo" {
			continue
		}
		st.Links[nd] = captureLink(k, nd)
	}
	var paths []string
	add := func(p ...string) { paths = append(paths, p...) }
	var cleanup []string
	seenPCI := map[string]bool{}
	for _, p := range inv.Ports {
		ib := "/sys/class/infiniband/" + p.RDMADevice
		add(ib)
		for _, a := range pciAttrs {
			add(ib + "/device/" + a)
		}
		net := "/sys/class/net/" + p.Netdev
		for _, a := range []string{"mtu", "operstate", "speed", "address", "ifindex", "type", "ecn", "qos", "device", "phys_port_name"} {
			add(net + "/" + a)
		}
		if p.PCI != "" && !seenPCI[p.PCI] {
			seenPCI[p.PCI] = true
			if fw != nil && nvconfig.ConnectXDriver(p.Driver) {
				text, err := fw(p.PCI)
				if err != nil {
					log.Warn("firmware NVConfig not captured", "pci", p.PCI, "err", err)
				} else {
					if st.Firmware == nil {
						st.Firmware = map[string]string{}
					}
					st.Firmware[p.PCI] = text
				}
			}
			add("/sys/kernel/debug/mlx5/" + p.PCI + "/cc_params")
			params, err := k.DevlinkParams("pci/" + p.PCI)
			switch {
			case err == nil:
				st.Devlink["pci/"+p.PCI] = params
			default:
				st.Errors["devlink"] = errnoOf(err)
			}
		}
		add("/sys/kernel/config/bnxt_re/" + p.RDMADevice)
		add(nic.IrdmaDir(p))
		cm := "/sys/kernel/config/rdma_cm/" + p.RDMADevice
		if fs.Exists("/sys/kernel/config/rdma_cm") && !fs.Exists(cm) && !fs.ReadOnly() {
			if err := fs.Mkdir(cm); err == nil {
				cleanup = append(cleanup, cm)
			} else {
				log.Debug("rdma_cm configfs", "device", p.RDMADevice, "err", err)
			}
		}
		add(cm)
	}
	defer func() {
		for _, d := range cleanup {
			if err := fs.Rmdir(d); err != nil {
				log.Warn("removing the rdma_cm configfs directory made for capture", "dir", d, "err", err)
			}
		}
	}()
	// PCI attributes of every device, for `rocectl topo` on the snapshot.
	if devs, err := fs.ReadDir("/sys/bus/pci/devices"); err == nil {
		for _, d := range devs {
			for _, a := range pciAttrs {
				add("/sys/bus/pci/devices/" + d + "/" + a)
			}
			add("/sys/bus/pci/devices/"+d+"/infiniband", "/sys/bus/pci/devices/"+d+"/net")
		}
	}
	if len(st.Errors) == 0 {
		st.Errors = nil
	}
	if len(st.Devlink) == 0 {
		st.Devlink = nil
	}
	sort.Strings(paths)
	// Write copies only /sys; the config files are read first, so that an
	// unreadable one is listed in snapshot.json, and written after it.
	conf := readFiles(fs, files, &meta)
	if err := Write(dir, meta, st, fs, paths); err != nil {
		return inv, err
	}
	return inv, writeFiles(dir, conf)
}

// NCCLConfFiles lists the files NCCL reads its settings from (see
// nccl/conf.go): $NCCL_CONF_FILE, or ~/.nccl.conf when that is unset or
// empty, then /etc/nccl.conf. The profile that names the file rocectl
// manages is not known at capture time, so capture takes all of them.
// getenv and home describe the process NCCL would run as.
func NCCLConfFiles(getenv func(string) string, home string) []string {
	var out []string
	switch f := getenv("NCCL_CONF_FILE"); {
	case f != "":
		if filepath.IsAbs(f) {
			out = append(out, filepath.Clean(f))
		} else if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs) // NCCL opens it relative to its cwd
		}
	case home != "":
		out = append(out, filepath.Join(home, ".nccl.conf"))
	}
	if !slices.Contains(out, "/etc/nccl.conf") {
		out = append(out, "/etc/nccl.conf")
	}
	return out
}

type confFile struct {
	path string
	data []byte
}

// readFiles reads the files among paths as rocectl reads the NCCL file
// (nic.FileIn: through its directory, confined to the root), noting the
// ones it cannot read. A symlink or a file with other hard links at the
// name is not read but listed, as ELOOP and EMLINK: those are a user's
// files (~/.nccl.conf) pointing at others, and copying what they point at
// into a world-readable snapshot would hand root's read of any file to
// that user. The audit refuses them too. A missing file is skipped.
func readFiles(fs nic.FS, paths []string, meta *Meta) []confFile {
	var out []confFile
	for _, p := range paths {
		data, err := readFileIn(fs, p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case errors.Is(err, nic.ErrSymlink):
			meta.Unreadable = append(meta.Unreadable, p+": ELOOP")
		case errors.Is(err, nic.ErrHardLinked):
			meta.Unreadable = append(meta.Unreadable, p+": EMLINK")
		case err != nil:
			meta.Unreadable = append(meta.Unreadable, p+": "+errnoOf(err))
		default:
			out = append(out, confFile{path: p, data: data})
		}
	}
	return out
}

func readFileIn(fs nic.FS, p string) ([]byte, error) {
	f, err := fs.OpenFileIn(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, _, err := f.Read()
	return data, err
}

// writeFiles puts each file at its host path under dir, each a new file
// (createFile): the directory is the one Write filled, and a name someone
// put there since (a hard link to another file) is refused, not written
// through.
func writeFiles(dir string, files []confFile) error {
	if len(files) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer root.Close()
	for _, f := range files {
		name := strings.TrimPrefix(filepath.Clean(f.path), "/")
		if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("snapshot: %s: %w", f.path, err)
		}
		if err := createFile(root, name, f.data); err != nil {
			return fmt.Errorf("snapshot: %s: %w", f.path, err)
		}
	}
	return nil
}

var pciAttrs = []string{"vendor", "device", "subsystem_vendor", "subsystem_device", "class", "numa_node",
	"current_link_speed", "current_link_width", "max_link_speed", "max_link_width", "driver"}

// captureLink asks the kernel everything rocectl asks about one netdev,
// recording each refusal's errno instead of failing.
func captureLink(k nic.Kernel, nd string) *LinkState {
	ls := &LinkState{Errors: map[string]string{}}
	note := func(op string, err error) bool {
		if err != nil {
			ls.Errors[op] = errnoOf(err)
			return false
		}
		return true
	}
	if v, err := k.Link(nd); note(OpLink, err) {
		ls.Link = &v
	}
	if v, err := k.DriverInfo(nd); note(OpDriver, err) {
		ls.Driver = &v
	}
	if v, err := k.Pause(nd); note(OpPause, err) {
		ls.Pause = &v
	}
	if v, err := k.Rings(nd); note(OpRings, err) {
		ls.Rings = &v
	}
	if v, err := k.PrivFlags(nd); note(OpPrivFlags, err) {
		ls.PrivFlags = v
	}
	if v, err := k.Stats(nd); note(OpStats, err) {
		ls.Stats = v
	}
	if v, err := k.PFCPreventionTimeout(nd); note(OpTunable, err) {
		ls.PFCPreventionTimeout = &v
	}
	if v, err := k.DCB(nd); note(OpDCB, err) {
		ls.DCB = v
	}
	if len(ls.Errors) == 0 {
		ls.Errors = nil
	}
	return ls
}

// errnoOf names an error's errno for kernel.json; errors without one (a
// read-back mismatch, a malformed reply) are recorded as EIO.
func errnoOf(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return ErrnoName(en)
	}
	if errors.Is(err, os.ErrNotExist) {
		return "ENOENT"
	}
	return "EIO"
}

// Describe says in one line what a capture holds, for the command's output.
func Describe(inv *nic.Inventory, links int) string {
	if len(inv.Ports) == 0 {
		return fmt.Sprintf("no RoCE devices found, %d netdev(s)", links)
	}
	var names []string
	for _, p := range inv.Ports {
		names = append(names, fmt.Sprintf("%s/%d (%s)", p.RDMADevice, p.PortNum, p.Netdev))
	}
	src := "RDMA ports from " + inv.RDMASource
	if inv.SysfsReason != "" {
		src += " (" + inv.SysfsReason + ")"
	}
	return fmt.Sprintf("%d RoCE port(s): %s; %d netdev(s); %s", len(inv.Ports), strings.Join(names, ", "), links, src)
}

// FirmwareText is one device's NVConfig query as the tool printed it.
type FirmwareText func(pci string) (string, error)
