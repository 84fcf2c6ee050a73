package nictest

import (
	"github.com/rocectl/rocectl/nic/nictest/bnxtsim"
	"github.com/rocectl/rocectl/nic/nictest/icesim"
	"github.com/rocectl/rocectl/nic/nictest/mlx5sim"
	"github.com/rocectl/rocectl/nic/nictest/peersim"
	"github.com/rocectl/rocectl/nic/nictest/simstate"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// DriverModel is what the Sim asks of a link's driver on each write whose
// outcome depends on it (and on the dcbnl read): one model per link,
// chosen by the driver name of its DriverInfo (models), defined in the
// leaf package simstate so that the model packages need not import
// nictest.
type DriverModel = simstate.Model

// models makes a link's driver model by its driver name; a driver not
// named here gets the generic kernel behaviour (simstate.Generic).
var models = map[string]func() DriverModel{
	snapshot.DriverMLX5:  func() DriverModel { return mlx5sim.New() },
	snapshot.DriverBnxt:  func() DriverModel { return bnxtsim.New() },
	icesim.Driver:        func() DriverModel { return icesim.New() },
	snapshot.DriverQede:  func() DriverModel { return &peersim.Qede{} },
	snapshot.DriverCxgb4: func() DriverModel { return &peersim.Cxgb4{} },
}

// modelOf is link name's driver model, made on first use by the driver
// ls names (nil ls: the generic one, not kept). Called with s.mu held.
func (s *Sim) modelOf(name string, ls *snapshot.LinkState) DriverModel {
	if m, ok := s.models[name]; ok {
		return m
	}
	if ls == nil {
		return simstate.Generic{}
	}
	var m DriverModel = simstate.Generic{}
	if mk, ok := models[driverOf(ls)]; ok {
		m = mk()
	}
	s.models[name] = m
	return m
}

// model is modelOf for a link looked up by name. Called with s.mu held.
func (s *Sim) model(name string) DriverModel {
	return s.modelOf(name, s.st.Links[name])
}

func driverOf(ls *snapshot.LinkState) string {
	if ls.Driver == nil {
		return ""
	}
	return ls.Driver.Driver
}

// simLink is what a model sees of link name (simstate.Link).
type simLink struct {
	s    *Sim
	name string
	ls   *snapshot.LinkState
}

func (l simLink) Name() string               { return l.name }
func (l simLink) State() *snapshot.LinkState { return l.ls }
func (l simLink) HardwareDSCP() map[int]int  { return l.s.hwDSCP(l.name, l.ls) }
func (l simLink) Speed() int                 { return l.s.linkSpeed(l.name) }
func (l simLink) ToggleLink()                { l.s.toggle(l.name, l.ls) }
func (s *Sim) link(name string, ls *snapshot.LinkState) simstate.Link {
	return simLink{s: s, name: name, ls: ls}
}

// mlx5 (mlx5sim).

// MLX5Thresholds is one mlx5 port's receive buffers as the driver last
// programmed them (mlx5sim.Thresholds).
type MLX5Thresholds = mlx5sim.Thresholds

// MLX5PrioPauseCounters returns the per-priority PFC counters of priority
// p, which exist only while PFC is enabled on p (mlx5sim).
func MLX5PrioPauseCounters(p int) []string { return mlx5sim.PrioPauseCounters(p) }

// MLX5GlobalPauseCounters returns the global pause counter names, present
// only while rx or tx global pause is enabled (mlx5sim).
func MLX5GlobalPauseCounters() []string { return mlx5sim.GlobalPauseCounters() }

// Thresholds returns the receive buffer thresholds the mlx5 driver of name
// last computed (mlx5sim.Model.Thresholds). ok is false while the driver
// has computed none (the port is not in manual buffer mode, where the
// firmware sizes the buffers: not modelled), and for a link of another
// driver.
func (s *Sim) Thresholds(name string) (th MLX5Thresholds, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, isMLX5 := s.model(name).(*mlx5sim.Model); isMLX5 {
		return m.Thresholds()
	}
	return MLX5Thresholds{}, false
}

// ManualBuffer says whether the mlx5 driver of name is in manual buffer
// mode: set by the first buffer write that changed anything, cleared only
// by a driver reload (mlx5sim.Model.ManualBuffer).
func (s *Sim) ManualBuffer(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.model(name).(*mlx5sim.Model)
	return ok && m.ManualBuffer()
}

// FirmwareWilling says whether the mlx5 firmware DCBX of link name is
// willing (dcbx_param willing_admin), which no dcbnl read shows: a NIC
// starts willing unless SetFirmwareNotWilling (an NVM setting) says not.
// Links of other drivers answer true.
func (s *Sim) FirmwareWilling(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.model(name).(*mlx5sim.Model)
	return !ok || m.FirmwareWilling()
}

// SetFirmwareNotWilling makes mlx5 link name's firmware DCBX not willing,
// as an NVM configuration can (nothing on a link of another driver).
func (s *Sim) SetFirmwareNotWilling(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.model(name).(*mlx5sim.Model); ok {
		m.SetFirmwareNotWilling()
	}
}

// bnxt (bnxtsim).

// SetQueueCaps makes bnxt link name's firmware offer maxTC traffic
// classes and maxLLTC lossless queues (bnxtsim.SetQueueCaps), which the
// driver reports as ets_cap and pfc_cap.
func (s *Sim) SetQueueCaps(name string, maxTC, maxLLTC uint8) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ls := s.st.Links[name]; ls != nil {
		bnxtsim.SetQueueCaps(ls.DCB, maxTC, maxLLTC)
	}
}

// UnprotectedPFC lists the priorities that dcbnl reports PFC-enabled on
// bnxt link name but that the firmware does not keep lossless
// (bnxtsim.Model.UnprotectedPFC); none on a link of another driver.
func (s *Sim) UnprotectedPFC(name string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := s.st.Links[name]
	if ls == nil {
		return nil
	}
	if m, ok := s.modelOf(name, ls).(*bnxtsim.Model); ok {
		return m.UnprotectedPFC(ls.DCB)
	}
	return nil
}

// qede and cxgb4 (peersim).

// Partner is what the switch port announces in DCBX, as the NIC firmware
// that runs the DCBX agent keeps it (peersim.Partner).
type Partner = peersim.Partner

// partnerModel is a model that reports the link partner (peersim).
type partnerModel interface {
	SetPartner(p *Partner)
}

// SetPartner says what the NIC firmware of link name has heard from the
// switch; nil means nothing yet (no DCBX peer on the link, or the
// firmware has not negotiated). Only qede and cxgb4 links report it
// (peersim); on others it is ignored.
func (s *Sim) SetPartner(name string, p *Partner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.model(name).(partnerModel); ok {
		m.SetPartner(p)
	}
}
