package verify

import (
	"fmt"
	"log/slog"

	"github.com/rocectl/rocectl/nic"
)

// The fabric counters besides pause that a person watching a lossless
// port wants next to it (rocectl watch): the RDMA congestion counters
// (CNP, ECN), the NIC's PFC storm watchdog events and receive discards.
// Like PauseCounters, each reader hides the drivers' names; a counter the
// driver lacks is nil, so "absent" differs from 0.

// ReadHWCounters reads every counter of an RDMA port's hw_counters
// directory (/sys/class/infiniband/<dev>/ports/<port>/hw_counters). A
// missing directory is no data (nil map, no error); an unreadable or odd
// file is skipped.
func ReadHWCounters(fs nic.FS, dev string, port int, log *slog.Logger) (map[string]uint64, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return readHWCounters(fs, dev, port, log)
}

// Congestion is a port's DCQCN counters from its hw_counters, each nil
// where the driver has none. Names: congNames (sampler.go).
type Congestion struct {
	// CNPSent: CNPs the notification point sent (for ECN CE-marked
	// packets it received).
	CNPSent *uint64 `json:"cnp_sent,omitempty"`
	// CNPHandled: CNPs the reaction point received and slowed down for.
	CNPHandled *uint64 `json:"cnp_handled,omitempty"`
	// ECNMarked: RoCE packets received with ECN CE.
	ECNMarked *uint64 `json:"ecn_marked,omitempty"`
}

// CongestionCounters picks the congestion counters out of one
// ReadHWCounters sample.
func CongestionCounters(hw map[string]uint64) Congestion {
	return Congestion{
		CNPSent:    firstStat(hw, congNames[CNPSent]...),
		CNPHandled: firstStat(hw, congNames[CNPHandled]...),
		ECNMarked:  firstStat(hw, congNames[ECNMarked]...),
	}
}

// StormEvents is the NIC's own PFC storm watchdog (mlx5
// pfc_storm_prevention, stormEventNames): warning and error events, nil
// where the NIC has no such counters.
type StormEvents struct {
	Warning *uint64 `json:"warning,omitempty"`
	Error   *uint64 `json:"error,omitempty"`
}

// StormEventCounters reads them from one ethtool -S sample, under either
// spelling of the warning counter.
func StormEventCounters(stats map[string]uint64) StormEvents {
	get := func(name string) *uint64 {
		if v, ok := trimmedStat(stats, name); ok {
			return &v
		}
		return nil
	}
	return StormEvents{Warning: get("tx_pause_storm_warning_events"), Error: get("tx_pause_storm_error_events")}
}

// Discards is what a port dropped, from one ethtool -S sample (the
// names of discardNames): RX and TX port-wide (mlx5 {rx,tx}_discards_phy;
// bnxt_en's receive discards per CoS queue, summed, for RX), and per
// priority what mlx5 counts: Prio (rx_prio<p>_discards) and PrioBuffer
// (rx_prio<p>_buf_discard, no receive buffer: on a PFC priority, too
// little headroom).
type Discards struct {
	RX, TX     *uint64
	Prio       [8]*uint64
	PrioBuffer [8]*uint64
}

// DiscardCounters reads them.
func DiscardCounters(stats map[string]uint64) Discards {
	var d Discards
	d.RX = firstStat(stats, "rx_discards_phy")
	if d.RX == nil {
		var sum uint64
		found := false
		for q := 0; q < 8; q++ {
			if v, ok := stats[fmt.Sprintf("rx_discard_packets_cos%d", q)]; ok {
				sum += v
				found = true
			}
		}
		if found {
			d.RX = &sum
		}
	}
	d.TX = firstStat(stats, "tx_discards_phy")
	for p := 0; p < 8; p++ {
		d.Prio[p] = firstStat(stats, fmt.Sprintf("rx_prio%d_discards", p))
		d.PrioBuffer[p] = firstStat(stats, fmt.Sprintf("rx_prio%d_buf_discard", p))
	}
	return d
}

// firstStat is the value of the first of names m has.
func firstStat(m map[string]uint64, names ...string) *uint64 {
	for _, n := range names {
		if v, ok := m[n]; ok {
			return &v
		}
	}
	return nil
}
