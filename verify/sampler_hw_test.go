package verify

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
)

// hwOf samples one RDMA port's counters through a Sampler and returns
// them by key (RDMACounters), with the driver's file names.
func hwOf(t *testing.T, s *Sampler) (map[string]uint64, map[string]string, *PortSample) {
	t.Helper()
	smp := s.Sample()
	ps := &smp.Ports[0]
	vals, names := map[string]uint64{}, map[string]string{}
	for c := range CongCounter(numCong) {
		if v, ok := ps.Cong(c); ok {
			vals[RDMACounters[c].Key] = v
			names[RDMACounters[c].Key] = ps.CongName(c)
		}
	}
	return vals, names, ps
}

// The RDMA hardware counters by driver, from the fixture hosts' real
// hw_counters layouts: mlx5 (the procfs capture's values: roce_adp_retrans
// 99, local_ack_timeout_err 131) and bnxt_re (its names: tx_cnp_pkts,
// oos_drop_count, to_retransmits; no rp_cnp_ignored, no RoCE accelerator
// counters), and irdma gen3's names with spaces.
func TestSamplerRDMACountersByDriver(t *testing.T) {
	t.Run("mlx5", func(t *testing.T) {
		root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
		fs := nic.NewFS(root, false)
		vals, _, _ := hwOf(t, &Sampler{K: sim, FS: &fs, Sources: []Source{{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1}}})
		for k, want := range map[string]uint64{"roce_adp_retrans": 99, "roce_adp_retrans_to": 4, "roce_slow_restart_cnps": 131,
			"local_ack_timeout_err": 131, "rp_cnp_ignored": 0, "np_cnp_sent": 0} {
			if got, ok := vals[k]; !ok || got != want {
				t.Errorf("%s = %v (present %v), want %d", k, got, ok, want)
			}
		}
		if len(vals) != int(numCong) {
			t.Errorf("mlx5 has %d of the %d counters: %v", len(vals), numCong, vals)
		}
	})
	// The upstream host's hw_counters are the names of a real `rdma
	// statistic show link rocep8s0f0/1` (testdata/captures/mlx5-rdma-
	// statistic-show-link-rocep8s0f0-optional-cc.txt, an upstream kernel
	// with the RoCE accelerator set): every counter rocectl reads is there,
	// under its mlx5 name.
	t.Run("mlx5 upstream, rdma statistic capture", func(t *testing.T) {
		root, sim := fixturehost.Copy(t, "cx7-upstream-factory")
		fs := nic.NewFS(root, false)
		_, names, _ := hwOf(t, &Sampler{K: sim, FS: &fs, Sources: []Source{{Netdev: "enp8s0f0np0", RDMADevice: "rocep8s0f0", PortNum: 1}}})
		if len(names) != int(numCong) {
			t.Errorf("%d of the %d counters: %v", len(names), numCong, names)
		}
		for k, n := range names {
			if k != n {
				t.Errorf("%s read from %q, want mlx5's own name", k, n)
			}
		}
	})
	t.Run("bnxt_re", func(t *testing.T) {
		root, sim := fixturehost.Copy(t, "bnxt-re-factory")
		fs := nic.NewFS(root, false)
		_, names, _ := hwOf(t, &Sampler{K: sim, FS: &fs, Sources: []Source{{Netdev: "x", RDMADevice: "bnxt_re0", PortNum: 1}}})
		want := map[string]string{"np_cnp_sent": "tx_cnp_pkts", "rp_cnp_handled": "rx_cnp_pkts", "np_ecn_marked_roce_packets": "rx_ecn_marked_pkts",
			"out_of_sequence": "oos_drop_count", "packet_seq_err": "seq_err_naks_rcvd", "local_ack_timeout_err": "to_retransmits", "out_of_buffer": "rx_out_of_buffer"}
		if len(names) != len(want) {
			t.Errorf("bnxt_re counters %v, want %v", names, want)
		}
		for k, n := range want {
			if names[k] != n {
				t.Errorf("%s read from %q, want %q", k, names[k], n)
			}
		}
	})
	t.Run("irdma", func(t *testing.T) {
		h := newHWTree(t, "devices/pci0000:00/0000:00:01.0", "irdma0", 1)
		h.set(map[string]uint64{"cnpSent": 1, "cnpHandled": 2, "cnpIgnored": 3, "RxECNMrkd": 4, "Rcvd Out of order packets": 5,
			"Nak Sequence Error": 6, "Nak Sequence Error Implied": 7, "RTO": 8, "InRdmaWrites": 9})
		fs := nic.NewFS(h.root, true)
		vals, _, _ := hwOf(t, &Sampler{FS: &fs, K: noStats{}, Sources: []Source{{Netdev: "x", RDMADevice: "irdma0", PortNum: 1}}})
		want := map[string]uint64{"np_cnp_sent": 1, "rp_cnp_handled": 2, "rp_cnp_ignored": 3, "np_ecn_marked_roce_packets": 4,
			"out_of_sequence": 5, "packet_seq_err": 6, "implied_nak_seq_err": 7, "local_ack_timeout_err": 8}
		if len(vals) != len(want) {
			t.Errorf("irdma counters %v, want %v", vals, want)
		}
		for k, v := range want {
			if vals[k] != v {
				t.Errorf("%s = %d, want %d", k, vals[k], v)
			}
		}
	})
}

// Bad input: a file that holds a non-number is absent that poll (never a
// zero, which would read as a reset) and counted; a file that vanishes is
// absent and the directory is listed again, so it is back when it is.
func TestSamplerRDMACountersBadInput(t *testing.T) {
	h := newHWTree(t, "devices/pci0000:00/0000:00:01.0", "mlx5_0", 1)
	h.set(map[string]uint64{"np_cnp_sent": 10, "out_of_sequence": 3})
	fs := nic.NewFS(h.root, true)
	s := &Sampler{FS: &fs, K: noStats{}, Sources: []Source{{Netdev: "x", RDMADevice: "mlx5_0", PortNum: 1}}}
	if vals, _, ps := hwOf(t, s); vals["np_cnp_sent"] != 10 || vals["out_of_sequence"] != 3 || ps.HWBad != 0 {
		t.Fatalf("first poll %v bad %d", vals, ps.HWBad)
	}
	if err := os.WriteFile(filepath.Join(h.dir, "np_cnp_sent"), []byte("N/A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(h.dir, "out_of_sequence")); err != nil {
		t.Fatal(err)
	}
	vals, _, ps := hwOf(t, s)
	if _, ok := vals["np_cnp_sent"]; ok || ps.HWBad != 1 {
		t.Errorf("non-number: %v, bad %d; want absent and counted", vals, ps.HWBad)
	}
	if _, ok := vals["out_of_sequence"]; ok {
		t.Errorf("vanished file read: %v", vals)
	}
	h.set(map[string]uint64{"np_cnp_sent": 12, "out_of_sequence": 0})
	if vals, _, _ := hwOf(t, s); vals["np_cnp_sent"] != 12 || vals["out_of_sequence"] != 0 {
		t.Errorf("back: %v", vals)
	}
}

// noStats is a kernel with no ethtool statistics: the RDMA side only.
type noStats struct{}

func (noStats) Stats(string) (map[string]uint64, error) { return nil, os.ErrNotExist }
func (noStats) Link(string) (nic.LinkInfo, error)       { return nic.LinkInfo{}, os.ErrNotExist }
