package policy

import (
	"reflect"
	"testing"
)

// The classes alone derive the NIC map, the PFC set, the CNP marking,
// trust, the TOS (ECT(0) with congestion control, plain without) and
// NCCL's SL and FIFO class, each positioned at the class it came from.
func TestClassesDerive(t *testing.T) {
	const text = "[nccl]\ngeneration = \"2.22\"\n" +
		"[classes.data]\ndscp = 26\npriority = 3\nlossless = true\n" +
		"[classes.cnp]\ndscp = 48\npriority = 6\n" +
		"[classes.control]\ndscp = 46\npriority = 5\n" +
		"[classes.storage]\ndscp = 10\npriority = 1\nlossless = true\n"
	p, ds := loadText(t, text)
	if p == nil || len(ds) != 0 {
		t.Fatalf("load: %v", ds)
	}
	if *p.QoS.Trust != "dscp" || !reflect.DeepEqual(p.QoS.DSCPToPriority.Entries, map[int]int{26: 3, 48: 6, 46: 5, 10: 1}) ||
		*p.QoS.PFCPriorities != PrioSet(1<<3|1<<1) || *p.ECN.CNPDSCP != 48 || *p.ECN.CNPPriority != 6 || *p.RoCE.DefaultTOS != 106 {
		t.Fatalf("derived trust %v map %v pfc %v cnp %v/%v tos %v", *p.QoS.Trust, p.QoS.DSCPToPriority.Entries, p.QoS.PFCPriorities.List(),
			*p.ECN.CNPDSCP, *p.ECN.CNPPriority, *p.RoCE.DefaultTOS)
	}
	if want := []NCCLVar{{"IB_SL", "3"}, {"IB_FIFO_TC", "186"}}; !reflect.DeepEqual(p.NCCL.Vars, want) {
		t.Fatalf("nccl vars %v, want %v", p.NCCL.Vars, want)
	}
	if pos, ok := p.PosOf("roce.default_tos"); !ok || pos.Line != 3 {
		t.Fatalf("roce.default_tos at %v, want [classes.data]'s line 3", pos)
	}

	// Congestion control off: the TOS is not ECN-capable, DSCP << 2.
	p, ds = loadText(t, "[qos]\npfc_priorities = [3]\n[ecn]\nmode = \"off\"\n[classes.data]\ndscp = 26\npriority = 3\nlossless = true\n")
	if p == nil || *p.RoCE.DefaultTOS != 104 || len(p.NCCL.Vars) != 0 {
		t.Fatalf("cc off: %v %v", p, ds)
	}
}

// What a profile spells out by hand and agrees with the classes loads
// as it is, without a word; profiles without [classes] derive nothing.
func TestClassesKeepConsistentHandWrittenSettings(t *testing.T) {
	p, ds := loadText(t, "[qos]\ntrust = \"dscp\"\ndscp_to_priority = \"default\"\npfc_priorities = [3]\n[ecn]\nrp_priorities = [3]\nnp_priorities = [3]\ncnp_dscp = 48\ncnp_priority = 6\n[roce]\ndefault_tos = 106\n"+
		"[classes.data]\ndscp = 26\npriority = 3\nlossless = true\n[classes.cnp]\ndscp = 48\npriority = 6\n")
	if p == nil || len(ds) != 0 || !p.QoS.DSCPToPriority.Default {
		t.Fatalf("%v", ds)
	}
	p, _ = loadText(t, "[roce]\ndefault_tos = 106\n")
	if p.QoS.Trust != nil || p.QoS.DSCPToPriority != nil || p.QoS.PFCPriorities != nil {
		t.Fatalf("derived without classes: %+v", p.QoS)
	}
}
