package host

import (
	"fmt"
	"maps"
	"slices"

	"github.com/rocectl/rocectl/driver/known"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// Trust and the DSCP map are one object, the port's APP table (plus OFED's
// qos/trust attribute where it exists).
//
// Undo restores the whole DSCP APP table the port had, not just the
// before-values of the profile's keys: on mlx5 every APP delete resets the
// firmware's dscp2prio[d] to 0 (mlx5e_dcbnl_ieee_delapp), and undoing a
// trust change from the word "dscp" alone could only re-add the default
// DSCP>>3 map, losing a custom one while the read-back of "trust = dscp"
// still passed.

// writeApp writes trust and the DSCP map. On upstream mlx5 trust is implied
// by the APP table: DSCP trust means at least one DSCP entry.
func writeApp(w *stepWriter) error {
	h, nd := w.h, w.port.Netdev
	if c, ok := w.change(policy.KindDSCPMap); ok {
		domain, err := policy.DSCPMapCodec.Parse(c.Value) // the DSCPs the profile maps
		if err != nil {
			return w.fail(c, err)
		}
		target := domain
		if w.undo {
			if target, err = policy.DSCPMapCodec.Parse(c.Before); err != nil {
				return w.fail(c, err)
			}
			if c.Absent {
				target = map[int]int{}
			}
		}
		if err := h.syncDSCP(w.port, domain, target); err != nil {
			return w.fail(c, err)
		}
	}
	c, ok := w.change(policy.KindTrust)
	if !ok {
		return nil
	}
	trust := w.value(c)
	if nic.HasOFEDTrust(h.FS, nd) {
		return w.fail(c, nic.SetOFEDTrust(h.FS, nd, trust))
	}
	st, err := h.K.DCB(nd)
	if err != nil {
		return w.fail(c, err)
	}
	dscpApps := dscpEntries(st.Apps)
	switch {
	case trust == "pcp" && len(dscpApps) > 0:
		return w.fail(c, h.K.DelApps(nd, dscpApps))
	case trust == "dscp" && len(dscpApps) == 0:
		// What mlnx_qos --trust dscp does upstream: the firmware's default
		// map, priority = DSCP >> 3.
		apps := make([]dcb.App, 64)
		for d := range apps {
			apps[d] = dcb.App{Selector: dcb.SelDSCP, Priority: uint8(d >> 3), Protocol: uint16(d)}
		}
		return w.fail(c, h.K.AddApps(nd, apps))
	}
	return nil
}

func dscpEntries(apps []dcb.App) []dcb.App {
	var out []dcb.App
	for _, a := range apps {
		if a.Selector == dcb.SelDSCP {
			out = append(out, a)
		}
	}
	return out
}

// deleteFirst says whether a DSCP is remapped by deleting its old entry
// before adding the new one (driver.Driver.DeleteAppFirst: bnxt). mlx5
// and generic drivers add first: mlx5 replaces a DSCP's entry in place,
// and a moment with no DSCP entry at all would flip it to PCP trust.
func deleteFirst(p *port.Port) bool { return known.For(p.Driver).DeleteAppFirst() }

// syncDSCP makes the DSCPs of domain map as target says (a DSCP missing from
// target gets no entry), in the order the driver needs (deleteFirst).
// Generic kernels keep both entries of a DSCP until the old one is deleted.
func (h *Host) syncDSCP(p *port.Port, domain, target map[int]int) error {
	var want []dcb.App
	for _, dscp := range slices.Sorted(maps.Keys(domain)) {
		if prio, ok := target[dscp]; ok {
			want = append(want, dcb.App{Selector: dcb.SelDSCP, Priority: uint8(prio), Protocol: uint16(dscp)})
		}
	}
	inDomain := func(a dcb.App) bool { _, ok := domain[int(a.Protocol)]; return ok }
	return h.setDSCPEntries(p, want, inDomain)
}

// setDSCPEntries makes the port's DSCP APP entries that scope selects equal
// to want: entries of want that are missing are added, selected entries
// not in want deleted, in the order the driver needs.
func (h *Host) setDSCPEntries(p *port.Port, want []dcb.App, scope func(dcb.App) bool) error {
	nd := p.Netdev
	stale := func() ([]dcb.App, error) {
		st, err := h.K.DCB(nd)
		if err != nil {
			return nil, err
		}
		var del []dcb.App
		for _, a := range dscpEntries(st.Apps) {
			if scope(a) && !slices.Contains(want, a) {
				del = append(del, a)
			}
		}
		return del, nil
	}
	missing := func() ([]dcb.App, error) {
		st, err := h.K.DCB(nd)
		if err != nil {
			return nil, err
		}
		var add []dcb.App
		for _, a := range want {
			if !slices.Contains(st.Apps, a) {
				add = append(add, a)
			}
		}
		return add, nil
	}
	steps := []struct {
		list func() ([]dcb.App, error)
		do   func(string, []dcb.App) error
	}{{missing, h.K.AddApps}, {stale, h.K.DelApps}}
	if deleteFirst(p) {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for _, s := range steps {
		apps, err := s.list()
		if err != nil {
			return err
		}
		if len(apps) > 0 {
			if err := s.do(nd, apps); err != nil {
				return err
			}
		}
	}
	return nil
}

// captureApps saves the port's DSCP APP table before an APP step. A port
// whose DCB state cannot be read keeps no copy: its step cannot be
// written either, and undo falls back to the before-values.
func captureApps(h *Host, _ *policy.Desired, st *Step) error {
	p := st.Changes[0].Port
	if p == nil {
		return nil
	}
	s, err := h.K.DCB(p.Netdev)
	if err != nil {
		return nil
	}
	st.DSCPApps = &AppTable{Entries: dscpEntries(s.Apps)}
	return nil
}

// undoApp puts the saved DSCP APP table back exactly, then OFED's trust
// attribute, which is a file of its own. A journal without a saved table
// (written by an older rocectl) is undone from the before-values.
func undoApp(w *stepWriter) error {
	saved := w.st.DSCPApps
	if saved == nil {
		return writeApp(w)
	}
	all := func(dcb.App) bool { return true }
	if err := w.h.setDSCPEntries(w.port, saved.Entries, all); err != nil {
		c, _ := w.change(policy.KindDSCPMap)
		if c.Key == "" {
			c = w.st.Changes[0]
		}
		return w.fail(c, err)
	}
	if c, ok := w.change(policy.KindTrust); ok && nic.HasOFEDTrust(w.h.FS, w.port.Netdev) {
		return w.fail(c, nic.SetOFEDTrust(w.h.FS, w.port.Netdev, c.Before))
	}
	return nil
}

// checkAppRestored: the DSCP APP table is the saved one, entry for entry,
// and every setting of the step reads its before-value.
func checkAppRestored(h *Host, st Step) error {
	if err := h.checkSettings(st, true); err != nil {
		return err
	}
	if st.DSCPApps == nil {
		return nil
	}
	s, err := h.K.DCB(st.Changes[0].Port.Netdev)
	if err != nil {
		return fmt.Errorf("read back the APP table: %w", err)
	}
	have, want := dscpEntries(s.Apps), st.DSCPApps.Entries
	sortApps(have)
	want = slices.Clone(want)
	sortApps(want)
	if !slices.Equal(have, want) {
		return &policy.Mismatch{Key: st.Scope + ".qos.dscp_apps", Want: fmt.Sprintf("%d saved DSCP APP entries", len(want)),
			Have: fmt.Sprintf("%d entries, not the saved ones", len(have))}
	}
	return nil
}

func sortApps(apps []dcb.App) {
	slices.SortFunc(apps, func(a, b dcb.App) int {
		if a.Protocol != b.Protocol {
			return int(a.Protocol) - int(b.Protocol)
		}
		return int(a.Priority) - int(b.Priority)
	})
}
