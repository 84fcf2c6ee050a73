package nic

import (
	"fmt"
	"strconv"
	"strings"
)

// DOCA-OFED / MLNX_OFED add sysfs files that upstream kernels lack
// (reference §A2.1): /sys/class/net/<if>/qos/{trust,dscp2prio,...} and
// /sys/class/infiniband/<dev>/tc/<port>/traffic_class. Their read formats
// differ between OFED releases (a bare word, or "Priority trust state: dscp"),
// so the readers look for the value rather than parse one exact layout.

// OFEDTrustPath is the OFED trust-state attribute of a netdev.
func OFEDTrustPath(netdev string) string { return "/sys/class/net/" + netdev + "/qos/trust" }

// HasOFEDTrust reports whether the netdev has OFED's trust attribute.
func HasOFEDTrust(fs FS, netdev string) bool { return fs.Exists(OFEDTrustPath(netdev)) }

// OFEDTrust reads "pcp" or "dscp" from qos/trust.
func OFEDTrust(fs FS, netdev string) (string, error) {
	s, err := fs.ReadTrimmed(OFEDTrustPath(netdev))
	if err != nil {
		return "", err
	}
	return parseTrust(s)
}

func parseTrust(s string) (string, error) {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !(r >= 'a' && r <= 'z') })
	for i := len(fields) - 1; i >= 0; i-- {
		if fields[i] == "dscp" || fields[i] == "pcp" {
			return fields[i], nil
		}
	}
	return "", fmt.Errorf("qos/trust holds %q, neither pcp nor dscp", s)
}

// SetOFEDTrust writes qos/trust; the caller reads it back (OFEDTrust).
func SetOFEDTrust(fs FS, netdev, trust string) error {
	return fs.WriteString(OFEDTrustPath(netdev), trust)
}

// TrafficClassPath is OFED's per-port forced verbs traffic class.
func TrafficClassPath(dev string, port int) string {
	return fmt.Sprintf("/sys/class/infiniband/%s/tc/%d/traffic_class", dev, port)
}

// TrafficClass reads tc/<port>/traffic_class. ok is false when no traffic
// class is forced. OFED's traffic_class_show (mlx5 main_ext.c) prints
// "Global tclass=N" only when one is forced, then one line per match rule
// ("dst_ip=10.0.0.1,tclass=96"); rules are not the global class and are
// not read as one. A bare number is what a tree standing in for sysfs
// holds after a write.
func TrafficClass(fs FS, dev string, port int) (tc int, ok bool, err error) {
	p := TrafficClassPath(dev, port)
	s, err := fs.ReadTrimmed(p)
	if err != nil {
		return 0, false, trafficClassErr(p, err)
	}
	tc, ok = parseTrafficClass(s)
	return tc, ok, nil
}

func parseTrafficClass(s string) (int, bool) {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		v, global := strings.CutPrefix(line, "Global tclass=")
		if !global && strings.Contains(line, "=") {
			continue // a match rule
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
			return n, true
		}
	}
	return 0, false
}

// SetTrafficClass writes tc/<port>/traffic_class (plain decimal, as
// doRoCE.sh does); the caller reads it back (TrafficClass).
func SetTrafficClass(fs FS, dev string, port int, tc int) error {
	p := TrafficClassPath(dev, port)
	return trafficClassErr(p, fs.WriteString(p, strconv.Itoa(tc)))
}

// trafficClassErr words a missing attribute as what it means.
func trafficClassErr(p string, err error) error {
	if isNotExist(err) {
		return Unsupportedf("no forced verbs traffic class: %s is absent (a DOCA-OFED file; upstream kernels have none)", p)
	}
	return err
}

// ClearTrafficClass removes the forced traffic class: the driver takes -1
// as "no global tclass" (OFED mlx5 main_ext.c traffic_class_store: tcd->val
// = -1, after which the attribute reads empty).
func ClearTrafficClass(fs FS, dev string, port int) error {
	return fs.WriteString(TrafficClassPath(dev, port), "-1")
}
