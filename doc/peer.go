package doc

import (
	"encoding/json"
	"time"
)

// Peer is `rocectl peer -o json` and the agent's peer.json state file
// (docs/schema/peer.json): the switch's DCBX against the profile, one
// verdict per port.
type Peer struct {
	SchemaVersion int    `json:"schema_version"`
	Profile       string `json:"profile"`
	// Host is the hostname of the machine the ports are on, which names
	// it in `rocectl report`.
	Host      string       `json:"host,omitempty"`
	CheckedAt time.Time    `json:"checked_at"`
	Ports     []PeerResult `json:"ports"`
	// Message says why there are no ports: the profile matched none on
	// this host (nothing checked, exit 0).
	Message string `json:"message,omitempty"`
}

// PeerResult is one port's verdict: consistent, mismatch, unknown or
// error.
type PeerResult struct {
	Netdev  string `json:"netdev"`
	Driver  string `json:"driver,omitempty"`
	Verdict string `json:"verdict"`
	// Reason says why the verdict is unknown or error.
	Reason string `json:"reason,omitempty"`
	// FirmwareLLDP is set when the NIC's firmware consumes LLDP.
	FirmwareLLDP string `json:"firmware_lldp,omitempty"`
	// Source says where the switch's DCBX came from: "lldp" (also when
	// empty) or "dcbnl".
	Source     string         `json:"source,omitempty"`
	HeardAt    *time.Time     `json:"heard_at,omitempty"`
	DCBX       string         `json:"dcbx,omitempty"` // "ieee", "cee", "" none
	Mismatches []PeerMismatch `json:"mismatches,omitempty"`
	// Unchecked lists what the source could not tell and was therefore
	// not compared.
	Unchecked []string `json:"unchecked,omitempty"`
	// Frame is the decoded LLDP frame (the lldp package's Frame) and
	// DriverPeer what the driver reported for the dcbnl source, as the
	// writer encoded them.
	Frame      json.RawMessage `json:"frame,omitempty"`
	DriverPeer json.RawMessage `json:"driver_peer,omitempty"`
}

// PeerMismatch is one thing the switch and the profile disagree on.
type PeerMismatch struct {
	Key     string `json:"key"` // e.g. "pfc", "willing", "dscp 26 (RoCE data)"
	Switch  string `json:"switch"`
	Profile string `json:"profile"`
}

// DecodePeer reads a peer document.
func DecodePeer(data []byte) (*Peer, error) { return decode[Peer](data) }
