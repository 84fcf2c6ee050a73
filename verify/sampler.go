package verify

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/port"
)

// The counter sampler: one read of every watched port's counters, shared
// by rocectl watch (Rates), the pause-storm guard (CounterSources) and the
// agent's metrics poller. Which netdev carries which counters is decided
// here, once: a RoCE LAG bond has no ethtool -S counters of its own (its
// slaves, the physical ports, count pause, storm events and discards) but
// owns the LAG's one RDMA device, whose hw_counters are the bond's.

// Kernel is what the sampler reads a netdev through; nic.Kernel has it.
type Kernel interface {
	Stats(netdev string) (map[string]uint64, error)
	Link(netdev string) (nic.LinkInfo, error)
}

// Source is one netdev a sample reads.
type Source struct {
	Netdev string
	// RDMADevice and PortNum are the netdev's RDMA port, whose
	// hw_counters have the congestion counters; RDMADevice is "" where
	// the netdev has none of its own (a slave of a RoCE LAG).
	RDMADevice string
	PortNum    int
	// Bond is, for a slave of a bond, the bond; Slaves, for a bond, its
	// slaves, whose sources follow the bond's.
	Bond   string
	Slaves []string
}

// IsBond says the source is a bond master: no ethtool -S counters.
func (s Source) IsBond() bool { return len(s.Slaves) > 0 }

// Name is what the guard calls the port: its netdev, or for a slave
// SlavePort's "bond0/ens1f0np0".
func (s Source) Name() string {
	if s.Bond != "" {
		return SlavePort(s.Bond, s.Netdev)
	}
	return s.Netdev
}

// Equal says a and b read the same things.
func (s Source) Equal(o Source) bool {
	if s.Netdev != o.Netdev || s.RDMADevice != o.RDMADevice || s.PortNum != o.PortNum || s.Bond != o.Bond || len(s.Slaves) != len(o.Slaves) {
		return false
	}
	for i := range s.Slaves {
		if s.Slaves[i] != o.Slaves[i] {
			return false
		}
	}
	return true
}

// Sources lists what a sample of ports reads: a port under no bond as it
// is; a bond (RoCE LAG) as itself (its link and RDMA counters), followed
// by each of its slaves (their NIC counters).
func Sources(ports []port.Port) []Source {
	out := make([]Source, 0, len(ports))
	for _, p := range ports {
		out = AppendSources(out, p)
	}
	return out
}

// AppendSources appends p's sources (Sources) to dst.
func AppendSources(dst []Source, p port.Port) []Source {
	slaves := p.Slaves()
	if len(slaves) == 0 {
		return append(dst, Source{Netdev: p.Netdev, RDMADevice: p.RDMADevice, PortNum: p.PortNum})
	}
	names := make([]string, len(slaves))
	for i, m := range slaves {
		names[i] = m.Netdev
	}
	dst = append(dst, Source{Netdev: p.Netdev, RDMADevice: p.RDMADevice, PortNum: p.PortNum, Slaves: names})
	for _, m := range slaves {
		dst = append(dst, Source{Netdev: m.Netdev, Bond: p.Netdev})
	}
	return dst
}

// Sampler reads its sources' counters through the host's kernel: ethtool
// -S (pause, storm events, discards), rtnetlink (link state, when Link)
// and the RDMA port's hw_counters (CNP, ECN; when FS is set).
type Sampler struct {
	K       Kernel
	FS      *nic.FS // nil: no hw_counters
	Log     *slog.Logger
	Sources []Source
	// Link: read every netdev's link state (watch shows it; the metrics
	// and the guard have no use for it).
	Link bool
	// Now defaults to time.Now.
	Now func() time.Time
}

// Sample is one read of every source, at one time.
type Sample struct {
	At    time.Time
	Ports []PortSample
}

// PortSample is one read of one source.
type PortSample struct {
	Source
	// Link is the netdev's operational state, "?" when rtnetlink does not
	// say, "" when the sampler does not read links.
	Link string
	// Stats are the ethtool -S counters; nil for a bond and when Err.
	Stats map[string]uint64
	// Err is why ethtool -S could not be read.
	Err error
	// cong are the congestion counters of the RDMA port, has which of
	// them the driver has.
	cong [numCong]uint64
	has  [numCong]bool
}

// CongCounter is one of a port's DCQCN counters (Congestion).
type CongCounter int

const (
	CNPSent CongCounter = iota
	CNPHandled
	ECNMarked
	// The RDMA transport's loss signals: on a lossless class each rise
	// means a packet was lost where none should be.
	OutOfSequence   // packets received out of sequence
	PacketSeqErr    // NAKs for a sequence error received (the peer saw a gap)
	LocalAckTimeout // a QP's ACK timer expired at the sender (a retransmit)
	OutOfBuffer     // packets dropped for want of a posted receive WQE
	numCong
)

// congNames are each RDMA port counter's hw_counters names: mlx5
// (counters.c, the "cong" set, reference §A4.2) first, then bnxt_re
// (hw_counters.c).
var congNames = [numCong][]string{
	CNPSent:    {"np_cnp_sent", "tx_cnp_pkts"},
	CNPHandled: {"rp_cnp_handled", "rx_cnp_pkts"},
	ECNMarked:  {"np_ecn_marked_roce_packets", "rx_ecn_marked_pkts"},
	// mlx5's q counters (counters.c: out_of_sequence, packet_seq_err,
	// local_ack_timeout_err, out_of_buffer), then bnxt_re's of the same
	// meaning (hw_counters.c: oos_drop_count, seq_err_naks_rcvd,
	// to_retransmits, rx_out_of_buffer).
	OutOfSequence:   {"out_of_sequence", "oos_drop_count"},
	PacketSeqErr:    {"packet_seq_err", "seq_err_naks_rcvd"},
	LocalAckTimeout: {"local_ack_timeout_err", "to_retransmits"},
	OutOfBuffer:     {"out_of_buffer", "rx_out_of_buffer"},
}

// Cong is one congestion counter of the port's RDMA port, ok false where
// the driver has none (or the port no RDMA port of its own).
func (p *PortSample) Cong(c CongCounter) (uint64, bool) { return p.cong[c], p.has[c] }

// Congestion is the sample's congestion counters as CongestionCounters
// picks them.
func (p *PortSample) Congestion() Congestion {
	get := func(c CongCounter) *uint64 {
		if !p.has[c] {
			return nil
		}
		v := p.cong[c]
		return &v
	}
	return Congestion{CNPSent: get(CNPSent), CNPHandled: get(CNPHandled), ECNMarked: get(ECNMarked)}
}

// Sample reads every source once.
func (s *Sampler) Sample() *Sample {
	out := &Sample{}
	s.SampleInto(out)
	return out
}

// SampleInto is Sample into out, reusing its Ports.
func (s *Sampler) SampleInto(out *Sample) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	out.At = now()
	if cap(out.Ports) < len(s.Sources) {
		out.Ports = make([]PortSample, 0, len(s.Sources))
	}
	out.Ports = out.Ports[:0]
	for _, src := range s.Sources {
		out.Ports = append(out.Ports, PortSample{Source: src})
		s.read(&out.Ports[len(out.Ports)-1])
	}
}

func (s *Sampler) read(ps *PortSample) {
	if s.Link {
		ps.Link = "?"
		if li, err := s.K.Link(ps.Netdev); err == nil && li.OperState != "" {
			ps.Link = li.OperState
		}
	}
	if !ps.IsBond() {
		ps.Stats, ps.Err = s.K.Stats(ps.Netdev)
		if ps.Err != nil {
			ps.Stats = nil
		}
	}
	if ps.RDMADevice != "" && s.FS != nil {
		// A port without hw_counters has no congestion data: absent,
		// not an error.
		dir := "/sys/class/infiniband/" + ps.RDMADevice + "/ports/" + strconv.Itoa(ps.PortNum) + "/hw_counters/"
		for c, names := range congNames {
			ps.cong[c], ps.has[c] = s.hwCounter(dir, names)
		}
	}
}

// hwCounter reads the first of names the RDMA port has; an unreadable or
// odd file is no counter.
func (s *Sampler) hwCounter(dir string, names []string) (uint64, bool) {
	for _, n := range names {
		txt, err := s.FS.ReadTrimmed(dir + n)
		if err != nil {
			continue
		}
		v, err := strconv.ParseUint(txt, 10, 64)
		if err != nil {
			if s.Log != nil {
				s.Log.Debug("hw_counter not a number", "counter", dir+n, "value", txt)
			}
			continue
		}
		return v, true
	}
	return 0, false
}

// CounterSources are the guard's counter sources (and a traffic test's
// pause sources) over the sampler's sources that have NIC counters, a
// bond's slaves in its place, each named by name: Source.Name for the
// guard, the netdev for the pause deltas of a traffic test.
func (s *Sampler) CounterSources(name func(Source) string) []CounterSource {
	var out []CounterSource
	for _, src := range s.Sources {
		if src.IsBond() {
			continue
		}
		out = append(out, CounterSource{Port: name(src), Read: func() (map[string]uint64, error) { return s.K.Stats(src.Netdev) }})
	}
	return out
}
