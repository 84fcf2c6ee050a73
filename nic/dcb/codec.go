package dcb

import (
	"encoding/binary"
	"fmt"
)

// Binary encoding of the uapi structs (reference §A1.3). The kernel copies
// them with memcpy, so multi-byte fields are host-endian and the layout is
// gcc's: ieee_pfc has a pad byte after mbc and two after delay, which we
// write as zeros. Unmarshal accepts longer input and ignores the tail, as the
// kernel's attribute policy does (.len is a minimum), so a struct that grows
// in a later kernel still decodes.

// MarshalBinary encodes e as struct ieee_ets (59 bytes).
func (e *ETS) MarshalBinary() ([]byte, error) {
	b := make([]byte, SizeETS)
	b[0], b[1], b[2] = e.Willing, e.ETSCap, e.CBS
	copy(b[3:11], e.TCTxBW[:])
	copy(b[11:19], e.TCRxBW[:])
	copy(b[19:27], e.TCTSA[:])
	copy(b[27:35], e.PrioTC[:])
	copy(b[35:43], e.TCRecoBW[:])
	copy(b[43:51], e.TCRecoTSA[:])
	copy(b[51:59], e.RecoPrioTC[:])
	return b, nil
}

// UnmarshalBinary decodes struct ieee_ets.
func (e *ETS) UnmarshalBinary(b []byte) error {
	if err := checkLen("ieee_ets", b, SizeETS); err != nil {
		return err
	}
	e.Willing, e.ETSCap, e.CBS = b[0], b[1], b[2]
	copy(e.TCTxBW[:], b[3:11])
	copy(e.TCRxBW[:], b[11:19])
	copy(e.TCTSA[:], b[19:27])
	copy(e.PrioTC[:], b[27:35])
	copy(e.TCRecoBW[:], b[35:43])
	copy(e.TCRecoTSA[:], b[43:51])
	copy(e.RecoPrioTC[:], b[51:59])
	return nil
}

// MarshalBinary encodes p as struct ieee_pfc (136 bytes: delay at offset 4,
// requests at 8, indications at 72).
func (p *PFC) MarshalBinary() ([]byte, error) {
	b := make([]byte, SizePFC)
	b[0], b[1], b[2] = p.Cap, p.Enable, p.MBC
	binary.NativeEndian.PutUint16(b[4:6], p.Delay)
	for i := range NumTCs {
		binary.NativeEndian.PutUint64(b[8+8*i:], p.Requests[i])
		binary.NativeEndian.PutUint64(b[72+8*i:], p.Indications[i])
	}
	return b, nil
}

// UnmarshalBinary decodes struct ieee_pfc.
func (p *PFC) UnmarshalBinary(b []byte) error {
	if err := checkLen("ieee_pfc", b, SizePFC); err != nil {
		return err
	}
	p.Cap, p.Enable, p.MBC = b[0], b[1], b[2]
	p.Delay = binary.NativeEndian.Uint16(b[4:6])
	for i := range NumTCs {
		p.Requests[i] = binary.NativeEndian.Uint64(b[8+8*i:])
		p.Indications[i] = binary.NativeEndian.Uint64(b[72+8*i:])
	}
	return nil
}

// MarshalBinary encodes a as struct dcb_app (4 bytes).
func (a *App) MarshalBinary() ([]byte, error) {
	return a.appendBinary(make([]byte, 0, SizeApp)), nil
}

func (a *App) appendBinary(b []byte) []byte {
	b = append(b, a.Selector, a.Priority)
	return binary.NativeEndian.AppendUint16(b, a.Protocol)
}

// UnmarshalBinary decodes struct dcb_app.
func (a *App) UnmarshalBinary(b []byte) error {
	if err := checkLen("dcb_app", b, SizeApp); err != nil {
		return err
	}
	a.Selector, a.Priority = b[0], b[1]
	a.Protocol = binary.NativeEndian.Uint16(b[2:4])
	return nil
}

// MarshalBinary encodes bu as struct dcbnl_buffer (44 bytes).
func (bu *Buffer) MarshalBinary() ([]byte, error) {
	b := make([]byte, SizeBuffer)
	copy(b[0:8], bu.PrioBuffer[:])
	for i := range NumTCs {
		binary.NativeEndian.PutUint32(b[8+4*i:], bu.Size[i])
	}
	binary.NativeEndian.PutUint32(b[40:44], bu.TotalSize)
	return b, nil
}

// UnmarshalBinary decodes struct dcbnl_buffer.
func (bu *Buffer) UnmarshalBinary(b []byte) error {
	if err := checkLen("dcbnl_buffer", b, SizeBuffer); err != nil {
		return err
	}
	copy(bu.PrioBuffer[:], b[0:8])
	for i := range NumTCs {
		bu.Size[i] = binary.NativeEndian.Uint32(b[8+4*i:])
	}
	bu.TotalSize = binary.NativeEndian.Uint32(b[40:44])
	return nil
}

// MarshalBinary encodes m as struct ieee_maxrate (64 bytes, kbit/s).
func (m *Maxrate) MarshalBinary() ([]byte, error) {
	b := make([]byte, SizeMaxrate)
	for i := range NumTCs {
		binary.NativeEndian.PutUint64(b[8*i:], m.TCMaxrate[i])
	}
	return b, nil
}

// UnmarshalBinary decodes struct ieee_maxrate.
func (m *Maxrate) UnmarshalBinary(b []byte) error {
	if err := checkLen("ieee_maxrate", b, SizeMaxrate); err != nil {
		return err
	}
	for i := range NumTCs {
		m.TCMaxrate[i] = binary.NativeEndian.Uint64(b[8*i:])
	}
	return nil
}

// MarshalBinary encodes g as struct cee_pg (20 bytes: willing, error,
// pg_en, tcs_supported, pg_bw[8], prio_pg[8]).
func (g *CEEPG) MarshalBinary() ([]byte, error) {
	b := make([]byte, SizeCEEPG)
	b[0], b[1], b[2], b[3] = g.Willing, g.Error, g.Enable, g.TCsSupported
	copy(b[4:12], g.BW[:])
	copy(b[12:20], g.PrioPG[:])
	return b, nil
}

// UnmarshalBinary decodes struct cee_pg.
func (g *CEEPG) UnmarshalBinary(b []byte) error {
	if err := checkLen("cee_pg", b, SizeCEEPG); err != nil {
		return err
	}
	g.Willing, g.Error, g.Enable, g.TCsSupported = b[0], b[1], b[2], b[3]
	copy(g.BW[:], b[4:12])
	copy(g.PrioPG[:], b[12:20])
	return nil
}

// MarshalBinary encodes p as struct cee_pfc (4 bytes).
func (p *CEEPFC) MarshalBinary() ([]byte, error) {
	return []byte{p.Willing, p.Error, p.Enable, p.TCsSupported}, nil
}

// UnmarshalBinary decodes struct cee_pfc.
func (p *CEEPFC) UnmarshalBinary(b []byte) error {
	if err := checkLen("cee_pfc", b, SizeCEEPFC); err != nil {
		return err
	}
	p.Willing, p.Error, p.Enable, p.TCsSupported = b[0], b[1], b[2], b[3]
	return nil
}

// MarshalBinary encodes i as struct dcb_peer_app_info (2 bytes).
func (i *PeerAppInfo) MarshalBinary() ([]byte, error) {
	return []byte{i.Willing, i.Error}, nil
}

// UnmarshalBinary decodes struct dcb_peer_app_info.
func (i *PeerAppInfo) UnmarshalBinary(b []byte) error {
	if err := checkLen("dcb_peer_app_info", b, SizeAppInfo); err != nil {
		return err
	}
	i.Willing, i.Error = b[0], b[1]
	return nil
}

func checkLen(what string, b []byte, want int) error {
	if len(b) < want {
		return fmt.Errorf("%w: %s is %d bytes, want at least %d", ErrMalformed, what, len(b), want)
	}
	return nil
}
