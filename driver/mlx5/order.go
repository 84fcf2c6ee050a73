package mlx5

import (
	"fmt"
	"strings"

	"github.com/rocectl/rocectl/policy"
)

// Refusal is a plan's buffer writes refused on one port: why, and the
// kinds of change to hang it on, the first the plan has.
type Refusal struct {
	Why string
	On  []policy.Kind
}

// CellNote puts final's buffer sizes in whole cells of cur's cell, as
// the driver will program them (port_set_buffer truncates), so that the
// checks see what the port will hold, and says so for each size it
// changes. It never refuses: a size the NIC reports itself is its own,
// and any other the driver takes, rounded down. With the cell unknown
// the sizes stay as they are and the note says the driver may round them.
func CellNote(cur Port, final *Port) string {
	var notes []string
	for b, sz := range final.Sizes {
		if sz == cur.Sizes[b] || sz == 0 {
			continue // the NIC's own size, or none
		}
		if cur.Cell <= 0 {
			notes = append(notes, fmt.Sprintf("buffer %d: %d bytes", b, sz))
			continue
		}
		if t := Truncated(sz, cur.Cell); t != sz {
			final.Sizes[b] = t
			notes = append(notes, fmt.Sprintf("buffer %d: %d bytes is programmed as %d", b, sz, t))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	if cur.Cell <= 0 {
		return fmt.Sprintf("the port's buffer cell size is unknown (%s): the driver programs whole cells, rounding down (port_set_buffer), so %s may read back smaller", cur.CellHow, strings.Join(notes, ", "))
	}
	return fmt.Sprintf("mlx5 programs whole %d-byte cells (%s), rounding down (port_set_buffer): %s, and the read-back compares in cells", cur.Cell, cur.CellHow, strings.Join(notes, ", "))
}

// PlanPath decides how a port's writes ws (in plan order) go from cur to
// final: refused when the state they leave fails the driver's checks
// whatever the order (the profile asks for what mlx5 refuses), else the
// path through states the driver accepts (Path), or why none exists.
// mapChanges says whether the priority-to-buffer map changes.
func PlanPath(cur Port, final Port, ws []Write, mapChanges bool) ([]Step, *Refusal) {
	end := cur
	for _, w := range ws {
		w.Apply(&end)
	}
	if sf := end.Check(""); sf != nil {
		why := fmt.Sprintf("buffer %d would be lossless with %d bytes; mlx5 needs at least %d (%s)", sf.Buf, sf.Size, end.Need(), end.MinimumText())
		switch {
		case LosslessBy(end.PFC, end.Prio2Buf)[sf.Buf]:
		case mapChanges:
			why += "; global pause is on, and mlx5 makes every buffer a priority maps to lossless when the map changes (fill_pfc_en): turn global pause off (qos.global_pause = false, written before the buffers) or size every buffer in use for it"
		default:
			why += "; global pause is on, under which a map write makes every buffer a priority maps to lossless (fill_pfc_en), and which buffers are lossless now cannot be read (PBMC's lossy bits), so it is taken as lossless"
		}
		return nil, &Refusal{Why: why, On: []policy.Kind{policy.KindBufferSize, policy.KindPrioBuffer, policy.KindPFC, policy.KindCableLength}}
	}
	return Path(cur, final, ws)
}

// The notes the planner puts on an mlx5 port's buffer-related changes.
const (
	// CableOnlyInManualNote: mlx5e_dcbnl_initialize's cable length is
	// used by the manual buffer configuration alone.
	CableOnlyInManualNote = "mlx5 uses the cable length only in manual buffer mode: without [buffers] it changes nothing unless an earlier buffer write set that mode"
	// MaxMTUUnknownNote: Need with max_mtu not captured.
	MaxMTUUnknownNote = "mlx5 needs xoff + max(max_mtu, 9216) + 128 bytes in a lossless buffer and this port's max_mtu is unknown (not captured): checked with 9216, the driver may need more"
	// PauseUnreadNote: fill_pfc_en under a global pause that could not
	// be read.
	PauseUnreadNote = "global pause could not be read: if it is on when the map is written, mlx5 makes every buffer a priority maps to lossless (fill_pfc_en), which this plan has not checked"
	// ManualModeNote is on the PFC write of a port whose buffers the
	// profile does not manage, when the write fails the buffer checks
	// that manual buffer mode would run (mlx5e_dcbnl_ieee_setpfc).
	ManualModeNote = "if an earlier buffer write (not this profile's) left this port in manual buffer mode, which cannot be read, mlx5 refuses this write and the apply is rolled back; give the profile [buffers] to have them planned"
	// BuffersFirstNote is on the buffer changes Order moved ahead of PFC.
	BuffersFirstNote = "written before PFC: mlx5 checks the buffers against the PFC setting and buffers of the moment, and only this order passes its checks, applied and rolled back"
)
