package snapshot

import (
	"maps"
	"slices"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
)

// Deep copies: the replay kernel and the simulator hand out copies so a
// caller that edits what it got cannot change the recorded state.

func ptrCopy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Clone returns a deep copy of st.
func (st *KernelState) Clone() *KernelState {
	if st == nil {
		return nil
	}
	c := &KernelState{
		Links:       make(map[string]*LinkState, len(st.Links)),
		Errors:      maps.Clone(st.Errors),
		NotCaptured: slices.Clone(st.NotCaptured),
	}
	if st.RDMA != nil {
		c.RDMA = &RDMAState{Links: slices.Clone(st.RDMA.Links)}
	}
	for name, ls := range st.Links {
		c.Links[name] = ls.Clone()
	}
	if st.Devlink != nil {
		c.Devlink = make(map[string][]nic.DevlinkParam, len(st.Devlink))
		for dev, ps := range st.Devlink {
			c.Devlink[dev] = cloneParams(ps)
		}
	}
	return c
}

// Clone returns a deep copy of ls.
func (ls *LinkState) Clone() *LinkState {
	if ls == nil {
		return nil
	}
	return &LinkState{
		Link:                 ptrCopy(ls.Link),
		Driver:               ptrCopy(ls.Driver),
		Pause:                ptrCopy(ls.Pause),
		Rings:                ptrCopy(ls.Rings),
		PrivFlags:            maps.Clone(ls.PrivFlags),
		Stats:                maps.Clone(ls.Stats),
		PFCPreventionTimeout: ptrCopy(ls.PFCPreventionTimeout),
		DCB:                  cloneDCB(ls.DCB),
		Errors:               maps.Clone(ls.Errors),
		NotCaptured:          slices.Clone(ls.NotCaptured),
		Inferred:             cloneInferred(ls.Inferred),
	}
}

func cloneInferred(m map[string]*Inference) map[string]*Inference {
	if m == nil {
		return nil
	}
	out := make(map[string]*Inference, len(m))
	for op, inf := range m {
		c := *inf
		c.From = slices.Clone(inf.From)
		out[op] = &c
	}
	return out
}

func cloneDCB(s *dcb.State) *dcb.State {
	if s == nil {
		return nil
	}
	return &dcb.State{
		ETS:      ptrCopy(s.ETS),
		PFC:      ptrCopy(s.PFC),
		Apps:     slices.Clone(s.Apps),
		Buffer:   ptrCopy(s.Buffer),
		Maxrate:  ptrCopy(s.Maxrate),
		AppTrust: slices.Clone(s.AppTrust),
		DCBX:     ptrCopy(s.DCBX),
		Peer:     clonePeer(s.Peer),
		CEEPeer:  cloneCEEPeer(s.CEEPeer),
	}
}

func clonePeer(p *dcb.Peer) *dcb.Peer {
	if p == nil {
		return nil
	}
	return &dcb.Peer{ETS: ptrCopy(p.ETS), PFC: ptrCopy(p.PFC), App: clonePeerApp(p.App)}
}

func cloneCEEPeer(p *dcb.CEEPeer) *dcb.CEEPeer {
	if p == nil {
		return nil
	}
	return &dcb.CEEPeer{PG: ptrCopy(p.PG), PFC: ptrCopy(p.PFC), App: clonePeerApp(p.App)}
}

func clonePeerApp(a *dcb.PeerApp) *dcb.PeerApp {
	if a == nil {
		return nil
	}
	return &dcb.PeerApp{Info: ptrCopy(a.Info), Entries: slices.Clone(a.Entries)}
}

func cloneParams(ps []nic.DevlinkParam) []nic.DevlinkParam {
	if ps == nil {
		return nil
	}
	out := make([]nic.DevlinkParam, len(ps))
	for i, p := range ps {
		p.Values = slices.Clone(p.Values) // values are scalars: a shallow copy is deep
		out[i] = p
	}
	return out
}
