package dcb

// Transmission selection algorithms (IEEE_8021QAZ_TSA_*).
const (
	TSAStrict   uint8 = 0
	TSACBShaper uint8 = 1
	TSAETS      uint8 = 2
	TSAVendor   uint8 = 255
)

// APP table selectors (IEEE_8021QAZ_APP_SEL_* and the non-standard
// DCB_APP_SEL_PCP).
const (
	SelEthertype uint8 = 1
	SelStream    uint8 = 2
	SelDgram     uint8 = 3
	SelAny       uint8 = 4
	SelDSCP      uint8 = 5
	SelPCP       uint8 = 255
)

// DCBX capability bits (DCB_CAP_DCBX_*).
const (
	DCBXHost       uint8 = 0x01
	DCBXLLDManaged uint8 = 0x02
	DCBXVerCEE     uint8 = 0x04
	DCBXVerIEEE    uint8 = 0x08
	DCBXStatic     uint8 = 0x10
)

// NumTCs is IEEE_8021QAZ_MAX_TCS: priorities, traffic classes and buffers
// are all arrays of eight.
const NumTCs = 8

// ETS is struct ieee_ets (59 bytes on the wire).
type ETS struct {
	Willing    uint8         `json:"willing"`
	ETSCap     uint8         `json:"ets_cap"`
	CBS        uint8         `json:"cbs"`
	TCTxBW     [NumTCs]uint8 `json:"tc_tx_bw"`
	TCRxBW     [NumTCs]uint8 `json:"tc_rx_bw"`
	TCTSA      [NumTCs]uint8 `json:"tc_tsa"`
	PrioTC     [NumTCs]uint8 `json:"prio_tc"`
	TCRecoBW   [NumTCs]uint8 `json:"tc_reco_bw"`
	TCRecoTSA  [NumTCs]uint8 `json:"tc_reco_tsa"`
	RecoPrioTC [NumTCs]uint8 `json:"reco_prio_tc"`
}

// PFC is struct ieee_pfc (136 bytes on the wire). On mlx5 Delay carries the
// cable length in metres; Requests/Indications are per-priority pause frame
// counters (tx/rx).
type PFC struct {
	Cap         uint8          `json:"pfc_cap"`
	Enable      uint8          `json:"pfc_en"` // bitmap, bit p = priority p
	MBC         uint8          `json:"mbc"`
	Delay       uint16         `json:"delay"`
	Requests    [NumTCs]uint64 `json:"requests"`
	Indications [NumTCs]uint64 `json:"indications"`
}

// App is struct dcb_app: one APP table entry, e.g. {SelDSCP, 3, 26} maps
// DSCP 26 to priority 3.
type App struct {
	Selector uint8  `json:"selector"`
	Priority uint8  `json:"priority"`
	Protocol uint16 `json:"protocol"`
}

// Buffer is struct dcbnl_buffer (44 bytes): priority→buffer map and buffer
// sizes in bytes.
type Buffer struct {
	PrioBuffer [NumTCs]uint8  `json:"prio2buffer"`
	Size       [NumTCs]uint32 `json:"buffer_size"`
	TotalSize  uint32         `json:"total_size"`
}

// Maxrate is struct ieee_maxrate: per-TC rate limits in kbit/s, 0 = none.
type Maxrate struct {
	TCMaxrate [NumTCs]uint64 `json:"tc_maxrate"`
}

// State is everything one IEEE_GET (plus the DCBX attribute that comes with
// it) returns for a netdev. A nil member means the driver does not implement
// that getter, which the kernel signals by leaving the attribute out.
type State struct {
	ETS      *ETS     `json:"ets,omitempty"`
	PFC      *PFC     `json:"pfc,omitempty"`
	Apps     []App    `json:"apps,omitempty"`
	Buffer   *Buffer  `json:"buffer,omitempty"`
	Maxrate  *Maxrate `json:"maxrate,omitempty"`
	AppTrust []uint8  `json:"app_trust,omitempty"` // selectors, highest precedence first
	DCBX     *uint8   `json:"dcbx,omitempty"`
	// Peer is the link partner's DCBX as the driver reports it in the
	// same reply; nil when the reply has none of the peer attributes.
	Peer *Peer `json:"peer,omitempty"`
	// CEEPeer is the partner's CEE DCBX from a CEE_GET, which the client
	// sends only when the DCBX mode is firmware-run CEE (CEEPeerMode);
	// nil when not asked or when the reply has no peer attributes.
	CEEPeer *CEEPeer `json:"cee_peer,omitempty"`
}

// Peer is what dcbnl_ieee_fill puts in DCB_ATTR_IEEE from a driver whose
// firmware runs DCBX and keeps what the link partner announced: the
// ieee_peer_getets, ieee_peer_getpfc and peer_getappinfo/peer_getapptable
// ops of struct dcbnl_rtnl_ops (upstream: qede, cxgb4). Which fields a
// driver fills, and how faithfully, differs (docs/drivers.md): the kernel
// zeroes each struct before the op and sends it whenever the op returns 0,
// so an all-zero struct may mean "nothing heard yet".
type Peer struct {
	ETS *ETS `json:"ets,omitempty"` // DCB_ATTR_IEEE_PEER_ETS
	PFC *PFC `json:"pfc,omitempty"` // DCB_ATTR_IEEE_PEER_PFC
	// App is DCB_ATTR_IEEE_PEER_APP. dcbnl_build_peer_app sends the nest,
	// possibly empty, whenever peer_getappinfo succeeds.
	App *PeerApp `json:"app,omitempty"`
}

// PeerApp is a peer APP table: the entries peer_getapptable filled (as
// many as peer_getappinfo counted) and, in the CEE reply only, the APP
// TLV's willing and error bits.
type PeerApp struct {
	Info    *PeerAppInfo `json:"info,omitempty"` // DCB_ATTR_CEE_PEER_APP_INFO
	Entries []App        `json:"entries"`
}

// PeerAppInfo is struct dcb_peer_app_info.
type PeerAppInfo struct {
	Willing uint8 `json:"willing"`
	Error   uint8 `json:"error"`
}

// CEEPeer is what dcbnl_cee_fill puts in DCB_ATTR_CEE from the
// cee_peer_getpg, cee_peer_getpfc and peer_getappinfo/peer_getapptable
// ops.
type CEEPeer struct {
	PG  *CEEPG   `json:"pg,omitempty"`  // DCB_ATTR_CEE_PEER_PG
	PFC *CEEPFC  `json:"pfc,omitempty"` // DCB_ATTR_CEE_PEER_PFC
	App *PeerApp `json:"app,omitempty"` // DCB_ATTR_CEE_PEER_APP_TABLE
}

// CEEPG is struct cee_pg (20 bytes): the CEE priority group TLV.
// PrioPG[p] is priority p's group, 15 meaning strict priority.
type CEEPG struct {
	Willing      uint8    `json:"willing"`
	Error        uint8    `json:"error"`
	Enable       uint8    `json:"pg_en"`
	TCsSupported uint8    `json:"tcs_supported"`
	BW           [8]uint8 `json:"pg_bw"` // percent per priority group
	PrioPG       [8]uint8 `json:"prio_pg"`
}

// CEEPFC is struct cee_pfc (4 bytes).
type CEEPFC struct {
	Willing      uint8 `json:"willing"`
	Error        uint8 `json:"error"`
	Enable       uint8 `json:"pfc_en"` // bitmap, bit p = priority p
	TCsSupported uint8 `json:"tcs_supported"`
}

// CEEPeerMode says whether a port in this DCBX mode may report its CEE
// peer: the firmware runs DCBX (DCB_CAP_DCBX_LLD_MANAGED) in CEE
// (DCB_CAP_DCBX_VER_CEE), as qede (qed_dcbnl_getdcbx) and cxgb4 (the
// CXGB4_DCB_STATE_FW_* states of cxgb4_dcb_state_fsm) say when they run
// CEE. Host-run DCBX (mlx5, bnxt in host mode) keeps no peer in the driver.
func CEEPeerMode(dcbx *uint8) bool {
	return dcbx != nil && *dcbx&DCBXLLDManaged != 0 && *dcbx&DCBXVerCEE != 0
}
