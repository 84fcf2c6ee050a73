package doc

import (
	"encoding/json"
	"time"
)

// Plan is the JSON document of audit and apply (docs/schema/report.json):
// the contract Ansible's changed_when / failed_when and `rocectl report`
// read.
type Plan struct {
	SchemaVersion int `json:"schema_version"`
	// The profile's name and the hash of its files as loaded.
	Profile     string        `json:"profile"`
	ProfileHash string        `json:"profile_hash,omitempty"`
	Changed     bool          `json:"changed"`
	Changes     []Change      `json:"changes"`
	Unsupported []Unsupported `json:"unsupported"`
	Errors      []string      `json:"errors"`
	Refused     []Refused     `json:"refused,omitempty"`
	// Unknown lists the settings whose value the source does not hold
	// (a snapshot imported from text dumps): neither in sync nor drift.
	Unknown []Unknown `json:"unknown"`
	// Pending lists the firmware settings whose next-boot value holds
	// the profile's while the device still runs with another (current):
	// they take effect at the next firmware reset or reboot, which
	// rocectl never does. Neither drift nor in sync; absent when none.
	Pending []Pending `json:"pending,omitempty"`
	// Disruptions lists, per netdev, what applying the plan disturbs
	// (link toggles, channel resets, changes that cannot be undone).
	Disruptions map[string][]string `json:"disruptions,omitempty"`
	InSync      int                 `json:"in_sync"`
	// MatchedPorts counts the ports the profile's [match] selected; 0
	// with a message when none did. Nil in documents older than the
	// field (a reader then infers it: nothing compared).
	MatchedPorts *int `json:"matched_ports,omitempty"`
	// Ports is the port inventory, an array of the port package's Port
	// (docs/schema/report.json, $defs/port), as the writer encoded it.
	Ports      json.RawMessage `json:"ports"`
	Applied    bool            `json:"applied,omitempty"`
	RolledBack bool            `json:"rolled_back"`
	Restored   []string        `json:"restored,omitempty"`
	Unchanged  []string        `json:"unchanged,omitempty"`
	JournalID  string          `json:"journal_id,omitempty"`
	Confirm    string          `json:"confirm_deadline,omitempty"`
	Message    string          `json:"message,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
	// QoSChain is audit's QoS chain: each place along it (the host's
	// NIC, files, the switch's DCBX) that disagrees with the profile's
	// QoS intent. Absent when nothing disagrees, or the profile states
	// no intent.
	QoSChain []ChainProblem `json:"qos_chain,omitempty"`
	// Diagnostics: the profile's problems, structured (its warnings when
	// it loaded; every diagnostic when it was refused), next to the
	// rendered Errors and Warnings.
	Diagnostics []Diagnostic `json:"diagnostics"`
	// NotWatched: the ports the pause-storm guard cannot watch ("no
	// pause counters on veth0"), from the plan, then from the soak.
	NotWatched []string `json:"not_watched,omitempty"`
	// Guard is the soak's report when it passed: per-port pause counters
	// (global pause included), worst occupancy, discards.
	Guard *Guard `json:"guard,omitempty"`
	// Host and GeneratedAt name the document in a fleet view (rocectl
	// report): the hostname (a snapshot's recorded one) and when it was
	// made, RFC 3339 UTC.
	Host        string `json:"host"`
	GeneratedAt string `json:"generated_at"`
}

// Change is one change of a plan.
type Change struct {
	Key    string `json:"key"`
	Scope  string `json:"scope"`
	Netdev string `json:"netdev,omitempty"`
	Before string `json:"before"`
	After  string `json:"after"`
	Absent bool   `json:"before_absent,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Unsupported is a setting the port cannot take, and why.
type Unsupported struct {
	Key    string `json:"key"`
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
}

// Unknown is a setting whose value the source does not hold: neither in
// sync, nor drift.
type Unknown struct {
	Key    string `json:"key"`
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
	Want   string `json:"want"`
	// Inferred is what the source's other data implies about the value,
	// with where from; Note a weaker observation. Neither is a value.
	Inferred string `json:"inferred,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Pending is a setting written for the next boot, not yet in effect.
type Pending struct {
	Key     string `json:"key"`
	Scope   string `json:"scope"`
	Want    string `json:"want"`    // the profile's value, which the next boot holds
	Current string `json:"current"` // what the device runs with now ("unknown" when the firmware did not say)
	// Action says what makes it take effect: the mstfwreset command line
	// or a reboot.
	Action string `json:"action,omitempty"`
}

// Refused is a change the plan refuses to make, and why.
type Refused struct {
	Key   string `json:"key"`
	Error string `json:"error"`
}

// Guard summarises a soak that ended without a storm.
type Guard struct {
	Polls         int               `json:"polls"`
	WorstOccupied float64           `json:"worst_occupancy"`
	WorstWhere    string            `json:"worst_where,omitempty"`
	Discards      map[string]uint64 `json:"discards,omitempty"` // growth of the discard counters per port
	ReadErrors    map[string]string `json:"read_errors,omitempty"`
	// BadSamples counts pause counter readings that were bad, not a
	// storm, over every port (GuardPort.BadSamples).
	BadSamples int `json:"bad_samples,omitempty"`
	// NotWatched says, per port the guard could not watch, why.
	NotWatched []string `json:"not_watched,omitempty"`
	// Ports is what the guard read on each port, global pause included.
	Ports map[string]*GuardPort `json:"ports,omitempty"`
	// RDMA is, per port with an RDMA device (a RoCE LAG's under the
	// bond's name), how its hardware counters moved over the soak, by
	// rocectl's key (mlx5's name); a counter that fell is left out.
	RDMA map[string]map[string]uint64 `json:"rdma,omitempty"`
}

// GuardPort is one port's share of a soak.
type GuardPort struct {
	Watched        bool    `json:"watched"`
	WorstOccupancy float64 `json:"worst_occupancy"`
	WorstWhere     string  `json:"worst_where,omitempty"`
	// Counters are the pause counters of the last sample.
	Counters []PauseCounter `json:"counters,omitempty"`
	// BadSamples counts the port's pause counter readings that were bad:
	// one that fell and was back at the next poll, or more pause than time.
	BadSamples int `json:"bad_samples,omitempty"`
	// WindowNs is the time from the port's first reading to its last;
	// Pause what was paused over it per priority and direction (rx
	// received, tx sent).
	WindowNs int64        `json:"window_ns,omitempty"`
	Pause    []PauseShare `json:"pause,omitempty"`
	// DiscardGrowth is the growth of the port's discard counters over
	// the window; DiscardsKnown that it had one at every reading.
	DiscardGrowth uint64 `json:"discard_growth,omitempty"`
	DiscardsKnown bool   `json:"discards_known,omitempty"`
	// ThrottledNoDrops is "yes", "no" or "unknown": paused at least the
	// threshold of the window on some priority (or global pause) while
	// every discard counter stayed flat; ThrottledWhere where.
	ThrottledNoDrops string      `json:"throttled_no_drops,omitempty"`
	ThrottledWhere   []Throttled `json:"throttled_where,omitempty"`
	// Storm is the port's storm state when the soak ended.
	Storm *PortStorm `json:"storm,omitempty"`
}

// PauseShare is one priority's (or global pause's) pause in one direction
// over a window: changes, not counter values.
type PauseShare struct {
	Priority    int     `json:"priority"` // 0-7, or -1 for global pause
	Direction   string  `json:"direction"`
	Frames      uint64  `json:"frames"`
	DurationUs  uint64  `json:"duration_us,omitempty"`
	HasDuration bool    `json:"has_duration"`
	Occupancy   float64 `json:"occupancy"`
}

// Throttled is one place of a port "throttled with no drops".
type Throttled struct {
	Priority  int     `json:"priority"`
	Direction string  `json:"direction"`
	Occupancy float64 `json:"occupancy"`
}

// PortStorm is one port's storm state (operational, stormed, restored,
// unknown), with its counts and times and what its last reading was.
type PortStorm struct {
	State         string    `json:"state"`
	Detected      int       `json:"storms_detected"`
	Restored      int       `json:"storms_restored"`
	DetectedAt    time.Time `json:"detected_at,omitzero"`
	RestoredAt    time.Time `json:"restored_at,omitzero"`
	DetectionNs   int64     `json:"detection_window_ns,omitempty"`
	RestorationNs int64     `json:"restoration_ns,omitempty"`
	Reading       string    `json:"reading"`
	ReadingNote   string    `json:"reading_note,omitempty"`
	BadReadings   int       `json:"bad_readings,omitempty"`
}

// PauseCounter is one pause counter pair of a port, whatever the driver
// calls it.
type PauseCounter struct {
	Priority  int    `json:"priority"` // 0-7, or -1 for global pause
	Direction string `json:"direction"`
	// Frames and FramesName: pause frames (XOFF frames on ice).
	Frames     uint64 `json:"frames"`
	FramesName string `json:"frames_counter,omitempty"`
	// DurationUs and DurationName: time paused in µs, when the driver
	// counts it (HasDuration).
	DurationUs   uint64 `json:"duration_us,omitempty"`
	DurationName string `json:"duration_counter,omitempty"`
	HasDuration  bool   `json:"has_duration"`
}

// DecodePlan reads an audit or apply document.
func DecodePlan(data []byte) (*Plan, error) { return decode[Plan](data) }

// ChainProblem is one disagreement along the QoS chain.
type ChainProblem struct {
	// Side is "host" or "switch".
	Side string `json:"side"`
	// Port is the port's netdev, or "" for the host as a whole (its NCCL
	// files); for the switch, the host port it was heard on.
	Port string `json:"port,omitempty"`
	// Switch names the switch port (LLDP chassis and port), side switch
	// only.
	Switch string `json:"switch,omitempty"`
	// Source is where the switch's DCBX came from, as the peer document
	// says it ("lldp", "dcbnl"), side switch only.
	Source string `json:"source,omitempty"`
	// Key is what disagrees: a setting key, a file and variable, "dscp
	// N", "pfc", "trust", "cnp_dscp", "cnp_priority".
	Key string `json:"key"`
	// Message names both sides and the arithmetic.
	Message string `json:"message"`
}
