package nvconfig

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Param is one NVConfig parameter to set, by its mstconfig name.
type Param struct {
	Name  string
	Value uint64
}

func (p Param) String() string { return p.Name + "=" + strconv.FormatUint(p.Value, 10) }

// ErrSetFailed: the tool ran the write and said "Failed!" (or exited
// non-zero after "Applying...").
var ErrSetFailed = errors.New("mstconfig set failed")

// SetArgv is the exact command line of a write: -y answers the tool's
// "Apply new Configuration? (y/n)" prompt (askUser in mlxcfg_ui.cpp
// prints "y" itself then), the device by PCI address, then NAME=VALUE per
// parameter in the order given. Values are decimal: mlxconfig's parser
// takes a number for every parameter, the enum's text only as an
// alternative.
func SetArgv(path, pci string, ps []Param) []string {
	argv := []string{path, "-y", "-d", pci, "set"}
	for _, p := range ps {
		argv = append(argv, p.String())
	}
	return argv
}

// Set writes the next-boot values of ps on the device at pci with one
// mstconfig set. It changes nothing the device runs with: the firmware
// loads them at its next reset. What mlxcfg_ui.cpp's setDevCfg prints:
// the opening and a Next Boot/New table, the prompt answered "y",
// "Applying... Done!" and "-I- Please reboot machine to load new
// configurations." with exit 0 (MLX_CFG_OK); "Applying... Failed!" and
// "-E- <why>" with exit 3 (MLX_CFG_ERROR) when the write fails; "-E-
// <why>" alone and exit 3 when the device cannot be opened or a
// parameter is not known to it. Errors wrap what Query's do, and
// ErrSetFailed for a write that started and failed.
func (r Reader) Set(ctx context.Context, pci string, ps []Param) error {
	if !pciAddr.MatchString(pci) {
		return fmt.Errorf("%q: %w", pci, ErrBadAddress)
	}
	if len(ps) == 0 {
		return nil
	}
	for _, p := range ps {
		if !validName(p.Name) || strings.ContainsAny(p.Name, "[].") {
			return fmt.Errorf("%q: %w: not an NVConfig parameter name", p.Name, ErrFormat)
		}
	}
	// A timeout leaves it unknown whether the write reached the
	// firmware: the caller reads the next-boot values back.
	text, exitErr, err := r.run(ctx, pci, SetArgv(r.path(), pci, ps))
	if err != nil {
		return err
	}
	if msg := firstToolError(text); msg != "" {
		te := &ToolError{Msg: msg}
		if strings.Contains(text, "Applying... Failed!") {
			return fmt.Errorf("%s: %w: %w", pci, ErrSetFailed, te)
		}
		return fmt.Errorf("%s: %w", pci, te)
	}
	if exitErr != nil {
		return fmt.Errorf("%s: %v: %w", pci, exitErr, ErrSetFailed)
	}
	if !strings.Contains(text, "Applying... Done!") {
		return fmt.Errorf("%s: %w: no \"Applying... Done!\" in its output", pci, ErrFormat)
	}
	return nil
}

// firstToolError is the message of the output's first "-E-" line, or "".
func firstToolError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "-E-"); ok {
			return strings.TrimSpace(msg)
		}
	}
	return ""
}

func (r Reader) path() string {
	if r.Path == "" {
		return "mstconfig"
	}
	return r.Path
}

func (r Reader) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

// ValidAddress says whether pci is a full PCI address (DDDD:BB:DD.F), the
// only form rocectl passes to mstconfig.
func ValidAddress(pci string) bool { return pciAddr.MatchString(pci) }

// ValidParamName says whether name is an NVConfig parameter name rocectl
// would pass to mstconfig set: letters, digits and underscores.
func ValidParamName(name string) bool { return validName(name) && !strings.ContainsAny(name, "[].") }

// ConnectXDriver says whether a netdev driver drives a ConnectX that
// mstconfig configures: mlx5_core (ConnectX-4 and later, BlueField). An
// mlx4_en ConnectX-3 has NVConfig too, but none of the RoCE congestion
// parameters rocectl manages.
func ConnectXDriver(driver string) bool { return driver == "mlx5_core" }
