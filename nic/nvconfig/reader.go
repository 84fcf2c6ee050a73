package nvconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

var (
	// ErrToolMissing: mstconfig is not installed (Debian: package mstflint).
	ErrToolMissing = errors.New("mstconfig not found (install the mstflint package)")
	// ErrBusy: the device's semaphore is held (another tool is using it).
	ErrBusy = errors.New("device busy")
	// ErrAccess: the tool could not open the device: not root, or the
	// kernel's lockdown (secure boot) refuses raw PCI access.
	ErrAccess = errors.New("cannot open the device (root needed; kernel lockdown under secure boot refuses raw PCI access)")
	// ErrTimeout: the query outran its deadline.
	ErrTimeout = errors.New("mstconfig query timed out")
	// ErrTooLong: the output passed MaxOutput.
	ErrTooLong = errors.New("mstconfig output too long")
	// ErrBadAddress: the PCI address is not DDDD:BB:DD.F.
	ErrBadAddress = errors.New("not a PCI address")
)

// DefaultTimeout bounds one query: a ConnectX-7 -e query takes about 5 s
// (the sriov-network-operator logs in testdata/SOURCES.md show 5 s).
const DefaultTimeout = 30 * time.Second

var pciAddr = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// Reader runs mstconfig. The zero value runs "mstconfig" from a fixed PATH
// with DefaultTimeout.
type Reader struct {
	Path    string        // default "mstconfig", looked up in Env's PATH
	Timeout time.Duration // default DefaultTimeout
	// ExtraEnv is appended to the fixed environment (tests only).
	ExtraEnv []string
}

// Env is the whole environment mstconfig runs with: C locale, a fixed PATH.
var Env = []string{"LC_ALL=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}

// Argv is the exact command line of a query: -e for the default and current
// columns, the device by PCI address.
func Argv(path, pci string) []string { return []string{path, "-e", "-d", pci, "q"} }

// Query runs one query of the device at pci (DDDD:BB:DD.F) and parses it.
// Errors wrap ErrToolMissing, ErrTimeout, ErrTooLong, ErrFormat, or a
// *ToolError (ErrBusy, ErrAccess, ErrNotConnectX, ErrUnknownParam).
func (r Reader) Query(ctx context.Context, pci string) (*Query, error) {
	q, _, err := r.query(ctx, pci)
	return q, err
}

// QueryText is Query's output as the tool printed it, for a capture to
// keep (snapshot KernelState.Firmware), after it parsed as a query: a
// text that does not is an error, never kept.
func (r Reader) QueryText(ctx context.Context, pci string) (string, error) {
	_, text, err := r.query(ctx, pci)
	return text, err
}

func (r Reader) query(ctx context.Context, pci string) (*Query, string, error) {
	if !pciAddr.MatchString(pci) {
		return nil, "", fmt.Errorf("%q: %w", pci, ErrBadAddress)
	}
	text, exitErr, err := r.run(ctx, pci, Argv(r.path(), pci))
	if err != nil {
		return nil, "", err
	}
	q, perr := Parse([]byte(text))
	var te *ToolError
	if errors.As(perr, &te) {
		return nil, "", fmt.Errorf("%s: %w", pci, perr)
	}
	if exitErr != nil {
		// Exit status 3 (MLX_CFG_ERROR) without an -E- line, or a signal.
		return nil, "", fmt.Errorf("%s: %v: %w", pci, exitErr, ErrTool)
	}
	if perr != nil {
		return q, "", fmt.Errorf("%s: %w", pci, perr)
	}
	return q, text, nil
}

// run runs the tool's command line argv (argv[0] its name, looked up in
// Env's PATH) for the device at pci, bounded by r's timeout and the output
// cap: what it printed and its own exit error (nil for status 0), or err
// when it did not run to its end (missing, timed out, cancelled, too much
// output).
func (r Reader) run(ctx context.Context, pci string, argv []string) (text string, exitErr, err error) {
	timeout := r.timeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	exe, err := resolve(argv[0])
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, exe, argv[1:]...)
	cmd.Env = append(append([]string(nil), Env...), r.ExtraEnv...)
	out := &capped{max: MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	exitErr = cmd.Run()
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", nil, fmt.Errorf("%s after %v: %w", pci, timeout, ErrTimeout)
	case ctx.Err() != nil:
		return "", nil, ctx.Err()
	case out.over:
		return "", nil, fmt.Errorf("%s: %w (over %d bytes)", pci, ErrTooLong, MaxOutput)
	}
	return out.buf.String(), exitErr, nil
}

type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.over = true
		return 0, ErrTooLong
	}
	return c.buf.Write(p)
}

// resolve finds the tool: a bare name in Env's fixed PATH only (not the
// caller's), a path as given; a regular executable file either way.
func resolve(path string) (string, error) {
	cands := []string{path}
	if !strings.Contains(path, "/") {
		cands = nil
		for _, d := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
			cands = append(cands, filepath.Join(d, path))
		}
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", fmt.Errorf("%s: %w", path, ErrToolMissing)
}
