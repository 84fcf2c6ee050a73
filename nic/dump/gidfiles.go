package dump

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ImportDevices is where an import puts the RDMA devices whose GID tables
// show_gids printed: /sys/class/infiniband/<dev> links to
// ImportDevices/infiniband/<dev>, as on a host it links into the device's
// PCI function. No host has this path: a reader tells the import's files
// from captured ones by it.
const ImportDevices = "/sys/devices/rocectl-import"

// gidPort is one RDMA port's GID table as show_gids printed it.
type gidPort struct {
	dev  string
	port int
	rows map[int]GID // by index; a later dump's row replaces an earlier one
}

// rdmaNameRE is a device name that is safe as a path element.
var rdmaNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]*$`)

// addGIDs keeps the RoCE rows of a show_gids dump for SysTree. A port
// whose rows name no netdev is InfiniBand (show_gids leaves DEV empty
// there): it has no GID NCCL would pick for RoCE, and is left out.
func (im *Import) addGIDs(b Block) {
	ib := map[string]Source{}
	for _, g := range b.GIDs {
		key := fmt.Sprintf("%s/%d", g.Device, g.Port)
		if g.Netdev == "" {
			if _, ok := ib[key]; !ok {
				ib[key] = g.At
			}
			continue
		}
		if !rdmaNameRE.MatchString(g.Device) || g.Port < 1 || g.Index < 0 {
			im.Warnings = append(im.Warnings, Warning{g.At, fmt.Sprintf("show_gids row of device %q port %d index %d: not a name and numbers a GID table has: not used", g.Device, g.Port, g.Index)})
			continue
		}
		p := im.gids[key]
		if p == nil {
			if im.gids == nil {
				im.gids = map[string]*gidPort{}
			}
			p = &gidPort{dev: g.Device, port: g.Port, rows: map[int]GID{}}
			im.gids[key] = p
		}
		p.rows[g.Index] = g
	}
	for _, key := range slices.Sorted(maps.Keys(ib)) {
		if im.gids[key] == nil {
			im.Warnings = append(im.Warnings, Warning{ib[key], fmt.Sprintf("show_gids: %s has GIDs without a netdev (an InfiniBand port): not RoCE, not used", key)})
		}
	}
}

// GIDTables is the number of RDMA ports whose GID table SysTree writes.
func (im *Import) GIDTables() int { return len(im.gids) }

// gidFacts reports each GID table SysTree writes.
func (im *Import) gidFacts() {
	for _, key := range slices.Sorted(maps.Keys(im.gids)) {
		p := im.gids[key]
		idx := slices.Sorted(maps.Keys(p.rows))
		first := p.rows[idx[0]]
		nd := first.Netdev
		im.Facts = append(im.Facts, Fact{Netdev: key, What: fmt.Sprintf("GID table (%d entries, netdev %s) from show_gids", len(idx), nd), From: first.At})
	}
}

// WriteSysTree writes under root (a new temporary directory, the source
// of snapshot.Write) the sysfs files of the GID tables the show_gids dumps
// printed, the files show_gids itself reads, laid out as on the host so
// that discovery finds each RDMA port and NCCL's GID selection reads its
// table as on the host: per port, gids/<i> (the GID in full form),
// gid_attrs/types/<i> ("RoCE v2", "IB/RoCE v1"), gid_attrs/ndevs/<i> (the
// netdev), and link_layer "Ethernet" (a port whose GIDs have netdevs is
// RoCE), below ImportDevices. paths are the host paths to copy into the
// snapshot; nil when the dumps held no GID table.
func (im *Import) WriteSysTree(root string) (paths []string, err error) {
	if len(im.gids) == 0 {
		return nil, nil
	}
	for _, key := range slices.Sorted(maps.Keys(im.gids)) {
		p := im.gids[key]
		dev := ImportDevices + "/infiniband/" + p.dev
		if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink("../../devices/rocectl-import/infiniband/"+p.dev, filepath.Join(root, "sys/class/infiniband", p.dev)); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		base := filepath.Join(root, dev, "ports", strconv.Itoa(p.port))
		for _, d := range []string{"gids", "gid_attrs/types", "gid_attrs/ndevs"} {
			if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
				return nil, err
			}
		}
		files := map[string]string{"link_layer": "Ethernet"}
		for i, g := range p.rows {
			typ := "IB/RoCE v1"
			if g.RoCEv2 {
				typ = "RoCE v2"
			}
			n := strconv.Itoa(i)
			files["gids/"+n], files["gid_attrs/types/"+n], files["gid_attrs/ndevs/"+n] = fullGID(g), typ, g.Netdev
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(base, name), []byte(data+"\n"), 0o644); err != nil {
				return nil, err
			}
		}
	}
	return []string{"/sys/class/infiniband", ImportDevices}, nil
}

// fullGID is a GID as sysfs prints it (%pI6): eight groups of four hex
// digits.
func fullGID(g GID) string {
	b := g.GID.As16()
	var s strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			s.WriteByte(':')
		}
		fmt.Fprintf(&s, "%02x%02x", b[i], b[i+1])
	}
	return s.String()
}
