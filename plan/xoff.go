package plan

import (
	"fmt"
	"slices"

	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/driver/mlx5"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// The recomputes an MTU change or a PFC link toggle needs on an mlx5
// port in manual buffer mode (why: driver/mlx5/xoff.go), placed in the
// plan and written.

// recomputes adds the recomputes an MTU change needs on the mlx5
// ports in manual buffer mode that it reaches (the port itself, or each
// slave of a bond, whose MTU bond_change_mtu sets), writes the MTU before
// their buffer, PFC and cable length changes, and refuses an MTU at which
// a lossless buffer would be too small for the driver.
func (pl *planning) recomputes() {
	plan := pl.plan
	// The recomputes go around their MTU change, put in when every port
	// has been seen: the plan is rebuilt once, not once per port (on 64
	// ports that was 480 MB of copies per plan).
	var arounds []around
	for _, dp := range pl.d.Ports {
		mtuAt := pl.first(dp.Port.Netdev, func(c policy.Change) bool { return c.Kind == policy.KindMTU })
		if mtuAt < 0 {
			continue
		}
		newMTU, err := policy.IntCodec.Parse(plan.Changes[mtuAt].Value)
		if err != nil {
			pl.undecodable(plan.Changes[mtuAt], err)
			continue
		}
		var pre, post []policy.Change
		var ports []string
		for _, p := range buffersReachedByMTU(dp, plan.Changes[mtuAt].Port) {
			if !known.For(p.Driver).Caps().BufferChecks || !managesMLX5Buffers(dp.Settings, p.Netdev) {
				continue
			}
			before, after, ok := pl.xoffRecomputes(p, plan.Changes[mtuAt], newMTU)
			if !ok {
				continue
			}
			ports = append(ports, p.Netdev)
			pre = append(pre, before)
			if after != nil {
				post = append(post, *after)
			}
		}
		if len(ports) == 0 {
			continue
		}
		mtuAt = pl.mtuFirst(mtuAt, ports)
		arounds = append(arounds, around{netdev: dp.Port.Netdev, key: plan.Changes[mtuAt].Key, pre: pre, post: post})
	}
	pl.insertAround(arounds)
	pl.planToggleRecomputes()
}

// afterLinkToggle is the Arg of a recompute that follows a link toggle:
// its write waits for the link's speed first (mlx5.AfterLinkToggleArg).
const afterLinkToggle = mlx5.AfterLinkToggleArg

// planToggleRecomputes adds, on each mlx5 port in manual buffer mode whose
// link is up at plan time and whose PFC priorities change (a slave of a
// RoCE LAG included), a recompute after the port's last PFC, buffer or
// cable write and one before its PFC change, whose undo comes after
// rollback has put the PFC back (toggling the link again). Both wait for
// the link's speed before they write. Called by recomputes, last,
// with the index up to date.
func (pl *planning) planToggleRecomputes() {
	var arounds []around
	for _, dp := range pl.d.Ports {
		for _, p := range buffersReachedByMTU(dp, &dp.Port) {
			if known.For(p.Driver).Caps().BufferChecks && managesMLX5Buffers(dp.Settings, p.Netdev) {
				arounds = append(arounds, pl.toggleRecomputes(p.Netdev)...)
			}
		}
	}
	if len(arounds) > 0 {
		pl.insertAround(arounds)
	}
}

// toggleRecomputes places netdev's two recomputes when its PFC priorities
// change, or notes on the change why there are none.
func (pl *planning) toggleRecomputes(netdev string) []around {
	plan := pl.plan
	ci := pl.first(netdev, func(c policy.Change) bool { return c.Kind == policy.KindPFC })
	if ci < 0 || plan.Changes[ci].Before == plan.Changes[ci].Value {
		return nil
	}
	c := plan.Changes[ci]
	p := c.Port
	// The link as it is now: a LAG's slaves carry no operstate of
	// their own (Place makes them from the bond's port).
	li, err := pl.h.Link(p.Netdev)
	if err != nil {
		return nil
	}
	if li.OperState != "up" {
		plan.Changes[ci].Note = joinNote(c.Note, mlx5.LinkNotUpNote(li.OperState))
		return nil
	}
	cur, ok := pl.mlx5State(p.Netdev, p.SpeedMbps)
	if !ok {
		return nil
	}
	mtu := cur.MTU // the MTU the recomputes see: MTU changes come first (mtuFirst), or last (mtuLast)
	for _, nd := range []string{p.Netdev, p.Master} {
		if pl.mtuLast[p.Netdev] {
			break
		}
		if i := pl.first(nd, func(m policy.Change) bool { return m.Kind == policy.KindMTU }); nd != "" && i >= 0 {
			v, err := policy.IntCodec.Parse(plan.Changes[i].Value)
			if err != nil {
				pl.undecodable(plan.Changes[i], err)
				return nil
			}
			mtu = v
		}
	}
	last := -1 // the port's last PFC, buffer or cable change
	for _, i := range pl.at[p.Netdev] {
		if k := plan.Changes[i].Kind; k == policy.KindPFC || isBufferKind(k) {
			last = i
		}
	}
	mk := func(name, note string) policy.Change {
		v := policy.IntCodec.Format(mtu)
		return policy.Change{Setting: policy.Setting{Key: p.Netdev + "." + name, Scope: p.Netdev, Name: name,
			Kind: policy.KindXoffRecompute, Arg: afterLinkToggle, Value: v, From: "qos.pfc", Port: p}, Before: v, Note: note}
	}
	pre := mk("qos.pfc_xoff_recompute_on_rollback", mlx5.ToggleRecomputeNote+"; written before the PFC change, where it changes nothing, so that rollback recomputes them once it has put the PFC back")
	post := mk("qos.pfc_xoff_recompute", mlx5.ToggleRecomputeNote+"; here after the port's PFC and buffer writes")
	if plan.Changes[last].Key == c.Key {
		return []around{{netdev: p.Netdev, key: c.Key, pre: []policy.Change{pre}, post: []policy.Change{post}}}
	}
	return []around{{netdev: p.Netdev, key: c.Key, pre: []policy.Change{pre}},
		{netdev: p.Netdev, key: plan.Changes[last].Key, post: []policy.Change{post}}}
}

// buffersReachedByMTU lists the physical ports whose buffers dp's MTU
// change (on port) reaches: the port itself, or each slave of a bond as its
// settings name it (Place has made them one Port each).
func buffersReachedByMTU(dp policy.DesiredPort, pt *port.Port) []*port.Port {
	if len(dp.Port.Slaves()) == 0 {
		return []*port.Port{pt}
	}
	var out []*port.Port
	for _, s := range dp.Settings {
		if s.Port != nil && s.Port.Master == dp.Port.Netdev && !slices.ContainsFunc(out, func(p *port.Port) bool { return p.Netdev == s.Port.Netdev }) {
			out = append(out, s.Port)
		}
	}
	return out
}

// managesMLX5Buffers says whether the profile manages netdev's receive
// buffers, which puts (or keeps) an mlx5 port in manual buffer mode.
func managesMLX5Buffers(ss []policy.Setting, netdev string) bool {
	return slices.ContainsFunc(ss, func(s policy.Setting) bool {
		return s.Port != nil && s.Port.Netdev == netdev && isBufferWrite(s.Kind)
	})
}

// managesBuffers says whether one port's (or bond's) desired settings
// write its receive buffers; on a bond they name the bond, not the slave
// whose buffers they are.
func managesBuffers(desired []policy.Setting) bool {
	return slices.ContainsFunc(desired, func(s policy.Setting) bool { return isBufferWrite(s.Kind) })
}

// isBufferWrite says whether k writes the receive buffers themselves
// (prio→buffer map or sizes), not only what they are sized from.
func isBufferWrite(k policy.Kind) bool {
	return k == policy.KindPrioBuffer || k == policy.KindBufferSize
}

func isBufferKind(k policy.Kind) bool {
	return k == policy.KindPrioBuffer || k == policy.KindBufferSize || k == policy.KindCableLength
}

// xoffRecomputes returns p's two recomputes for the MTU change mtu: the one
// before it (for rollback) and, unless a buffer, PFC or cable length
// change of p follows, the one after. ok is false when p has no buffers
// to recompute (or they cannot be read: the plan reports the settings'
// own errors), or its MTU does not change; a lossless buffer too small
// for the new MTU refuses the MTU change.
func (pl *planning) xoffRecomputes(p *port.Port, mtu policy.Change, newMTU int) (before policy.Change, after *policy.Change, ok bool) {
	plan := pl.plan
	cur, ok := pl.mlx5State(p.Netdev, p.SpeedMbps)
	if !ok {
		pl.uncheckable(p.Netdev, mtu) // its recomputes cannot be planned
		return policy.Change{}, nil, false
	}
	if cur.MTU == newMTU {
		return policy.Change{}, nil, false
	}
	follows, buffersChange := false, false
	final := cur
	final.MTU = newMTU
	for _, i := range pl.at[p.Netdev] {
		c := plan.Changes[i]
		switch c.Kind {
		case policy.KindPFC, policy.KindCableLength:
			follows = true
			if err := setMLX5(&final, c); err != nil {
				pl.undecodable(c, err)
				return policy.Change{}, nil, false
			}
			if c.Kind == policy.KindPFC {
				final.Lossless = mlx5.LosslessBy(final.PFC, final.Prio2Buf)
			}
		case policy.KindPrioBuffer, policy.KindBufferSize:
			follows, buffersChange = true, true
		}
	}
	if pl.mtuLast[p.Netdev] {
		follows = false // its PFC and buffer changes come before it
	}
	// With buffer changes, planMLX5Port has checked the final state,
	// MTU included. Without, the recompute at the new MTU checks today's
	// buffers.
	if !buffersChange {
		if why := mlx5.MTUProblem(final); why != "" {
			pl.refuse(mtu, slaveOf(p, mtu)+why)
			return policy.Change{}, nil, false
		}
	}
	mk := func(name string, mtu int, note string) policy.Change {
		v := policy.IntCodec.Format(mtu)
		return policy.Change{Setting: policy.Setting{Key: p.Netdev + "." + name, Scope: p.Netdev, Name: name,
			Kind: policy.KindXoffRecompute, Value: v, From: "link.mtu", Port: p}, Before: v, Note: note}
	}
	before = mk("link.xoff_recompute_on_rollback", cur.MTU, mlx5.XoffRecomputeNote+fmt.Sprintf("; written before the MTU change, where it changes nothing, so that rollback recomputes them for MTU %d once it has restored the MTU", cur.MTU))
	if !follows {
		a := mk("link.xoff_recompute", newMTU, mlx5.XoffRecomputeNote+fmt.Sprintf("; here for MTU %d, after the MTU change", newMTU))
		after = &a
	}
	return before, after, true
}

// slaveOf names p when the MTU change is its bond's.
func slaveOf(p *port.Port, mtu policy.Change) string {
	if mtu.Port != nil && mtu.Port.Netdev != p.Netdev {
		return p.Netdev + ": "
	}
	return ""
}

// mtuFirst moves the MTU change at mtuAt before the first buffer, PFC or
// cable length change of ports, so that the driver computes their
// thresholds with the final MTU (Kind order has it there already; this
// keeps it so whatever reordered the plan since), and returns where it is.
// A port whose buffer path writes the MTU after a first buffer step (to
// grow its lossless buffers for the new MTU at the old one) keeps it.
func (pl *planning) mtuFirst(mtuAt int, ports []string) int {
	plan := pl.plan
	if slices.ContainsFunc(ports, func(nd string) bool { return pl.mtuAfterBuffers[nd] }) {
		return mtuAt // its buffer path placed it (placePath)
	}
	first := -1
	for _, nd := range ports {
		i := pl.first(nd, func(c policy.Change) bool { return c.Kind == policy.KindPFC || isBufferKind(c.Kind) })
		if i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first < 0 || first > mtuAt {
		return mtuAt
	}
	mtu := &plan.Changes[mtuAt]
	mtu.Note = joinNote(mtu.Note, "written before the buffer and PFC changes: mlx5 computes the buffer thresholds with the MTU of the moment")
	pl.move(mtuAt, first)
	return first
}
