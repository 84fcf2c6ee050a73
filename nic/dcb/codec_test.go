package dcb

import (
	"bytes"
	"encoding"
	"errors"
	"reflect"
	"testing"
)

type wireStruct interface {
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

// Each struct against its hand-laid wire image (helpers_test.go writes the
// fields at the uapi offsets), then decoded back.
func TestStructWireImages(t *testing.T) {
	requireLittleEndian(t)
	app := App{Selector: SelDSCP, Priority: 3, Protocol: 26}
	for _, tc := range []struct {
		name  string
		v     wireStruct
		empty wireStruct
		image []byte
		size  int
	}{
		{"ieee_ets", &fixtureETS, &ETS{}, etsBytes(fixtureETS), SizeETS},
		{"ieee_pfc", &fixturePFC, &PFC{}, pfcBytes(fixturePFC), SizePFC},
		{"dcbnl_buffer", &fixtureBuffer, &Buffer{}, bufferBytes(fixtureBuffer), SizeBuffer},
		{"ieee_maxrate", &fixtureMaxrate, &Maxrate{}, maxrateBytes(fixtureMaxrate), SizeMaxrate},
		{"dcb_app", &app, &App{}, []byte{5, 3, 26, 0}, SizeApp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.v.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.image) != tc.size || len(got) != tc.size {
				t.Fatalf("sizes: image %d, encoded %d, want %d", len(tc.image), len(got), tc.size)
			}
			if !bytes.Equal(got, tc.image) {
				t.Fatalf("encoded\n % x\nwant\n % x", got, tc.image)
			}
			if err := tc.empty.UnmarshalBinary(tc.image); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.empty, tc.v) {
				t.Fatalf("decoded %+v, want %+v", tc.empty, tc.v)
			}
			// One byte short is an error, never a panic or a partial value.
			if err := tc.empty.UnmarshalBinary(tc.image[:tc.size-1]); !errors.Is(err, ErrMalformed) {
				t.Errorf("short input: err %v, want ErrMalformed", err)
			}
			// A longer payload (the policy length is a minimum) decodes the prefix.
			if err := tc.empty.UnmarshalBinary(append(append([]byte{}, tc.image...), 0xee, 0xee)); err != nil {
				t.Errorf("long input: %v", err)
			}
		})
	}
}

// ieee_pfc offsets pinned on distinct values: delay at 4 (u16), pads at 3,
// 6 and 7 written as zero, requests[i] at 8+8i, indications[i] at 72+8i.
func TestPFCLayout(t *testing.T) {
	requireLittleEndian(t)
	p := PFC{Cap: 0x11, Enable: 0x22, MBC: 0x33, Delay: 0x5544}
	for i := range NumTCs {
		p.Requests[i] = 0x0101010101010101 * uint64(i+1)
		p.Indications[i] = 0x1010101010101010 * uint64(i+1)
	}
	b, _ := p.MarshalBinary()
	if b[0] != 0x11 || b[1] != 0x22 || b[2] != 0x33 || b[3] != 0 || b[4] != 0x44 || b[5] != 0x55 || b[6] != 0 || b[7] != 0 {
		t.Fatalf("header % x", b[:8])
	}
	for i := range NumTCs {
		if b[8+8*i] != byte(i+1) || b[8+8*i+7] != byte(i+1) {
			t.Errorf("requests[%d] not at %d: % x", i, 8+8*i, b[8+8*i:16+8*i])
		}
		if b[72+8*i] != byte(0x10*(i+1)) {
			t.Errorf("indications[%d] not at %d", i, 72+8*i)
		}
	}
	// The 137-byte packing of mlnx-tools' dcbnetlink.py (requests at 6) must
	// not be what we produce.
	if len(b) != 136 {
		t.Fatalf("ieee_pfc is %d bytes", len(b))
	}
}

func TestRoundTripRandomValues(t *testing.T) {
	// Every byte pattern of the right size decodes and re-encodes to itself,
	// except the pad bytes of ieee_pfc, which encode as zero.
	for seed := range 256 {
		b := make([]byte, SizePFC)
		for i := range b {
			b[i] = byte(seed*31 + i*7)
		}
		for _, v := range []wireStruct{&ETS{}, &Buffer{}, &Maxrate{}, &App{}, &PFC{}} {
			if err := v.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			out, _ := v.MarshalBinary()
			want := b[:len(out)]
			if _, ok := v.(*PFC); ok {
				want = append([]byte{}, want...)
				want[3], want[6], want[7] = 0, 0, 0
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("%T seed %d: round trip\n % x\n % x", v, seed, out, want)
			}
		}
	}
}
