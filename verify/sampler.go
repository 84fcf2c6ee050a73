package verify

import (
	"errors"
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

	// hw caches, per RDMA port, which hw_counters file each counter is
	// read from: listed once, so that a poll reads only the files it
	// needs, not every driver's name for each counter in turn; and each
	// of those files held open (nic.Attr), so that a read is one pread,
	// not an open, fstat, read and close. gen marks the entries the last
	// sample used; the others (ports gone) are closed.
	hw  map[string]*hwDir
	gen uint64
}

// hwDir is one RDMA port's hw_counters directory as the sampler reads it.
type hwDir struct {
	dir   string // ".../hw_counters/"
	h     nic.Dir
	names [numCong]string
	attrs [numCong]*nic.Attr // names' files, opened on first read
	gen   uint64
	// stale: a listed file failed to read; the next poll lists again.
	stale bool
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
	// hwNames are the files cong was read from; HWBad counts the
	// hw_counters files that did not read as a number this time.
	hwNames [numCong]string
	HWBad   int
}

// CongName is the driver's name of counter c on the port ("" where the
// driver has none).
func (p *PortSample) CongName(c CongCounter) string {
	if !p.has[c] {
		return ""
	}
	return p.hwNames[c]
}

// CongCounter is one of a port's RDMA hardware counters (hw_counters):
// the DCQCN counters, the transport's loss signals and mlx5's RoCE
// accelerator counters.
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
	// CNPIgnored: CNPs the reaction point received and ignored (the QP
	// was not rate-limited for them: DCQCN off on its priority, or a
	// CNP for a QP already at its minimum rate).
	CNPIgnored
	// ImpliedNakSeqErr: a read response or atomic ACK that implied a
	// NAK (a gap the responder did not NAK): loss on RDMA reads.
	ImpliedNakSeqErr
	// mlx5's RoCE accelerator counters (cap roce_accl; NVIDIA's
	// "adaptive retransmission" and "slow restart"): retransmissions
	// the NIC's adaptive timer made and how many of them timed out, and
	// the slow restarts after a loss, the CNPs they generated and the
	// times a QP went from slow restart back to normal.
	AdpRetrans
	AdpRetransTimeout
	SlowRestart
	SlowRestartCNPs
	SlowRestartTrans
	numCong
)

// RDMACounterInfo describes one CongCounter: Key is its name in rocectl's
// documents (mlx5's name, the most widespread), Short its column in
// watch, Names the drivers' hw_counters file names, first match wins.
type RDMACounterInfo struct {
	Key, Short string
	Names      []string
}

// congNames are each RDMA port counter's hw_counters names: mlx5
// (drivers/infiniband/hw/mlx5/counters.c, reference §A4.2) first, then
// bnxt_re (hw_counters.c: bnxt_re_stat_descs), then irdma (verbs.c:
// irdma_hw_stat_names; gen2 names, and gen3's with spaces).
var congNames = [numCong][]string{
	// mlx5 cong_cnts; bnxt_re tx_cnp_pkts/rx_cnp_pkts/rx_ecn_marked_pkts;
	// irdma cnpSent/cnpHandled/RxECNMrkd (gen2, 32 and 48 bits).
	CNPSent:    {"np_cnp_sent", "tx_cnp_pkts", "cnpSent"},
	CNPHandled: {"rp_cnp_handled", "rx_cnp_pkts", "cnpHandled"},
	ECNMarked:  {"np_ecn_marked_roce_packets", "rx_ecn_marked_pkts", "RxECNMrkd"},
	// mlx5's q counters (out_of_seq_q_cnts, retrans_q_cnts,
	// basic_q_cnts), then bnxt_re's of the same meaning (oos_drop_count,
	// seq_err_naks_rcvd, to_retransmits, rx_out_of_buffer), then irdma
	// gen3's ("Rcvd Out of order packets", "Nak Sequence Error", "RTO").
	OutOfSequence:   {"out_of_sequence", "oos_drop_count", "Rcvd Out of order packets"},
	PacketSeqErr:    {"packet_seq_err", "seq_err_naks_rcvd", "Nak Sequence Error"},
	LocalAckTimeout: {"local_ack_timeout_err", "to_retransmits", "RTO"},
	OutOfBuffer:     {"out_of_buffer", "rx_out_of_buffer"},
	// mlx5 cong_cnts rp_cnp_ignored; irdma cnpIgnored (16 bits in
	// hardware, widened by the driver's IRDMA_STATS_DELTA). bnxt_re has
	// none.
	CNPIgnored:       {"rp_cnp_ignored", "cnpIgnored"},
	ImpliedNakSeqErr: {"implied_nak_seq_err", "Nak Sequence Error Implied"},
	// mlx5 roce_accl_cnts only.
	AdpRetrans:        {"roce_adp_retrans"},
	AdpRetransTimeout: {"roce_adp_retrans_to"},
	SlowRestart:       {"roce_slow_restart"},
	SlowRestartCNPs:   {"roce_slow_restart_cnps"},
	SlowRestartTrans:  {"roce_slow_restart_trans"},
}

// rdmaShort are the watch columns' names.
var rdmaShort = [numCong]string{
	CNPSent: "cnp-tx", CNPHandled: "cnp-rx", ECNMarked: "ecn",
	OutOfSequence: "oos", PacketSeqErr: "seq-nak", LocalAckTimeout: "ack-tmo", OutOfBuffer: "no-wqe",
	CNPIgnored: "cnp-ign", ImpliedNakSeqErr: "impl-nak",
	AdpRetrans: "adp-rtx", AdpRetransTimeout: "adp-tmo", SlowRestart: "slow-rst", SlowRestartCNPs: "slow-cnp", SlowRestartTrans: "slow-end",
}

// RDMALossKeys are the keys of the counters whose rise means a packet was
// lost on the RDMA transport (on a lossless class: where none should be).
var RDMALossKeys = []string{congNames[OutOfSequence][0], congNames[PacketSeqErr][0], congNames[ImpliedNakSeqErr][0],
	congNames[LocalAckTimeout][0], congNames[OutOfBuffer][0]}

// RDMACounters describes every CongCounter, in order.
var RDMACounters = func() []RDMACounterInfo {
	out := make([]RDMACounterInfo, numCong)
	for c := range numCong {
		out[c] = RDMACounterInfo{Key: congNames[c][0], Short: rdmaShort[c], Names: congNames[c]}
	}
	return out
}()

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
	s.gen++
	for _, src := range s.Sources {
		out.Ports = append(out.Ports, PortSample{Source: src})
		s.read(&out.Ports[len(out.Ports)-1])
	}
	for k, d := range s.hw {
		if d.gen != s.gen {
			d.close()
			delete(s.hw, k)
		}
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
		d := s.hwDirOf(ps.RDMADevice, ps.PortNum)
		for c, n := range d.names {
			if n == "" {
				continue
			}
			v, err := s.hwCounter(d, CongCounter(c))
			switch {
			case err == nil:
				ps.cong[c], ps.has[c], ps.hwNames[c] = v, true, n
			case errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange):
				ps.HWBad++
			default:
				d.stale = true // gone (driver reload): list again next time
			}
		}
	}
}

// hwDirOf is the RDMA port's cached listing, made here (again after a
// listed file went missing, and while the directory cannot be listed).
func (s *Sampler) hwDirOf(dev string, port int) *hwDir {
	key := dev + "/" + strconv.Itoa(port)
	d := s.hw[key]
	if d != nil && !d.stale {
		d.gen = s.gen
		return d
	}
	if s.hw == nil {
		s.hw = map[string]*hwDir{}
	}
	if d == nil {
		d = &hwDir{dir: "/sys/class/infiniband/" + key[:len(dev)] + "/ports/" + key[len(dev)+1:] + "/hw_counters"}
		s.hw[key] = d
	}
	d.gen = s.gen
	d.close()
	d.names, d.stale = [numCong]string{}, false
	d.h = s.FS.Dir(d.dir)
	files, err := d.h.ReadDir(".")
	if err != nil {
		d.stale = true
		return d
	}
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f] = true
	}
	for c, names := range congNames {
		for _, n := range names {
			if have[n] {
				d.names[c] = n
				break
			}
		}
	}
	return d
}

// hwCounter reads counter c's hw_counters file of d as a decimal number,
// opening it on the first read. A value that is not one is an error
// wrapping strconv's, never a zero; a read that fails otherwise closes the
// file (the caller lists the directory again).
func (s *Sampler) hwCounter(d *hwDir, c CongCounter) (uint64, error) {
	a := d.attrs[c]
	if a == nil {
		var err error
		if a, err = d.h.OpenAttr(d.names[c]); err != nil {
			return 0, err
		}
		d.attrs[c] = a
	}
	v, err := a.ReadUint()
	switch {
	case err == nil:
	case errors.Is(err, strconv.ErrSyntax) || errors.Is(err, strconv.ErrRange):
		if s.Log != nil {
			s.Log.Debug("hw_counter not a number", "counter", d.dir+"/"+d.names[c], "err", err)
		}
	default:
		a.Close()
		d.attrs[c] = nil
	}
	return v, err
}

// close releases the directory and the files held below it.
func (d *hwDir) close() {
	for i, a := range d.attrs {
		a.Close()
		d.attrs[i] = nil
	}
	d.h.Close()
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
