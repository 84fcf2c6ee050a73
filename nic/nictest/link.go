package nictest

import (
	"fmt"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// The link's speed, its toggles and its training: the kernel's state of a
// link, which a driver model changes through simstate.Link (mlx5sim
// toggles the link on a PFC change and computes its buffers with the
// speed it finds).

// trainingReads is how many Speed reads find a toggled link still
// training: more than one, so that a caller that reads once and goes on
// computes while it trains.
const trainingReads = 2

// toggle is a driver taking link name down and up: counted, and a link
// that was up trains for the next trainingReads Speed reads. Called with
// s.mu held.
func (s *Sim) toggle(name string, ls *snapshot.LinkState) {
	s.toggles[name]++
	if ls.Link != nil && ls.Link.OperState == "up" {
		s.training[name] = trainingReads
	}
}

// linkSpeed is what the driver finds (mlx5e_port_linkspeed for
// calculate_xoff): 0 (mlx5e_port_linkspeed fails, and calculate_xoff takes
// 40 Gb/s) while a toggled link trains, PTYS having no operational
// protocol then, and on a link not up; else SetSpeed's, 100 Gb/s by
// default. Called with s.mu held.
func (s *Sim) linkSpeed(name string) int {
	if s.training[name] > 0 {
		return 0
	}
	if ls := s.st.Links[name]; ls != nil && ls.Link != nil && ls.Link.OperState != "up" {
		return 0 // a link down has no operational protocol either
	}
	if v, ok := s.speed[name]; ok {
		return v
	}
	return 100000
}

// Train reads the speed of name until it is known: a toggled link has
// trained. A link that is not up never does.
func (s *Sim) Train(name string) error {
	for range trainingReads + 1 {
		mbps, err := s.Speed(name)
		if err != nil || mbps > 0 {
			return err
		}
	}
	return fmt.Errorf("%s: no speed: the link is not up", name)
}

// SetSpeed sets the link speed (Mb/s) the driver models compute with
// (default 100000; mlx5sim's xoff). Like mlx5's carrier-up path
// (mlx5e_update_carrier, since the revert 3fbfe251cc9f) it recomputes no
// thresholds: the next buffer configuration uses the new speed.
func (s *Sim) SetSpeed(name string, mbps int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.speed[name] = mbps
}

// LinkToggles counts the times a driver toggled the link of name (mlx5:
// every PFC enable change, mlx5sim.Model.SetPFC).
func (s *Sim) LinkToggles(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.toggles[name]
}

// ManualLossless sets up an mlx5 netdev as a host a recipe already made
// lossless: global pause off, priority 3 mapped to buffer 1, buffers 0
// and 1 of size0 and size1 bytes (manual buffer mode), PFC on priority 3
// with a 7 m cable. Global pause goes first: with it on, mlx5 makes every
// buffer a priority maps to lossless (fill_pfc_en). Every write goes
// through the driver model (mlx5sim), so its buffer checks apply. The PFC
// change toggles the link and computes the thresholds while it trains
// (40 Gb/s): once it is up, an identical PFC write computes them at its
// speed, as rocectl leaves a port.
func (s *Sim) ManualLossless(name string, size0, size1 uint32) error {
	if err := s.SetPause(name, nic.Pause{}); err != nil {
		return err
	}
	if err := s.SetBuffer(name, dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{size0, size1}}); err != nil {
		return err
	}
	pfc := dcb.PFC{Enable: 1 << 3, Delay: 7}
	if err := s.SetPFC(name, pfc); err != nil {
		return err
	}
	if err := s.Train(name); err != nil {
		return err
	}
	return s.SetPFC(name, pfc)
}
