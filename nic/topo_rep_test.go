package nic

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/port"
)

// repTree is a device with one physical port and two VF representors, as
// netdevsim in switchdev mode makes them (lab: devlink port show says
// flavour physical / pcivf; phys_port_name p1, pf0vf0, pf0vf1), plus a
// second physical port when twoUplinks.
func repTree(t *testing.T, twoUplinks bool) FS {
	t.Helper()
	root := t.TempDir()
	names := map[string]string{"eth0": "p1", "eth1": "pf0vf0", "eth2": "pf0vf1", "eth9": ""}
	if twoUplinks {
		names["eth3"] = "p2"
	}
	for nd, ppn := range names {
		dir := filepath.Join(root, "sys/devices/netdevsim7/net", nd)
		if nd == "eth9" { // a netdev of its own device, without devlink port
			dir = filepath.Join(root, "sys/devices/virtual/net", nd)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if ppn != "" {
			if err := os.WriteFile(filepath.Join(dir, "phys_port_name"), []byte(ppn+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../../netdevsim7", filepath.Join(dir, "device")); err != nil {
				t.Fatal(err)
			}
		}
		rel, _ := filepath.Rel(filepath.Join(root, "sys/class/net"), dir)
		if err := os.MkdirAll(filepath.Join(root, "sys/class/net"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, filepath.Join(root, "sys/class/net", nd)); err != nil {
			t.Fatal(err)
		}
	}
	return NewFS(root, true)
}

// A VF representor is a VF of the device's one physical port; the
// physical port and a netdev without phys_port_name are not.
func TestVFRepresentorIsAVFOfItsUplink(t *testing.T) {
	fs := repTree(t, false)
	for _, c := range []struct{ nd, role, pf string }{
		{"eth1", port.RoleVF, "eth0"}, {"eth2", port.RoleVF, "eth0"}, {"eth0", port.RoleVirtual, ""}, {"eth9", port.RoleVirtual, ""},
	} {
		p := port.Port{Netdev: c.nd}
		topology(fs, fs.Dir("/sys/class/net/"+c.nd), &p)
		if p.Role != c.role || p.PF != c.pf {
			t.Errorf("%s: role %q PF %q, want %q %q", c.nd, p.Role, p.PF, c.role, c.pf)
		}
	}
	// Two physical ports on the device: which one the VF's traffic
	// leaves by is not known, and not guessed.
	p := port.Port{Netdev: "eth1"}
	fs2 := repTree(t, true)
	topology(fs2, fs2.Dir("/sys/class/net/eth1"), &p)
	if p.Role != port.RoleVF || p.PF != "" {
		t.Errorf("with two uplinks: role %q PF %q, want a VF with no PF named", p.Role, p.PF)
	}
}

func TestVFRepresentorNames(t *testing.T) {
	for name, rep := range map[string]bool{"pf0vf0": true, "pf1vf12": true, "c1pf0vf3": true, "p0": false, "p1s2": false,
		"pf0": false, "pf0sf4": false, "pfvf": false, "": false, "pf0vf": false, "vf0pf0": false, "pf0vf0x": false} {
		if got := isVFRepresentorName(name); got != rep {
			t.Errorf("%q: representor %v, want %v", name, got, rep)
		}
	}
	if !isPhysicalPortName("p0") || !isPhysicalPortName("p1s2") || isPhysicalPortName("pf0") {
		t.Error("physical port names")
	}
}

// The device directory is listed once for both questions topology asks
// of it: a physfn link makes a VF only when it leads somewhere (a
// dangling one, as in a capture that left the PF out, does not), and a
// PF counts its virtfn* links.
func TestTopologyPhysfnAndVFsFromOneListing(t *testing.T) {
	root := t.TempDir()
	links := map[string]string{
		"sys/class/net/eth0": "../../devices/pci0000:00/0000:00:02.0/net/eth0",
		"sys/devices/pci0000:00/0000:00:02.0/net/eth0/device": "../../../0000:00:02.0",
		"sys/devices/pci0000:00/0000:00:02.0/physfn":          "../0000:00:01.0", // absent
		"sys/devices/pci0000:00/0000:00:02.0/virtfn0":         "../0000:00:02.1",
		"sys/devices/pci0000:00/0000:00:02.0/virtfn1":         "../0000:00:02.2",
		"sys/class/net/eth1":                                  "../../devices/pci0000:00/0000:00:02.1/net/eth1",
		"sys/devices/pci0000:00/0000:00:02.1/net/eth1/device": "../../../0000:00:02.1",
		"sys/devices/pci0000:00/0000:00:02.1/physfn":          "../0000:00:02.0",
	}
	for p, target := range links {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, fs := range bothResolvers(t, root) {
		pf := port.Port{Netdev: "eth0", PCI: "0000:00:02.0"}
		topology(fs, fs.Dir("/sys/class/net/eth0"), &pf)
		if pf.Role != port.RolePF || pf.VFs != 2 {
			t.Errorf("%s: eth0 (dangling physfn, two virtfn): role %q, %d VFs; want a PF with 2", resolver(fs), pf.Role, pf.VFs)
		}
		vf := port.Port{Netdev: "eth1", PCI: "0000:00:02.1"}
		topology(fs, fs.Dir("/sys/class/net/eth1"), &vf)
		if vf.Role != port.RoleVF || vf.PF != "eth0" {
			t.Errorf("%s: eth1: role %q PF %q; want a VF of eth0", resolver(fs), vf.Role, vf.PF)
		}
	}
}
