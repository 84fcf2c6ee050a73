package doc

import "time"

// Verify is the JSON document of verify (docs/schema/verify.json).
type Verify struct {
	SchemaVersion int        `json:"schema_version"`
	Profile       string     `json:"profile"`
	ProfileHash   string     `json:"profile_hash,omitempty"`
	OK            bool       `json:"ok"`
	Mismatches    []Mismatch `json:"mismatches"`
	// Unknown are the settings whose value could not be known: not
	// checked, so not "holding" either; ok is false with any.
	Unknown     []Unknown    `json:"unknown"`
	Traffic     []*Traffic   `json:"traffic,omitempty"`
	Errors      []string     `json:"errors"`
	Diagnostics []Diagnostic `json:"diagnostics"`
	// MatchedPorts counts the ports the profile selected; with 0, Message
	// says why and nothing was checked (ok true, exit 0; an error under
	// --require-match). Absent when the profile could not be loaded.
	MatchedPorts *int   `json:"matched_ports,omitempty"`
	Message      string `json:"message,omitempty"`
}

// Mismatch is a setting the host does not hold as the profile wants.
type Mismatch struct {
	Key    string `json:"key"`
	Want   string `json:"want"`
	Have   string `json:"have"`
	Reason string `json:"reason,omitempty"` // for unreadable settings
}

// Traffic is what one verbs test run measured (verify --loopback, the
// two-host test). Two-host runs fill it on both ends.
type Traffic struct {
	Device       string `json:"device"`
	Port         int    `json:"port"`
	GIDIndex     int    `json:"gid_index"`
	GID          string `json:"gid"`      // source GID, IPv6 text form
	PeerGID      string `json:"peer_gid"` // destination GID (own GID in loopback)
	PathMTU      int    `json:"path_mtu"` // bytes
	TrafficClass uint8  `json:"traffic_class"`

	WriteGbps  float64 `json:"write_gbps"`  // RDMA WRITE goodput, 10^9 bit/s
	WriteMsgs  int     `json:"write_msgs"`  // RDMA WRITEs completed successfully
	WriteBytes int64   `json:"write_bytes"` // payload bytes in those

	// LatP50/LatP99 are half the SEND/RECV round trip, in nanoseconds.
	LatP50   time.Duration `json:"lat_p50"`
	LatP99   time.Duration `json:"lat_p99"`
	SendMsgs int           `json:"send_msgs"` // ping-pong round trips completed

	// CounterDeltas are the non-zero changes of the port's hw_counters
	// over the run.
	CounterDeltas map[string]int64 `json:"counter_deltas,omitempty"`
	// PauseDeltas are the changes of this end's pause counters over a
	// two-host run, zeros included; PauseWindow the time between the two
	// samples.
	PauseDeltas []PauseDelta  `json:"pause_deltas,omitempty"`
	PauseWindow time.Duration `json:"pause_window,omitempty"`
	// Errors are the failed work completions, first one first.
	Errors []CompletionError `json:"errors,omitempty"`
}

// PauseDelta is the change of one netdev's pause counter pair.
type PauseDelta struct {
	Netdev string `json:"netdev"`
	PauseCounter
}

// CompletionError is one failed work completion.
type CompletionError struct {
	Op        string `json:"op"`     // "write", "send", "recv"
	Status    int    `json:"status"` // ibv_wc_status
	VendorErr uint32 `json:"vendor_err"`
	QPN       uint32 `json:"qpn"`
	WRID      uint64 `json:"wr_id"`
}

// DecodeVerify reads a verify document.
func DecodeVerify(data []byte) (*Verify, error) { return decode[Verify](data) }
