// Package dcb speaks the kernel's DCB netlink protocol (dcbnl, RTM_GETDCB /
// RTM_SETDCB on NETLINK_ROUTE) without shelling out to dcb or mlnx_qos.
//
// The wire format, the constants and the kernel's quirks are documented in
// shared/reference/roce-host-interfaces.md §A1; the struct layouts here are the
// uapi ones from include/uapi/linux/dcbnl.h (host-endian, packed as gcc lays
// them out on x86_64 and arm64).
//
// Part of row nic in internal/arch's table (layer 1): of this module it may
// import only port, other nic packages and internal/lib, never policy.
package dcb
