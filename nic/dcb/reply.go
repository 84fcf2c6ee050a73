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
// an empty one. Unknown attributes (QCN, peer objects, the rewrite table) are
// skipped.
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
		}
		if err != nil {
			return err
		}
	}
	return s.err
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
