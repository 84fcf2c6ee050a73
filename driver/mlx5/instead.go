package mlx5

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/policy"
)

// Instead says where an mlx5 setting lives when the interface rocectl
// reads has none of it.
//
//   - The per-priority DCQCN enable: upstream mlx5_ib has no per-priority
//     switch (its debugfs cc_params are port-wide, mlx5_ib cong.c); the
//     priorities DCQCN acts on are the firmware's NVConfig
//     ROCE_CC_PRIO_MASK_P<port> (mstconfig/mlxconfig, current after a
//     firmware reset), which DOCA-OFED's ecn sysfs also writes through.
//   - DCQCN parameters: mlx5_ib creates cc_params only when the firmware
//     grants congestion-control query and modify (mlx5_ib_init_cong_debugfs
//     checks MLX5_CAP_GEN(cc_query_allowed, cc_modify_allowed)); otherwise
//     the firmware's defaults rule and DOCA-OFED's sysfs is the other way in.
//   - DCB: en_dcbnl.c is built only with CONFIG_MLX5_CORE_EN_DCB; a
//     mlx5_core without it registers no dcbnl ops.
//   - The forced verbs traffic class is DOCA-OFED's tc sysfs only.
func (Driver) Instead(k policy.Kind, f driver.PortFacts) string {
	switch {
	case k == policy.KindECNEnable:
		return "set in firmware: " + ccPrioMask(f.PCI) + " (NVConfig: the profile's [firmware] cc_priorities, written through mstconfig, takes effect at the next firmware reset), or DOCA-OFED's per-priority ecn sysfs"
	case k == policy.KindECNParam:
		return "DOCA-OFED's ecn sysfs, or upstream mlx5_ib's debugfs cc_params, which it creates only when the firmware allows congestion-control query and modify; else the firmware's defaults apply"
	case k == policy.KindTrafficClass:
		return "DOCA-OFED's tc sysfs, or " + driver.PerConnectionTC
	case driver.IsDCB(k):
		return "a mlx5_core built with CONFIG_MLX5_CORE_EN_DCB (most distributions' kernels, and DOCA-OFED's): its dcbnl ops set this"
	}
	return ""
}

// ccPrioMask names the NVConfig parameter of the port at pci: the
// physical port is the PCI function's number plus one on ConnectX
// adapters (function 0 is port 1), "P<n>" when the function is unknown.
func ccPrioMask(pci string) string {
	i := strings.LastIndexByte(pci, '.')
	if i < 0 {
		return "ROCE_CC_PRIO_MASK_P<n>, n the port of the adapter"
	}
	fn, err := strconv.Atoi(pci[i+1:])
	if err != nil || fn > 1 {
		return "ROCE_CC_PRIO_MASK_P<n>, n the port of the adapter"
	}
	return fmt.Sprintf("ROCE_CC_PRIO_MASK_P%d of %s", fn+1, pci)
}

// CCModes: mlx5 runs DCQCN (mlx5_ib cong.c). With DOCA-OFED's ecn sysfs
// the per-priority enables also turn it off on the lossless priorities
// (PFC-only); upstream has no per-priority switch but the firmware's
// ROCE_CC_PRIO_MASK_P<port>.
func (Driver) CCModes(f driver.PortFacts) ([]string, string, bool) {
	switch f.ECN {
	case driver.ECNOFED:
		return []string{policy.CCDCQCN, policy.CCOff}, "", true
	case driver.ECNUpstream:
		return []string{policy.CCDCQCN}, "on upstream mlx5 the priorities DCQCN acts on are set in firmware (" + ccPrioMask(f.PCI) + "): PFC-only there is [firmware] cc_priorities without the lossless priorities (pending until the next firmware reset)", true
	}
	return nil, "", false
}
