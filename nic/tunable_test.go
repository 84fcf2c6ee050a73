package nic

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Layout (uapi struct ethtool_tunable, sizeof 16, data at 16; checked with
// gcc on x86_64): cmd, id = ETHTOOL_PFC_PREVENTION_TOUT (3), type_id =
// ETHTOOL_TUNABLE_U16 (2), len = 2, then the u16 value.
func TestEncodeTunableU16(t *testing.T) {
	littleEndianOnly(t)
	tests := []struct {
		name  string
		cmd   uint32
		value uint16
		want  string
	}{
		{"get", unix.ETHTOOL_GTUNABLE, 0, "48000000 03000000 02000000 02000000 0000"},
		{"set 100 ms", unix.ETHTOOL_STUNABLE, 100, "49000000 03000000 02000000 02000000 6400"},
		{"set auto", unix.ETHTOOL_STUNABLE, PFCPreventionAuto, "49000000 03000000 02000000 02000000 ffff"},
		{"set 8000 ms", unix.ETHTOOL_STUNABLE, 8000, "49000000 03000000 02000000 02000000 401f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := encodeTunableU16(tt.cmd, unix.ETHTOOL_PFC_PREVENTION_TOUT, tt.value)
			if want := unhex(t, tt.want); !bytes.Equal(got, want) {
				t.Fatalf("got %x, want %x", got, want)
			}
		})
	}
}

func TestDecodeTunableU16(t *testing.T) {
	littleEndianOnly(t)
	// A GTUNABLE reply: the kernel leaves the header as sent and writes
	// tuna.len value bytes after it; here mlx5's auto value, 100 ms.
	reply := unhex(t, "48000000 03000000 02000000 02000000 6400")
	got, err := decodeTunableU16(reply)
	if err != nil || got != 100 {
		t.Fatalf("decode = %d, %v; want 100", got, err)
	}

	bad := map[string]string{
		"short":    "48000000 03000000 02000000 02000000 64",
		"long":     "48000000 03000000 02000000 02000000 640000",
		"type u32": "48000000 03000000 03000000 02000000 6400",
		"len 4":    "48000000 03000000 02000000 04000000 6400",
	}
	for name, h := range bad {
		if _, err := decodeTunableU16(unhex(t, h)); err == nil {
			t.Errorf("%s: decode accepted %s", name, h)
		}
	}
}

func FuzzDecodeTunableU16(f *testing.F) {
	f.Add(encodeTunableU16(unix.ETHTOOL_GTUNABLE, unix.ETHTOOL_PFC_PREVENTION_TOUT, 100))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeTunableU16(b)
		if err == nil {
			// Whatever decodes must re-encode to the same bytes, but
			// for cmd and id, which decode does not look at.
			again := encodeTunableU16(0, 0, v)
			if !bytes.Equal(again[8:], b[8:]) {
				t.Fatalf("decode(%x) = %d, re-encodes to %x", b, v, again)
			}
		}
	})
}

func TestPFCPreventionUnsupportedOnVeth(t *testing.T) {
	_, l := liveInNS(t)
	// veth has no get_tunable/set_tunable: ethtool_get_tunable answers
	// EOPNOTSUPP before looking at the request.
	if _, err := l.PFCPreventionTimeout("va"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("PFCPreventionTimeout(veth) = %v, want EOPNOTSUPP", err)
	}
	if err := l.SetPFCPreventionTimeout("va", PFCPreventionAuto); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("SetPFCPreventionTimeout(veth) = %v, want EOPNOTSUPP", err)
	}
	if _, err := l.PFCPreventionTimeout("nosuchdev"); !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("PFCPreventionTimeout(nosuchdev) = %v, want ENODEV", err)
	}
}
