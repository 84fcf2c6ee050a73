package host

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// mlx5's receive buffers, as the driver sizes them (mlx5/core/en/
// port_buffer.c, en_dcbnl.c):
//
//   - A buffer is lossless when a PFC-enabled priority maps to it, and
//     then must hold at least xoff + MLX5E_MAX_PORT_MTU (9216) + one 128-byte
//     cell, or the driver answers -ENOMEM (update_xoff_threshold), with
//     xoff = (301 + 2.16 × cable m) × max(speed, 40) Gb/s + 2.72 × MTU
//     (calculate_xoff).
//   - The PFC write judges losslessness by the current priority-to-buffer
//     map, the buffer write by the current pfc_en: the order of the two
//     steps decides which intermediate state the driver checks.
//   - Sizes are programmed in 128-byte cells: a size that is not a
//     multiple reads back smaller, and the apply would fail its read-back.
//   - The first buffer write that changes something sets manual_buffer
//     for good: rollback restores sizes and mapping, not automatic sizing.

const (
	mlx5Cell       = 128
	mlx5MaxPortMTU = 9216
	mlx5CableLen   = 7 // MLX5E_DEFAULT_CABLE_LEN
)

func mlx5Xoff(speedMbps, mtu, cable int) int {
	speedMbps = max(speedMbps, 40000)
	return (301+216*cable/100)*speedMbps/1000 + 272*mtu/100
}

// bufferState is what the driver's check looks at.
type bufferState struct {
	pfc        uint8
	prio2buf   [8]uint8
	sizes      [8]uint32
	cable, mtu int
}

// shortBuffer returns the first lossless buffer that is too small in s, and
// the minimum it needs, or -1.
func (s bufferState) shortBuffer(speed int) (int, int) {
	need := mlx5Xoff(speed, s.mtu, s.cable) + mlx5MaxPortMTU + mlx5Cell
	for b := range 8 {
		lossless := false
		for p := range 8 {
			lossless = lossless || (s.pfc&(1<<p) != 0 && int(s.prio2buf[p]) == b)
		}
		if lossless && int(s.sizes[b]) < need {
			return b, need
		}
	}
	return -1, need
}

// planMLX5Buffers checks and orders one mlx5 port's PFC, cable length and
// buffer changes; it refuses what the driver would refuse and notes what
// cannot be undone.
//
// The buffers belong to the physical port: on a bond (RoCE LAG) Place has
// made the bond's PFC, cable and buffer changes its slaves', and each
// slave is planned on its own, against its own buffers and link speed and
// the MTU the bond gives it (bond_change_mtu sets every slave's).
func (h *Host) planMLX5Buffers(plan *policy.Plan, p *port.Port, desired []policy.Setting) {
	if len(p.Slaves()) == 0 {
		h.planMLX5Port(plan, p.Netdev, "", desired)
		return
	}
	for _, m := range p.Slaves() {
		if m.Driver == "" || strings.HasPrefix(m.Driver, "mlx5") {
			h.planMLX5Port(plan, m.Netdev, p.Netdev, desired)
		}
	}
}

// planMLX5Port is planMLX5Buffers on one physical netdev; bond, when not
// "", is the bond over it, whose MTU change is the netdev's.
func (h *Host) planMLX5Port(plan *policy.Plan, netdev, bond string, desired []policy.Setting) {
	idx := map[policy.Kind]int{}
	for i, c := range plan.Changes {
		switch {
		case c.Port == nil:
		case c.Port.Netdev == netdev:
			idx[c.Kind] = i
		case bond != "" && c.Port.Netdev == bond && c.Kind == policy.KindMTU:
			idx[c.Kind] = i
		}
	}
	_, pfcChange := idx[policy.KindPFC]
	_, cableChange := idx[policy.KindCableLength]
	_, p2bChange := idx[policy.KindPrioBuffer]
	_, sizeChange := idx[policy.KindBufferSize]
	if !pfcChange && !cableChange && !p2bChange && !sizeChange {
		return
	}
	managesBuffers := false
	for _, s := range desired {
		managesBuffers = managesBuffers || s.Kind == policy.KindPrioBuffer || s.Kind == policy.KindBufferSize
	}
	if cableChange && !managesBuffers {
		i := idx[policy.KindCableLength]
		plan.Changes[i].Note = joinNote(plan.Changes[i].Note, "mlx5 uses the cable length only in manual buffer mode: without [buffers] it changes nothing unless an earlier buffer write set that mode")
	}
	if !p2bChange && !sizeChange {
		return
	}
	st, err := h.K.DCB(netdev)
	if err != nil || st.PFC == nil || st.Buffer == nil {
		return // the plan reports the unreadable or unsupported settings
	}
	li, err := h.K.Link(netdev)
	if err != nil {
		return
	}
	speed := h.linkSpeed(netdev)
	cur := bufferState{pfc: st.PFC.Enable, prio2buf: st.Buffer.PrioBuffer, sizes: st.Buffer.Size, cable: int(st.PFC.Delay), mtu: li.MTU}
	if cur.cable == 0 {
		cur.cable = mlx5CableLen
	}
	final := cur
	for k, i := range idx {
		v := plan.Changes[i].Value
		switch k {
		case policy.KindPFC:
			final.pfc, _ = policy.ParsePrioBitmap(v)
		case policy.KindCableLength:
			final.cable, _ = strconv.Atoi(v)
		case policy.KindMTU:
			final.mtu, _ = strconv.Atoi(v)
		case policy.KindPrioBuffer:
			if ints, err := policy.ParseInts8(v); err == nil {
				for j, x := range ints {
					final.prio2buf[j] = uint8(x)
				}
			}
		case policy.KindBufferSize:
			if sizes, err := policy.ParseSizes8(v); err == nil {
				for j, x := range sizes {
					final.sizes[j] = uint32(x)
				}
			}
		}
	}
	refuse := func(k policy.Kind, why string) {
		c := plan.Changes[idx[k]]
		plan.Refused = append(plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: why})
	}
	if sizeChange {
		for b, sz := range final.sizes {
			if sz%mlx5Cell != 0 {
				refuse(policy.KindBufferSize, fmt.Sprintf("buffer %d: %d bytes is not a whole number of mlx5's %d-byte cells (port_set_buffer programs size/%d): use %d or %d",
					b, sz, mlx5Cell, mlx5Cell, sz/mlx5Cell*mlx5Cell, (sz/mlx5Cell+1)*mlx5Cell))
				return
			}
		}
	}
	if b, need := final.shortBuffer(speed); b >= 0 {
		k := policy.KindBufferSize
		if !sizeChange {
			k = policy.KindPrioBuffer
		}
		refuse(k, fmt.Sprintf("buffer %d would be lossless with %d bytes; mlx5 needs at least %d (xoff for %d m of cable at %s, MTU %d, plus 9216 + 128: calculate_xoff, update_xoff_threshold)",
			b, final.sizes[b], need, final.cable, speedText(speed), final.mtu))
		return
	}
	if pfcChange || cableChange {
		// PFC first (the apply order) makes the driver check the new
		// pfc_en and cable length against the old buffers (if the port
		// is already in manual mode, which cannot be read); buffers first
		// checks the new buffers against the old pfc_en.
		pfcFirst := cur
		pfcFirst.pfc, pfcFirst.cable, pfcFirst.mtu = final.pfc, final.cable, final.mtu
		bufFirst := cur
		bufFirst.prio2buf, bufFirst.sizes, bufFirst.mtu = final.prio2buf, final.sizes, final.mtu
		pfcOK, _ := pfcFirst.shortBuffer(speed)
		bufOK, _ := bufFirst.shortBuffer(speed)
		switch {
		case pfcOK < 0:
		case bufOK < 0:
			moveBuffersFirst(plan, netdev)
		default:
			refuse(policy.KindPFC, "no order of the PFC and buffer writes passes mlx5's buffer check: each intermediate state leaves a lossless buffer too small; change PFC and buffers in two applies")
			return
		}
	}
	for _, k := range []policy.Kind{policy.KindPrioBuffer, policy.KindBufferSize} {
		if i, ok := idx[k]; ok {
			plan.Changes[i].Note = joinNote(plan.Changes[i].Note, irreversibleBuffer)
			break
		}
	}
}

// irreversibleBuffer is the note on a buffer change: mlx5e_dcbnl_setbuffer
// sets manual_buffer, which only driver init clears.
const irreversibleBuffer = "irreversible in part: switches mlx5 to manual buffer mode for good (manual_buffer is cleared only when the driver loads); rollback restores sizes and mapping, not automatic sizing"

// moveBuffersFirst puts the port's buffer changes before its PFC change, so
// the buffer step is written (and undone) on the other side of it.
func moveBuffersFirst(plan *policy.Plan, netdev string) {
	var buf, rest []policy.Change
	pfcAt := -1
	for _, c := range plan.Changes {
		if c.Port != nil && c.Port.Netdev == netdev && (c.Kind == policy.KindPrioBuffer || c.Kind == policy.KindBufferSize) {
			buf = append(buf, c)
			continue
		}
		if c.Port != nil && c.Port.Netdev == netdev && c.Kind == policy.KindPFC && pfcAt < 0 {
			pfcAt = len(rest)
		}
		rest = append(rest, c)
	}
	if pfcAt < 0 {
		return
	}
	for i := range buf {
		buf[i].Note = joinNote(buf[i].Note, "written before PFC: mlx5 checks the buffers against the PFC setting of the moment, and only this order passes")
	}
	out := append(append(append([]policy.Change{}, rest[:pfcAt]...), buf...), rest[pfcAt:]...)
	copy(plan.Changes, out)
}

func speedText(mbps int) string {
	if mbps <= 0 {
		return "an unknown speed (40 Gb/s assumed, the driver's floor)"
	}
	return fmt.Sprintf("%d Gb/s", mbps/1000)
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Disruptions says, per port, what applying the plan will disturb: link
// toggles, channel resets, changes that cannot be undone.
func Disruptions(plan *policy.Plan) map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	add := func(nd, what string) {
		if !seen[nd+what] {
			seen[nd+what] = true
			out[nd] = append(out[nd], what)
		}
	}
	for _, c := range plan.Changes {
		if c.Port == nil {
			continue
		}
		nd, mlx5 := c.Port.Netdev, strings.HasPrefix(c.Port.Driver, "mlx5")
		switch {
		case c.Kind == policy.KindPFC && mlx5:
			add(nd, "link toggle: mlx5 takes the link down and up when PFC changes (mlx5e_dcbnl_ieee_setpfc)")
		case c.Kind == policy.KindMTU && len(c.Port.Slaves()) > 0:
			// A bond has no queues: it sets the MTU of every slave
			// (bond_change_mtu), and their queues are re-created.
			for _, m := range c.Port.Slaves() {
				add(m.Netdev, "channel reset: an MTU change re-creates the NIC's queues (set through "+nd+")")
			}
		case c.Kind == policy.KindMTU:
			add(nd, "channel reset: an MTU change re-creates the NIC's queues")
		case (c.Kind == policy.KindPrioBuffer || c.Kind == policy.KindBufferSize) && mlx5:
			add(nd, "irreversible: manual buffer mode for good")
		case strings.Contains(c.Note, "devlink dev reload"):
			add(nd, "needs a devlink reload to take effect")
		}
	}
	return out
}
