package lldp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"
)

// EtherType is LLDP's Ethernet type.
const EtherType = 0x88cc

// MaxLLDPDU is the largest LLDPDU accepted: what fits in a standard
// Ethernet payload. Anything larger is rejected as oversized.
const MaxLLDPDU = 1500

// MulticastNearestBridge is the LLDP destination address a switch port
// sends to (01-80-C2-00-00-0E, never forwarded by bridges).
var MulticastNearestBridge = net.HardwareAddr{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}

// TLV types of IEEE 802.1AB.
const (
	tlvEnd       = 0
	tlvChassisID = 1
	tlvPortID    = 2
	tlvTTL       = 3
	tlvPortDesc  = 4
	tlvSysName   = 5
	tlvOrg       = 127
)

// Organisationally specific TLVs.
var (
	ouiIEEE8021 = [3]byte{0x00, 0x80, 0xc2}
	ouiCEE      = [3]byte{0x00, 0x1b, 0x21}
)

// 802.1Qaz subtypes under OUI 00-80-C2.
const (
	subETSConfig = 0x09
	subETSReco   = 0x0a
	subPFCConfig = 0x0b
	subAppPrio   = 0x0c
)

// ErrMalformed is what every decoding failure answers to errors.Is.
var ErrMalformed = errors.New("malformed LLDPDU")

// DecodeError says which TLV of a frame is wrong and why.
type DecodeError struct {
	Offset int    // byte offset of the TLV in the LLDPDU
	TLV    string // e.g. "PFC Configuration", "Chassis ID"
	Reason string
}

func (e *DecodeError) Error() string {
	if e.TLV == "" {
		return fmt.Sprintf("malformed LLDPDU at byte %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("malformed LLDPDU: %s TLV at byte %d: %s", e.TLV, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrMalformed) true for every decoding failure.
func (e *DecodeError) Is(target error) bool { return target == ErrMalformed }

// Frame is a decoded LLDPDU.
type Frame struct {
	ChassisIDSubtype uint8  `json:"chassis_id_subtype"`
	ChassisID        string `json:"chassis_id"` // MAC as aa:bb:.., text as is, else hex
	PortIDSubtype    uint8  `json:"port_id_subtype"`
	PortID           string `json:"port_id"`
	TTL              uint16 `json:"ttl"` // seconds
	PortDescription  string `json:"port_description,omitempty"`
	SystemName       string `json:"system_name,omitempty"`
	IEEE             *IEEE  `json:"ieee,omitempty"` // nil: no 802.1Qaz TLV
	CEE              *CEE   `json:"cee,omitempty"`  // nil: no CEE DCBX TLV
}

// IEEE holds the 802.1Qaz TLVs of a frame; a nil field was not sent.
type IEEE struct {
	ETS     *ETSConfig `json:"ets,omitempty"`
	ETSReco *ETSReco   `json:"ets_recommendation,omitempty"`
	PFC     *PFC       `json:"pfc,omitempty"`
	// App is the Application Priority table, in the order sent (a table
	// may span several TLVs). Nil when no Application Priority TLV came.
	App []App `json:"app,omitempty"`
}

// TSA values of the ETS TLVs.
const (
	TSAStrict = 0
	TSACBS    = 1
	TSAETS    = 2
	TSAVendor = 255
)

// ETSConfig is the ETS Configuration TLV (802.1Qaz D.2.9).
type ETSConfig struct {
	Willing     bool     `json:"willing"`
	CBS         bool     `json:"cbs"`
	MaxTCs      uint8    `json:"max_tcs"` // as sent: 0 means 8
	PrioTC      [8]uint8 `json:"prio_tc"` // traffic class of each priority
	TCBandwidth [8]uint8 `json:"tc_bandwidth"`
	TSA         [8]uint8 `json:"tsa"`
}

// ETSReco is the ETS Recommendation TLV (802.1Qaz D.2.10).
type ETSReco struct {
	PrioTC      [8]uint8 `json:"prio_tc"`
	TCBandwidth [8]uint8 `json:"tc_bandwidth"`
	TSA         [8]uint8 `json:"tsa"`
}

// PFC is the PFC Configuration TLV (802.1Qaz D.2.11).
type PFC struct {
	Willing bool  `json:"willing"`
	MBC     bool  `json:"mbc"` // MACsec bypass capability
	Cap     uint8 `json:"cap"` // traffic classes that can have PFC at once
	Enable  uint8 `json:"enable"`
}

// Application Priority selectors (802.1Q-2014 D.2.12).
const (
	SelEthertype = 1
	SelTCPPort   = 2
	SelUDPPort   = 3
	SelPort      = 4
	SelDSCP      = 5
)

// App is one Application Priority entry: traffic that Selector/Protocol
// picks out gets Priority. Selector 5: Protocol is a DSCP.
type App struct {
	Priority uint8  `json:"priority"`
	Selector uint8  `json:"selector"`
	Protocol uint16 `json:"protocol"`
}

// CEE holds the DCBX 1.01 (CEE) feature TLVs; nil fields were not sent.
type CEE struct {
	Control *CEEControl `json:"control,omitempty"`
	PG      *CEEPG      `json:"pg,omitempty"`
	PFC     *CEEPFC     `json:"pfc,omitempty"`
	App     *CEEApp     `json:"app,omitempty"`
}

// CEEControl is the DCBX control sub-TLV.
type CEEControl struct {
	OperVersion uint8  `json:"oper_version"`
	MaxVersion  uint8  `json:"max_version"`
	Seq         uint32 `json:"seq"`
	Ack         uint32 `json:"ack"`
}

// CEEFeature is the header every CEE feature sub-TLV starts with.
type CEEFeature struct {
	OperVersion uint8 `json:"oper_version"`
	MaxVersion  uint8 `json:"max_version"`
	Enabled     bool  `json:"enabled"`
	Willing     bool  `json:"willing"`
	Error       bool  `json:"error"`
	Subtype     uint8 `json:"subtype"`
}

// CEEPG is the priority group sub-TLV: PGID 15 means strict priority.
type CEEPG struct {
	CEEFeature
	PGID    [8]uint8 `json:"pgid"`    // of each priority
	Percent [8]uint8 `json:"percent"` // of each priority group
	NumTCs  uint8    `json:"num_tcs"`
}

// CEEPFC is the PFC sub-TLV.
type CEEPFC struct {
	CEEFeature
	Enable uint8 `json:"enable"`
	NumTCs uint8 `json:"num_tcs"`
}

// CEEApp is the application sub-TLV.
type CEEApp struct {
	CEEFeature
	Entries []CEEAppEntry `json:"entries,omitempty"`
}

// CEE application selectors.
const (
	CEESelEthertype = 0
	CEESelPort      = 1
)

// CEEAppEntry is one CEE application: Priorities is a bitmap.
type CEEAppEntry struct {
	Protocol   uint16 `json:"protocol"`
	Selector   uint8  `json:"selector"`
	Priorities uint8  `json:"priorities"`
}

// DecodeFrame decodes an Ethernet frame: destination, source, an optional
// 802.1Q tag, EtherType 0x88cc, then the LLDPDU.
func DecodeFrame(b []byte) (*Frame, error) {
	if len(b) < 14 {
		return nil, &DecodeError{Reason: fmt.Sprintf("Ethernet frame of %d bytes is shorter than its header", len(b))}
	}
	off := 12
	et := binary.BigEndian.Uint16(b[off:])
	if et == 0x8100 {
		if len(b) < 18 {
			return nil, &DecodeError{Reason: "802.1Q tag cut short"}
		}
		off += 4
		et = binary.BigEndian.Uint16(b[off:])
	}
	if et != EtherType {
		return nil, &DecodeError{Reason: fmt.Sprintf("EtherType %#04x is not LLDP", et)}
	}
	return Decode(b[off+2:])
}

// Decode decodes an LLDPDU (the frame's payload after the EtherType).
// Bytes after the End TLV are padding and ignored.
func Decode(b []byte) (*Frame, error) {
	if len(b) > MaxLLDPDU {
		return nil, &DecodeError{Reason: fmt.Sprintf("oversized: %d bytes, at most %d", len(b), MaxLLDPDU)}
	}
	f := &Frame{}
	d := decoder{f: f}
	off, n := 0, 0
	for off < len(b) {
		if len(b)-off < 2 {
			return nil, &DecodeError{Offset: off, Reason: "TLV header cut short"}
		}
		hdr := binary.BigEndian.Uint16(b[off:])
		typ, ln := int(hdr>>9), int(hdr&0x1ff)
		if off+2+ln > len(b) {
			return nil, &DecodeError{Offset: off, TLV: tlvName(typ), Reason: fmt.Sprintf("length %d runs past the end of the frame (%d bytes left)", ln, len(b)-off-2)}
		}
		v := b[off+2 : off+2+ln]
		// The first three TLVs are Chassis ID, Port ID and TTL, in order.
		if n < 3 && typ != n+1 {
			return nil, &DecodeError{Offset: off, TLV: tlvName(typ), Reason: fmt.Sprintf("TLV %d of the frame must be %s", n+1, tlvName(n+1))}
		}
		if typ == tlvEnd {
			if ln != 0 {
				return nil, &DecodeError{Offset: off, TLV: "End", Reason: fmt.Sprintf("length %d, want 0", ln)}
			}
			return f, nil
		}
		if reason := d.tlv(typ, v); reason != "" {
			name := tlvName(typ)
			if typ == tlvOrg {
				name = d.orgName(v)
			}
			return nil, &DecodeError{Offset: off, TLV: name, Reason: reason}
		}
		off += 2 + ln
		n++
	}
	if n < 3 {
		return nil, &DecodeError{Offset: off, TLV: tlvName(n + 1), Reason: "missing"}
	}
	return f, nil // no End TLV: tolerated, some senders omit it
}

type decoder struct {
	f *Frame
}

// tlv decodes one TLV into d.f and returns why it is malformed, or "".
func (d *decoder) tlv(typ int, v []byte) string {
	f := d.f
	switch typ {
	case tlvChassisID, tlvPortID:
		if len(v) < 2 || len(v) > 256 {
			return fmt.Sprintf("length %d, want 2..256", len(v))
		}
		if typ == tlvChassisID {
			f.ChassisIDSubtype, f.ChassisID = v[0], idString(v[0], v[1:], 4)
		} else {
			f.PortIDSubtype, f.PortID = v[0], idString(v[0], v[1:], 3)
		}
	case tlvTTL:
		if len(v) != 2 {
			return fmt.Sprintf("length %d, want 2", len(v))
		}
		f.TTL = binary.BigEndian.Uint16(v)
	case tlvPortDesc, tlvSysName:
		if len(v) > 255 {
			return fmt.Sprintf("length %d, want at most 255", len(v))
		}
		if typ == tlvPortDesc {
			f.PortDescription = printable(v)
		} else {
			f.SystemName = printable(v)
		}
	case tlvOrg:
		if len(v) < 4 {
			return fmt.Sprintf("length %d, want at least 4 (OUI and subtype)", len(v))
		}
		oui := [3]byte{v[0], v[1], v[2]}
		switch {
		case oui == ouiIEEE8021:
			return d.ieee(v[3], v[4:])
		case oui == ouiCEE && v[3] == 0x02:
			return d.cee(v[4:])
		}
	}
	return "" // other TLVs are not ours to judge
}

func (d *decoder) orgName(v []byte) string {
	if len(v) >= 4 {
		switch {
		case [3]byte{v[0], v[1], v[2]} == ouiIEEE8021:
			switch v[3] {
			case subETSConfig:
				return "ETS Configuration"
			case subETSReco:
				return "ETS Recommendation"
			case subPFCConfig:
				return "PFC Configuration"
			case subAppPrio:
				return "Application Priority"
			}
		case [3]byte{v[0], v[1], v[2]} == ouiCEE:
			return "CEE DCBX"
		}
	}
	return "Organizationally Specific"
}

func tlvName(typ int) string {
	switch typ {
	case tlvEnd:
		return "End"
	case tlvChassisID:
		return "Chassis ID"
	case tlvPortID:
		return "Port ID"
	case tlvTTL:
		return "TTL"
	case tlvPortDesc:
		return "Port Description"
	case tlvSysName:
		return "System Name"
	case tlvOrg:
		return "Organizationally Specific"
	}
	return fmt.Sprintf("type %d", typ)
}

// ieee decodes an 802.1Qaz TLV's information after OUI and subtype.
func (d *decoder) ieee(sub byte, v []byte) string {
	if d.f.IEEE == nil && sub >= subETSConfig && sub <= subAppPrio {
		d.f.IEEE = &IEEE{}
	}
	q := d.f.IEEE
	switch sub {
	case subETSConfig:
		if len(v) != 21 {
			return fmt.Sprintf("length %d, want 25", len(v)+4)
		}
		if q.ETS != nil {
			return "sent twice in one frame"
		}
		e := &ETSConfig{Willing: v[0]&0x80 != 0, CBS: v[0]&0x40 != 0, MaxTCs: v[0] & 0x07}
		e.PrioTC, e.TCBandwidth, e.TSA = etsTables(v[1:])
		q.ETS = e
	case subETSReco:
		if len(v) != 21 {
			return fmt.Sprintf("length %d, want 25", len(v)+4)
		}
		if q.ETSReco != nil {
			return "sent twice in one frame"
		}
		e := &ETSReco{}
		e.PrioTC, e.TCBandwidth, e.TSA = etsTables(v[1:])
		q.ETSReco = e
	case subPFCConfig:
		if len(v) != 2 {
			return fmt.Sprintf("length %d, want 6", len(v)+4)
		}
		if q.PFC != nil {
			return "sent twice in one frame"
		}
		q.PFC = &PFC{Willing: v[0]&0x80 != 0, MBC: v[0]&0x40 != 0, Cap: v[0] & 0x0f, Enable: v[1]}
	case subAppPrio:
		if len(v) < 1 || (len(v)-1)%3 != 0 {
			return fmt.Sprintf("length %d, want 5 + 3 per entry", len(v)+4)
		}
		if q.App == nil {
			q.App = []App{}
		}
		for e := v[1:]; len(e) >= 3; e = e[3:] {
			sel := e[0] & 0x07
			if sel == 0 || sel > SelDSCP {
				return fmt.Sprintf("entry selector %d is reserved", sel)
			}
			p := binary.BigEndian.Uint16(e[1:])
			if sel == SelDSCP && p > 63 {
				return fmt.Sprintf("DSCP entry protocol %d is not a DSCP (0..63)", p)
			}
			q.App = append(q.App, App{Priority: e[0] >> 5, Selector: sel, Protocol: p})
		}
	}
	return ""
}

// etsTables reads the priority assignment (4 bytes, two priorities per
// byte, the even one in the high nibble), TC bandwidth and TSA tables.
func etsTables(v []byte) (prioTC, bw, tsa [8]uint8) {
	for i := 0; i < 4; i++ {
		prioTC[2*i], prioTC[2*i+1] = v[i]>>4, v[i]&0x0f
	}
	copy(bw[:], v[4:12])
	copy(tsa[:], v[12:20])
	return
}

// cee decodes the CEE DCBX 1.01 TLV: sub-TLVs with a 7-bit type and a
// 9-bit length, like LLDP's own.
func (d *decoder) cee(v []byte) string {
	if d.f.CEE != nil {
		return "sent twice in one frame"
	}
	c := &CEE{}
	for off := 0; off < len(v); {
		if len(v)-off < 2 {
			return fmt.Sprintf("sub-TLV header at byte %d cut short", off)
		}
		hdr := binary.BigEndian.Uint16(v[off:])
		typ, ln := int(hdr>>9), int(hdr&0x1ff)
		if off+2+ln > len(v) {
			return fmt.Sprintf("sub-TLV type %d length %d runs past the TLV", typ, ln)
		}
		s := v[off+2 : off+2+ln]
		var want string
		switch typ {
		case 1:
			if ln != 10 {
				want = "control sub-TLV length %d, want 10"
				break
			}
			c.Control = &CEEControl{OperVersion: s[0], MaxVersion: s[1], Seq: binary.BigEndian.Uint32(s[2:]), Ack: binary.BigEndian.Uint32(s[6:])}
		case 2:
			if ln != 17 {
				want = "priority group sub-TLV length %d, want 17"
				break
			}
			pg := &CEEPG{CEEFeature: ceeFeature(s), NumTCs: s[16]}
			for i := 0; i < 4; i++ {
				pg.PGID[2*i], pg.PGID[2*i+1] = s[4+i]>>4, s[4+i]&0x0f
			}
			copy(pg.Percent[:], s[8:16])
			c.PG = pg
		case 3:
			if ln != 6 {
				want = "PFC sub-TLV length %d, want 6"
				break
			}
			c.PFC = &CEEPFC{CEEFeature: ceeFeature(s), Enable: s[4], NumTCs: s[5]}
		case 4:
			if ln < 4 || (ln-4)%6 != 0 {
				want = "application sub-TLV length %d, want 4 + 6 per entry"
				break
			}
			app := &CEEApp{CEEFeature: ceeFeature(s)}
			for e := s[4:]; len(e) >= 6; e = e[6:] {
				app.Entries = append(app.Entries, CEEAppEntry{Protocol: binary.BigEndian.Uint16(e), Selector: e[2] & 0x03, Priorities: e[5]})
			}
			c.App = app
		}
		if want != "" {
			return fmt.Sprintf(want, ln)
		}
		off += 2 + ln
	}
	d.f.CEE = c
	return ""
}

func ceeFeature(s []byte) CEEFeature {
	return CEEFeature{OperVersion: s[0], MaxVersion: s[1], Enabled: s[2]&0x80 != 0, Willing: s[2]&0x40 != 0, Error: s[2]&0x20 != 0, Subtype: s[3]}
}

// idString renders a chassis or port ID: a MAC address subtype as
// aa:bb:cc:dd:ee:ff, printable text as is, anything else as hex.
func idString(subtype byte, v []byte, macSubtype byte) string {
	if subtype == macSubtype && len(v) == 6 {
		return net.HardwareAddr(v).String()
	}
	if utf8.Valid(v) && !strings.ContainsFunc(string(v), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return string(v)
	}
	return fmt.Sprintf("%x", v)
}

// printable keeps text TLVs safe to print on a terminal: control
// characters become spaces, invalid UTF-8 the replacement character.
func printable(v []byte) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(v), "\uFFFD"))
}
