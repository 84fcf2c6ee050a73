package dump

import (
	"fmt"
	"strconv"
	"strings"
)

// MlnxQos is what `mlnx_qos -i IF` printed. A nil/zero member was not in
// the output; At says where each fact came from (keys: dcbx, trust,
// dscp2prio, buffer_size, cable_len, pfc, prio2buffer, ets).
type MlnxQos struct {
	DCBXMode  string // "OS controlled", "Firmware controlled"
	Trust     string // "pcp", "dscp"
	DSCP2Prio map[uint8]uint8
	// BufferSize is the "Receive buffer size (bytes)" row; MaxBufferSize
	// the size it ends with (0: not printed): max_buffer_size=N from
	// mlnx-tools 23.07 on, total_size=N before (mlnx-tools commit b8c08c5
	// only renamed it). Either is dcbnl's dcbnl_buffer.total_size, or with
	// OFED's mlx5 the first line of sysfs qos/buffer_size (23.07 on only;
	// older revisions print nothing there).
	BufferSize    []uint32
	MaxBufferSize uint32
	CableLen      *uint16
	PFC           *[8]bool
	Prio2Buffer   *[8]uint8
	// ETS: per traffic class, its TSA ("vendor", "strict", "ets") and,
	// for ets, the bandwidth percentage; PrioTC maps priority → tc.
	TSA    map[int]string
	BW     map[int]uint8
	PrioTC map[int]int
	At     map[string]Source
}

func parseMlnxQos(ls []line) (*Block, []line, []Warning) {
	first := strings.TrimSpace(ls[0].text)
	if !strings.HasPrefix(first, "DCBX mode:") && !strings.HasPrefix(first, "Priority trust state:") {
		return nil, ls, nil
	}
	q := &MlnxQos{At: map[string]Source{}}
	var warns []Warning
	warn := func(l line, f string, a ...any) { warns = append(warns, Warning{l.at, fmt.Sprintf(f, a...)}) }
	tc := -1 // the traffic class whose "priority:" lines follow
	i := 0
loop:
	for ; i < len(ls); i++ {
		l := ls[i]
		t := strings.TrimSpace(l.text)
		switch {
		case t == "", t == "dscp2prio mapping:", t == "PFC configuration:", strings.HasPrefix(t, "default priority:"):
		case strings.HasPrefix(t, "DCBX mode:"):
			if _, seen := q.At["dcbx"]; seen {
				break loop // the next mlnx_qos output starts here
			}
			q.DCBXMode = strings.TrimSpace(strings.TrimPrefix(t, "DCBX mode:"))
			q.At["dcbx"] = l.at
		case strings.HasPrefix(t, "Priority trust state:"), strings.HasPrefix(t, "Priority trust mode:"):
			if _, seen := q.At["trust"]; seen {
				break loop
			}
			_, v, _ := strings.Cut(t, ":")
			switch v = strings.TrimSpace(v); v {
			case "pcp", "dscp":
				q.Trust = v
				q.At["trust"] = l.at
			default:
				warn(l, "unknown trust state %q", v)
			}
		case strings.HasPrefix(t, "prio:") && strings.Contains(t, "dscp:"):
			p, list, _ := strings.Cut(strings.TrimPrefix(t, "prio:"), "dscp:")
			prio, err := strconv.ParseUint(strings.TrimSpace(p), 10, 8)
			if err != nil || prio > 7 {
				warn(l, "bad dscp2prio row %q", t)
				continue
			}
			if q.DSCP2Prio == nil {
				q.DSCP2Prio = map[uint8]uint8{}
				q.At["dscp2prio"] = l.at
			}
			for _, x := range strings.Split(list, ",") {
				if x = strings.TrimSpace(x); x == "" {
					continue
				}
				d, err := strconv.ParseUint(x, 10, 8)
				if err != nil || d > 63 {
					warn(l, "bad DSCP %q in dscp2prio row", x)
					continue
				}
				q.DSCP2Prio[uint8(d)] = uint8(prio)
			}
		case strings.HasPrefix(t, "Receive buffer size (bytes):"):
			q.parseBufferRow(l, strings.TrimPrefix(t, "Receive buffer size (bytes):"), warn)
		case strings.HasPrefix(t, "Cable len:"):
			n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(t, "Cable len:")), 10, 16)
			if err != nil {
				warn(l, "bad cable length: %v", err)
				continue
			}
			v := uint16(n)
			q.CableLen = &v
			q.At["cable_len"] = l.at
		case strings.HasPrefix(t, "priority") && !strings.HasPrefix(t, "priority:"):
			// the PFC table's header row: "priority 0 1 2 ... 7"
		case strings.HasPrefix(t, "enabled"):
			if v, ok := row8(strings.Fields(t)[1:], 1); ok {
				var b [8]bool
				for p := range v {
					b[p] = v[p] == 1
				}
				q.PFC = &b
				q.At["pfc"] = l.at
			} else {
				warn(l, "PFC enabled row is not 8 values of 0/1: %q", t)
			}
		case strings.HasPrefix(t, "buffer"):
			if v, ok := row8(strings.Fields(t)[1:], 7); ok {
				var b [8]uint8
				for p := range v {
					b[p] = uint8(v[p])
				}
				q.Prio2Buffer = &b
				q.At["prio2buffer"] = l.at
			} else {
				warn(l, "prio2buffer row is not 8 buffer numbers: %q", t)
			}
		case strings.HasPrefix(t, "tc:"):
			tc = q.parseTCRow(l, t, warn)
		case strings.HasPrefix(t, "priority:"):
			for _, x := range strings.FieldsFunc(strings.TrimPrefix(t, "priority:"), func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
				p, err := strconv.ParseUint(x, 10, 8)
				if err != nil || p > 7 || tc < 0 {
					warn(l, "bad priority %q under tc %d", x, tc)
					continue
				}
				if q.PrioTC == nil {
					q.PrioTC = map[int]int{}
				}
				q.PrioTC[int(p)] = tc
			}
		default:
			break loop
		}
	}
	if q.TSA != nil {
		if len(q.PrioTC) != 8 {
			warn(ls[0], "ETS section lists %d of 8 priorities: not used", len(q.PrioTC))
			q.TSA, q.BW, q.PrioTC = nil, nil, nil
			delete(q.At, "ets")
		}
	}
	return &Block{Kind: KindMlnxQos, At: ls[0].at, Qos: q}, ls[i:], warns
}

// parseBufferRow reads "N,N,...,N," and the "max_buffer_size=N"
// (mlnx-tools 23.07 on: OFED 23.07 and later, DOCA) or "total_size=N"
// (before, when the buffers came from dcbnl) after the sizes.
func (q *MlnxQos) parseBufferRow(l line, s string, warn func(line, string, ...any)) {
	var sizes []uint32
	for _, x := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if k, v, ok := strings.Cut(x, "="); ok {
			n, err := strconv.ParseUint(v, 10, 32)
			switch {
			case (k == "max_buffer_size" || k == "total_size") && err == nil:
				q.MaxBufferSize = uint32(n)
			default:
				warn(l, "receive buffer row: %q not used", x)
			}
			continue
		}
		n, err := strconv.ParseUint(x, 10, 32)
		if err != nil {
			warn(l, "receive buffer row: %q is not a size, row not used", x)
			return
		}
		sizes = append(sizes, uint32(n))
	}
	if len(sizes) != 8 {
		warn(l, "receive buffer row has %d sizes, not 8: not used", len(sizes))
		return
	}
	q.BufferSize = sizes
	q.At["buffer_size"] = l.at
}

// parseTCRow reads "tc: 3 ratelimit: unlimited, tsa: ets, bw: 50%" and
// returns the tc, or -1.
func (q *MlnxQos) parseTCRow(l line, t string, warn func(line, string, ...any)) int {
	f := strings.Fields(strings.NewReplacer(",", " ", ":", " ").Replace(t))
	if len(f) < 2 {
		warn(l, "bad tc row %q", t)
		return -1
	}
	tc, err := strconv.Atoi(f[1])
	if err != nil || tc < 0 || tc > 7 {
		warn(l, "bad tc row %q", t)
		return -1
	}
	if q.TSA == nil {
		q.TSA, q.BW = map[int]string{}, map[int]uint8{}
		q.At["ets"] = l.at
	}
	for j := 2; j+1 < len(f); j++ {
		switch f[j] {
		case "tsa":
			q.TSA[tc] = f[j+1]
		case "bw":
			n, err := strconv.ParseUint(strings.TrimSuffix(f[j+1], "%"), 10, 8)
			if err != nil || n > 100 {
				warn(l, "bad bandwidth %q", f[j+1])
				continue
			}
			q.BW[tc] = uint8(n)
		}
	}
	return tc
}

// row8 parses exactly 8 unsigned numbers, each at most max.
func row8(f []string, max uint64) ([8]uint64, bool) {
	var v [8]uint64
	if len(f) != 8 {
		return v, false
	}
	for i, x := range f {
		n, err := strconv.ParseUint(x, 10, 64)
		if err != nil || n > max {
			return v, false
		}
		v[i] = n
	}
	return v, true
}
