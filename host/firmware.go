package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nvconfig"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// Firmware reaches a ConnectX's non-volatile configuration (NVConfig) by
// PCI address: nvconfig.Reader runs mstconfig on the live host (the one
// external program rocectl runs, docs/decisions.md); a snapshot answers
// from the mstconfig query it holds and refuses writes. A write changes
// the next-boot values only.
type Firmware interface {
	Query(ctx context.Context, pci string) (*nvconfig.Query, error)
	Set(ctx context.Context, pci string, ps []nvconfig.Param) error
}

// FirmwareSaved is what a firmware step's parameters held at the next
// boot before the step, on one device (the journal's "firmware", version
// 3): undo writes exactly these back.
type FirmwareSaved struct {
	PCI    string          `json:"pci"`
	Params []FirmwareValue `json:"params"`
}

// FirmwareValue is one parameter's next-boot value by its mstconfig name.
type FirmwareValue struct {
	Name     string `json:"name"`
	NextBoot uint64 `json:"next_boot"`
}

// PendingAction is what an operator runs to make a pending firmware value
// take effect: rocectl never resets firmware or reboots by itself.
func PendingAction(pci string) string {
	return fmt.Sprintf("takes effect at the next firmware reset (`mstfwreset -d %s reset`) or reboot", pci)
}

// firmwareCache holds one query per device for one observation: a port's
// five firmware settings are one mstconfig run (about 5 s on a
// ConnectX-7), not five.
type firmwareCache struct {
	mu sync.Mutex
	m  map[string]*fwEntry
}

type fwEntry struct {
	once sync.Once
	q    *nvconfig.Query
	err  error
}

func (c *firmwareCache) reset() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

func (c *firmwareCache) forget(pci string) {
	c.mu.Lock()
	delete(c.m, pci)
	c.mu.Unlock()
}

// query runs fw's query of pci once per cache lifetime.
func (c *firmwareCache) query(fw Firmware, pci string) (*nvconfig.Query, error) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*fwEntry{}
	}
	e := c.m[pci]
	if e == nil {
		e = &fwEntry{}
		c.m[pci] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.q, e.err = fw.Query(context.Background(), pci) })
	return e.q, e.err
}

// unknownError is a setting whose value cannot be known here (no
// mstconfig, not a ConnectX, a snapshot without the query): observe
// reports it as unknown with this reason, never as unsupported.
type unknownError struct{ why string }

func (e *unknownError) Error() string { return e.why }

// FirmwarePort is the firmware's port number (the _P<n> suffix) of a
// ConnectX PCI function: its function number plus one. mlx5 gives every
// physical port its own PF (function 0 is port 1, function 1 port 2),
// and NVConfig names the per-port parameters after those ports.
func FirmwarePort(pci string) (int, error) {
	i := strings.LastIndexByte(pci, '.')
	if i < 0 {
		return 0, fmt.Errorf("%q is not a PCI address", pci)
	}
	fn, err := strconv.Atoi(pci[i+1:])
	if err != nil || fn < 0 || fn > 7 {
		return 0, fmt.Errorf("%q is not a PCI address", pci)
	}
	return fn + 1, nil
}

// firmwareParam is the setting's spec and mstconfig name on port p.
func firmwareParam(s policy.Setting, p *port.Port) (policy.FirmwareSpec, string, error) {
	spec, ok := policy.FirmwareSpecByKey(s.Arg)
	if !ok {
		return spec, "", fmt.Errorf("%s: no firmware parameter %q", s.Key, s.Arg)
	}
	if p == nil || p.PCI == "" {
		return spec, "", &unknownError{"the port has no PCI function, so no NVConfig"}
	}
	n, err := FirmwarePort(p.PCI)
	if err != nil {
		return spec, "", err
	}
	return spec, spec.ParamFor(n), nil
}

// queryFirmware is the cached query of the port's device, its errors
// sorted into the three states: unknown (no mstconfig, not a ConnectX,
// not captured), or an error that says why the read failed.
func (r *portReader) queryFirmware() (*nvconfig.Query, error) {
	p := r.port
	if !nvconfig.ConnectXDriver(r.driver) {
		return nil, &unknownError{fmt.Sprintf("not a ConnectX (driver %s); NVConfig is ConnectX firmware configuration", orUnknown(r.driver))}
	}
	if r.h.FW == nil {
		return nil, &unknownError{"firmware not read: mstconfig does not run for this source (a --root other than / names a tree, not this machine)"}
	}
	q, err := r.h.fw.query(r.h.FW, p.PCI)
	switch {
	case err == nil:
		return q, nil
	case errors.Is(err, nic.ErrNotCaptured):
		return nil, &unknownError{err.Error()}
	case errors.Is(err, nvconfig.ErrToolMissing), errors.Is(err, nvconfig.ErrNotConnectX):
		return nil, &unknownError{err.Error()}
	}
	return nil, err
}

// readFirmware reads a [firmware] setting's next-boot value: what a write
// changes and what the device will run with after its next reset, so the
// value a plan compares. When the current value differs it is recorded as
// pending (r.fwPending), and the note says what makes it take effect.
func readFirmware(r *portReader, s policy.Setting, notes map[string]string) (string, bool, error) {
	spec, name, err := firmwareParam(s, r.port)
	if err != nil {
		return "", false, err
	}
	q, err := r.queryFirmware()
	if err != nil {
		return "", false, err
	}
	fs, err := q.Get(name)
	if errors.Is(err, nvconfig.ErrUnknownParam) {
		return "", false, nic.Unsupportedf("%s: parameter %s unknown to this firmware (not in mstconfig's query of %s)", s.Key, name, r.port.PCI)
	}
	if err != nil {
		return "", false, err
	}
	if !fs.Next.HasNum {
		return "", false, fmt.Errorf("%s: next-boot value %q of %s is not a number: %w", s.Key, fs.Next.Raw, name, nvconfig.ErrFormat)
	}
	v := spec.Format(fs.Next.Num)
	cur := ""
	switch {
	case !fs.Shown[nvconfig.Current] || fs.Current.NA:
		cur = "unknown"
	case !fs.Current.HasNum:
		cur = fs.Current.Raw
	case fs.Current.Num != fs.Next.Num:
		cur = spec.Format(fs.Current.Num)
	}
	if notes != nil {
		switch {
		case v != s.Value:
			notes[s.Key] = fmt.Sprintf("%s: writes the next-boot value; pending: %s", name, PendingAction(r.port.PCI))
		case cur != "":
			notes[s.Key] = fmt.Sprintf("%s: next boot holds it, current %s; %s", name, cur, PendingAction(r.port.PCI))
		}
	}
	if cur != "" {
		if r.fwPending == nil {
			r.fwPending = map[string]string{}
		}
		r.fwPending[s.Key] = cur
	}
	return v, true, nil
}

// writeFirmware writes a step's firmware values (the after-values, or the
// before-values undoing a step without saved values) with one mstconfig
// set on the port's device.
func writeFirmware(w *stepWriter) error {
	var ps []nvconfig.Param
	for _, c := range w.st.Changes {
		spec, name, err := firmwareParam(c.Setting, w.port)
		if err != nil {
			return err
		}
		n, err := spec.Parse(w.value(c))
		if err != nil {
			return err
		}
		ps = append(ps, nvconfig.Param{Name: name, Value: n})
	}
	return w.h.setFirmware(w.ctx, w.port.PCI, ps)
}

func (h *Host) setFirmware(ctx context.Context, pci string, ps []nvconfig.Param) error {
	if h.FW == nil {
		return fmt.Errorf("%s: firmware not reachable (no mstconfig on this source)", pci)
	}
	// Whatever the outcome, the next read asks the firmware again: a
	// write that timed out may have reached it. Every device's, not only
	// pci's: the PCI functions of one adapter share its NVConfig (a
	// per-device parameter written through one reads back through both).
	defer h.fw.reset()
	return h.FW.Set(ctx, pci, ps)
}

// captureFirmware saves the next-boot values of the step's parameters by
// their exact names, from a fresh query of the device.
func captureFirmware(h *Host, _ *policy.Desired, st *Step) error {
	p := st.Changes[0].Port
	if h.FW == nil || p == nil {
		return fmt.Errorf("%s: firmware not reachable", st.Scope)
	}
	h.fw.forget(p.PCI)
	q, err := h.fw.query(h.FW, p.PCI)
	if err != nil {
		return err
	}
	saved := FirmwareSaved{PCI: p.PCI}
	for _, c := range st.Changes {
		_, name, err := firmwareParam(c.Setting, p)
		if err != nil {
			return err
		}
		fs, err := q.Get(name)
		if err != nil {
			return err
		}
		if !fs.Next.HasNum {
			return fmt.Errorf("%s: next-boot value %q of %s is not a number: %w", c.Key, fs.Next.Raw, name, nvconfig.ErrFormat)
		}
		saved.Params = append(saved.Params, FirmwareValue{Name: name, NextBoot: fs.Next.Num})
	}
	st.Firmware = append(st.Firmware, saved)
	return nil
}

// undoFirmware writes back the saved next-boot values of the step's
// device; a step without them (none captured) writes its before-values.
func undoFirmware(w *stepWriter) error {
	i := slices.IndexFunc(w.st.Firmware, func(s FirmwareSaved) bool { return w.port != nil && s.PCI == w.port.PCI })
	if i < 0 {
		return writeFirmware(w)
	}
	var ps []nvconfig.Param
	for _, v := range w.st.Firmware[i].Params {
		ps = append(ps, nvconfig.Param{Name: v.Name, Value: v.NextBoot})
	}
	return w.h.setFirmware(w.ctx, w.port.PCI, ps)
}

// CheckFirmwareSaved refuses saved firmware values a journal could not
// have: a device that is not a PCI address, a parameter name mstconfig
// would not take, a value wider than NVConfig's 32 bits.
func CheckFirmwareSaved(st Step) error {
	for _, s := range st.Firmware {
		if _, err := FirmwarePort(s.PCI); err != nil || !nvconfig.ValidAddress(s.PCI) {
			return fmt.Errorf("%w: saved firmware values of %q, not a PCI address", ErrInvalidStep, s.PCI)
		}
		if len(s.Params) == 0 {
			return fmt.Errorf("%w: saved firmware values of %s hold no parameter", ErrInvalidStep, s.PCI)
		}
		for _, v := range s.Params {
			if !nvconfig.ValidParamName(v.Name) || v.NextBoot > 0xffffffff {
				return fmt.Errorf("%w: saved firmware value %s=%d of %s", ErrInvalidStep, v.Name, v.NextBoot, s.PCI)
			}
		}
	}
	return nil
}
