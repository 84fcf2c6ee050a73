package peer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// StateFile is the last peer result, in the state dir.
const StateFile = "peer.json"

// Peer verdicts.
const (
	Consistent = "consistent"
	Mismatch   = "mismatch"
	Unknown    = "unknown"
	Error      = "error"
)

// Report is `rocectl peer -o json` and the state file.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Profile       string `json:"profile"`
	// Host is the hostname of the machine the ports are on, which names
	// it in `rocectl report`.
	Host      string    `json:"host,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
	Ports     []Result  `json:"ports"`
}

// Result is one port's verdict.
type Result struct {
	Netdev  string `json:"netdev"`
	Driver  string `json:"driver,omitempty"`
	Verdict string `json:"verdict"`
	// Reason says why the verdict is unknown or error.
	Reason string `json:"reason,omitempty"`
	// FirmwareLLDP is set when the NIC's firmware consumes LLDP, so the
	// host does not see the switch's frames.
	FirmwareLLDP string `json:"firmware_lldp,omitempty"`
	// Source says where the switch's DCBX came from: SourceLLDP (also
	// when empty, as results stored before there was a second source) or
	// SourceDCBNL.
	Source     string          `json:"source,omitempty"`
	HeardAt    *time.Time      `json:"heard_at,omitempty"`
	DCBX       string          `json:"dcbx,omitempty"` // "ieee", "cee", "" none
	Mismatches []lldp.Mismatch `json:"mismatches,omitempty"`
	// Unchecked lists what the source could not tell and was therefore
	// not compared (a dcbnl peer has no PFC willing bit, ...).
	Unchecked []string    `json:"unchecked,omitempty"`
	Frame     *lldp.Frame `json:"frame,omitempty"`
	// DriverPeer is what the driver reported, for the dcbnl source.
	DriverPeer *DriverPeer `json:"driver_peer,omitempty"`
}

// SourceText is the source as the verdict lines say it.
func (r Result) SourceText() string {
	if r.Source == SourceDCBNL {
		return "from the driver's DCBX (dcbnl)"
	}
	return "from LLDP"
}

// PFCEnable is the PFC enable bitmap the switch announces, from either
// source, and whether it is known.
func (r Result) PFCEnable() (uint8, bool) {
	if r.Frame != nil {
		return r.Frame.PFCEnable()
	}
	if p := r.DriverPeer; p != nil {
		switch {
		case r.DCBX == "cee" && p.CEE != nil && p.CEE.PFC != nil:
			return p.CEE.PFC.Enable, true
		case r.DCBX == "ieee" && p.IEEE != nil && p.IEEE.PFC != nil:
			return p.IEEE.PFC.Enable, true
		}
	}
	return 0, false
}

// Switch names the partner: "NAME (chassis ID) port ID" from LLDP; the
// driver's peer objects carry no identity.
func (r Result) Switch() string {
	f := r.Frame
	if f == nil {
		if r.Source == SourceDCBNL {
			return "link partner"
		}
		return "-"
	}
	name := f.SystemName
	if name == "" {
		return fmt.Sprintf("chassis %s port %s", f.ChassisID, f.PortID)
	}
	return fmt.Sprintf("%s (%s) port %s", name, f.ChassisID, f.PortID)
}

// Judge turns a heard frame into a verdict.
func Judge(r *Result, rec lldp.Received, e lldp.Expect) {
	at := rec.At
	r.Source, r.HeardAt, r.Frame, r.DriverPeer, r.Unchecked = SourceLLDP, &at, rec.Frame, nil, nil
	r.DCBX = rec.Frame.DCBX()
	if r.DCBX == "" {
		r.Verdict = Unknown
		r.Reason = "the switch sends LLDP without DCBX TLVs (DCBX is off on its port, or its LLDP does not select the DCBX TLVs)"
		return
	}
	r.Mismatches = lldp.Check(rec.Frame, e)
	r.Verdict = Consistent
	if len(r.Mismatches) > 0 {
		r.Verdict = Mismatch
	}
}

// Expect derives from a profile what the switch must agree with: the
// PFC set, the trust mode, the DSCPs the host marks (RoCE data from
// roce.default_tos, else verbs_traffic_class, else NCCL IB_TC; CNPs from
// ecn.cnp_dscp) with the priority each must land in, and [qos.ets].
func Expect(p *policy.Profile) lldp.Expect {
	var e lldp.Expect
	q := p.QoS
	if q.PFCPriorities != nil {
		b := uint8(*q.PFCPriorities)
		e.PFC = &b
	}
	if q.Trust != nil {
		e.Trust = *q.Trust
	}
	prioOf := func(dscp int) (int, bool) {
		if q.DSCPToPriority != nil {
			return q.DSCPToPriority.Priority(dscp)
		}
		return dscp >> 3, true // the default map
	}
	if e.Trust == "dscp" {
		tos := -1
		switch {
		case p.RoCE.DefaultTOS != nil:
			tos = *p.RoCE.DefaultTOS
		case p.RoCE.VerbsTrafficClass != nil:
			tos = *p.RoCE.VerbsTrafficClass
		default:
			if v, ok := p.NCCL.Var("IB_TC"); ok {
				if n, err := strconv.Atoi(v); err == nil {
					tos = n
				}
			}
		}
		if tos >= 0 {
			if prio, ok := prioOf(tos >> 2); ok {
				e.DSCP = append(e.DSCP, lldp.DSCPUse{DSCP: tos >> 2, Priority: prio, Role: "RoCE data"})
			}
		}
		if p.ECN.CNPDSCP != nil {
			prio, ok := prioOf(*p.ECN.CNPDSCP)
			if p.ECN.CNPPriority != nil {
				prio, ok = *p.ECN.CNPPriority, true
			}
			if ok {
				e.DSCP = append(e.DSCP, lldp.DSCPUse{DSCP: *p.ECN.CNPDSCP, Priority: prio, Role: "CNP"})
			}
		}
		// The profile's other traffic classes ([classes]: NCCL's control
		// class, a storage class) must land on their priorities at the
		// switch too.
		for _, c := range p.Classes {
			if c.Name == policy.ClassData || c.Name == policy.ClassCNP || c.DSCP == nil || c.Priority == nil {
				continue
			}
			e.DSCP = append(e.DSCP, lldp.DSCPUse{DSCP: *c.DSCP, Priority: *c.Priority, Role: "class " + c.Name})
		}
	}
	if ets := q.ETS; ets != nil {
		e.ETS = &lldp.ExpectETS{PrioTC: ets.PriorityToTC, TSA: ets.TCTSA, Bandwidth: ets.TCBandwidth}
	}
	return e
}

// WriteState stores rep as the state dir's last peer result
// (statedir.Store.WriteStateFile: atomic, and only in a trusted state dir).
func WriteState(dir string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return statedir.Store{Dir: dir}.WriteStateFile(StateFile, append(b, '\n'))
}

// ReadState reads the last peer result; (nil, nil) when there is none.
// A state dir or file another user could have written is refused
// (statedir.ErrUnsafe), as journals are: root's audit shows what it holds.
func ReadState(dir string) (*Report, error) {
	b, err := statedir.Store{Dir: dir}.ReadStateFile(StateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", StateFile, err)
	}
	return &rep, nil
}
