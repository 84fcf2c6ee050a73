package dcb

// Wire constants from include/uapi/linux/dcbnl.h (reference §A1.2). They are
// exported so that a monitor of RTNLGRP_DCB notifications or a capture tool
// can name what it sees; the request builders and decoders use them too.

// Commands (enum dcbnl_commands), carried in dcbmsg.cmd.
const (
	CmdIEEESet uint8 = 20 // DCB_CMD_IEEE_SET, reply RTM_SETDCB with in-band u8 status
	CmdIEEEGet uint8 = 21 // DCB_CMD_IEEE_GET, reply RTM_GETDCB with the full IEEE state
	CmdGDCBX   uint8 = 22 // DCB_CMD_GDCBX, reply u8 DCB_ATTR_DCBX
	CmdSDCBX   uint8 = 23 // DCB_CMD_SDCBX, reply u8 DCB_ATTR_DCBX = driver return
	CmdCEEGet  uint8 = 26 // DCB_CMD_CEE_GET, reply RTM_GETDCB with the CEE state (rocectl reads only its peer objects)
	CmdIEEEDel uint8 = 27 // DCB_CMD_IEEE_DEL, reply like IEEE_SET
)

// Top-level attributes (enum dcbnl_attrs).
const (
	AttrIfname uint16 = 1  // DCB_ATTR_IFNAME, NUL-terminated, at most 15 characters
	AttrIEEE   uint16 = 13 // DCB_ATTR_IEEE: a nest in requests and GET replies, a u8 status in SET/DEL replies
	AttrDCBX   uint16 = 14 // DCB_ATTR_DCBX, u8
	AttrCEE    uint16 = 16 // DCB_ATTR_CEE: the nest of a CEE_GET reply (dcbnl_cee_fill)
)

// Attributes nested in DCB_ATTR_IEEE (enum ieee_attrs).
const (
	AttrIEEEETS          uint16 = 1  // struct ieee_ets
	AttrIEEEPFC          uint16 = 2  // struct ieee_pfc
	AttrIEEEAppTable     uint16 = 3  // nest of AttrIEEEApp / AttrDCBApp
	AttrIEEEPeerETS      uint16 = 4  // GET only: struct ieee_ets from ops->ieee_peer_getets
	AttrIEEEPeerPFC      uint16 = 5  // GET only: struct ieee_pfc from ops->ieee_peer_getpfc
	AttrIEEEPeerApp      uint16 = 6  // GET only: nest of AttrIEEEApp entries from ops->peer_getapptable
	AttrIEEEMaxrate      uint16 = 7  // struct ieee_maxrate
	AttrIEEEQCN          uint16 = 8  // struct ieee_qcn
	AttrIEEEQCNStats     uint16 = 9  // struct ieee_qcn_stats
	AttrDCBBuffer        uint16 = 10 // struct dcbnl_buffer
	AttrDCBAppTrustTable uint16 = 11 // nest of u8 selectors, first = highest precedence
	AttrDCBRewrTable     uint16 = 12 // nest like the APP table (kernel ≥ 6.3)
)

// Attributes nested in DCB_ATTR_CEE (enum cee_attrs). dcbnl_cee_fill puts
// the local CEE objects (TX_PG .. FEAT) and, from the driver's
// cee_peer_getpg, cee_peer_getpfc and peer_getappinfo/peer_getapptable
// ops, the link partner's.
const (
	AttrCEEPeerPG       uint16 = 1 // struct cee_pg
	AttrCEEPeerPFC      uint16 = 2 // struct cee_pfc
	AttrCEEPeerAppTable uint16 = 3 // nest of AttrCEEPeerAppInfo, AttrCEEPeerApp...
	AttrCEETxPG         uint16 = 4 // local, DCB_CMD_PGTX_GCFG layout (not decoded)
	AttrCEERxPG         uint16 = 5
	AttrCEEPFC          uint16 = 6
	AttrCEEAppTable     uint16 = 7
	AttrCEEFeat         uint16 = 8
)

// Attributes nested in DCB_ATTR_CEE_PEER_APP_TABLE (enum peer_app_attr).
const (
	AttrCEEPeerAppInfo uint16 = 1 // struct dcb_peer_app_info
	AttrCEEPeerApp     uint16 = 2 // struct dcb_app
)

// Attributes nested in an APP table or APP trust table (enum ieee_attrs_app).
// The kernel pairs them with selectors: AttrIEEEApp for the IEEE selectors
// 1..5, AttrDCBApp for the non-standard SelPCP; a mismatch is -EINVAL.
const (
	AttrIEEEApp uint16 = 1 // DCB_ATTR_IEEE_APP
	AttrDCBApp  uint16 = 2 // DCB_ATTR_DCB_APP (kernel ≥ 6.1 net-next; older kernels skip it silently)
)

// Sizes of the uapi structs on the wire (gcc x86_64/arm64 layout, §A1.3).
const (
	SizeETS     = 59
	SizePFC     = 136
	SizeApp     = 4
	SizeBuffer  = 44
	SizeMaxrate = 64
	SizeCEEPG   = 20 // struct cee_pg
	SizeCEEPFC  = 4  // struct cee_pfc
	SizeAppInfo = 2  // struct dcb_peer_app_info
)

// MaxIfnameLen is IFNAMSIZ-1: DCB_ATTR_IFNAME is an NLA_NUL_STRING of at most
// 15 characters plus the NUL.
const MaxIfnameLen = 15

// MaxDSCP is DCB_APP_DSCP_MAX (iproute2): DSCP is six bits.
const MaxDSCP = 63

// attrTypeMask strips NLA_F_NESTED and NLA_F_NET_BYTEORDER (NLA_TYPE_MASK):
// the kernel flags some nests (APP_TRUST_TABLE, REWR_TABLE) and not others.
const attrTypeMask = 0x3fff

// appAttrType is the kernel's dcbnl_app_attr_type_get: which attribute type
// an APP entry with this selector must travel under.
func appAttrType(selector uint8) uint16 {
	if selector == SelPCP {
		return AttrDCBApp
	}
	return AttrIEEEApp
}
