package mlx5sim

import (
	"fmt"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// mlx5 ethtool -S counters whose presence follows the pause configuration
// (en_stats.c; reference §A4.1).

// PrioPauseCounters returns the per-priority PFC counters of priority p,
// which exist only while PFC is enabled on p.
func PrioPauseCounters(p int) []string {
	return []string{
		fmt.Sprintf("rx_prio%d_pause", p),
		fmt.Sprintf("rx_prio%d_pause_duration", p),
		fmt.Sprintf("tx_prio%d_pause", p),
		fmt.Sprintf("tx_prio%d_pause_duration", p),
		fmt.Sprintf("rx_prio%d_pause_transition", p),
	}
}

// GlobalPauseCounters returns the global pause counter names, present
// only while rx or tx global pause is enabled.
func GlobalPauseCounters() []string {
	return []string{
		"rx_global_pause",
		"rx_global_pause_duration",
		"tx_global_pause",
		"tx_global_pause_duration",
		"rx_global_pause_transition",
	}
}

// setPresent makes names appear (keeping a value they already have, as the
// hardware counter keeps counting) or disappear.
func setPresent(ls *snapshot.LinkState, names []string, present bool) {
	if ls.Stats == nil {
		if !present {
			return
		}
		ls.Stats = map[string]uint64{}
	}
	for _, n := range names {
		if !present {
			delete(ls.Stats, n)
		} else if _, ok := ls.Stats[n]; !ok {
			ls.Stats[n] = 0
		}
	}
}

func globalPauseCounters(ls *snapshot.LinkState) {
	on := ls.Pause != nil && (ls.Pause.Rx || ls.Pause.Tx)
	setPresent(ls, GlobalPauseCounters(), on)
}

func prioPauseCounters(ls *snapshot.LinkState, pfcEn uint8) {
	for p := range dcb.NumTCs {
		setPresent(ls, PrioPauseCounters(p), pfcEn&(1<<p) != 0)
	}
}
