package mlx5

import "fmt"

// mlx5's receive buffer thresholds and the MTU (mlx5/core/en/port_buffer.c,
// en_dcbnl.c, en_main.c):
//
//   - mlx5e_port_manual_buffer_config computes xoff (calculate_xoff) from
//     the netdev's MTU, link speed and cable length of the moment, and
//     programs every lossless buffer's xoff/xon thresholds from it
//     (update_xoff_threshold, port_set_buffer). Only a buffer write
//     (mlx5e_dcbnl_setbuffer) or, in manual buffer mode, a PFC write
//     (mlx5e_dcbnl_ieee_setpfc) calls it.
//   - Setting the MTU (mlx5e_set_dev_port_mtu) and the carrier coming up at
//     another speed (mlx5e_update_carrier) do not. Mainline recomputed the
//     thresholds there for a few weeks ("net/mlx5e: Update and set
//     Xon/Xoff upon MTU set", ceddedc969f0; "... upon port speed set",
//     d24341740fe4) and reverted both (6f5dacf88a32, 3fbfe251cc9f: they
//     broke the buffer-to-pool mapping of multi-host NICs); DOCA-OFED
//     25.10 has neither. So after an MTU change a lossless buffer keeps the
//     xoff of the old MTU: with a bigger MTU it can overflow before pause
//     is sent, dropping packets of the lossless class.
//   - setpfc calls mlx5e_port_manual_buffer_config in manual mode whatever
//     changed, and that recomputes every threshold when the xoff it
//     computes differs from the last one (priv->dcbx.xoff): a PFC write of
//     the port's own pfc_en and cable length (no link toggle, no cable
//     change) is the least disruptive way to make the driver recompute.
//     An unchanged buffer write would not do (setbuffer returns before
//     computing anything), nor would a cable length moved and moved back
//     be any better (two computations, one of them for the wrong cable).
//
// And a PFC change computes them for the wrong speed: mlx5e_dcbnl_ieee_setpfc
// toggles the link first, and calculate_xoff, finding no operational speed
// while it trains, takes 40 Gb/s (host's planToggleRecomputes).
//
// So on an mlx5 port in manual buffer mode an MTU change brings two
// journalled recomputes with it: one written after the MTU (unless the
// plan writes the port's PFC, cable length or buffers after it anyway,
// which computes with the final MTU), and one written before it, whose
// undo comes after rollback has restored the MTU and everything else, and
// so computes exactly what the port had. rocectl cannot read manual mode
// (priv->dcbx.manual_buffer, or the firmware's buffer ownership in PFCC on
// newer kernels, reaches no dcbnl attribute): a port is taken to be in it
// when the profile manages its buffers, which puts it there for good. A
// profile that manages only the cable length says nothing about the mode
// (CableOnlyInManualNote), and a port a factory recipe
// leaves in automatic mode gets no extra step; on a port in automatic mode
// the recompute would be a PFC write that changes nothing.

// XoffRecomputeNote says why, in the plan.
const XoffRecomputeNote = "mlx5 computes the lossless buffers' xoff/xon thresholds for the MTU of the last buffer or PFC write and an MTU change does not recompute them (mainline's recompute was reverted: 6f5dacf88a32, 3fbfe251cc9f), so a bigger MTU could overflow a buffer before pause is sent; a PFC write of the port's own values (no link toggle) makes the driver recompute them (mlx5e_port_manual_buffer_config)"

// ToggleRecomputeNote says why, in the plan.
const ToggleRecomputeNote = "mlx5e_dcbnl_ieee_setpfc takes the link down and up when the PFC priorities change (mlx5_toggle_port_link) and then computes the lossless buffers' xoff/xon thresholds while the link trains, without its speed: calculate_xoff takes 40 Gb/s when mlx5e_port_linkspeed finds no operational protocol, too little headroom for a faster link, and nothing recomputes them when the link comes up; a PFC write of the port's own values, once ethtool reports the link's speed again, recomputes them at it"

// LinkNotUpNote is on a PFC change of a port whose link is not up at plan
// time (operstate): no recompute can be made for its speed.
func LinkNotUpNote(operstate string) string {
	return "the link is " + operstate + ": mlx5 computes the buffer thresholds for 40 Gb/s without a link speed, and nothing recomputes them when the link comes up; once it is up, write the port's PFC again (any PFC write recomputes them)"
}

// MTUProblem says why the recompute an MTU change needs would fail on a
// port left as final (its buffers unchanged, its MTU the new one): a
// lossless buffer below Need; "" when it passes.
func MTUProblem(final Port) string {
	sf := final.Check("")
	if sf == nil {
		return ""
	}
	return fmt.Sprintf("buffer %d is lossless with %d bytes; at MTU %d mlx5 needs at least %d (%s), and the recompute the MTU change needs would fail: raise buffers.buffer_size with the MTU",
		sf.Buf, sf.Size, final.MTU, final.Need(), final.MinimumText())
}

// AfterLinkToggleArg is the Arg of a recompute that follows a link
// toggle: its write waits for the link's speed first. The journal keeps
// it, so a rollback from disk waits too.
const AfterLinkToggleArg = "after_link_toggle"
