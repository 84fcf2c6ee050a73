package apply

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// Version 1 journals are what rocectl wrote up to the v2 format: the Go
// structs as they were, each setting's Kind as its ordinal in the apply
// order of that time, no checksum. They are migrated on read (and written
// back as version 2 by the next save).

// v1KindNames is the Kind order of version 1, frozen: ordinal i of a v1
// journal is the kind named v1KindNames[i], whatever the order is now.
var v1KindNames = [...]string{
	"mtu", "rx_ring", "tx_ring", "private_flag", "global_pause", "dcbx", "trust", "dscp_map",
	"ets_priority_to_tc", "ets_tc_tsa", "ets_tc_bandwidth", "pfc", "cable_length", "priority_to_buffer",
	"buffer_size", "pfc_storm_prevention", "ecn_enable", "ecn_param", "roce_mode", "roce_tos",
	"traffic_class", "devlink", "nccl",
}

type journalV1 struct {
	Version     int        `json:"version"`
	ID          string     `json:"id"`
	Profile     string     `json:"profile"`
	ProfileHash string     `json:"profile_hash"`
	Root        string     `json:"root"`
	Started     time.Time  `json:"started"`
	Updated     time.Time  `json:"updated"`
	State       string     `json:"state"`
	Deadline    *time.Time `json:"confirm_deadline,omitempty"`
	Steps       []struct {
		Scope   string `json:"scope"`
		Group   string `json:"group"`
		Changes []struct {
			Key, Scope, Name string
			Kind             int
			Arg, Value, From string
			Port             *struct {
				Netdev     string
				RDMADevice string
				PortNum    int
				Driver     string
				PCI        string
				RoCEv2GID  int
			}
			Before string
			Absent bool
			Note   string
		} `json:"changes"`
		Undo *undoV2 `json:"undo,omitempty"`
	} `json:"steps"`
	Done     int      `json:"done"`
	Restored []string `json:"restored,omitempty"`
	Failures []string `json:"failures,omitempty"`
	PID      int      `json:"pid"`
}

func decodeV1(data []byte) (*Journal, error) {
	var v journalV1
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: version 1: %v", ErrJournalDamaged, err)
	}
	j := &Journal{Version: 1, ID: v.ID, Profile: v.Profile, ProfileHash: v.ProfileHash, Root: v.Root,
		Started: v.Started, Updated: v.Updated, State: v.State, Deadline: v.Deadline, Done: v.Done,
		Restored: v.Restored, Failures: v.Failures, PID: v.PID}
	for i, s := range v.Steps {
		st := host.Step{Scope: s.Scope, Group: s.Group}
		for _, c := range s.Changes {
			if c.Kind < 0 || c.Kind >= len(v1KindNames) {
				return nil, fmt.Errorf("%w: step %d: kind %d is not a version 1 kind", ErrJournalDamaged, i+1, c.Kind)
			}
			k, ok := kindByName[v1KindNames[c.Kind]]
			if !ok {
				return nil, fmt.Errorf("%w: step %d: kind %q is no longer known", ErrJournalVersion, i+1, v1KindNames[c.Kind])
			}
			pc := policy.Change{Setting: policy.Setting{Key: c.Key, Scope: c.Scope, Name: c.Name, Kind: k,
				Arg: c.Arg, Value: c.Value, From: c.From}, Before: c.Before, Absent: c.Absent, Note: c.Note}
			if p := c.Port; p != nil {
				pc.Port = &port.Port{Netdev: p.Netdev, RDMADevice: p.RDMADevice, PortNum: p.PortNum,
					Driver: p.Driver, PCI: p.PCI, RoCEv2GID: p.RoCEv2GID}
			}
			st.Changes = append(st.Changes, pc)
		}
		if u := s.Undo; u != nil {
			st.Undo = &host.UndoBlob{Path: u.Path, Absent: u.Absent, Data: u.Data, Mode: u.Mode}
		}
		j.Steps = append(j.Steps, st)
	}
	// Version 1 has no checksum; what it has is Done, saved with the
	// steps: an apply that finished wrote every step, so a committed or
	// confirm-pending journal with fewer steps than Done was cut short.
	if (j.State == StateCommitted || j.State == StateConfirmPending || j.State == StateApplied) && j.Done != len(j.Steps) {
		return nil, fmt.Errorf("%w: version 1 journal in state %s records %d steps done but holds %d (cut short)", ErrJournalDamaged, j.State, j.Done, len(j.Steps))
	}
	return j, nil
}
