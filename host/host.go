package host

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/internal/lib/parallel"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// Host is a host as the backend reaches it: files under a root and the
// kernel's non-file interfaces.
type Host struct {
	FS  nic.FS
	K   nic.Kernel
	Log *slog.Logger
	// NotCaptured lists host path prefixes the source holds no files
	// under because nobody captured them (snapshot.Meta.NotCaptured): a
	// setting read from there is unknown rather than unsupported.
	NotCaptured []string
	// FW reaches the ConnectX devices' NVConfig ([firmware]); nil: the
	// firmware settings are unknown.
	FW Firmware
	fw firmwareCache

	// ecn is, per netdev, the interface that reaches its ECN knobs (or
	// why there is none): probed once per discovery, not before each of a
	// port's thirty-odd ECN reads and writes.
	mu  sync.Mutex
	ecn map[string]ecnProbe
}

type ecnProbe struct {
	ecn *nic.ECN
	err error
}

// Discover lists the host's RoCE ports, and forgets what was probed on the
// ports found before (a driver may have been reloaded since).
func (h *Host) Discover() *nic.Inventory {
	h.mu.Lock()
	h.ecn = nil
	h.mu.Unlock()
	h.fw.reset()
	return nic.Discover(h.FS, h.K, h.logger())
}

// ecnOf returns the port's ECN interface, probing it on first use.
func (h *Host) ecnOf(p *port.Port) (*nic.ECN, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if pr, ok := h.ecn[p.Netdev]; ok {
		if pr.err != nil {
			return nil, pr.err
		}
		return pr.ecn.On(h.FS), nil
	}
	e, err := nic.OpenECN(h.FS, *p)
	if h.ecn == nil {
		h.ecn = map[string]ecnProbe{}
	}
	h.ecn[p.Netdev] = ecnProbe{e, err}
	return e, err
}

func (h *Host) logger() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

// Ports returns inv's ports as policy resolves against them. With withGID
// it also finds the RoCE v2 IPv4 GID index NCCL would select on each port
// (only NCCL_IB_GID_INDEX = "auto" and verbs verification need it, and it
// costs three reads per GID entry); otherwise RoCEv2GID is -1. inv's ports
// are left as discovery found them.
func (h *Host) Ports(inv *nic.Inventory, withGID bool) []port.Port {
	out := append(make([]port.Port, 0, len(inv.Ports)), inv.Ports...)
	// Each GID table is dozens of files (up to 255 entries of three on
	// mlx5), read until the selected entry: the ports' tables are read
	// concurrently, as Observe reads ports.
	parallel.Each(len(out), func(i int) {
		p := &out[i]
		p.RoCEv2GID = -1
		if !withGID {
			return
		}
		// Any netdev: the port's GID table holds its own GIDs and those of
		// its upper devices (VLAN, bond, macvlan), and NCCL never reads
		// gid_attrs/ndevs, so a VLAN's GID counts.
		g, ok, err := nic.SelectGIDOn(h.FS, p.RDMADevice, p.PortNum, nic.GIDQuery{})
		switch {
		case err != nil && p.RDMADevice != "":
			p.GIDUnknown = err.Error()
		case ok:
			p.RoCEv2GID = g.Index
		}
	})
	return out
}

// Observe reads the host's current value of every desired setting and
// changes nothing it is given. d should be placed (Place), so that what
// is read is what the caller compares: a bond's slaves, nothing a VF
// cannot take; an unplaced d is read as placed, keyed by where each
// setting lives. Ports are read concurrently, a few at a time
// (GOMAXPROCS): each port's reads are independent (a bond's slaves stay
// in their bond's port), and on a 64-port host the audit's time is mostly
// these reads. The kernel interfaces serialise what must be serialised
// (one netlink request at a time per socket).
func (h *Host) Observe(d *policy.Desired) *policy.Observed {
	d = Place(d) // a copy, unless the caller placed it (and must, to compare)
	h.fw.reset() // the firmware is asked again on every observation
	parts := make([]*policy.Observed, len(d.Ports))
	parallel.Each(len(d.Ports), func(i int) { parts[i] = h.observe(nil, d.Ports[i].Settings) })
	ncclFile := ""
	if d.Profile != nil && d.Profile.NCCL.Write != nil {
		ncclFile = *d.Profile.NCCL.Write
	}
	hostPart := h.observe(h.newPortReader(nil, ncclFile), d.Host)
	// The host part first, as before: a later part wins a key it shares.
	return mergeObserved(append([]*policy.Observed{hostPart}, parts...))
}

// mergeObserved puts the ports' observations in one, each map made at
// its final size: grown one port at a time, a 64-port host's two
// thousand values were rehashed several times over.
func mergeObserved(parts []*policy.Observed) *policy.Observed {
	merge := func(get func(*policy.Observed) map[string]string) map[string]string {
		n := 0
		for _, p := range parts {
			n += len(get(p))
		}
		m := make(map[string]string, n)
		for _, p := range parts {
			maps.Copy(m, get(p))
		}
		return m
	}
	return &policy.Observed{
		Values:      merge(func(o *policy.Observed) map[string]string { return o.Values }),
		Unsupported: merge(func(o *policy.Observed) map[string]string { return o.Unsupported }),
		Notes:       merge(func(o *policy.Observed) map[string]string { return o.Notes }),
		Errors:      merge(func(o *policy.Observed) map[string]string { return o.Errors }),
		Unknown:     merge(func(o *policy.Observed) map[string]string { return o.Unknown }),
		Inferred:    merge(func(o *policy.Observed) map[string]string { return o.Inferred }),
		Pending:     merge(func(o *policy.Observed) map[string]string { return o.Pending }),
	}
}

// observe reads settings, each through its port's reader (one reader per
// netdev: a bond's slaves each have their own), or through hostReader for
// host settings. A LAG whose slaves hold different values gets a note.
func (h *Host) observe(hostReader *portReader, settings []policy.Setting) *policy.Observed {
	o := policy.NewObserved()
	o.Values = make(map[string]string, len(settings)) // most settings have a value
	// One port's settings (its slaves' too): the readers hold what they
	// open only until the port is read.
	readers := h.portReadersHeld()
	defer readers.close()
	lag := lagValues{}
	defer lag.noteDifferences(o)
	for _, s := range settings {
		r := hostReader
		if s.Port != nil {
			r = readers.of(s.Port)
		}
		v, present, err := r.read(s, o.Notes)
		if s.Port != nil && s.Port.Master != "" && err == nil {
			lag.add(s, v, present)
		}
		var unknown *unknownError
		switch {
		case err == nil && present:
			o.Values[s.Key] = v
			if cur, ok := r.fwPending[s.Key]; ok {
				o.Pending[s.Key] = cur
			}
		case err == nil:
		case errors.As(err, &unknown):
			o.Unknown[s.Key] = unknown.why
		case errors.Is(err, nic.ErrNotCaptured):
			// Checked before "unsupported": a snapshot that does not
			// hold a value says nothing about the driver.
			o.Unknown[s.Key] = unknownReason(err)
			var nc *nic.NotCapturedError
			if errors.As(err, &nc) {
				if nc.Inferred != "" {
					o.Inferred[s.Key] = nc.Inferred
				}
				if nc.Note != "" {
					o.Notes[s.Key] = nc.Note
				}
			}
		case (isUnsupported(err) || errors.Is(err, os.ErrNotExist)) && h.filesNotCaptured(s) != "":
			o.Unknown[s.Key] = fmt.Sprintf("%s (%s)", policy.UnknownReason, h.filesNotCaptured(s))
		case isUnsupported(err):
			o.Unsupported[s.Key] = unsupportedReason(err, r, s.Kind)
		default:
			o.Errors[s.Key] = err.Error()
		}
	}
	return o
}

// filesNotCaptured returns the NotCaptured prefix that holds the files a
// sysfs/configfs/debugfs setting of s's port is read from (its kind's
// registry entry lists them), or "".
func (h *Host) filesNotCaptured(s policy.Setting) string {
	if len(h.NotCaptured) == 0 || s.Port == nil {
		return ""
	}
	e, err := kindOf(s.Kind)
	if err != nil || e.files == nil {
		return ""
	}
	paths := e.files(s.Port)
	for _, prefix := range h.NotCaptured {
		for _, path := range paths {
			if holds(prefix, path) {
				return prefix + " not captured"
			}
		}
	}
	return ""
}

// ecnFiles are the directories nic.OpenECN looks in for a port's ECN
// knobs, and the RDMA device's sysfs, which names the device whose
// bnxt_re directory it looks in; mainline bnxt_re's debugfs is named
// after the PCI function.
func ecnFiles(p *port.Port) []string {
	ofed, bnxt, mlx5 := nic.ECNDirs(*p)
	paths := []string{ofed, mlx5}
	if p.PCI != "" {
		paths = append(paths, nic.BnxtDebugfsDir(*p))
	}
	if p.RDMADevice != "" {
		paths = append(paths, bnxt, nic.IrdmaDir(*p), "/sys/class/infiniband/"+p.RDMADevice)
	}
	return paths
}

// rdmaCMFiles is the RDMA device's rdma_cm configfs directory (default
// RoCE mode and TOS).
func rdmaCMFiles(p *port.Port) []string {
	return []string{"/sys/kernel/config/rdma_cm/" + p.RDMADevice}
}

// rdmaDeviceFiles is the RDMA device's sysfs directory (its traffic class).
func rdmaDeviceFiles(p *port.Port) []string {
	return []string{"/sys/class/infiniband/" + p.RDMADevice}
}

// notCaptured reports whether a NotCaptured prefix holds path.
func (h *Host) notCaptured(path string) bool {
	return slices.ContainsFunc(h.NotCaptured, func(prefix string) bool { return holds(prefix, path) })
}

// holds says whether the path prefix holds path: it is path, or a
// directory above it.
func holds(prefix, path string) bool {
	return path == prefix || strings.HasPrefix(path, strings.TrimSuffix(prefix, "/")+"/")
}

// unknownReason words a value a snapshot does not hold: "unknown (not in
// the snapshot)" with what was missing, e.g. "pause eth0".
func unknownReason(err error) string {
	var nc *nic.NotCapturedError
	if errors.As(err, &nc) && nc.Op != "" {
		what := nc.Op
		if len(nc.Parts) > 0 {
			what += "." + strings.Join(nc.Parts, ",")
		}
		return fmt.Sprintf("%s (%s of %s)", policy.UnknownReason, what, nc.Name)
	}
	return policy.UnknownReason
}

// isUnsupported says whether err means "this NIC/driver cannot do that" as
// opposed to a failure worth an error.
func isUnsupported(err error) bool {
	return errors.Is(err, nic.ErrUnsupported) || errors.Is(err, syscall.EOPNOTSUPP) ||
		errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.ENOTTY)
}

// unsupportedReason words an "unsupported": what is missing, the driver
// it is missing on (named when the error does not), and where the
// setting lives instead as the port's driver layer knows it (firmware,
// another driver build, a vendor tool), so that no "unsupported" leaves
// the operator without a next place to look.
func unsupportedReason(err error, r *portReader, k policy.Kind) string {
	reason := err.Error()
	if r.port == nil {
		return reason
	}
	if r.driver == "" || !strings.Contains(reason, r.driver) {
		reason += fmt.Sprintf(" (driver %s)", orUnknown(r.driver))
	}
	if r.driver == "" {
		return reason // which driver's knowledge applies is not known
	}
	if where := known.For(r.driver).Instead(k, r.portFacts()); where != "" {
		reason += "; instead: " + where
	}
	return reason
}
