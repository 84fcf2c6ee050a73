package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// Codec is one setting kind's value format: Parse reads a value's
// canonical text (Setting.Value, Change.Before, what a journal holds)
// into the kind's Go type, with an error for anything else, and Format
// writes that type as the canonical text. Values travel as canonical text
// (journals, JSON, the plan's comparison: equal values are equal text);
// code that acts on a value decodes it with its kind's codec, here, and
// never parses a value's text by hand.
type Codec[T any] struct {
	Parse  func(string) (T, error)
	Format func(T) string
}

// The codec of each kind (KindCodecs lists them by kind).
var (
	// IntCodec: MTU, ring sizes, cable length, RoCE TOS, traffic class,
	// and a recompute's MTU.
	IntCodec = Codec[int]{Parse: parseInt, Format: strconv.Itoa}
	// BoolCodec: a private flag, an ECN enable: "on" / "off".
	BoolCodec = Codec[bool]{Parse: ParseBool, Format: FormatBool}
	// PauseCodec: global_pause.
	PauseCodec = Codec[Pause]{Parse: ParsePause, Format: FormatPause}
	// PrioCodec: a priority set, "[3,4]": PFC, the lossless remap.
	PrioCodec = Codec[uint8]{Parse: ParsePrioBitmap, Format: FormatPrioBitmap}
	// Ints8Codec: eight numbers, "[0,0,0,1,0,0,0,0]": ETS priority to TC
	// and bandwidths, priority to buffer.
	Ints8Codec = Codec[[8]int]{Parse: ParseInts8, Format: FormatInts8}
	// Strings8Codec: eight words, "[ets,strict,...]": ETS TSAs.
	Strings8Codec = Codec[[8]string]{Parse: ParseStrings8, Format: FormatStrings8}
	// Sizes8Codec: eight buffer sizes, "[63KiB,192KiB,0,...]".
	Sizes8Codec = Codec[[8]Size]{Parse: ParseSizes8, Format: FormatSizes8}
	// DSCPMapCodec: DSCP → priority, "0-7:0,8-15:1,...".
	DSCPMapCodec = Codec[map[int]int]{Parse: ParseDSCPMap, Format: FormatDSCPMap}
	// StormCodec: pfc_storm_prevention in ms, "off", "auto".
	StormCodec = Codec[uint16]{Parse: ParseStorm, Format: FormatStorm}
	// TextCodec: values that are words the kernel takes as they are
	// (trust, DCBX mode, RoCE mode, devlink and NCCL values, an ECN
	// parameter's number as its file holds it).
	TextCodec = Codec[string]{Parse: func(s string) (string, error) { return s, nil }, Format: func(s string) string { return s }}
)

func parseInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return n, nil
}

// KindCodecs names each kind's codec, for documentation and the test
// that every kind has one and that its values round-trip.
var KindCodecs = map[Kind]string{
	KindMTU: "Int", KindRxRing: "Int", KindTxRing: "Int", KindPrivFlag: "Bool",
	KindGlobalPause: "Pause", KindDCBX: "Text", KindTrust: "Text", KindDSCPMap: "DSCPMap",
	KindETSPrioTC: "Ints8", KindETSTSA: "Strings8", KindETSBandwidth: "Ints8",
	KindPFC: "Prio", KindCableLength: "Int", KindPrioBuffer: "Ints8", KindBufferSize: "Sizes8",
	KindStormPrevention: "Storm", KindECNEnable: "Bool", KindECNParam: "Text",
	KindRoCEMode: "Text", KindRoCETOS: "Int", KindTrafficClass: "Int",
	KindDevlink: "Text", KindFirmware: "Text", KindNCCL: "Text", KindXoffRecompute: "Int", KindLosslessRemap: "Prio",
}

// CheckValue says whether v is a canonical value of kind k: the codec
// parses it and formats it back to the same text.
func CheckValue(k Kind, v string) error {
	var back string
	var err error
	switch KindCodecs[k] {
	case "Int":
		back, err = roundTrip(IntCodec, v)
	case "Bool":
		back, err = roundTrip(BoolCodec, v)
	case "Pause":
		back, err = roundTrip(PauseCodec, v)
	case "Prio":
		back, err = roundTrip(PrioCodec, v)
	case "Ints8":
		back, err = roundTrip(Ints8Codec, v)
	case "Strings8":
		back, err = roundTrip(Strings8Codec, v)
	case "Sizes8":
		back, err = roundTrip(Sizes8Codec, v)
	case "DSCPMap":
		back, err = roundTrip(DSCPMapCodec, v)
	case "Storm":
		back, err = roundTrip(StormCodec, v)
	case "Text":
		back, err = v, nil
	default:
		return fmt.Errorf("kind %s has no codec", k)
	}
	if err != nil {
		return err
	}
	if back != v {
		return fmt.Errorf("%q is not canonical for %s (canonical: %q)", v, k, back)
	}
	return nil
}

func roundTrip[T any](c Codec[T], v string) (string, error) {
	x, err := c.Parse(v)
	if err != nil {
		return "", err
	}
	return c.Format(x), nil
}

// ECNArg is an ECN setting's argument (Setting.Arg): the direction, "rp"
// (reaction point) or "np" (notification point), and the priority of an
// enable or the name of a parameter.
type ECNArg struct {
	Dir   string
	Prio  int    // KindECNEnable
	Param string // KindECNParam
}

// ParseECNArg reads the Arg of a setting of kind k (KindECNEnable:
// "rp/3"; KindECNParam: "np/cnp_dscp").
func ParseECNArg(k Kind, arg string) (ECNArg, error) {
	dir, rest, ok := strings.Cut(arg, "/")
	if !ok || (dir != "rp" && dir != "np") || rest == "" {
		return ECNArg{}, fmt.Errorf("%q is not an ECN argument (rp/… or np/…)", arg)
	}
	if k != KindECNEnable {
		return ECNArg{Dir: dir, Param: rest}, nil
	}
	prio, err := strconv.Atoi(rest)
	if err != nil || prio < 0 || prio > 7 {
		return ECNArg{}, fmt.Errorf("%q names no priority 0..7", arg)
	}
	return ECNArg{Dir: dir, Prio: prio}, nil
}

// Int64Codec: an ECN/DCQCN parameter's number, as its file holds it.
var Int64Codec = Codec[int64]{
	Parse: func(s string) (int64, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a whole number", s)
		}
		return n, nil
	},
	Format: func(n int64) string { return strconv.FormatInt(n, 10) },
}

// SizesInOneUnit writes buffer-size lists (Sizes8Codec's text: bytes
// where a size is no whole KiB, "63KiB" where it is) in one unit for
// display: KiB when every size of every list is a whole number of KiB,
// else bytes, so that "[524160,0,…] -> [63KiB,192KiB,…]" reads as
// "[524160,0,…] -> [64512,196608,…]". A list that does not parse is
// written as it is; so are all of them when none does.
func SizesInOneUnit(lists ...string) []string {
	out := make([]string, len(lists))
	parsed := make([]*[8]Size, len(lists))
	kib := true
	for i, l := range lists {
		out[i] = l
		v, err := Sizes8Codec.Parse(l)
		if err != nil {
			continue
		}
		parsed[i] = &v
		for _, s := range v {
			kib = kib && s%1024 == 0
		}
	}
	for i, v := range parsed {
		if v == nil {
			continue
		}
		parts := make([]string, 8)
		for j, s := range v {
			switch {
			case s == 0:
				parts[j] = "0"
			case kib:
				parts[j] = strconv.FormatUint(uint64(s)/1024, 10) + "KiB"
			default:
				parts[j] = strconv.FormatUint(uint64(s), 10)
			}
		}
		out[i] = "[" + strings.Join(parts, ",") + "]"
	}
	return out
}
