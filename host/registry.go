package host

import (
	"fmt"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// kind is how a host holds one policy.Kind: the one place that says how a
// setting of that kind is read, which kernel object it is written through,
// and how a value the host did not have is taken away again. Adding a
// setting kind means one entry here, its nic call, its profile key
// (policy) and its docs.
type kind struct {
	// read returns the canonical value the host holds for s; present is
	// false when the host has no value at all (no APP entry, no NCCL
	// line). A read that can say something the operator must know about
	// a change (a devlink parameter that needs a reload) says it in
	// notes, which may be nil.
	read func(r *portReader, s policy.Setting, notes map[string]string) (v string, present bool, err error)
	// obj is the kernel object a write goes through.
	obj *object
	// where says where on the host's topology the setting lives
	// (place.go): the netdev, every physical port (each slave of a
	// bond), the RDMA device port, or the host.
	where place
	// pfOnly: only the PF can set it (mlx5 needs the vport group manager
	// for the port's QoS); a VF's setting of this kind is skipped with a
	// line naming its PF.
	pfOnly bool
	// files lists the host paths (sysfs, configfs, debugfs) a read of this
	// kind opens for port p. When a snapshot says it did not capture one
	// of them (Host.NotCaptured), a missing file there says nothing about
	// the driver: the value is unknown, not unsupported. Nil for kinds
	// read through netlink or ioctls, whose snapshot data says by itself
	// what was not captured (nic.ErrNotCaptured).
	files func(p *port.Port) []string
}

// object is one kernel object that settings are written through. Settings
// of one port that share an object are written together, in one step:
// the three ETS keys are one ieee_ets, PFC priorities and cable length one
// ieee_pfc, trust and the DSCP map one APP table.
type object struct {
	// group names the step in the journal. Empty for objects that hold a
	// single setting: such a step is named after the setting.
	group string
	// write sets the step's values (after-values, or before-values when
	// undoing) with one GET → modify → SET where the kernel needs it.
	write func(w *stepWriter) error
	// clear takes away a value the host did not have before the apply
	// (undo of an Absent change). Nil: there is no way to remove one.
	clear func(w *stepWriter, c policy.Change) error
	// undo, when set, replaces write for undoing: restore a saved copy
	// (the NCCL file) instead of writing before-values.
	undo func(w *stepWriter) error
	// capture saves, before the first write, what undo needs beyond the
	// canonical before-values.
	capture func(h *Host, d *policy.Desired, st *Step) error
	// checkUndo, when set, replaces the per-setting read-back of an undone
	// step (the restored file must equal its saved copy byte for byte).
	checkUndo func(h *Host, st Step) error
	// action: a write of this object makes the driver do something (mlx5
	// recomputes its buffer thresholds) rather than hold a value of its
	// own. Its read-back checks the state it acted in, which a rollback
	// finds restored before the undo too: rollback writes it anyway
	// (Step.AlwaysUndo).
	action bool
}

// The kernel objects settings are written through.
var (
	objMTU      = &object{write: writeMTU}
	objRings    = &object{group: "rings", write: writeRings}
	objPrivFlag = &object{write: writePrivFlag}
	objPause    = &object{write: writePause}
	objDCBX     = &object{write: writeDCBX}
	objApp      = &object{group: "app", write: writeApp, undo: undoApp, capture: captureApps, checkUndo: checkAppRestored}
	objETS      = &object{group: "ets", write: writeETS}
	objPFC      = &object{group: "pfc", write: writePFC}
	objBuffer   = &object{group: "buffer", write: writeBuffer}
	objStorm    = &object{write: writeStorm}
	// One sysfs file per priority, one file per parameter; on bnxt_re
	// a port's are one step ending with an apply (cc.go).
	objECNEnable = &object{write: writeECN, undo: undoCC, capture: captureCC}
	objECNParam  = &object{write: writeECN, undo: undoCC, capture: captureCC}
	objRoCEMode  = &object{write: writeRoCEMode}
	objRoCETOS   = &object{write: writeRoCETOS}
	objTrafficCl = &object{write: writeTrafficClass, clear: clearTrafficClass}
	objDevlink   = &object{write: writeDevlink}
	// One mstconfig set per port's device: the next-boot values.
	objFirmware = &object{group: "firmware", write: writeFirmware, undo: undoFirmware, capture: captureFirmware}
	objNCCLFile = &object{group: "nccl", write: writeNCCL, undo: restoreNCCL, capture: captureNCCL, checkUndo: checkNCCLRestored}
	objXoff     = &object{write: writeIdenticalPFC, action: true} // an identical ieee_pfc (xoff.go)
	// An identical ieee_pfc too, on bnxt (bnxt.go).
	objLosslessRemap = &object{write: writeIdenticalPFC, action: true}
)

// kinds is the registry: every policy.Kind has exactly one entry
// (TestRegistryCoversEveryKind). It is filled in init, not in its
// declaration, because some entries' functions look other kinds up.
var kinds map[policy.Kind]kind

func init() { kinds = registry() }

func registry() map[policy.Kind]kind {
	return map[policy.Kind]kind{
		policy.KindMTU:             {read: readMTU, obj: objMTU, where: onNetdev},
		policy.KindRxRing:          {read: readRing, obj: objRings, where: onPhysical},
		policy.KindTxRing:          {read: readRing, obj: objRings, where: onPhysical},
		policy.KindPrivFlag:        {read: readPrivFlag, obj: objPrivFlag, where: onPhysical},
		policy.KindGlobalPause:     {read: readPause, obj: objPause, where: onPhysical, pfOnly: true},
		policy.KindDCBX:            {read: readDCBX, obj: objDCBX, where: onPhysical, pfOnly: true},
		policy.KindTrust:           {read: readTrust, obj: objApp, where: onPhysical, pfOnly: true},
		policy.KindDSCPMap:         {read: readDSCPMap, obj: objApp, where: onPhysical, pfOnly: true},
		policy.KindETSPrioTC:       {read: readETS, obj: objETS, where: onPhysical, pfOnly: true},
		policy.KindETSTSA:          {read: readETS, obj: objETS, where: onPhysical, pfOnly: true},
		policy.KindETSBandwidth:    {read: readETS, obj: objETS, where: onPhysical, pfOnly: true},
		policy.KindPFC:             {read: readPFC, obj: objPFC, where: onPhysical, pfOnly: true},
		policy.KindCableLength:     {read: readCableLength, obj: objPFC, where: onPhysical, pfOnly: true},
		policy.KindPrioBuffer:      {read: readPrioBuffer, obj: objBuffer, where: onPhysical, pfOnly: true},
		policy.KindBufferSize:      {read: readBufferSize, obj: objBuffer, where: onPhysical, pfOnly: true},
		policy.KindStormPrevention: {read: readStorm, obj: objStorm, where: onPhysical, pfOnly: true},
		policy.KindECNEnable:       {read: readECN, obj: objECNEnable, where: onPhysical, files: ecnFiles},
		policy.KindECNParam:        {read: readECN, obj: objECNParam, where: onPhysical, files: ecnFiles},
		policy.KindRoCEMode:        {read: readRoCEMode, obj: objRoCEMode, where: onRDMAPort, files: rdmaCMFiles},
		policy.KindRoCETOS:         {read: readRoCETOS, obj: objRoCETOS, where: onRDMAPort, files: rdmaCMFiles},
		policy.KindTrafficClass:    {read: readTrafficClass, obj: objTrafficCl, where: onRDMAPort, files: rdmaDeviceFiles},
		policy.KindDevlink:         {read: readDevlink, obj: objDevlink, where: onPhysical, pfOnly: true},
		policy.KindFirmware:        {read: readFirmware, obj: objFirmware, where: onPhysical, pfOnly: true},
		policy.KindNCCL:            {read: readNCCL, obj: objNCCLFile, where: onHost},
		// Not a profile setting: the planner adds it (xoff.go). It reads
		// the port's MTU, which the recompute uses.
		policy.KindXoffRecompute: {read: readMTU, obj: objXoff, where: onPhysical, pfOnly: true},
		// Not a profile setting either (bnxt.go): it reads the port's
		// PFC priorities, which the remap writes again.
		policy.KindLosslessRemap: {read: readPFC, obj: objLosslessRemap, where: onPhysical, pfOnly: true},
	}
}

// kindOf returns k's entry; an unknown kind is a programming error that a
// test catches, reported as an error rather than a panic at run time.
func kindOf(k policy.Kind) (kind, error) {
	e, ok := kinds[k]
	if !ok {
		return kind{}, fmt.Errorf("no backend for setting kind %s", k)
	}
	return e, nil
}
