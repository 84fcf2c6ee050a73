package dcb

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

// Reply decoders. Each takes the payload of one netlink message — struct
// dcbmsg followed by attributes, without the nlmsghdr — and never panics: lengths that run past their
// container, attributes too short for their struct and missing mandatory
// attributes are errors wrapping ErrMalformed.

// attrScanner walks a run of netlink attributes. It does its own bounds
// checks instead of using nl.ParseRouteAttr, which slices past the end of a
// buffer whose last attribute is unpadded.
type attrScanner struct {
	b    []byte
	typ  uint16 // with NLA_F_NESTED / NLA_F_NET_BYTEORDER masked off
	data []byte
	err  error
}

func (s *attrScanner) next() bool {
	if s.err != nil || len(s.b) == 0 {
		return false
	}
	if len(s.b) < syscall.SizeofRtAttr {
		s.err = fmt.Errorf("%w: %d stray bytes after the last attribute", ErrMalformed, len(s.b))
		return false
	}
	l := int(binary.NativeEndian.Uint16(s.b[0:2]))
	if l < syscall.SizeofRtAttr || l > len(s.b) {
		s.err = fmt.Errorf("%w: attribute length %d with %d bytes left", ErrMalformed, l, len(s.b))
		return false
	}
	s.typ = binary.NativeEndian.Uint16(s.b[2:4]) & attrTypeMask
	s.data = s.b[syscall.SizeofRtAttr:l:l]
	// The last attribute of a message may lack its padding.
	s.b = s.b[min((l+3)&^3, len(s.b)):]
	return true
}

// payloadAttrs checks the dcbmsg header of a reply and returns its
// attributes.
func payloadAttrs(msg []byte, cmds ...uint8) (attrScanner, error) {
	if len(msg) < 4 {
		return attrScanner{}, fmt.Errorf("%w: %d-byte reply, shorter than struct dcbmsg", ErrMalformed, len(msg))
	}
	for _, c := range cmds {
		if msg[1] == c {
			return attrScanner{b: msg[4:]}, nil
		}
	}
	return attrScanner{}, fmt.Errorf("%w: reply for dcbnl command %d, want one of %v", ErrMalformed, msg[1], cmds)
}

// DecodeGetReply decodes an IEEE_GET reply (or an RTM_SETDCB notification
// from RTNLGRP_DCB, which carries the same state under cmd IEEE_SET or
// IEEE_DEL) into a State. Members the driver has no getter for stay nil;
// AppTrust is nil when the kernel sent no trust table and empty when it sent
// an empty one. The peer objects (DCB_ATTR_IEEE_PEER_ETS, _PEER_PFC,
// _PEER_APP) go to State.Peer. Unknown attributes (QCN, the rewrite
// table) are skipped.
func DecodeGetReply(msg []byte) (*State, error) {
	s, err := payloadAttrs(msg, CmdIEEEGet, CmdIEEESet, CmdIEEEDel)
	if err != nil {
		return nil, err
	}
	st := &State{}
	sawIEEE := false
	for s.next() {
		switch s.typ {
		case AttrIEEE:
			if sawIEEE {
				return nil, fmt.Errorf("%w: two DCB_ATTR_IEEE nests", ErrMalformed)
			}
			sawIEEE = true
			if err := decodeIEEE(s.data, st); err != nil {
				return nil, err
			}
		case AttrDCBX:
			if len(s.data) < 1 {
				return nil, fmt.Errorf("%w: empty DCB_ATTR_DCBX", ErrMalformed)
			}
			v := s.data[0]
			st.DCBX = &v
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	if !sawIEEE {
		return nil, fmt.Errorf("%w: IEEE_GET reply without DCB_ATTR_IEEE", ErrMalformed)
	}
	return st, nil
}

func decodeIEEE(b []byte, st *State) error {
	s := attrScanner{b: b}
	for s.next() {
		var err error
		switch s.typ {
		case AttrIEEEETS:
			st.ETS = &ETS{}
			err = st.ETS.UnmarshalBinary(s.data)
		case AttrIEEEPFC:
			st.PFC = &PFC{}
			err = st.PFC.UnmarshalBinary(s.data)
		case AttrIEEEMaxrate:
			st.Maxrate = &Maxrate{}
			err = st.Maxrate.UnmarshalBinary(s.data)
		case AttrDCBBuffer:
			st.Buffer = &Buffer{}
			err = st.Buffer.UnmarshalBinary(s.data)
		case AttrIEEEAppTable:
			st.Apps, err = decodeAppTable(s.data, st.Apps)
		case AttrDCBAppTrustTable:
			st.AppTrust, err = decodeAppTrust(s.data)
		case AttrIEEEPeerETS:
			peer(st).ETS = &ETS{}
			err = st.Peer.ETS.UnmarshalBinary(s.data)
		case AttrIEEEPeerPFC:
			peer(st).PFC = &PFC{}
			err = st.Peer.PFC.UnmarshalBinary(s.data)
		case AttrIEEEPeerApp:
			// dcbnl_build_peer_app(..., DCB_ATTR_IEEE_PEER_APP,
			// DCB_ATTR_IEEE_APP_UNSPEC, DCB_ATTR_IEEE_APP): no info
			// attribute (type 0 is skipped), entries under type 1.
			peer(st).App, err = decodePeerApp(s.data, 0, AttrIEEEApp)
		}
		if err != nil {
			return err
		}
	}
	return s.err
}

func peer(st *State) *Peer {
	if st.Peer == nil {
		st.Peer = &Peer{}
	}
	return st.Peer
}

// decodePeerApp decodes the nest dcbnl_build_peer_app makes: an optional
// struct dcb_peer_app_info under infoType (0: none) and one struct dcb_app
// per entry under entryType. Other types are skipped. Entries is empty, not
// nil, for an empty nest: the driver reported a peer APP table without
// entries.
func decodePeerApp(b []byte, infoType, entryType uint16) (*PeerApp, error) {
	pa := &PeerApp{Entries: []App{}}
	s := attrScanner{b: b}
	for s.next() {
		switch {
		case infoType != 0 && s.typ == infoType:
			pa.Info = &PeerAppInfo{}
			if err := pa.Info.UnmarshalBinary(s.data); err != nil {
				return nil, err
			}
		case s.typ == entryType:
			var a App
			if err := a.UnmarshalBinary(s.data); err != nil {
				return nil, err
			}
			pa.Entries = append(pa.Entries, a)
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return pa, nil
}

// DecodeCEEGetReply decodes the peer objects of a CEE_GET reply:
// DCB_ATTR_CEE{PEER_PG, PEER_PFC, PEER_APP_TABLE{PEER_APP_INFO,
// PEER_APP...}} as dcbnl_cee_fill puts them after the local CEE objects,
// which are skipped. The result is nil when the driver reported no peer
// object (no cee_peer_* / peer_getapp* ops, or they failed).
func DecodeCEEGetReply(msg []byte) (*CEEPeer, error) {
	s, err := payloadAttrs(msg, CmdCEEGet)
	if err != nil {
		return nil, err
	}
	var p CEEPeer
	sawCEE := false
	for s.next() {
		if s.typ != AttrCEE {
			continue
		}
		if sawCEE {
			return nil, fmt.Errorf("%w: two DCB_ATTR_CEE nests", ErrMalformed)
		}
		sawCEE = true
		c := attrScanner{b: s.data}
		for c.next() {
			var err error
			switch c.typ {
			case AttrCEEPeerPG:
				p.PG = &CEEPG{}
				err = p.PG.UnmarshalBinary(c.data)
			case AttrCEEPeerPFC:
				p.PFC = &CEEPFC{}
				err = p.PFC.UnmarshalBinary(c.data)
			case AttrCEEPeerAppTable:
				p.App, err = decodePeerApp(c.data, AttrCEEPeerAppInfo, AttrCEEPeerApp)
			}
			if err != nil {
				return nil, err
			}
		}
		if c.err != nil {
			return nil, c.err
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	if !sawCEE {
		return nil, fmt.Errorf("%w: CEE_GET reply without DCB_ATTR_CEE", ErrMalformed)
	}
	if p.PG == nil && p.PFC == nil && p.App == nil {
		return nil, nil
	}
	return &p, nil
}

// decodeAppTable appends the entries of an APP table nest to apps. Like the
// kernel, it skips attribute types it does not know.
func decodeAppTable(b []byte, apps []App) ([]App, error) {
	s := attrScanner{b: b}
	for s.next() {
		if s.typ != AttrIEEEApp && s.typ != AttrDCBApp {
			continue
		}
		var a App
		if err := a.UnmarshalBinary(s.data); err != nil {
			return nil, err
		}
		apps = append(apps, a)
	}
	return apps, s.err
}

// decodeAppTrust decodes the ordered selector list of an APP trust table.
func decodeAppTrust(b []byte) ([]uint8, error) {
	sel := []uint8{}
	s := attrScanner{b: b}
	for s.next() {
		if s.typ != AttrIEEEApp && s.typ != AttrDCBApp {
			continue
		}
		if len(s.data) < 1 {
			return nil, fmt.Errorf("%w: empty selector in the APP trust table", ErrMalformed)
		}
		sel = append(sel, s.data[0])
	}
	return sel, s.err
}

// StatusError is an in-band status that two errnos share: dcbnl_ieee_set
// puts the driver's int result in a u8 (nla_put_u8(skb, DCB_ATTR_IEEE,
// err)), so an errno above 255 keeps only its low byte. errors.Is matches
// Errno, the errno the byte reads as.
type StatusError struct {
	Errno syscall.Errno
	Or    string // the other errno it may be, and what that means
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%v, or %s: the kernel's u8 status of a DCB set keeps only the low byte of the driver's errno", e.Errno, e.Or)
}

func (e *StatusError) Unwrap() error { return e.Errno }

// DecodeSetReply decodes the reply to IEEE_SET or IEEE_DEL. The kernel
// reports the driver's result in-band, as a u8 DCB_ATTR_IEEE holding the
// negative errno (§A1.4.1): DecodeSetReply returns nil for 0, the
// syscall.Errno for a negative value, and an ErrMalformed error when the
// status is missing or positive.
func DecodeSetReply(msg []byte) error {
	s, err := payloadAttrs(msg, CmdIEEESet, CmdIEEEDel)
	if err != nil {
		return err
	}
	for s.next() {
		if s.typ != AttrIEEE {
			continue
		}
		if len(s.data) < 1 {
			return fmt.Errorf("%w: empty in-band status", ErrMalformed)
		}
		v := int8(s.data[0])
		switch {
		case v == 0:
			return nil
		case v == -int8(syscall.ENOMEM):
			// 0xF4 is also the low byte of the kernel-internal -ENOTSUPP
			// (524), which bnxt answers for a TSA or a DSCP map its
			// firmware cannot take (bnxt_ets_validate,
			// bnxt_dcbnl_ieee_dscp_app_prep).
			return &StatusError{Errno: syscall.ENOMEM, Or: "ENOTSUPP (524, not supported by the driver)"}
		case v < 0:
			return syscall.Errno(-int(v))
		default:
			return fmt.Errorf("%w: positive in-band status %d", ErrMalformed, v)
		}
	}
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%w: SET reply without the DCB_ATTR_IEEE status", ErrMalformed)
}

// DecodeDCBXReply decodes the reply to GDCBX or SDCBX: the u8 DCB_ATTR_DCBX.
// For GDCBX it is the DCBX mode; for SDCBX it is the driver's return value
// (0 accepted, anything else refused — not an errno).
func DecodeDCBXReply(msg []byte) (uint8, error) {
	s, err := payloadAttrs(msg, CmdGDCBX, CmdSDCBX)
	if err != nil {
		return 0, err
	}
	for s.next() {
		if s.typ != AttrDCBX {
			continue
		}
		if len(s.data) < 1 {
			return 0, fmt.Errorf("%w: empty DCB_ATTR_DCBX", ErrMalformed)
		}
		return s.data[0], nil
	}
	if s.err != nil {
		return 0, s.err
	}
	return 0, fmt.Errorf("%w: DCBX reply without DCB_ATTR_DCBX", ErrMalformed)
}
