package verify

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The storm machine over recorded counter sequences, on a fake clock.
//
// A sequence is one line per 200 ms poll of one port (mlx5 names; the
// values start from the txpause capture's, shared/fixtures/
// mlx5-cx6dx-ethtool-S-k5.15-txpause.txt, rx_prio0_pause_duration-like
// magnitudes), written as "name=value ..." exactly as a reader hands them
// over:
//
//	"ERR"      the read failed (ENODEV: the netdev is gone)
//	"-"        the read worked but holds no pause counter (PFC off, or
//	           a driver reload half done)
//	"REACT"    not a poll: the guard rolled back after the storm
//	           (Trip with reacted), then the next line is the next poll
//
// A value that does not parse as a number is handed over as the reader
// would: a read error wrapping strconv's.

const (
	tPoll    = 200 * time.Millisecond
	tRestore = 2 * time.Second
)

var stormTestCfg = StormConfig{
	Guard:              GuardConfig{Poll: tPoll, DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99},
	RestorationTime:    tRestore,
	MaxRestorationTime: 8 * time.Second,
}

// transition is one change of a port's state, at poll index i.
type transition struct {
	i     int
	state StormState
}

// feed runs lines through m for port, poll i at t0 + i × poll, and
// returns the state changes (Tick after each poll, as the agent does).
func feed(t *testing.T, m *StormMachine, port string, t0 time.Time, lines []string) []transition {
	t.Helper()
	var out []transition
	last := m.State(port).State
	i := 0
	for _, l := range lines {
		at := t0.Add(time.Duration(i) * tPoll)
		if l == "REACT" {
			st := m.State(port)
			if st.State != Stormed || st.Storm == nil {
				t.Fatalf("poll %d: REACT on a port in state %v", i, st.State)
			}
			m.Trip(st.Storm, true)
			continue
		}
		cur, err := parsePoll(l)
		m.Observe(port, at, cur, err)
		m.Tick(at)
		if s := m.State(port).State; s != last {
			out = append(out, transition{i, s})
			last = s
		}
		i++
	}
	return out
}

// parsePoll reads one line of a sequence as the counter reader hands it
// over.
func parsePoll(l string) (map[string]uint64, error) {
	switch l {
	case "ERR":
		return nil, fmt.Errorf("ethtool -S ens1f0np0: %w", syscall.ENODEV)
	case "-":
		return map[string]uint64{"rx_packets_phy": 1}, nil
	}
	cur := map[string]uint64{}
	for _, f := range strings.Fields(l) {
		k, v, _ := strings.Cut(f, "=")
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("counter %s: %w", k, err)
		}
		cur[k] = n
	}
	return cur, nil
}

// pfc3 is a poll line of priority 3's rx pause counters.
func pfc3(frames, durUs uint64) string {
	return fmt.Sprintf("rx_prio3_pause=%d rx_prio3_pause_duration=%d tx_prio3_pause=0 tx_prio3_pause_duration=0", frames, durUs)
}

// ramp is n polls of priority 3 paused occ of each poll, from (frames,
// dur); it returns the lines and where the counters end.
func ramp(n int, occ float64, frames, dur uint64) ([]string, uint64, uint64) {
	var out []string
	for range n {
		dur += uint64(occ * float64(tPoll.Microseconds()))
		frames += uint64(occ * 2000) // ~10k frames/s at 100 %: a 400G port's XOFF refresh
		out = append(out, pfc3(frames, dur))
	}
	return out, frames, dur
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func rep(l string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = l
	}
	return out
}

const (
	baseFrames = 5745055
	baseDur    = 771103810
)

func TestStormMachineSequences(t *testing.T) {
	quiet, f0, d0 := ramp(5, 0.02, baseFrames, baseDur)
	storm, f1, d1 := ramp(15, 1.0, f0, d0)
	after, _, _ := ramp(30, 0.02, f1, d1)

	// Storm until detected (two polls: the first whole window), then the
	// rollback; the counter frozen where the reaction left it.
	storm2, f2, d2 := ramp(2, 1.0, f0, d0)
	frozen := rep(pfc3(f2, d2), 40)

	// Reset: a driver reload puts every counter back to zero.
	reset1, _, _ := ramp(5, 0.1, baseFrames, baseDur)
	reset2, _, _ := ramp(10, 0.1, 0, 0)

	// 64-bit wrap: the counter 100 µs short of 2^64, light pause, past
	// the top. mlx5 reads these with MLX5E_READ_CTR64_BE: no wrap in a
	// lifetime, but a bad firmware read can look like one.
	wrap1, _, _ := ramp(5, 0.1, 100, math.MaxUint64-5*20000-100)
	wrap2, _, _ := ramp(10, 0.1, 50, 7)

	for _, tc := range []struct {
		name  string
		lines []string
		want  []transition
		// wantReading is the port's Reading at the end.
		wantReading Reading
		storms      int
	}{
		{
			// Detected on the first whole window of the storm (polls 4
			// to 5), restored once its live counters stayed below half
			// the threshold for the restoration time from its last hot
			// poll (19): 19 + 10.
			name:        "storm then quiet",
			lines:       cat(quiet, storm, after),
			want:        []transition{{0, Operational}, {5, Stormed}, {29, Restored}},
			wantReading: ReadingOK, storms: 1,
		},
		{
			// The rollback froze the counter: quiet by the counter from
			// poll 6 on. SONiC's restore would come at once (and the
			// storm with it); this one waits the restoration time from
			// the detection, on the clock: 5 + 10.
			name:        "storm with the counter frozen after the reaction",
			lines:       cat(quiet, storm2[:2], []string{"REACT"}, frozen),
			want:        []transition{{0, Operational}, {5, Stormed}, {15, Restored}},
			wantReading: ReadingOK, storms: 1,
		},
		{
			// The same with the counters removed (mlx5 drops a
			// priority's counters when its PFC goes off).
			name:        "storm with the counters gone after the reaction",
			lines:       cat(quiet, storm2[:2], []string{"REACT"}, rep("-", 40)),
			want:        []transition{{0, Operational}, {5, Stormed}, {15, Restored}},
			wantReading: ReadingVanished, storms: 1,
		},
		{
			name:        "counter reset",
			lines:       cat(reset1, reset2),
			want:        []transition{{0, Operational}},
			wantReading: ReadingOK,
		},
		{
			name:        "64-bit wrap",
			lines:       cat(wrap1, wrap2),
			want:        []transition{{0, Operational}},
			wantReading: ReadingOK,
		},
		{
			// The netdev goes (ENODEV), comes back without pause
			// counters, then with them from zero (driver reload).
			name:        "a port that vanishes",
			lines:       cat(quiet, rep("ERR", 5), rep("-", 3), reset2),
			want:        []transition{{0, Operational}},
			wantReading: ReadingOK,
		},
		{
			name:        "a port that vanishes for good",
			lines:       cat(quiet, rep("ERR", 20)),
			want:        []transition{{0, Operational}},
			wantReading: ReadingUnreadable,
		},
		{
			// A counter that reads "N/A" for two polls, then on: not a
			// zero (which would be a reset, then a jump back up).
			name: "a non-number",
			lines: cat(quiet, []string{
				"rx_prio3_pause=N/A rx_prio3_pause_duration=771123810",
				"rx_prio3_pause=5745155 rx_prio3_pause_duration=18446744073709551616",
			}, after),
			want:        []transition{{0, Operational}},
			wantReading: ReadingOK,
		},
		{
			name:        "never read",
			lines:       rep("ERR", 10),
			want:        nil,
			wantReading: ReadingUnreadable,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewStormMachine(stormTestCfg)
			t0 := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
			got := feed(t, m, "ens1f0np0", t0, tc.lines)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("transitions %v, want %v", got, tc.want)
			}
			st := m.State("ens1f0np0")
			if st.Reading != tc.wantReading {
				t.Errorf("reading %q (%s), want %q", st.Reading, st.ReadingNote, tc.wantReading)
			}
			if st.Detected != tc.storms {
				t.Errorf("%d storms detected, want %d", st.Detected, tc.storms)
			}
			if tc.storms > 0 {
				if st.Storm == nil || st.Storm.Priority != 3 || st.Storm.Direction != "rx" {
					t.Errorf("storm %+v, want priority 3 rx", st.Storm)
				}
				if st.RestorationTime < tRestore {
					t.Errorf("restored after %v, before the restoration time %v", st.RestorationTime, tRestore)
				}
				if st.DetectionTime != 200*time.Millisecond {
					t.Errorf("detection window %v, want 200ms", st.DetectionTime)
				}
			}
		})
	}
}

// TestStormMachinePersistentCause is SONiC's flapping case: the cause
// outlives the reaction, so every restore (the agent applies the profile
// again, PFC back on) brings the storm back, and the counter stops every
// time the rollback turns PFC off. Over 20 minutes at 200 ms polls the
// port storms a bounded, falling number of times, each stormed period at
// least its restoration time: no flapping.
func TestStormMachinePersistentCause(t *testing.T) {
	cfg := stormTestCfg
	cfg.RestorationTime, cfg.MaxRestorationTime = 0, 0 // the defaults: 1 min, 16 min
	m := NewStormMachine(cfg)
	t0 := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
	frames, dur := uint64(baseFrames), uint64(baseDur)
	var storms []time.Time
	var restores []time.Time
	last := StormUnknown
	for i := 0; i < int(20*time.Minute/tPoll); i++ {
		at := t0.Add(time.Duration(i) * tPoll)
		st := m.State("p")
		if st.State != Stormed || !st.Reacted {
			// PFC on: the peer's storm pauses us the whole poll.
			dur += uint64(tPoll.Microseconds())
			frames += 2000
		} // else: PFC off, the counter frozen
		if s := m.Observe("p", at, map[string]uint64{"rx_prio3_pause": frames, "rx_prio3_pause_duration": dur}, nil); s != nil {
			m.Trip(s, true) // the guard rolls back
		}
		m.Tick(at)
		st = m.State("p")
		if st.State != last {
			switch st.State {
			case Stormed:
				storms = append(storms, at)
			case Restored:
				restores = append(restores, at)
			}
			last = st.State
		}
	}
	// 1 min, then 2, 4, 8, 16: storms at about 0, 1, 3, 7, 15 min.
	if len(storms) != 5 {
		t.Errorf("%d storms in 20 minutes (%v), want 5", len(storms), storms)
	}
	for k, r := range restores {
		gap := r.Sub(storms[k])
		if want := time.Minute << k; gap < want {
			t.Errorf("storm %d restored after %v, want at least %v", k+1, gap, want)
		}
	}
	st := m.State("p")
	if st.Detected != len(storms) || st.Restored != len(restores) {
		t.Errorf("counts %d/%d, transitions %d/%d", st.Detected, st.Restored, len(storms), len(restores))
	}
}

// TestStormMachinePorts: a storm on one port leaves the other's state
// alone, and a port that was never read stays unknown.
func TestStormMachinePorts(t *testing.T) {
	m := NewStormMachine(stormTestCfg)
	t0 := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
	quiet, f0, d0 := ramp(5, 0.02, baseFrames, baseDur)
	storm, _, _ := ramp(5, 1.0, f0, d0)
	calm, _, _ := ramp(10, 0.02, baseFrames, baseDur)
	lines := cat(quiet, storm)
	for i := range lines {
		at := t0.Add(time.Duration(i) * tPoll)
		a, _ := parsePoll(lines[i])
		b, _ := parsePoll(calm[i])
		m.Observe("ens1f0np0", at, a, nil)
		m.Observe("ens1f1np1", at, b, nil)
		m.Observe("ens2f0np0", at, nil, errors.New("ethtool -S: permission denied"))
	}
	for port, want := range map[string]StormState{"ens1f0np0": Stormed, "ens1f1np1": Operational, "ens2f0np0": StormUnknown} {
		if got := m.State(port).State; got != want {
			t.Errorf("%s: %v, want %v", port, got, want)
		}
	}
	ports, until := m.AnyStormed()
	if fmt.Sprint(ports) != "[ens1f0np0]" || !until.Equal(t0.Add(5*tPoll+tRestore)) {
		t.Errorf("AnyStormed %v until %v", ports, until)
	}
}
