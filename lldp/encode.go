package lldp

import (
	"encoding/binary"
	"fmt"
	"net"
)

// Encode builds the LLDPDU of f, End TLV included: the inverse of Decode
// for the TLVs this package knows. Tests use it to make frame variants, and
// an operator tool could use it to announce a host's own DCBX. IDs are
// encoded as text except a MAC-address subtype whose ID parses as a MAC.
func Encode(f *Frame) ([]byte, error) {
	var b []byte
	tlv := func(typ int, v []byte) error {
		if len(v) > 0x1ff {
			return fmt.Errorf("%s TLV of %d bytes does not fit a 9-bit length", tlvName(typ), len(v))
		}
		b = binary.BigEndian.AppendUint16(b, uint16(typ)<<9|uint16(len(v)))
		b = append(b, v...)
		return nil
	}
	id := func(subtype byte, s string, macSubtype byte) []byte {
		if subtype == macSubtype {
			if mac, err := net.ParseMAC(s); err == nil && len(mac) == 6 {
				return append([]byte{subtype}, mac...)
			}
		}
		return append([]byte{subtype}, s...)
	}
	steps := []func() error{
		func() error { return tlv(tlvChassisID, id(f.ChassisIDSubtype, f.ChassisID, 4)) },
		func() error { return tlv(tlvPortID, id(f.PortIDSubtype, f.PortID, 3)) },
		func() error { return tlv(tlvTTL, binary.BigEndian.AppendUint16(nil, f.TTL)) },
	}
	if f.PortDescription != "" {
		steps = append(steps, func() error { return tlv(tlvPortDesc, []byte(f.PortDescription)) })
	}
	if f.SystemName != "" {
		steps = append(steps, func() error { return tlv(tlvSysName, []byte(f.SystemName)) })
	}
	org := func(oui [3]byte, sub byte, v []byte) func() error {
		return func() error { return tlv(tlvOrg, append(append(oui[:], sub), v...)) }
	}
	if q := f.IEEE; q != nil {
		if e := q.ETS; e != nil {
			v := []byte{bit(e.Willing, 0x80) | bit(e.CBS, 0x40) | e.MaxTCs&0x07}
			steps = append(steps, org(ouiIEEE8021, subETSConfig, append(v, encodeETSTables(e.PrioTC, e.TCBandwidth, e.TSA)...)))
		}
		if e := q.ETSReco; e != nil {
			steps = append(steps, org(ouiIEEE8021, subETSReco, append([]byte{0}, encodeETSTables(e.PrioTC, e.TCBandwidth, e.TSA)...)))
		}
		if p := q.PFC; p != nil {
			steps = append(steps, org(ouiIEEE8021, subPFCConfig, []byte{bit(p.Willing, 0x80) | bit(p.MBC, 0x40) | p.Cap&0x0f, p.Enable}))
		}
		if q.App != nil {
			v := []byte{0}
			for _, a := range q.App {
				v = append(v, a.Priority<<5|a.Selector&0x07)
				v = binary.BigEndian.AppendUint16(v, a.Protocol)
			}
			steps = append(steps, org(ouiIEEE8021, subAppPrio, v))
		}
	}
	if c := f.CEE; c != nil {
		var v []byte
		sub := func(typ int, s []byte) {
			v = binary.BigEndian.AppendUint16(v, uint16(typ)<<9|uint16(len(s)))
			v = append(v, s...)
		}
		if x := c.Control; x != nil {
			s := []byte{x.OperVersion, x.MaxVersion}
			s = binary.BigEndian.AppendUint32(s, x.Seq)
			sub(1, binary.BigEndian.AppendUint32(s, x.Ack))
		}
		if x := c.PG; x != nil {
			s := encodeFeature(x.CEEFeature)
			for i := 0; i < 8; i += 2 {
				s = append(s, x.PGID[i]<<4|x.PGID[i+1]&0x0f)
			}
			sub(2, append(append(s, x.Percent[:]...), x.NumTCs))
		}
		if x := c.PFC; x != nil {
			sub(3, append(encodeFeature(x.CEEFeature), x.Enable, x.NumTCs))
		}
		if x := c.App; x != nil {
			s := encodeFeature(x.CEEFeature)
			for _, e := range x.Entries {
				s = binary.BigEndian.AppendUint16(s, e.Protocol)
				s = append(s, ouiCEE[0]&0xfc|e.Selector&0x03, ouiCEE[1], ouiCEE[2], e.Priorities)
			}
			sub(4, s)
		}
		steps = append(steps, org(ouiCEE, 0x02, v))
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	return append(b, 0, 0), nil // End
}

// EncodeFrame wraps an LLDPDU in an Ethernet header to the nearest-bridge
// address.
func EncodeFrame(src net.HardwareAddr, f *Frame) ([]byte, error) {
	pdu, err := Encode(f)
	if err != nil {
		return nil, err
	}
	b := append(append(append([]byte{}, MulticastNearestBridge...), src...), EtherType>>8, EtherType&0xff)
	return append(b, pdu...), nil
}

func encodeETSTables(prioTC, bw, tsa [8]uint8) []byte {
	var v []byte
	for i := 0; i < 8; i += 2 {
		v = append(v, prioTC[i]<<4|prioTC[i+1]&0x0f)
	}
	return append(append(v, bw[:]...), tsa[:]...)
}

func encodeFeature(x CEEFeature) []byte {
	return []byte{x.OperVersion, x.MaxVersion, bit(x.Enabled, 0x80) | bit(x.Willing, 0x40) | bit(x.Error, 0x20), x.Subtype}
}

func bit(b bool, bit byte) byte {
	if b {
		return bit
	}
	return 0
}
