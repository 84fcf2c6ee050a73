package doc

import "time"

// Watch is what one interval of `rocectl watch` shows, and its -o json
// document (one per interval; docs/watch.md, docs/schema/watch.json).
// Rates are per second over the interval; a value is absent (nil) where
// the port has no such counter or the previous sample lacked it.
type Watch struct {
	SchemaVersion int         `json:"schema_version"`
	Time          time.Time   `json:"time"`
	IntervalS     float64     `json:"interval_s"`
	Ports         []WatchPort `json:"ports"`
}

// WatchPort is one port's row.
type WatchPort struct {
	Netdev string `json:"netdev"`
	// Bond is, on a slave's row, the bond it is under; Slaves, on a
	// bond's row, the slaves whose rows follow it.
	Bond        string          `json:"bond,omitempty"`
	Slaves      []string        `json:"slaves,omitempty"`
	RDMADevice  string          `json:"rdma_device,omitempty"`
	Port        int             `json:"port,omitempty"`
	Link        string          `json:"link"`
	Error       string          `json:"error,omitempty"`
	Priorities  []WatchPrio     `json:"priorities"`
	GlobalPause *WatchPausePair `json:"global_pause,omitempty"`
	// CNPSentPerS: CNPs the notification point sent; CNPHandledPerS:
	// CNPs the reaction point received and slowed down for.
	CNPSentPerS    *float64 `json:"cnp_sent_per_s,omitempty"`
	CNPHandledPerS *float64 `json:"cnp_handled_per_s,omitempty"`
	ECNMarkedPerS  *float64 `json:"ecn_marked_per_s,omitempty"`
	RXDiscardsPerS *float64 `json:"rx_discards_per_s,omitempty"`
	TXDiscardsPerS *float64 `json:"tx_discards_per_s,omitempty"`
	// Storm*: the NIC's storm-prevention events, totals since the driver
	// loaded, and how many happened in this interval.
	StormWarningEvents *uint64 `json:"storm_warning_events,omitempty"`
	StormErrorEvents   *uint64 `json:"storm_error_events,omitempty"`
	StormEventsNew     *uint64 `json:"storm_events_new,omitempty"`
	// RDMA are the RDMA port's hardware counters the driver has (a
	// bond's on the bond's row), in a fixed order: transport loss,
	// CNPs ignored, mlx5's RoCE accelerator counters, and the DCQCN
	// ones the columns above show too.
	RDMA []WatchRDMA `json:"rdma,omitempty"`
	// ThrottledNoDrops is "yes" when a priority (or global pause) was
	// paused at least 10 % of the interval while every discard counter
	// of the port stayed flat, "no" when not, "unknown" when the port
	// has no discard counter to judge by (absent on a bond's row);
	// ThrottledWhere where.
	ThrottledNoDrops string           `json:"throttled_no_drops,omitempty"`
	ThrottledWhere   []WatchThrottled `json:"throttled_where,omitempty"`
}

// WatchRDMA is one RDMA hardware counter of a port.
type WatchRDMA struct {
	// Key is rocectl's name (mlx5's), Counter the driver's file.
	Key     string   `json:"key"`
	Counter string   `json:"counter"`
	Total   uint64   `json:"total"`
	PerS    *float64 `json:"per_s,omitempty"`
}

// WatchThrottled is one place a port was throttled with no drops.
type WatchThrottled struct {
	Priority  int     `json:"priority"` // -1: global pause
	Direction string  `json:"direction"`
	PausePct  float64 `json:"pause_pct"`
}

// WatchPrio is one priority that has pause counters on the port.
type WatchPrio struct {
	Priority             int         `json:"priority"`
	RX                   *WatchPause `json:"rx,omitempty"`
	TX                   *WatchPause `json:"tx,omitempty"`
	RXDiscardsPerS       *float64    `json:"rx_discards_per_s,omitempty"`
	RXBufferDiscardsPerS *float64    `json:"rx_buffer_discards_per_s,omitempty"`
}

// WatchPausePair is global (802.3x) pause, both directions.
type WatchPausePair struct {
	RX *WatchPause `json:"rx,omitempty"`
	TX *WatchPause `json:"tx,omitempty"`
}

// WatchPause is one direction of pause: rx is the link partner pausing
// this port, tx this port pausing the partner.
type WatchPause struct {
	// PausePct is the time paused as a percentage of the interval,
	// absent where the driver counts frames only.
	PausePct   *float64 `json:"pause_pct,omitempty"`
	FramesPerS *float64 `json:"pause_frames_per_s,omitempty"`
	Frames     uint64   `json:"pause_frames"` // the driver's total
}

// DecodeWatch reads one watch document.
func DecodeWatch(data []byte) (*Watch, error) { return decode[Watch](data) }
