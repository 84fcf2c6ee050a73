package hosts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// capturedAt is the fixed capture time of every generated host: the hosts
// are synthetic, and a fixed time keeps regeneration byte-identical.
const capturedAt = "2026-01-01T00:00:00Z"

// generatorVersion goes into Meta.RocectlVersion.
const generatorVersion = "mkhosts"

// Host is one generated fixture host.
type Host struct {
	Name   string
	Meta   snapshot.Meta
	Kernel *snapshot.KernelState
	tree   *tree

	about []string // README: what the host is
	notes []string // README: where kernel.json values came from, literal facts
	diff  []string // README: differences from the host it derives from
}

// Spec names a fixture host and builds it from the captures.
type Spec struct {
	Name  string
	Build func(c *Captures) (*Host, error)
}

// Specs lists the hosts mkhosts writes to testdata/hosts, in order. To add
// a host, write a builder (see cx6dx.go for the pattern: ports from
// addMLX5Port or their own sysfs helpers, a KernelState, README notes) and
// add it here; the golden test picks it up.
func Specs() []Spec {
	return []Spec{
		{Name: "cx6dx-ofed-factory", Build: CX6DxOFEDFactory},
		{Name: "cx6dx-ofed-lossless", Build: CX6DxOFEDLossless},
		{Name: "cx7-upstream-factory", Build: CX7UpstreamFactory},
		{Name: "bnxt-re-factory", Build: BnxtREFactory},
		{Name: "cx5-roce-lag", Build: CX5RoCELAG},
		{Name: "cx4lx-sriov", Build: CX4LxSRIOV},
		{Name: "ice-e810-factory", Build: IceE810Factory},
	}
}

// WriteAll builds every host of Specs from the captures in capDir into
// outDir/<name>. Existing host directories are replaced.
func WriteAll(capDir, outDir string) error {
	c, err := LoadCaptures(capDir)
	if err != nil {
		return err
	}
	for _, s := range Specs() {
		h, err := s.Build(c)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		dst := filepath.Join(outDir, s.Name)
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := h.Write(dst); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}

// WriteCX6DxFactoryN writes the cx6dx-ofed-factory host scaled to ports
// ports (ens{k}f{0,1}np{0,1}, mlx5_0..mlx5_{ports-1}, one PCI bus per
// two-port card) into dir, for benchmarks with 8 or 64 ports. capDir is
// testdata/captures (DefaultCapturesDir finds it from a test).
func WriteCX6DxFactoryN(capDir, dir string, ports int) error {
	c, err := LoadCaptures(capDir)
	if err != nil {
		return err
	}
	h, err := CX6DxFactoryN(c, ports)
	if err != nil {
		return err
	}
	return h.Write(dir)
}

// DefaultCapturesDir is testdata/captures of the source tree this package
// was built from, for tests and benchmarks in other packages.
func DefaultCapturesDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("testdata", "captures")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "captures")
}

// Write writes the host as a snapshot directory at dir (which must be empty
// or not exist), through snapshot.Write, plus its README.md.
func (h *Host) Write(dir string) error {
	if bad := h.tree.dangling(); len(bad) > 0 {
		return fmt.Errorf("dangling symlinks: %v", bad)
	}
	staging, err := os.MkdirTemp("", "mkhosts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	if err := h.tree.writeTo(staging); err != nil {
		return err
	}
	if err := snapshot.Write(dir, h.Meta, h.Kernel, nic.NewFS(staging, true), []string{"/sys"}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(h.readme()), 0o644); err != nil {
		return err
	}
	return noEmptyDirs(dir)
}

// noEmptyDirs rejects empty directories: git does not keep them, so a fresh
// clone would differ from what the generator wrote.
func noEmptyDirs(dir string) error {
	var empty []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		ents, err := os.ReadDir(p)
		if err == nil && len(ents) == 0 {
			empty = append(empty, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	if len(empty) > 0 {
		return errors.New("empty directories (git drops them): " + fmt.Sprint(empty))
	}
	return nil
}

func newHost(name, kernel, source string) *Host {
	return &Host{
		Name: name,
		Meta: snapshot.Meta{
			Format:         snapshot.Format,
			CapturedAt:     capturedAt,
			Hostname:       name,
			Kernel:         kernel,
			RocectlVersion: generatorVersion,
			Source:         source,
		},
		Kernel: &snapshot.KernelState{Links: map[string]*snapshot.LinkState{}},
		tree:   newTree(),
	}
}

func (h *Host) unreadable(paths ...string) {
	h.Meta.Unreadable = append(h.Meta.Unreadable, paths...)
	sort.Strings(h.Meta.Unreadable)
}
