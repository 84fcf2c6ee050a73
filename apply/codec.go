package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/statedir"
)

// The journal's on-disk format (docs/journal-format.md). It is written
// through the types below, not the Go structs rollback works with, so that
// a field or a Kind added to the code does not silently change what a
// journal on disk means: kinds are stored by name, the version is checked,
// and a checksum over the content and the step count catches a journal cut
// short or edited.

// JournalVersion is the newest format version this rocectl writes, and
// reads along with 2 and 1 (migrated on read). Version 3 is version 2 with
// steps that span the slaves of a RoCE LAG bond (a step's "slaves", a
// port's "bond"); a journal without such a step is still written as
// version 2, so that a rocectl from before version 3 can read (and roll
// back) the journals of hosts without RoCE LAG.
const JournalVersion = 3

// lagFreeVersion is the version a journal without LAG steps is written in.
const lagFreeVersion = 2

const journalFormat = "rocectl-journal"

// ErrJournalVersion is a journal written in a format this rocectl does
// not know: it is refused, never guessed at.
var ErrJournalVersion = errors.New("unknown journal format version")

// ErrJournalDamaged is a journal that does not verify: not JSON, a
// checksum that does not match, a step count that does not, an unknown
// kind or state.
var ErrJournalDamaged = errors.New("journal is damaged")

// envelope is the file: the body, and the SHA-256 of its compact JSON.
type envelope struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	SHA256  string          `json:"sha256"`
	Journal json.RawMessage `json:"journal"`
}

// bodyV2 is the body of versions 2 and 3 (3 adds optional fields only).
type bodyV2 struct {
	ID          string     `json:"id"`
	Profile     string     `json:"profile"`
	ProfileHash string     `json:"profile_hash"`
	Root        string     `json:"root"`
	Started     time.Time  `json:"started"`
	Updated     time.Time  `json:"updated"`
	State       string     `json:"state"`
	Deadline    *time.Time `json:"confirm_deadline,omitempty"`
	StepCount   int        `json:"step_count"`
	Steps       []stepV2   `json:"steps"`
	Done        int        `json:"done"`
	Restored    []string   `json:"restored,omitempty"`
	Unchanged   []string   `json:"unchanged,omitempty"`
	Failures    []string   `json:"failures,omitempty"`
	Skipped     []Skipped  `json:"skipped,omitempty"`
	PID         int        `json:"pid"`
}

type stepV2 struct {
	Scope   string     `json:"scope"`
	Group   string     `json:"group"`
	Changes []changeV2 `json:"changes"`
	Undo    *undoV2    `json:"undo,omitempty"`
	// DSCPApps is the port's whole DSCP APP table before the step (trust
	// and DSCP-map steps), restored exactly on undo.
	DSCPApps *appTableV2 `json:"dscp_apps,omitempty"`
	// Slaves (version 3) are the slaves of the RoCE LAG bond a step
	// writes, in write order, each with its saved state.
	Slaves []slaveV3 `json:"slaves,omitempty"`
	// CC (version 3) is what a bnxt_re congestion-control step's
	// attributes held before it, restored exactly on undo.
	CC *host.CCSaved `json:"cc,omitempty"`
	// Firmware (version 3) is what a firmware step's NVConfig parameters
	// held at the next boot before it, per device, restored on undo.
	Firmware []firmwareV3 `json:"firmware,omitempty"`
}

type firmwareV3 struct {
	PCI    string            `json:"pci"`
	Params []firmwareValueV3 `json:"params"`
}

type firmwareValueV3 struct {
	Name     string `json:"name"`
	NextBoot uint64 `json:"next_boot"`
}

type slaveV3 struct {
	Netdev   string      `json:"netdev"`
	DSCPApps *appTableV2 `json:"dscp_apps,omitempty"`
}

type appTableV2 struct {
	Entries []appV2 `json:"entries"`
}

type appV2 struct {
	Selector uint8  `json:"selector"`
	Priority uint8  `json:"priority"`
	Protocol uint16 `json:"protocol"`
}

type changeV2 struct {
	Key    string   `json:"key"`
	Scope  string   `json:"scope"`
	Name   string   `json:"name"`
	Kind   kindName `json:"kind"`
	Arg    string   `json:"arg,omitempty"`
	Value  string   `json:"value"`
	Before string   `json:"before"`
	Absent bool     `json:"absent,omitempty"`
	From   string   `json:"from,omitempty"`
	Note   string   `json:"note,omitempty"`
	Port   *portV2  `json:"port,omitempty"`
}

type portV2 struct {
	Netdev     string `json:"netdev"`
	RDMADevice string `json:"rdma_device"`
	PortNum    int    `json:"port_num"`
	Driver     string `json:"driver"`
	PCI        string `json:"pci"`
	RoCEv2GID  int    `json:"roce_v2_gid"`
	// Bond (version 3) is the bond of a slave's port in a LAG step.
	Bond string `json:"bond,omitempty"`
}

type undoV2 struct {
	Path   string     `json:"path"`
	Absent bool       `json:"absent,omitempty"`
	Data   []byte     `json:"data,omitempty"`
	Mode   uint32     `json:"mode,omitempty"`
	Dir    *nic.DirID `json:"dir,omitempty"`
}

// kindName is a policy.Kind stored by its name ("mtu", "pfc"): the Kind's
// number is its place in the apply order, which a new kind changes.
type kindName policy.Kind

func (k kindName) MarshalText() ([]byte, error) {
	if _, ok := kindByName[policy.Kind(k).String()]; !ok {
		return nil, fmt.Errorf("kind %d has no name", int(k))
	}
	return []byte(policy.Kind(k).String()), nil
}

func (k *kindName) UnmarshalText(b []byte) error {
	v, ok := kindByName[string(b)]
	if !ok {
		return fmt.Errorf("unknown setting kind %q", b)
	}
	*k = kindName(v)
	return nil
}

var kindByName = func() map[string]policy.Kind {
	m := map[string]policy.Kind{}
	for _, k := range policy.Kinds() {
		m[k.String()] = k
	}
	return m
}()

var knownStates = map[string]bool{StateApplying: true, StateApplied: true, StateConfirmPending: true,
	StateCommitted: true, StateRolledBack: true, StateRollbackFailed: true}

// encodeJournal is the file content of j: version 2, or 3 when a step
// spans the slaves of a bond.
func encodeJournal(j *Journal) ([]byte, error) {
	b := bodyV2{ID: j.ID, Profile: j.Profile, ProfileHash: j.ProfileHash, Root: j.Root, Started: j.Started,
		Updated: j.Updated, State: j.State, Deadline: j.Deadline, StepCount: len(j.Steps), Done: j.Done,
		Restored: j.Restored, Unchanged: j.Unchanged, Failures: j.Failures, Skipped: j.Skipped, PID: j.PID}
	version := lagFreeVersion
	for _, st := range j.Steps {
		s := stepV2{Scope: st.Scope, Group: st.Group}
		for _, c := range st.Changes {
			cv := changeV2{Key: c.Key, Scope: c.Scope, Name: c.Name, Kind: kindName(c.Kind), Arg: c.Arg,
				Value: c.Value, Before: c.Before, Absent: c.Absent, From: c.From, Note: c.Note}
			if p := c.Port; p != nil {
				cv.Port = &portV2{Netdev: p.Netdev, RDMADevice: p.RDMADevice, PortNum: p.PortNum,
					Driver: p.Driver, PCI: p.PCI, RoCEv2GID: p.RoCEv2GID, Bond: p.Master}
				if p.Master != "" {
					version = JournalVersion
				}
			}
			s.Changes = append(s.Changes, cv)
		}
		if u := st.Undo; u != nil {
			s.Undo = &undoV2{Path: u.Path, Absent: u.Absent, Data: u.Data, Mode: u.Mode, Dir: u.Dir}
		}
		s.DSCPApps = encodeApps(st.DSCPApps)
		if st.CC != nil {
			s.CC = st.CC
			version = JournalVersion
		}
		for _, sl := range st.Slaves {
			s.Slaves = append(s.Slaves, slaveV3{Netdev: sl.Netdev, DSCPApps: encodeApps(sl.DSCPApps)})
			version = JournalVersion
		}
		for _, f := range st.Firmware {
			fv := firmwareV3{PCI: f.PCI, Params: []firmwareValueV3{}}
			for _, v := range f.Params {
				fv.Params = append(fv.Params, firmwareValueV3{Name: v.Name, NextBoot: v.NextBoot})
			}
			s.Firmware = append(s.Firmware, fv)
			version = JournalVersion
		}
		b.Steps = append(b.Steps, s)
	}
	// Compact: indenting doubled the encoding time and the bytes to fsync
	// of a journal saved twice per apply; `jq .` reads it fine.
	body, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	out, err := json.Marshal(envelope{Format: journalFormat, Version: version, SHA256: hex.EncodeToString(sum[:]), Journal: body})
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func encodeApps(t *host.AppTable) *appTableV2 {
	if t == nil {
		return nil
	}
	out := &appTableV2{Entries: []appV2{}}
	for _, a := range t.Entries {
		out.Entries = append(out.Entries, appV2{Selector: a.Selector, Priority: a.Priority, Protocol: a.Protocol})
	}
	return out
}

func decodeApps(t *appTableV2) *host.AppTable {
	if t == nil {
		return nil
	}
	out := &host.AppTable{Entries: []dcb.App{}}
	for _, a := range t.Entries {
		out.Entries = append(out.Entries, dcb.App{Selector: a.Selector, Priority: a.Priority, Protocol: a.Protocol})
	}
	return out
}

// DecodeJournal reads a journal file of any version this rocectl knows
// and verifies it. A journal it returns is whole: every error wraps
// ErrJournalDamaged or ErrJournalVersion, and says what to do.
func DecodeJournal(data []byte) (*Journal, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: not JSON (%v)", ErrJournalDamaged, err)
	}
	if head.Version == nil {
		return nil, fmt.Errorf("%w: it has no format version", ErrJournalDamaged)
	}
	var j *Journal
	var err error
	switch *head.Version {
	case 1:
		j, err = decodeV1(data)
	case 2, 3:
		j, err = decodeV2(data, *head.Version)
	default:
		return nil, fmt.Errorf("%w %d: this rocectl reads versions 1 to %d; use the rocectl that wrote it", ErrJournalVersion, *head.Version, JournalVersion)
	}
	if err != nil {
		return nil, err
	}
	if err := j.check(); err != nil {
		return nil, err
	}
	return j, nil
}

// decodeV2 reads versions 2 and 3 (which only adds fields).
func decodeV2(data []byte, version int) (*Journal, error) {
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJournalDamaged, err)
	}
	if env.Format != journalFormat {
		return nil, fmt.Errorf("%w: format %q, not %q", ErrJournalDamaged, env.Format, journalFormat)
	}
	// The checksum is over the compact body, so that a journal pretty
	// printed by hand (jq .) still verifies.
	var compact bytes.Buffer
	if err := json.Compact(&compact, env.Journal); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJournalDamaged, err)
	}
	sum := sha256.Sum256(compact.Bytes())
	if hex.EncodeToString(sum[:]) != env.SHA256 {
		return nil, fmt.Errorf("%w: its checksum does not match its content (cut short or edited)", ErrJournalDamaged)
	}
	var b bodyV2
	dec = json.NewDecoder(bytes.NewReader(env.Journal))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrJournalDamaged, err)
	}
	if b.StepCount != len(b.Steps) {
		return nil, fmt.Errorf("%w: it records %d steps but holds %d", ErrJournalDamaged, b.StepCount, len(b.Steps))
	}
	j := &Journal{Version: version, ID: b.ID, Profile: b.Profile, ProfileHash: b.ProfileHash, Root: b.Root,
		Started: b.Started, Updated: b.Updated, State: b.State, Deadline: b.Deadline, Done: b.Done,
		Restored: b.Restored, Unchanged: b.Unchanged, Failures: b.Failures, Skipped: b.Skipped, PID: b.PID}
	for i, s := range b.Steps {
		st := host.Step{Scope: s.Scope, Group: s.Group}
		for _, c := range s.Changes {
			pc := policy.Change{Setting: policy.Setting{Key: c.Key, Scope: c.Scope, Name: c.Name,
				Kind: policy.Kind(c.Kind), Arg: c.Arg, Value: c.Value, From: c.From},
				Before: c.Before, Absent: c.Absent, Note: c.Note}
			if p := c.Port; p != nil {
				if p.Bond != "" && version < 3 {
					return nil, fmt.Errorf("%w: step %d: a port's bond is not in format version %d", ErrJournalDamaged, i+1, version)
				}
				pc.Port = &port.Port{Netdev: p.Netdev, RDMADevice: p.RDMADevice, PortNum: p.PortNum,
					Driver: p.Driver, PCI: p.PCI, RoCEv2GID: p.RoCEv2GID, Master: p.Bond}
			}
			st.Changes = append(st.Changes, pc)
		}
		if u := s.Undo; u != nil {
			st.Undo = &host.UndoBlob{Path: u.Path, Absent: u.Absent, Data: u.Data, Mode: u.Mode, Dir: u.Dir}
		}
		st.DSCPApps = decodeApps(s.DSCPApps)
		if s.CC != nil {
			if version < 3 {
				return nil, fmt.Errorf("%w: step %d: saved congestion-control attributes are not in format version %d", ErrJournalDamaged, i+1, version)
			}
			if err := host.CheckCCSaved(s.CC); err != nil {
				return nil, fmt.Errorf("%w: step %d: %v", ErrJournalDamaged, i+1, err)
			}
			st.CC = s.CC
		}
		if len(s.Slaves) > 0 && version < 3 {
			return nil, fmt.Errorf("%w: step %d: a step's slaves are not in format version %d", ErrJournalDamaged, i+1, version)
		}
		if len(s.Firmware) > 0 && version < 3 {
			return nil, fmt.Errorf("%w: step %d: saved firmware values are not in format version %d", ErrJournalDamaged, i+1, version)
		}
		for _, f := range s.Firmware {
			fs := host.FirmwareSaved{PCI: f.PCI}
			for _, v := range f.Params {
				fs.Params = append(fs.Params, host.FirmwareValue{Name: v.Name, NextBoot: v.NextBoot})
			}
			st.Firmware = append(st.Firmware, fs)
		}
		for _, sl := range s.Slaves {
			st.Slaves = append(st.Slaves, host.SlaveState{Netdev: sl.Netdev, DSCPApps: decodeApps(sl.DSCPApps)})
		}
		j.Steps = append(j.Steps, st)
	}
	return j, nil
}

// check is what every decoded journal must satisfy before rollback,
// recovery, the agent or abandon may act on it: whatever its version, a
// journal that passes has every field they use (host.Step.Validate).
func (j *Journal) check() error {
	if j.ID == "" {
		return fmt.Errorf("%w: it has no ID", ErrJournalDamaged)
	}
	if err := statedir.CheckID(j.ID); err != nil {
		return fmt.Errorf("%w: %v", ErrJournalDamaged, err)
	}
	if !knownStates[j.State] {
		return fmt.Errorf("%w: unknown state %q", ErrJournalDamaged, j.State)
	}
	if j.State == StateConfirmPending && j.Deadline == nil {
		return fmt.Errorf("%w: it waits for a commit but has no confirm deadline", ErrJournalDamaged)
	}
	if j.Done < 0 || j.Done > len(j.Steps) {
		return fmt.Errorf("%w: %d of %d steps done", ErrJournalDamaged, j.Done, len(j.Steps))
	}
	for i, st := range j.Steps {
		if len(st.Changes) == 0 {
			return fmt.Errorf("%w: step %d has no changes", ErrJournalDamaged, i+1)
		}
		// Every field a rollback, recovery or abandon uses, checked
		// before any of them reads the host through it.
		if err := st.Validate(); err != nil {
			return fmt.Errorf("%w: step %d: %w", ErrJournalDamaged, i+1, err)
		}
		if err := checkSlaves(st); err != nil {
			return fmt.Errorf("%w: step %d: %v", ErrJournalDamaged, i+1, err)
		}
	}
	return nil
}

// checkSlaves: a LAG step names each slave once, every slave has a change
// and every change is on one of the slaves, so that undoing it slave by
// slave (host.Step.Parts) undoes every change.
func checkSlaves(st host.Step) error {
	if len(st.Slaves) == 0 {
		return nil
	}
	if st.DSCPApps != nil {
		return errors.New("a LAG step keeps its saved APP tables per slave")
	}
	n := map[string]int{}
	for _, s := range st.Slaves {
		if s.Netdev == "" {
			return errors.New("a slave without a netdev")
		}
		if _, dup := n[s.Netdev]; dup {
			return fmt.Errorf("slave %s listed twice", s.Netdev)
		}
		n[s.Netdev] = 0
	}
	for _, c := range st.Changes {
		if c.Port == nil {
			return fmt.Errorf("%s: a LAG step's change without a port", c.Key)
		}
		if _, ok := n[c.Port.Netdev]; !ok {
			return fmt.Errorf("%s: on %s, not one of the step's slaves", c.Key, c.Port.Netdev)
		}
		n[c.Port.Netdev]++
	}
	for _, s := range st.Slaves {
		if n[s.Netdev] == 0 {
			return fmt.Errorf("slave %s has no change", s.Netdev)
		}
	}
	return nil
}
