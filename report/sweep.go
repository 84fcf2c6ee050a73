package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Pair states of a sweep.
const (
	PairOK        = "ok"
	PairSlow      = "slow"       // under half the best bandwidth of the sweep
	PairFailed    = "failed"     // an end timed out, died, or saw completion errors
	PairError     = "error"      // verify reported an error (no GID, connection refused ...)
	PairNoTraffic = "no traffic" // this rocectl cannot send verbs traffic (built without verbs)
)

// noVerbs is verify.ErrVerbsNotBuiltIn's text: such an end ran but could
// not send traffic, which is a property of the build, not of the fabric.
const noVerbs = "verbs support not built in"

// Sweep is the pair matrix of a rack sweep.
type Sweep struct {
	Hosts  []string `json:"hosts"`
	Rounds int      `json:"rounds"`
	Pairs  []*Pair  `json:"pairs"`
	// Worst are the failed and slowest pairs, worst first (at most 5).
	Worst []*Pair `json:"worst"`
	// Common are the hosts found in two or more bad (failed, error, slow)
	// pairs, most first: the likely culprits.
	Common []HostCount `json:"common"`
	// MaxGbps scales the heat map.
	MaxGbps float64 `json:"max_gbps"`

	index map[string]*Pair // by pairKey, both directions
}

// HostCount is a host and how many bad pairs it is in.
type HostCount struct {
	Host  string `json:"host"`
	Pairs int    `json:"pairs"`
}

// Pair is one test between two hosts, both ends merged.
type Pair struct {
	A     string `json:"a"` // listener
	B     string `json:"b"` // connector
	Round int    `json:"round"`
	State string `json:"state"`
	// Gbps is the RDMA WRITE goodput the connecting end measured.
	Gbps   float64       `json:"gbps"`
	LatP50 time.Duration `json:"lat_p50"`
	LatP99 time.Duration `json:"lat_p99"`
	// PauseOccupancy is the largest fraction of the test time a priority
	// was paused on either end (pause duration delta / the time the
	// counters were watched).
	PauseOccupancy float64  `json:"pause_occupancy"`
	PauseFrames    int64    `json:"pause_frames"`
	CNP            int64    `json:"cnp"`
	Why            []string `json:"why,omitempty"`
	ends           int
}

func pairKey(a, b string) string { return a + "\x00" + b }

func buildSweep(docs []*Doc) *Sweep {
	s := &Sweep{Pairs: []*Pair{}, Worst: []*Pair{}, Common: []HostCount{}}
	pairs := map[string]*Pair{}
	hosts := map[string]bool{}
	// One pass over the ends: the listener and connector of one test
	// name the same pair.
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].Source < docs[j].Source })
	for _, d := range docs {
		e := d.Sweep
		if len(e.Pair) != 2 {
			continue
		}
		a, b := e.Pair[0], e.Pair[1]
		hosts[a], hosts[b] = true, true
		k := pairKey(a, b)
		p := pairs[k]
		if p == nil {
			p = &Pair{A: a, B: b, Round: e.Round}
			pairs[k] = p
			s.Pairs = append(s.Pairs, p)
		}
		p.ends++
		addEnd(p, d)
	}
	for _, p := range s.Pairs {
		if p.ends < 2 && p.State == "" {
			p.State = PairFailed
			p.Why = append(p.Why, "only one end recorded")
		}
		if p.State == "" {
			if p.Gbps > 0 {
				p.State = PairOK
			} else {
				p.State = PairNoTraffic
			}
		}
		s.MaxGbps = math.Max(s.MaxGbps, p.Gbps)
		if p.Round > s.Rounds {
			s.Rounds = p.Round
		}
	}
	// The links of a rack are alike: a pair at under half the best
	// pair's bandwidth is slow (a median would hide a host that is in half
	// the pairs of a small rack).
	for _, p := range s.Pairs {
		if p.State == PairOK && p.Gbps < s.MaxGbps/2 {
			p.State = PairSlow
			p.Why = append(p.Why, fmt.Sprintf("%.1f Gb/s, under half the best %.1f", p.Gbps, s.MaxGbps))
		}
	}
	for h := range hosts {
		s.Hosts = append(s.Hosts, h)
	}
	s.index = make(map[string]*Pair, 2*len(s.Pairs))
	for _, p := range s.Pairs {
		s.index[pairKey(p.A, p.B)], s.index[pairKey(p.B, p.A)] = p, p
	}
	sort.Strings(s.Hosts)
	sort.Slice(s.Pairs, func(i, j int) bool {
		a, b := s.Pairs[i], s.Pairs[j]
		if a.Round != b.Round {
			return a.Round < b.Round
		}
		return pairKey(a.A, a.B) < pairKey(b.A, b.B)
	})

	// Worst: failed, then errors, then slow, then the lowest bandwidth.
	rank := map[string]int{PairFailed: 0, PairError: 1, PairSlow: 2, PairOK: 3, PairNoTraffic: 4}
	worst := append([]*Pair(nil), s.Pairs...)
	sort.SliceStable(worst, func(i, j int) bool {
		a, b := worst[i], worst[j]
		if rank[a.State] != rank[b.State] {
			return rank[a.State] < rank[b.State]
		}
		if a.Gbps != b.Gbps {
			return a.Gbps < b.Gbps
		}
		return a.PauseOccupancy > b.PauseOccupancy
	})
	count := map[string]int{}
	for _, p := range worst {
		if rank[p.State] > rank[PairSlow] {
			break
		}
		if len(s.Worst) < 5 {
			s.Worst = append(s.Worst, p)
		}
		count[p.A]++
		count[p.B]++
	}
	for h, n := range count {
		if n >= 2 {
			s.Common = append(s.Common, HostCount{Host: h, Pairs: n})
		}
	}
	sort.Slice(s.Common, func(i, j int) bool {
		if s.Common[i].Pairs != s.Common[j].Pairs {
			return s.Common[i].Pairs > s.Common[j].Pairs
		}
		return s.Common[i].Host < s.Common[j].Host
	})
	return s
}

// addEnd merges one end's record into its pair.
func addEnd(p *Pair, d *Doc) {
	e := d.Sweep
	fail := func(why string) {
		p.State = PairFailed
		p.Why = append(p.Why, e.Host+": "+why)
	}
	switch {
	case e.TimedOut:
		fail(fmt.Sprintf("timed out after %.0fs", e.ElapsedS))
		return
	case d.OK == nil:
		// No verify document: the command died or never ran.
		why := fmt.Sprintf("exit %d, no verify document", e.RC)
		if s := strings.TrimSpace(e.Stderr); s != "" {
			why += ": " + firstLine(s)
		}
		fail(why)
		return
	}
	for _, t := range d.Traffic {
		if e.Role == "peer" || p.Gbps == 0 {
			p.Gbps = t.WriteGbps
			p.LatP50, p.LatP99 = t.LatP50, t.LatP99
		}
		if len(t.Errors) > 0 {
			fail(fmt.Sprintf("%d completion error(s)", len(t.Errors)))
		}
		for k, v := range t.CounterDeltas {
			if strings.Contains(strings.ToLower(k), "cnp") {
				p.CNP += v
			}
		}
		// The time the counters were watched; a document without it
		// falls back to the command's run time, which is longer.
		window := t.PauseWindow.Seconds()
		if window <= 0 {
			window = e.ElapsedS
		}
		for _, c := range t.PauseDeltas {
			p.PauseFrames += int64(c.Frames)
			if c.HasDuration && window > 0 {
				p.PauseOccupancy = math.Max(p.PauseOccupancy, float64(c.DurationUs)/(window*1e6))
			}
		}
	}
	var errs []string
	for _, msg := range d.Errors {
		if !strings.Contains(msg, noVerbs) {
			errs = append(errs, msg)
		}
	}
	if len(errs) == 0 {
		return
	}
	// A pair the other end already failed (it timed out waiting) keeps
	// that state, and this end's error, often the cause, is still said.
	if p.State != PairFailed {
		p.State = PairError
	}
	for _, msg := range errs {
		p.Why = append(p.Why, e.Host+": "+firstLine(msg))
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Cell finds the test between a and b, in either direction.
func (s *Sweep) Cell(a, b string) *Pair { return s.index[pairKey(a, b)] }
