package policy

import (
	"reflect"
	"testing"
)

func ip(v int) *int { return &v }

// A hand-written recipe and the same recipe as classes state one intent.
func TestIntentSameFromClassesAndByHand(t *testing.T) {
	hand, ds := loadText(t, "[qos]\ntrust = \"dscp\"\ndscp_to_priority = \"default\"\npfc_priorities = [3]\n[ecn]\nrp_priorities = [3]\nnp_priorities = [3]\ncnp_dscp = 48\ncnp_priority = 6\n[roce]\ndefault_tos = 106\n")
	if hand == nil {
		t.Fatal(ds)
	}
	classes, ds := loadText(t, "[ecn]\nrp_priorities = [3]\nnp_priorities = [3]\n[classes.data]\ndscp = 26\npriority = 3\nlossless = true\n[classes.cnp]\ndscp = 48\npriority = 6\n")
	if classes == nil {
		t.Fatal(ds)
	}
	a, ok1 := hand.Intent()
	b, ok2 := classes.Intent()
	if !ok1 || !ok2 || a.From != "roce.default_tos" || b.From != "classes.data" {
		t.Fatalf("%v %v %+v %+v", ok1, ok2, a, b)
	}
	a.From, b.From = "", ""
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("hand %s\nclasses %s", a, b)
	}
	if s := b.String(); s != "data DSCP 26 → priority 3 (lossless), TOS 106; CNP DSCP 48 → priority 6 (from )" {
		t.Fatalf("%q", s)
	}
	// A profile that places no TOS states no intent.
	p, _ := loadText(t, "[link]\nmtu = 9000\n")
	if _, ok := p.Intent(); ok {
		t.Fatal("intent from a profile without a TOS")
	}
}

// Each disagreement along the chain, with both sides and the arithmetic.
func TestCheckChain(t *testing.T) {
	p, ds := loadText(t, "[nccl]\ngeneration = \"2.22\"\n[classes.data]\ndscp = 26\npriority = 3\nlossless = true\n[classes.cnp]\ndscp = 48\npriority = 6\n[classes.control]\ndscp = 46\npriority = 5\n")
	if p == nil {
		t.Fatal(ds)
	}
	in, _ := p.Intent()
	pfc := PrioSet(1<<0 | 1<<6)
	dscp := "dscp"
	v := View{
		Trust:       &dscp,
		Map:         map[int]int{26: 0, 46: 5},
		PFC:         &pfc,
		TOS:         []Fact{{"mlx5_0.roce.default_roce_tos", 104}, {"host.nccl.NCCL_IB_TC", 96}, {"mlx5_0.roce.traffic_class", 107}, {"x.ok", 106}},
		FifoTC:      &Fact{"host.nccl.NCCL_IB_FIFO_TC", 106},
		SL:          &Fact{"host.nccl.NCCL_IB_SL", 11},
		CNPDSCP:     ip(46),
		CNPPriority: ip(6),
	}
	got := CheckChain(in, "host", v)
	want := []ChainProblem{
		{"mlx5_0.roce.default_roce_tos", "TOS 104 = DSCP 26 << 2 | ECN 00: not ECN-capable; DCQCN needs ECT(0) → 106"},
		{"host.nccl.NCCL_IB_TC", "TOS 96 = DSCP 24 << 2 | ECN 00: DSCP 24, which the host's map does not map; the profile's data class is DSCP 26 on priority 3 (classes.data) → 106"},
		{"mlx5_0.roce.traffic_class", "TOS 107 = DSCP 26 << 2 | ECN 11: CE, every packet already reads as congestion experienced → 106"},
		{"host.nccl.NCCL_IB_FIFO_TC", "TOS 106 = DSCP 26 << 2 | ECN 10: DSCP 26, which the host's map sends to priority 0; the profile's control class is DSCP 46 on priority 5 (classes.control) → 186"},
		{"host.nccl.NCCL_IB_SL", "SL 11 is priority 3 (SL & 7); the profile's data class is priority 3 (classes.data)"},
		{"dscp 26", "the host's map sends DSCP 26 to priority 0; the profile's data class is DSCP 26 → priority 3"},
		{"dscp 48", "the host's map does not map DSCP 48; the profile's CNP class is DSCP 48 → priority 6"},
		{"pfc", "the host's PFC [0, 6] leaves priority 3 without pause; the profile's data class (DSCP 26) is lossless on priority 3"},
		{"pfc", "the host's PFC [0, 6] pauses priority 6, the profile's CNP priority: a CNP paused behind the congestion it reports arrives too late"},
		{"cnp_dscp", "the host marks CNPs with DSCP 46; the profile's CNP class is DSCP 48"},
	}
	// SL 11 & 7 = 3 agrees: it must not be among them.
	want = append(want[:4], want[5:]...)
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w ChainProblem
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("%d:\n got  %+v\n want %+v", i, g, w)
			}
		}
	}
	// Under PCP trust the map decides nothing: one line, not one per DSCP.
	pcp := "pcp"
	got = CheckChain(in, "host", View{Trust: &pcp, Map: map[int]int{}})
	if len(got) != 1 || got[0].Key != "trust" {
		t.Fatalf("pcp: %+v", got)
	}
	// A side that agrees, or says nothing, has nothing to report.
	lossless := PrioSet(1 << 3)
	if got := CheckChain(in, "switch", View{Map: map[int]int{26: 3, 48: 6, 46: 5}, PFC: &lossless}); len(got) != 0 {
		t.Fatalf("agreeing: %+v", got)
	}
	if got := CheckChain(in, "switch", View{}); len(got) != 0 {
		t.Fatalf("unknown: %+v", got)
	}
}
