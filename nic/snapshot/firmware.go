package snapshot

import (
	"context"
	"fmt"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nvconfig"
)

// OpFirmware is the firmware query (KernelState.Firmware) in errors.
const OpFirmware = "mstconfig query"

// Firmware answers mstconfig queries from the snapshot's KernelState.Firmware
// and refuses writes (host.Firmware): a device whose query the snapshot
// does not hold is not captured, its settings unknown.
func (s *Snapshot) Firmware() FirmwareReplay { return FirmwareReplay{s.kernel} }

// FirmwareReplay is a snapshot's firmware.
type FirmwareReplay struct{ st *KernelState }

// Query parses the stored query of pci.
func (f FirmwareReplay) Query(_ context.Context, pci string) (*nvconfig.Query, error) {
	text, ok := f.st.Firmware[pci]
	if !ok {
		return nil, &nic.NotCapturedError{Op: OpFirmware, Name: pci}
	}
	q, err := nvconfig.Parse([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%s in the snapshot: %w", pci, err)
	}
	return q, nil
}

// Set refuses: a snapshot is read-only.
func (FirmwareReplay) Set(_ context.Context, pci string, _ []nvconfig.Param) error {
	return opErr("set_firmware", pci, nic.ErrReadOnly)
}
