package nic

import "testing"

// traffic_class as OFED's traffic_class_show prints it (mlx5 main_ext.c):
// "Global tclass=N" first when one is forced, then one line per rule.
func TestParseTrafficClass(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"", 0, false},
		{"Global tclass=106", 106, true},
		{"Global tclass=106\ndst_ip=10.0.0.1,tclass=96", 106, true},
		{"dst_ip=10.0.0.1,tclass=96", 0, false}, // rules only: nothing forced globally
		{"dst_ip=10.0.0.1,tclass=96\ndst_ip=10.0.0.2,tclass=104", 0, false},
		{"106", 106, true}, // a tree standing in for sysfs
		{"Global tclass=-1", 0, false},
	} {
		got, ok := parseTrafficClass(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseTrafficClass(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
