package policy

import (
	"regexp"
	"strings"
	"testing"
)

// The name rules replaced these regexps (too slow to compile at start-up);
// they must accept exactly the same names.
func TestNameRulesMatchTheirRegexps(t *testing.T) {
	rules := []struct {
		rule nameRule
		re   *regexp.Regexp
	}{
		{profileName, regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)},
		{privFlagName, regexp.MustCompile(`^[A-Za-z0-9_.-]{1,32}$`)},
		{devlinkName, regexp.MustCompile(`^[a-z0-9_]{1,64}$`)},
		{ncclExtraName, regexp.MustCompile(`^NCCL_[A-Z0-9_]{1,64}$`)},
	}
	inputs := []string{"", "a", "A", "rack-a12.v2", "rx_cqe_compress", "enable_roce", "Enable_RoCE",
		"NCCL_", "NCCL_IB_QPS_PER_CONNECTION", "NCCL_ib", "nccl_IB", "XNCCL_A", "a b", "a/b", "é", "a\n",
		strings.Repeat("a", 32), strings.Repeat("a", 33), strings.Repeat("a", 64), strings.Repeat("a", 65),
		"NCCL_" + strings.Repeat("A", 64), "NCCL_" + strings.Repeat("A", 65), "x-y.z_0"}
	for _, r := range rules {
		for _, in := range inputs {
			if got, want := r.rule.ok(in), r.re.MatchString(in); got != want {
				t.Errorf("%s: ok(%q) = %v, want %v", r.re, in, got, want)
			}
		}
	}
}

// The GID scan is needed only where its result is used: the NCCL file
// rocectl writes, or verbs traffic.
func TestNeedsGID(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"name = \"x\"\n[link]\nmtu = 9000\n", false},
		{"name = \"x\"\n[nccl]\nIB_GID_INDEX = \"auto\"\n", false}, // only printed by nccl-env
		{"name = \"x\"\n[nccl]\nIB_GID_INDEX = 3\nwrite = \"/etc/nccl.conf\"\n", false},
		{"name = \"x\"\n[nccl]\nIB_GID_INDEX = \"auto\"\nwrite = \"/etc/nccl.conf\"\n", true},
		{"name = \"x\"\n[link]\nmtu = 9000\n[verify]\nloopback = true\n", true},
	} {
		p := mustInclude(t, "p.toml", map[string]string{"p.toml": c.text})
		if got := p.NeedsGID(); got != c.want {
			t.Errorf("NeedsGID() = %v, want %v for\n%s", got, c.want, c.text)
		}
	}
}
